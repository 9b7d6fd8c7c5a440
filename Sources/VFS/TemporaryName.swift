import FileProviderKit

/// The name an item takes on the remote while the name it has here is still another item's
/// there, until the journal moves that one away (a swap through a temporary name). Hidden, and
/// made unique by the inode, which no other item of the mount has.
enum TemporaryName {
    static func make(for name: Filename, inode: UInt64) -> Filename {
        let prefix = Array(".fpfs-moving-\(inode)-".utf8)
        return Filename(bytes: prefix + name.bytes.prefix(max(Filename.maximumLength - prefix.count, 1)))
    }
}
