import FuseKit
import Logging
import MetadataStore
import Synchronization

/// Tells the kernel when something it caches changed behind its back (a conflict replaced a
/// file's bytes, the uploader renamed an item). Before a session is attached (in-process tests)
/// there is no kernel cache to correct, and the calls do nothing.
///
/// Callers are tasks of their own (the uploader), never a FUSE operation on a related inode
/// (see FuseNotifier).
final class KernelCache: Sendable {
    private let notifier = Mutex<FuseNotifier?>(nil)
    /// For the paths a refusal's log line names (DECISIONS 242).
    private let store: MetadataStore
    private let logger: Logger

    init(store: MetadataStore, logger: Logger) {
        self.store = store
        self.logger = logger
    }

    func attach(_ notifier: FuseNotifier) { self.notifier.withLock { $0 = notifier } }

    /// Drops the cached pages of `inode` (those of `range`, or all) and its attributes.
    func invalidateContent(of inode: InodeNumber, range: Range<UInt64>? = nil) async {
        guard let notifier = notifier.withLock({ $0 }) else { return }
        let offset = Int64(range?.lowerBound ?? 0)
        let length = Int64(range?.count ?? 0)
        do { try await notifier.invalidateInode(inode, offset: offset, length: length) } catch {
            let path = await store.logName(inode: inode.rawValue)
            logger.warning("could not invalidate the kernel's pages of \(path) (inode \(inode.rawValue)): \(error)")
        }
    }

    /// Drops the cached attributes of `inode`, and none of its pages: what `stat` shows changed, the
    /// bytes did not. Unlike a drop of pages, this never waits for a read of the inode.
    func invalidateAttributes(of inode: InodeNumber) async {
        guard let notifier = notifier.withLock({ $0 }) else { return }
        do { try await notifier.invalidateInode(inode, offset: -1) } catch {
            logger.warning("could not invalidate the kernel's attributes of inode \(inode.rawValue): \(error)")
        }
    }

    /// Tells the kernel that `name` in `parent`, which was `child`, is gone.
    func notifyDelete(parent: InodeNumber, child: InodeNumber, name: [UInt8]) async {
        guard let notifier = notifier.withLock({ $0 }) else { return }
        do { try await notifier.notifyDelete(parent: parent, child: child, name: name) } catch {
            let path = await store.logName(of: name, inFolder: parent.rawValue)
            logger.warning("could not tell the kernel that \(path) is gone (inode \(child.rawValue)): \(error)")
        }
    }

    /// Drops the cached name `name` in `parent`.
    func invalidateEntry(parent: InodeNumber, name: [UInt8]) async {
        guard let notifier = notifier.withLock({ $0 }) else { return }
        do { try await notifier.invalidateEntry(parent: parent, name: name) } catch {
            let path = await store.logName(of: name, inFolder: parent.rawValue)
            logger.warning("could not invalidate the kernel's entry \(path): \(error)")
        }
    }
}
