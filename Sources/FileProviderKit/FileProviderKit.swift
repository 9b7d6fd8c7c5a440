// FileProviderKit: the contract between the fpfs engine and a remote.
//
// The model is Apple's NSFileProviderReplicatedExtension, in Swift concurrency: the engine owns
// the local replica (metadata store, block cache, journal) and asks the provider — a small
// translator for one kind of remote — for listings, contents and changes. Every call is
// `async throws`, cancellation is Task cancellation and errors are `ProviderError`.
//
// A provider knows only this module. It never sees inodes, FUSE, the cache or the journal, so a
// third party can write one against FileProviderKit alone and prove it with ProviderConformance.
//
// Departures from Apple's API, on purpose:
// - Contents are written into a `ContentSink` the engine hands over (bytes at offsets), instead of
//   a temporary file the provider returns: Linux has no free file clone, and a sink lets readers
//   proceed as soon as their bytes land.
// - Enumeration returns values (`ItemPage`, `ChangeBatch`) instead of calling observers.
