import Foundation

/// How a user's extended attributes are kept on a WebDAV server: all of an item's in one dead
/// property, `<x:xattrs xmlns:x="https://fpfs.dev/ns/webdav">`, whose text is a JSON object from
/// each attribute's name to its value in base64 (values are bytes; XML text cannot carry all
/// bytes). One property, not one per attribute, so that a PROPFIND can ask for it by name (a
/// server lists unknown dead properties only to `allprop`) and a PROPPATCH replaces the whole
/// set at once, as the engine journals it.
enum ExtendedAttributes {
    static let namespace = "https://fpfs.dev/ns/webdav"
    static let property = "xattrs"

    static func encode(_ attributes: [String: [UInt8]]) -> String {
        let object = attributes.mapValues { Data($0).base64EncodedString() }
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }

    /// Nil for text that is not such an object: something else's property of that name.
    static func decode(_ text: String) -> [String: [UInt8]]? {
        // An empty property (a server's 404 for it repeats it empty in every response) is not JSON.
        guard !text.isEmpty, let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: String]
        else {
            return nil
        }
        var attributes: [String: [UInt8]] = [:]
        for (name, value) in object {
            guard name.hasPrefix("user."), let bytes = Data(base64Encoded: value) else { return nil }
            attributes[name] = Array(bytes)
        }
        return attributes
    }

    /// The PROPPATCH body that sets the property to `attributes`.
    static func proppatchBody(_ attributes: [String: [UInt8]]) -> String {
        let text = encode(attributes).replacingOccurrences(of: "&", with: "&amp;")
            .replacingOccurrences(of: "<", with: "&lt;")
        return """
            <?xml version="1.0" encoding="utf-8"?>
            <d:propertyupdate xmlns:d="DAV:" xmlns:x="\(namespace)"><d:set><d:prop>\
            <x:\(property)>\(text)</x:\(property)></d:prop></d:set></d:propertyupdate>
            """
    }
}
