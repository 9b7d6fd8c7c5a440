import FileProviderKit

/// One call a provider received, in the order received: what a test inspects to see which items
/// and byte ranges the engine asked for.
public struct RecordedCall: Sendable, Hashable, CustomStringConvertible {
    public var operation: ProviderOperation
    /// The item or container the call was about; nil for calls without one (`invalidate`).
    public var identifier: ItemIdentifier?
    /// For partial fetches, the `minimalRange` the engine asked for.
    public var range: Range<UInt64>?

    public init(operation: ProviderOperation, identifier: ItemIdentifier?, range: Range<UInt64>? = nil) {
        self.operation = operation
        self.identifier = identifier
        self.range = range
    }

    public var description: String {
        "\(operation)(\(identifier?.rawValue ?? "-")\(range.map { " \($0.lowerBound)..<\($0.upperBound)" } ?? ""))"
    }
}
