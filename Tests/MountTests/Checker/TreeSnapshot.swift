import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A whole tree read from disk (the mount through the kernel, or the remote's folder), as the
/// operation checker compares it: every path with its kind and, for files, every byte.
enum TreeSnapshot {
    /// Every entry beneath `root`, by path relative to it. A symlink or other special file is
    /// read as a file holding a description of it, so a comparison shows it. Apache's `.DAV`
    /// folders (its dead properties: the `user.*` attributes) are left out.
    static func read(_ root: String) throws -> [String: CheckerModel.Entry] {
        var entries: [String: CheckerModel.Entry] = [:]
        try walk(root, prefix: "", into: &entries)
        return entries
    }

    private static func walk(_ folder: String, prefix: String, into entries: inout [String: CheckerModel.Entry]) throws
    {
        for name in try FileManager.default.contentsOfDirectory(atPath: folder) where name != ".DAV" {
            let absolute = folder + "/" + name
            let path = CheckerModel.join(prefix, name)
            var status = stat()
            guard lstat(absolute, &status) == 0 else {
                throw MountTestFailure("lstat \(absolute): \(String(cString: strerror(errno)))")
            }
            switch status.st_mode & S_IFMT {
            case S_IFDIR:
                entries[path] = .directory
                try walk(absolute, prefix: path, into: &entries)
            case S_IFREG:
                guard let data = FileManager.default.contents(atPath: absolute) else {
                    throw MountTestFailure("cannot read \(absolute): \(String(cString: strerror(errno)))")
                }
                entries[path] = .file([UInt8](data))
            default:
                entries[path] = .file(Array("special file of mode \(String(status.st_mode, radix: 8))".utf8))
            }
        }
    }

    /// Lines naming each path where two trees differ.
    static func differences(
        _ left: [String: CheckerModel.Entry], _ leftName: String, _ right: [String: CheckerModel.Entry],
        _ rightName: String
    ) -> [String] {
        Set(left.keys).union(right.keys).sorted().compactMap { path in
            let (one, other) = (left[path], right[path])
            guard one != other else { return nil }
            return "\(path): \(leftName) has \(describe(one)), \(rightName) has \(describe(other))"
        }
    }

    static func describe(_ entry: CheckerModel.Entry?) -> String {
        switch entry {
        case nil: "nothing"
        case .directory?: "a folder"
        case .file(let bytes)?: "a file of \(CheckerOperation.summary(bytes))"
        }
    }
}
