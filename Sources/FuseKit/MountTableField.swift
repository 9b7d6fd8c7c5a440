/// Fields of /proc/mounts and /proc/self/mountinfo, where space, tab, newline and backslash are
/// written as octal escapes (`\040`).
public enum MountTableField {
    /// The field with its octal escapes decoded.
    public static func unescaped(_ field: Substring) -> String {
        var bytes: [UInt8] = []
        var rest = Array(field.utf8)[...]
        while let byte = rest.popFirst() {
            if byte == UInt8(ascii: "\\"), rest.count >= 3,
                let value = UInt8(String(decoding: rest.prefix(3), as: UTF8.self), radix: 8)
            {
                bytes.append(value)
                rest = rest.dropFirst(3)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
