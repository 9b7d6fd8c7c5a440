#if canImport(Glibc)
    import Glibc
#endif

/// Standard input, output and error opened on /dev/null when the caller closed them (`cmd <&-
/// >&- 2>&-`, a bare service manager): otherwise the first files the program opens take those
/// numbers, a message meant for standard error goes into one of them (the cache's log file), and
/// a failed write to a descriptor that is no stream ends the process (DECISIONS 315).
enum StandardDescriptors {
    /// Call first, before anything opens a file.
    static func openClosedOnes() {
        // `open` takes the lowest free number, so each pass fills the first closed one.
        for descriptor in Int32(0)...2 where fcntl(descriptor, F_GETFD) == -1 {
            _ = open("/dev/null", descriptor == 0 ? O_RDONLY : O_WRONLY)
        }
    }
}
