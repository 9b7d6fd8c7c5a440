/// One step of the operation checker: a system call on the mount, a change made behind the
/// mount's back in the remote folder, or something done to the daemon or the remote
/// (DECISIONS 210). Paths are relative to the mount's root (or the remote folder's).
enum CheckerOperation: Sendable, CustomStringConvertible {
    /// `open(O_CREAT | O_EXCL | O_WRONLY)`; the handle stays open.
    case create(String, handle: Int)
    /// `open(O_WRONLY)` of an existing file, with `O_TRUNC` or without.
    case open(String, truncate: Bool, handle: Int)
    case write(handle: Int, offset: Int, bytes: [UInt8])
    case fsync(handle: Int)
    case close(handle: Int)
    case truncate(String, size: Int)
    case rename(String, String)
    case unlink(String)
    case mkdir(String)
    case rmdir(String)
    case setxattr(String, name: String, value: String)
    /// `fpfs sync`.
    case sync
    /// Writes a file in the remote folder (a new one or over one), then `fpfs signal`. A calm
    /// change is made after `fpfs sync` drained, so the mount's state is known on the remote.
    case remoteWrite(String, bytes: [UInt8], calm: Bool)
    case remoteDelete(String, calm: Bool)
    case remoteRename(String, String, calm: Bool)
    /// kill -9 of the daemon (open handles die with it), then a mount with the same cache folder.
    case kill
    /// The remote becomes unreachable (a folder is moved aside, a server stopped) …
    case outage
    /// … and comes back where it was, followed by `fpfs signal`.
    case recover

    var description: String {
        switch self {
        case .create(let path, let handle): "create \(path) -> #\(handle)"
        case .open(let path, let truncate, let handle): "open \(path)\(truncate ? " O_TRUNC" : "") -> #\(handle)"
        case .write(let handle, let offset, let bytes): "write #\(handle) at \(offset): \(Self.summary(bytes))"
        case .fsync(let handle): "fsync #\(handle)"
        case .close(let handle): "close #\(handle)"
        case .truncate(let path, let size): "truncate \(path) to \(size)"
        case .rename(let from, let to): "rename \(from) -> \(to)"
        case .unlink(let path): "unlink \(path)"
        case .mkdir(let path): "mkdir \(path)"
        case .rmdir(let path): "rmdir \(path)"
        case .setxattr(let path, let name, let value): "setxattr \(path) \(name)=\(value)"
        case .sync: "fpfs sync"
        case .remoteWrite(let path, let bytes, let calm):
            "\(calm ? "calm" : "racing") remote write \(path): \(Self.summary(bytes))"
        case .remoteDelete(let path, let calm): "\(calm ? "calm" : "racing") remote delete \(path)"
        case .remoteRename(let from, let to, let calm): "\(calm ? "calm" : "racing") remote rename \(from) -> \(to)"
        case .kill: "kill -9 the daemon and mount again"
        case .outage: "remote goes away"
        case .recover: "remote comes back"
        }
    }

    /// A short, comparable name for some content: its size and a hash of its bytes.
    static func summary(_ bytes: [UInt8]) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return "\(bytes.count) B #\(String(hash, radix: 16).suffix(8))"
    }
}
