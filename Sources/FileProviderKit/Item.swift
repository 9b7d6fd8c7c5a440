import Foundation

/// What an item is on the remote.
public enum ItemKind: UInt8, Sendable, Codable, CaseIterable {
    case file = 1
    case directory = 2
    case symlink = 3
}

/// What a user may do with an item, as the remote allows (NSFileProviderItemCapabilities).
public struct ItemCapabilities: OptionSet, Hashable, Sendable, Codable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    public static let reading = ItemCapabilities(rawValue: 1 << 0)
    public static let writing = ItemCapabilities(rawValue: 1 << 1)
    public static let renaming = ItemCapabilities(rawValue: 1 << 2)
    public static let reparenting = ItemCapabilities(rawValue: 1 << 3)
    public static let deleting = ItemCapabilities(rawValue: 1 << 4)
    public static let trashing = ItemCapabilities(rawValue: 1 << 5)
    public static let addingSubItems = ItemCapabilities(rawValue: 1 << 6)

    /// Everything: the usual set for an item the user owns.
    public static let all: ItemCapabilities = [
        .reading, .writing, .renaming, .reparenting, .deleting, .trashing, .addingSubItems,
    ]
}

/// The item's version as the remote names it (NSFileProviderItemVersion): one opaque value for the
/// contents and one for the metadata, each at most 128 bytes. When `content` changes the cached
/// bytes are stale; when only `metadata` changes they are not.
public struct ItemVersion: Hashable, Sendable, Codable, CustomStringConvertible {
    /// The most bytes either part may hold.
    public static let maximumLength = 128

    public let content: [UInt8]
    public let metadata: [UInt8]

    /// Traps on parts longer than `maximumLength`: a provider bug, not a runtime condition.
    public init(content: [UInt8], metadata: [UInt8]) {
        precondition(content.count <= Self.maximumLength, "content version longer than 128 bytes")
        precondition(metadata.count <= Self.maximumLength, "metadata version longer than 128 bytes")
        self.content = content
        self.metadata = metadata
    }

    /// Convenience for providers whose versions are text (ETags, revision numbers).
    public init(content: String, metadata: String) {
        self.init(content: Array(content.utf8), metadata: Array(metadata.utf8))
    }

    public var description: String {
        "\(String(decoding: content, as: UTF8.self))/\(String(decoding: metadata, as: UTF8.self))"
    }
}

/// One item's metadata as the remote reports it (NSFileProviderItem).
public struct Item: Hashable, Sendable, Codable {
    public var identifier: ItemIdentifier
    public var parentIdentifier: ItemIdentifier
    public var filename: Filename
    public var kind: ItemKind
    /// Bytes of content; 0 for directories; the target's length for symlinks.
    public var size: UInt64
    public var creationDate: Timestamp?
    public var contentModificationDate: Timestamp
    /// POSIX permission bits (0o7777); the engine adds the file type.
    public var permissions: UInt16
    public var capabilities: ItemCapabilities
    public var version: ItemVersion
    /// The link's target, bytes as stored; set exactly when `kind == .symlink`.
    public var symlinkTarget: [UInt8]?
    /// Provider-specific facts, shown to users as extended attributes.
    public var userInfo: [String: String]
    /// The user's own extended attributes (`user.*`) the remote holds for the item; nil when the
    /// remote does not say (it keeps none, or none were ever stored), and the engine keeps its own.
    public var extendedAttributes: [String: [UInt8]]?

    public init(
        identifier: ItemIdentifier,
        parentIdentifier: ItemIdentifier,
        filename: Filename,
        kind: ItemKind,
        size: UInt64 = 0,
        creationDate: Timestamp? = nil,
        contentModificationDate: Timestamp = .epoch,
        permissions: UInt16? = nil,
        capabilities: ItemCapabilities = .all,
        version: ItemVersion,
        symlinkTarget: [UInt8]? = nil,
        userInfo: [String: String] = [:],
        extendedAttributes: [String: [UInt8]]? = nil
    ) {
        self.identifier = identifier
        self.parentIdentifier = parentIdentifier
        self.filename = filename
        self.kind = kind
        self.size = size
        self.creationDate = creationDate
        self.contentModificationDate = contentModificationDate
        self.permissions = permissions ?? (kind == .file ? 0o644 : 0o755)
        self.capabilities = capabilities
        self.version = version
        self.symlinkTarget = symlinkTarget
        self.userInfo = userInfo
        self.extendedAttributes = extendedAttributes
    }
}

extension Item {
    /// The largest size an item may have: what `st_size` (an `off_t`) and the store hold.
    public static let maximumSize = UInt64(Int64.max)

    /// Why the engine cannot show this item as it is: its name is not one Linux allows (empty,
    /// over 255 bytes, with `/` or NUL, `.` or `..`), or its size is beyond `maximumSize`; nil when it
    /// can. Such items are skipped and logged where they arrive, never stored (DECISIONS 181).
    public var unshowableReason: String? {
        if !filename.isValid { return "its name is not one Linux allows (\(filename.bytes.count) bytes)" }
        if size > Self.maximumSize { return "its size \(size) is beyond \(Self.maximumSize) bytes" }
        return nil
    }
}

/// Which fields of an item a create or modify sets (NSFileProviderItemFields).
public struct ItemFields: OptionSet, Hashable, Sendable, Codable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    public static let contents = ItemFields(rawValue: 1 << 0)
    public static let filename = ItemFields(rawValue: 1 << 1)
    public static let parentIdentifier = ItemFields(rawValue: 1 << 2)
    public static let contentModificationDate = ItemFields(rawValue: 1 << 3)
    public static let creationDate = ItemFields(rawValue: 1 << 4)
    public static let permissions = ItemFields(rawValue: 1 << 5)
    public static let userInfo = ItemFields(rawValue: 1 << 6)
    public static let symlinkTarget = ItemFields(rawValue: 1 << 7)
    /// The user's extended attributes (`extendedAttributes`, the whole set).
    public static let extendedAttributes = ItemFields(rawValue: 1 << 8)
}

extension ItemFields: CustomStringConvertible {
    /// The fields by name, as a debug log line shows them: `[contents, filename]`.
    public var description: String {
        let names: [(ItemFields, String)] = [
            (.contents, "contents"), (.filename, "filename"), (.parentIdentifier, "parent"),
            (.contentModificationDate, "mtime"), (.creationDate, "birth time"), (.permissions, "permissions"),
            (.userInfo, "userInfo"), (.symlinkTarget, "symlink target"), (.extendedAttributes, "xattrs"),
        ]
        return "[" + names.filter { contains($0.0) }.map(\.1).joined(separator: ", ") + "]"
    }
}
