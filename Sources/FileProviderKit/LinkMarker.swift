/// Symlinks on a remote that has none, as rclone keeps them (`--links`): the link `NAME` is the
/// file `NAME.rclonelink` whose content is the target. Such files on the remote show as symlinks,
/// links made in the mount are stored as such files, and `rclone copy --links` restores them on a
/// disk. Without `--links` they are ordinary files. One convention for every provider that offers
/// it (WebDAV, S3; DECISIONS 264).
public enum LinkMarker {
    /// What a marker's name ends with.
    public static let suffix = Array(".rclonelink".utf8)
    /// A bigger marker is no link (PATH_MAX is 4096): it stays a file.
    public static let largestTarget: UInt64 = 4096

    /// The file name that holds the symlink `name`.
    public static func markerName(ofLink name: Filename) -> Filename {
        Filename(bytes: name.bytes + suffix)
    }

    /// The symlink a marker file named `name` stands for, or nil when `name` names no marker.
    public static func linkName(ofMarker name: Filename) -> Filename? {
        guard name.bytes.count > suffix.count, name.bytes.suffix(suffix.count).elementsEqual(suffix) else {
            return nil
        }
        return Filename(bytes: Array(name.bytes.dropLast(suffix.count)))
    }

    /// Whether `item` may be a marker, so that its content is worth fetching: a file of a marker's
    /// name and size.
    public static func mayBeMarker(_ item: Item) -> Bool {
        item.kind == .file && (1...largestTarget).contains(item.size) && linkName(ofMarker: item.filename) != nil
    }

    /// The symlink the marker file `item` holding `target` stands for; nil when that content is no
    /// target (empty, or with a NUL), and the file stays a file.
    public static func link(_ item: Item, target: [UInt8]) -> Item? {
        guard item.kind == .file, let name = linkName(ofMarker: item.filename), !target.isEmpty, !target.contains(0)
        else { return nil }
        var link = item
        link.kind = .symlink
        link.filename = name
        link.symlinkTarget = target
        link.size = UInt64(target.count)
        return link
    }
}
