/// The remote made no progress within the bound: it is treated as unreachable (EHOSTDOWN).
struct RemoteTimeout: Error, CustomStringConvertible {
    let limit: Duration
    var description: String { "the remote made no progress for \(limit)" }
}
