/// A helper could not do what a test needed (a tool failed, the binary is missing, a mount did not
/// come up); its message says what, so the failing test explains itself.
struct MountTestFailure: Error, CustomStringConvertible {
    var description: String

    init(_ description: String) { self.description = description }
}
