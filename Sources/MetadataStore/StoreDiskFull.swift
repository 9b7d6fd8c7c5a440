/// The store's disk has no room for a write, its space reserve spent too (`SpaceReserve`): the
/// operation fails with ENOSPC, and an upload that needed the write is tried again later, as a
/// passing failure, not as one the remote refused.
public struct StoreDiskFull: Error, CustomStringConvertible {
    public var description: String { "the cache disk is full (the metadata store cannot write)" }
}
