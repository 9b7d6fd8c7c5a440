/// One check of `ProviderConformance`, so tests can run the checks one at a time (e.g. as the
/// arguments of a parameterized test) and see each pass or fail by name.
public enum ConformanceCheck: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// Every fixture directory lists exactly its entries, with the right kinds, sizes and targets.
    case treeListing
    /// Small pages list completely without duplicates; a foreign page is `pageExpired`.
    case paging
    /// The working set lists every item once, or is `featureUnsupported`.
    case workingSetListing
    /// `item(for:)` agrees with enumeration, for the root too.
    case itemLookup
    /// Every child names its directory as parent.
    case parentIdentifiers
    /// Every file's fetched bytes equal the fixture, delivered within the sink contract.
    case contents
    /// Versions do not move while nothing changes.
    case versionStability
    /// The content version moves when contents change, and not on a rename.
    case contentVersionChange
    /// Partial fetches keep the alignment contract and return the right bytes.
    case partialFetch
    /// `.strictVersioning` with a replaced version throws `versionNoLongerAvailable`.
    case strictVersioning
    /// An unknown identifier is `noSuchItem` everywhere.
    case unknownIdentifier
    /// Change enumeration reports creates, modifications, renames and deletes.
    case changeEnumeration
    /// `createItem` makes files, directories and symlinks.
    case createItems
    /// `modifyItem` replaces contents and renames given the current base version.
    case modifyItem
    /// A stale base version is a `conflict` for modify and delete.
    case staleBaseVersion
    /// A taken name is a `filenameCollision` for create and rename.
    case filenameCollision
    /// Deleting a non-empty directory needs `.recursive`; deleted items are gone.
    case deleteItems

    public var description: String { rawValue }
}
