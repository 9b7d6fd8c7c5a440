import CFuse
import Foundation

// Conversions from FuseKit's value types to the C structs libfuse replies with. Pure and
// allocation-free, so the reply paths stay short.

extension Duration {
    /// Seconds as the Double libfuse's timeouts use.
    var fuseSeconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}

extension timespec {
    init(_ time: FileTime) {
        self.init(tv_sec: Int(time.seconds), tv_nsec: Int(time.nanoseconds))
    }
}

extension FileTime {
    init(_ time: timespec) {
        self.init(seconds: Int64(time.tv_sec), nanoseconds: UInt32(time.tv_nsec))
    }
}

extension FileAttributes {
    /// The attributes as `struct stat`.
    var stat: stat {
        var result = Glibc.stat()
        result.st_ino = UInt(inode.rawValue)
        result.st_mode = mode
        result.st_nlink = UInt(linkCount)
        result.st_uid = uid
        result.st_gid = gid
        result.st_size = Int(clamping: size)
        result.st_blocks = Int(clamping: blocks)
        result.st_blksize = Int(blockSize)
        result.st_atim = timespec(accessTime)
        result.st_mtim = timespec(modificationTime)
        result.st_ctim = timespec(changeTime)
        return result
    }
}

extension Entry {
    /// The entry as `fuse_entry_param`; inode 0 (a negative entry) when there are no attributes.
    var parameters: fuse_entry_param {
        var result = fuse_entry_param()
        result.ino = inode.rawValue
        result.generation = generation
        if let attributes { result.attr = attributes.stat }
        result.attr_timeout = attributeTimeout.fuseSeconds
        result.entry_timeout = entryTimeout.fuseSeconds
        return result
    }
}

extension OpenReply {
    /// A `fuse_file_info` carrying the handle and the caching flags `fuse_reply_open` reads.
    var fileInfo: fuse_file_info {
        var result = fuse_file_info()
        result.fh = handle.rawValue
        cfuse_file_info_set_open_flags(
            &result, directIO ? 1 : 0, keepCache ? 1 : 0, 0, cacheDirectory ? 1 : 0, skipsFlush ? 1 : 0)
        return result
    }
}

extension FileSystemStatistics {
    var statvfs: statvfs {
        var result = Glibc.statvfs()
        result.f_bsize = UInt(blockSize)
        result.f_frsize = UInt(blockSize)
        result.f_blocks = UInt(totalBlocks)
        result.f_bfree = UInt(freeBlocks)
        result.f_bavail = UInt(availableBlocks)
        result.f_files = UInt(totalFiles)
        result.f_ffree = UInt(freeFiles)
        result.f_favail = UInt(freeFiles)
        result.f_namemax = UInt(maximumNameLength)
        return result
    }
}
