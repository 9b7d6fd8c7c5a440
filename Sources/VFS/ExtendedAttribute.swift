/// The extended attributes fpfs shows on every item (ARCHITECTURE §6). Reading them never downloads.
enum ExtendedAttribute {
    /// `cloud`, `partial`, `local`, `dirty`, `uploading`, `error` or `conflict`.
    static let state = "user.fpfs.state"
    /// Bytes of the content present on this machine.
    static let localBytes = "user.fpfs.local_bytes"
    /// The provider's identifier of the item.
    static let identifier = "user.fpfs.id"
    /// `1` when the item is pinned (kept local through eviction), else `0`; setting it pins or
    /// unpins.
    static let pinned = "user.fpfs.pinned"
    /// On the root only: the path of the daemon's control socket.
    static let control = "user.fpfs.control"
    /// Prefix of the provider's `userInfo` entries.
    static let infoPrefix = "user.fpfs.info."
    /// The engine's own attributes, which users cannot set.
    static let enginePrefix = "user.fpfs."
    /// The largest value a user attribute may have (the kernel's XATTR_SIZE_MAX).
    static let maximumValueSize = 65536

    /// True for a user's own attribute (`user.*` outside the engine's), which the store keeps.
    static func isUsers(_ name: String) -> Bool {
        name.hasPrefix("user.") && !name.hasPrefix(enginePrefix) && name.count > "user.".count
    }
}
