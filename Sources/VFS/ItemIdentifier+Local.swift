import FileProviderKit
import Foundation

extension ItemIdentifier {
    private static let localPrefix = "fpfs.local."

    /// A new identifier for an item made here, used until the remote gives it its own (DESIGN §4).
    static func makeLocal() -> ItemIdentifier { ItemIdentifier(localPrefix + UUID().uuidString) }

    /// True for an identifier the remote has not given yet.
    var isLocal: Bool { rawValue.hasPrefix(Self.localPrefix) }
}
