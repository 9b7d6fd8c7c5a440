import FileProviderKit
import FuseKit
import MetadataStore
import Synchronization

/// Which listing the kernel's readdir cache holds for each directory, so that `opendir` can let
/// the kernel keep that cache exactly when the listing is still the same.
///
/// Every opendir asks the kernel to cache the listing (`cache_readdir`); it keeps what it cached
/// before (`keep_cache`) only if the store's items have not changed since that listing was read
/// (same item generation), or if the current listing has the same digest. Whatever changed the
/// folder (a request through the mount, a remote change, a re-listing, a conflict copy), the
/// kernel fills its cache again: no path that changes a folder has to remember to tell the
/// kernel. A warm `ls -lR` then reads listings from the kernel, and its opendirs read nothing
/// from the store.
final class KernelListings: Sendable {
    private struct Filled {
        let digest: Int
        /// A store item generation at which the listing had this digest.
        var generation: UInt64
    }
    /// Guards what each directory's kernel cache was filled from; no entry when unknown (never
    /// filled, or possibly filled from two different listings).
    private let filled = Mutex<[InodeNumber: Filled]>([:])

    /// The digest of a listing: what the kernel's readdir cache keeps of it, in order (names,
    /// inode numbers and kinds of the entries, "." and ".." included).
    static func digest(directory: ItemRecord, parent: ItemRecord, children: [ItemRecord]) -> Int {
        digest(
            directory: directory, parent: parent,
            entries: children.lazy.map { ($0.inode, $0.item.filename.bytes, $0.item.kind) })
    }

    /// The same digest, from the children's entries alone (`MetadataStore.childEntries`).
    static func digest(directory: ItemRecord, parent: ItemRecord, entries: [ChildEntry]) -> Int {
        digest(directory: directory, parent: parent, entries: entries.lazy.map { ($0.inode, $0.filename, $0.kind) })
    }

    private static func digest(
        directory: ItemRecord, parent: ItemRecord,
        entries: some Sequence<(inode: UInt64, filename: [UInt8], kind: ItemKind)>
    ) -> Int {
        var hasher = Hasher()
        hasher.combine(directory.inode)
        hasher.combine(parent.inode)
        for entry in entries {
            hasher.combine(entry.inode)
            hasher.combine(entry.filename)
            hasher.combine(entry.kind)
        }
        return hasher.finalize()
    }

    /// Whether the kernel may keep the listing it cached for `inode` because none of its children
    /// changed since it was read: `unchangedSince` answers, for the store item generation it was
    /// read at, the generation now if that is so (`MetadataStore.itemGeneration(unchangedUnder:since:)`),
    /// and the listing is then known current as of that.
    func mayKeep(_ inode: InodeNumber, unchangedSince: (UInt64) -> UInt64?) -> Bool {
        filled.withLock { filled in
            guard let generation = filled[inode]?.generation, let now = unchangedSince(generation) else { return false }
            filled[inode]?.generation = now
            return true
        }
    }

    /// Whether the kernel holds a known listing of `inode` at all: if not, no comparison can let
    /// it keep one.
    func holdsListing(of inode: InodeNumber) -> Bool {
        filled.withLock { $0[inode] != nil }
    }

    /// Whether the kernel may keep the listing it cached for `inode` because it equals `listing`;
    /// if so, it is known current as of `listing`'s generation.
    func mayKeep(_ inode: InodeNumber, listing: DirectoryListing) -> Bool {
        mayKeep(inode, digest: listing.digest, generation: listing.generation)
    }

    /// Whether the kernel may keep the listing it cached for `inode` because that listing's
    /// digest is `digest`, read at the store's item generation `generation`; if so, it is known
    /// current as of `generation`.
    func mayKeep(_ inode: InodeNumber, digest: Int, generation: UInt64) -> Bool {
        filled.withLock { filled in
            guard filled[inode]?.digest == digest else { return false }
            filled[inode]?.generation = generation
            return true
        }
    }

    /// Notes a readdir of `inode` at `offset` answered from `listing`. The kernel fills its cache
    /// from position 0 on; a later position answered from a different listing (a handle opened
    /// before a change) may mix two listings in it, so the cache is then unknown and the next
    /// opendir drops it.
    func answered(_ inode: InodeNumber, offset: UInt64, from listing: DirectoryListing) {
        filled.withLock { filled in
            if offset == 0 {
                filled[inode] = Filled(digest: listing.digest, generation: listing.generation)
            } else if filled[inode]?.digest != listing.digest {
                filled[inode] = nil
            }
        }
    }
}
