import FileProviderKit
import FuseKit
import MetadataStore
import Synchronization

/// The inodes the kernel currently holds, with their records: what getattr, open and read answer
/// from without asking the store. An entry lives from the first lookup to the forget that brings
/// its count to zero; the root lives for the whole mount.
final class NodeTable: Sendable {
    private struct Node {
        var record: ItemRecord
        var lookups = LookupCount()
    }

    /// Guards every node.
    private let nodes = Mutex<[InodeNumber: Node]>([:])

    init(root: ItemRecord) {
        nodes.withLock { $0[.root] = Node(record: root) }
    }

    func record(_ inode: InodeNumber) -> ItemRecord? {
        nodes.withLock { $0[inode]?.record }
    }

    /// Keeps `record` (newer data replaces older) and, when the kernel gets a reference, counts it.
    func remember(_ record: ItemRecord, addingLookup: Bool) {
        let inode = InodeNumber(record.inode)
        nodes.withLock { nodes in
            var node = nodes[inode] ?? Node(record: record)
            node.record = record
            if addingLookup { node.lookups.increment() }
            nodes[inode] = node
        }
    }

    /// Changes the item of a held inode in place (a write's new size); nil when the kernel does
    /// not hold it.
    func update(_ inode: InodeNumber, _ change: (inout Item) -> Void) -> ItemRecord? {
        nodes.withLock { nodes in
            guard var node = nodes[inode] else { return nil }
            change(&node.record.item)
            nodes[inode] = node
            return node.record
        }
    }

    /// A remote change replaced the record `before` with `after`: a held inode takes it, unless a
    /// local change replaced its record meanwhile. True when the kernel holds the inode.
    func refresh(_ after: ItemRecord, replacing before: ItemRecord) -> Bool {
        nodes.withLock { nodes in
            let inode = InodeNumber(after.inode)
            guard var node = nodes[inode] else { return false }
            if node.record == before { node.record = after }
            nodes[inode] = node
            return true
        }
    }

    /// After the remote gave an item its identifier: every held record that named the old one
    /// (the item itself, its children) names the new one.
    func replaceIdentifier(_ old: ItemIdentifier, with remote: Item, inode: InodeNumber) {
        nodes.withLock { nodes in
            nodes[inode]?.record.item.identifier = remote.identifier
            nodes[inode]?.record.item.version = remote.version
            // Only a folder has children to rename; scanning (and mutating while iterating, which
            // copied the whole table) for every uploaded file made creating files quadratic.
            guard remote.kind == .directory else { return }
            let children = nodes.compactMap { $0.value.record.item.parentIdentifier == old ? $0.key : nil }
            for child in children {
                nodes[child]?.record.item.parentIdentifier = remote.identifier
            }
        }
    }

    /// Drops `count` kernel references; the node goes when none are left (the root never does).
    func forget(_ inode: InodeNumber, count: UInt64) {
        nodes.withLock { nodes in
            guard inode != .root, var node = nodes[inode] else { return }
            if node.lookups.decrement(by: count) {
                nodes[inode] = nil
            } else {
                nodes[inode] = node
            }
        }
    }

    var count: Int { nodes.withLock { $0.count } }
}
