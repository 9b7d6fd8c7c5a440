// Pins and eviction as the CLI and `user.fpfs.pinned` ask for them (ARCHITECTURE §5). Pinning marks
// the item and everything below it in the store (new children inherit, see MetadataStore+Cache)
// and starts a background download; nothing here waits for the remote.

import BlockCache
import FileProviderKit
import Foundation
import FuseKit
import MetadataStore
import SystemPackage

/// How far the download of a pinned item is: its files, their bytes, and what is local.
public struct PinProgress: Codable, Sendable {
    public var files = 0
    public var localFiles = 0
    public var bytes: UInt64 = 0
    public var localBytes: UInt64 = 0
    /// A download of the item runs now.
    public var downloading = false
    /// Why the last download failed (the first file that failed, and the errno it got).
    public var error: String?

    public init() {}
}

/// What the cache holds: downloaded bytes plus clean local copies (as the last eviction pass
/// counted them), and the bound (nil: none).
public struct CacheUsage: Codable, Sendable {
    public var bytes: UInt64
    public var bound: UInt64?
    /// The size of the pinned files (kept through eviction), when known.
    public var pinned: UInt64?

    public init(bytes: UInt64, bound: UInt64?, pinned: UInt64?) {
        self.bytes = bytes
        self.bound = bound
        self.pinned = pinned
    }
}

/// What `fpfs evict` did: bytes freed, and the files it refused, with the reason.
public struct EvictionOutcome: Codable, Sendable {
    public struct Refusal: Codable, Sendable {
        /// Relative to the item asked for ("" for the item itself).
        public var path: String
        public var reason: String
    }
    public var evicted = 0
    public var freedBytes: UInt64 = 0
    public var refused: [Refusal] = []
}

extension FileSystem {
    /// Pins `inode` (recursively) and starts downloading it in the background.
    public func pin(_ inode: UInt64) async throws {
        try await store.pin(inode: inode)
        pins.start(inode)
    }

    /// Unpins `inode` and everything below it; the bytes stay until eviction wants them, and the
    /// files of it not yet downloading are not downloaded.
    public func unpin(_ inode: UInt64) async throws {
        try await store.unpin(inode: inode)
        await pins.stopUnpinned()
    }

    /// What the cache holds against its bound (DECISIONS 58), and the pinned files' size, for
    /// `fpfs status`.
    public func cacheUsage() async throws -> CacheUsage {
        CacheUsage(
            bytes: cache.cachedBytes + evictor.cleanLocalBytes, bound: configuration.cacheSize,
            pinned: try await store.pinnedBytes())
    }

    /// `setfattr -n user.fpfs.pinned -v 1|0`.
    func setPinned(_ inode: InodeNumber, value: [UInt8]) async throws {
        let record = try await record(inode)
        switch String(decoding: value, as: UTF8.self) {
        case "1": try await pin(record.inode)
        case "0": try await unpin(record.inode)
        default: throw Errno.invalidArgument
        }
    }

    /// The files below `inode` (or `inode` itself) and how much of them is local.
    public func pinProgress(_ inode: UInt64) async throws -> PinProgress {
        var progress = PinProgress()
        for (stored, _) in try await store.subtree(of: inode) where stored.item.kind == .file {
            let record = nodes.record(InodeNumber(stored.inode)) ?? stored
            let local = min(localBytes(of: record), record.item.size)
            progress.files += 1
            progress.bytes += record.item.size
            progress.localBytes += local
            if local >= record.item.size { progress.localFiles += 1 }
        }
        progress.downloading = pins.isDownloading(inode)
        progress.error = pins.failure(of: inode)
        return progress
    }

    /// Frees the local bytes of `inode` and every file below it now: cached blocks go, clean local
    /// copies are deleted. Files with changes not yet on the remote, pinned files and open files
    /// are refused and named.
    public func evict(_ inode: UInt64) async throws -> EvictionOutcome {
        var outcome = EvictionOutcome()
        await fetcher.settleCommits()
        let open = openFiles.openItems
        for (stored, path) in try await store.subtree(of: inode) where stored.item.kind == .file {
            let record = nodes.record(InodeNumber(stored.inode)) ?? stored
            let name = String(decoding: path, as: UTF8.self)
            func refuse(_ reason: String) { outcome.refused.append(.init(path: name, reason: reason)) }
            let isDirty = try await store.pendingChange(inode: record.inode) != nil
            if isDirty || uploader.state(of: record.inode) != nil {
                refuse("has changes not yet on the remote")
                continue
            }
            if try await store.isPinned(inode: record.inode) {
                refuse("is pinned (fpfs unpin it first)")
                continue
            }
            if open.inodes.contains(record.inode) {
                refuse("is open")
                continue
            }
            let bytes = localBytes(of: record)
            if localFiles.hasContent(record.inode) {
                guard try await evictor.evictLocalCopy(of: record) else {
                    refuse("is open or being written")
                    continue
                }
            } else {
                guard try await cache.evict(record.identifier) != nil else {
                    refuse("is open")
                    continue
                }
                await uploader.kernel.invalidateContent(of: InodeNumber(record.inode))
            }
            if bytes > 0 {
                outcome.evicted += 1
                outcome.freedBytes += bytes
            }
        }
        return outcome
    }
}
