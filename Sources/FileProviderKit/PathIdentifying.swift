/// A provider whose identifiers are its items' places (WebDAV without file ids, S3's keys): moving
/// a folder gives everything below it a new identifier. The engine rewrites those itself, from the
/// folder's old and new prefixes, for every item that was below the folder on the remote, wherever
/// it is here by now: an item moved out of the folder here, or deleted here, whose change was
/// still to send under the old place met a missing item or, where the old place now held a file,
/// an error that never passed (the checker, seed 3013 on Apache; DECISIONS 280).
public protocol PathIdentifying: FileProvider {
    /// What the identifier of every item below `folder` starts with (the folder's place and a
    /// separator); nil when `folder` is not one of this provider's places, or is the root.
    func identifierPrefix(below folder: ItemIdentifier) -> String?
}
