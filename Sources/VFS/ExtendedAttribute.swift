/// The extended attributes fpfs shows on every item (DESIGN §6). Reading them never downloads.
enum ExtendedAttribute {
    /// `cloud`, `partial` or `local` (later also `dirty`, `uploading`, `conflict`, `error`).
    static let state = "user.fpfs.state"
    /// Bytes of the content present on this machine.
    static let localBytes = "user.fpfs.local_bytes"
    /// The provider's identifier of the item.
    static let identifier = "user.fpfs.id"
    /// On the root only: the path of the daemon's control socket.
    static let control = "user.fpfs.control"
    /// Prefix of the provider's `userInfo` entries.
    static let infoPrefix = "user.fpfs.info."
}
