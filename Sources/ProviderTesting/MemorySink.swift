import FileProviderKit
import Foundation
import Synchronization

/// A `ContentSink` that keeps what it is given in memory and notes every breach of the sink
/// contract (overlapping writes, writes after the fetch returned), so tests and the conformance
/// suite can check both the bytes and how a provider delivered them.
public final class MemorySink: ContentSink {
    private struct State {
        var pieces: [UInt64: [UInt8]] = [:]
        var finished = false
        var violations: [String] = []
    }

    private let state = Mutex(State())

    public init() {}

    public func write(_ bytes: some ContiguousBytes & Sendable, at offset: UInt64) async throws {
        let copy = bytes.withUnsafeBytes { Array($0) }
        let range = offset..<offset + UInt64(copy.count)
        state.withLock { state in
            if state.finished { state.violations.append("write at \(offset) after the fetch returned") }
            if let clash = state.pieces.first(where: { range.overlaps($0.key..<$0.key + UInt64($0.value.count)) }) {
                state.violations.append("write \(range) overlaps an earlier write at \(clash.key)")
            }
            if !copy.isEmpty { state.pieces[offset] = copy }
        }
    }

    /// Marks the fetch as returned: any later write is a violation.
    public func finish() { state.withLock { $0.finished = true } }

    /// Contract breaches seen so far, in words.
    public var violations: [String] { state.withLock { $0.violations } }

    /// How many bytes were written.
    public var byteCount: UInt64 { state.withLock { $0.pieces.values.reduce(0) { $0 + UInt64($1.count) } } }

    /// The written ranges, merged where they touch, in order.
    public var writtenRanges: [Range<UInt64>] {
        state.withLock { state in
            state.pieces.map { $0.key..<$0.key + UInt64($0.value.count) }.sorted { $0.lowerBound < $1.lowerBound }
                .reduce(into: [Range<UInt64>]()) { merged, range in
                    if let last = merged.last, last.upperBound >= range.lowerBound {
                        merged[merged.count - 1] = last.lowerBound..<max(last.upperBound, range.upperBound)
                    } else {
                        merged.append(range)
                    }
                }
        }
    }

    /// The bytes of `range`, or nil when part of it was never written.
    public func bytes(in range: Range<UInt64>) -> [UInt8]? {
        guard writtenRanges.contains(where: { $0.lowerBound <= range.lowerBound && $0.upperBound >= range.upperBound })
        else { return range.isEmpty ? [] : nil }
        var result = [UInt8](repeating: 0, count: range.count)
        state.withLock { state in
            for (offset, piece) in state.pieces {
                let overlap = range.clamped(to: offset..<offset + UInt64(piece.count))
                guard !overlap.isEmpty else { continue }
                let source = Int(overlap.lowerBound - offset)
                let destination = Int(overlap.lowerBound - range.lowerBound)
                result.replaceSubrange(
                    destination..<destination + overlap.count, with: piece[source..<source + overlap.count])
            }
        }
        return result
    }

    /// Everything written from offset 0 on, up to the first gap.
    public var contents: [UInt8] {
        guard let first = writtenRanges.first, first.lowerBound == 0 else { return [] }
        return bytes(in: first) ?? []
    }
}
