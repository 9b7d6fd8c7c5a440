import FileProviderKit

/// What the answer to a GET of a file's contents is, judged from its head alone. The judgement
/// is pure, so the event loop that reads the head starts an accepted body into the sink at once
/// (`StreamedBody.Admission`), and the task that reads the head afterwards comes to the same
/// verdict and acts on the rest (DECISIONS 139).
enum GetVerdict: Sendable {
    /// The body is wanted: `bytes` of the file `item`, or with `bytes` nil the whole file without
    /// an announced length.
    case content(Item, bytes: Range<UInt64>?)
    /// Another file answered at the fileid's old place (Nextcloud's `OC-FileId`): it is gone.
    case otherFile
    /// The range asked for starts at or past the file's end.
    case notSatisfiable
    /// The answer is refused with this error, before a byte reaches the sink.
    case refused(ProviderError)

    /// Where a wanted body starts in the file; nil for any other verdict.
    var start: UInt64? {
        guard case .content(_, let bytes) = self else { return nil }
        return bytes?.lowerBound ?? 0
    }
}
