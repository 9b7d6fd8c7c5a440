import AsyncHTTPClient
import FileProviderKit
import NIOCore
import NIOHTTP1
import Synchronization

/// The body of a GET's answer, going from the HTTP client's event loop straight into a content
/// sink, chunk by chunk as it is read, without a hop to a task for each (DECISIONS 127).
///
/// The body waits on the connection until the caller has judged the head (`StreamedResponse`)
/// and streams it into a sink (`stream(into:from:)`), reads a small one whole (`collect(upTo:)`)
/// or drops it (`discard()`); a head its `Admission` accepts goes into the sink at once, on the
/// event loop. The sink holds the connection back when its writer falls behind.
final class StreamedBody: HTTPClientResponseDelegate, Sendable {
    typealias Response = Void

    /// A sink that takes the body as soon as the head arrives, when `start` accepts the head, so
    /// the first bytes land without waiting for a task to judge it (DECISIONS 139). The caller's
    /// later `stream(into:from:)` then waits for that stream.
    struct Admission: Sendable {
        let sink: any ContentSink
        /// Where an accepted body starts in the file; nil leaves the head to the caller.
        let start: @Sendable (HTTPResponseHead) -> UInt64?
    }

    /// Where the body goes once judged.
    private enum Destination {
        case undecided
        case sink(any ContentSink, position: UInt64)
        case memory(limit: Int)
        case nowhere
    }

    private struct State {
        var head: Result<HTTPResponseHead, any Error>?
        var headWaiter: CheckedContinuation<HTTPResponseHead, any Error>?
        /// Completed when the caller has judged the head; the body waits until then.
        var judged: EventLoopPromise<Void>?
        var destination = Destination.undecided
        /// The bytes handed to the sink.
        var written: UInt64 = 0
        /// The bytes dropped after `discard()`.
        var dropped = 0
        /// The body read by `collect(upTo:)`.
        var collected = ByteBuffer()
        /// The sink's refusal, which ends the request and is the caller's error, not the connection's.
        var sinkFailure: (any Error)?
    }
    private let state = Mutex(State())
    /// The request, set once it is sent.
    private let task = Mutex<HTTPClient.Task<Void>?>(nil)
    private let admission: Admission?

    private init(admission: Admission?) {
        self.admission = admission
    }

    /// Sends `request` with `http` and waits for the answer's head; throws when the request failed
    /// before one came.
    static func send(_ request: HTTPClient.Request, with http: HTTPClient, admitting admission: Admission?)
        async throws -> StreamedResponse
    {
        let body = StreamedBody(admission: admission)
        let task = http.execute(request: request, delegate: body, eventLoop: .indifferent, deadline: nil)
        body.task.withLock { $0 = task }
        task.futureResult.whenFailure { error in body.headArrived(.failure(error)) }
        let head = try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let arrived = body.state.withLock { state -> Result<HTTPResponseHead, any Error>? in
                    if state.head == nil { state.headWaiter = continuation }
                    return state.head
                }
                if let arrived { continuation.resume(with: arrived) }
            }
        } onCancel: {
            body.cancel()
        }
        return StreamedResponse(head: head, body: body)
    }

    /// Streams the body into `sink` from `position` on; returns the bytes written. A sink's
    /// refusal is rethrown; a connection that breaks off throws `BrokenOff` with how far it came.
    func stream(into sink: any ContentSink, from position: UInt64) async throws -> UInt64 {
        judge(.sink(sink, position: position))
        do {
            try await finished()
        } catch {
            let (written, sinkFailure) = state.withLock { ($0.written, $0.sinkFailure) }
            if let sinkFailure { throw sinkFailure }
            if Task.isCancelled { throw CancellationError() }
            throw BrokenOff(position: position + written, reason: "the connection broke off: \(error)")
        }
        return state.withLock { $0.written }
    }

    /// Reads the whole body; throws when it is longer than `limit` or the connection breaks off.
    func collect(upTo limit: Int) async throws -> ByteBuffer {
        judge(.memory(limit: limit))
        try await finished()
        return state.withLock { $0.collected }
    }

    /// Reads and drops the body, so the connection can serve the next request; a body longer than
    /// `discardLimit` ends the request instead (the connection is closed).
    func discard() async {
        judge(.nowhere)
        try? await finished()
    }

    /// How much of a body `discard()` reads to keep its connection.
    static let discardLimit = 1 << 20

    /// Ends a body longer than its reader takes.
    struct TooLong: Error, CustomStringConvertible {
        var description: String { "the answer is longer than expected" }
    }

    /// Sends the body to `destination`, and lets it come; a body admitted on the event loop keeps
    /// its sink.
    private func judge(_ destination: Destination) {
        let judged = state.withLock { state -> EventLoopPromise<Void>? in
            guard case .undecided = state.destination else { return nil }
            state.destination = destination
            return state.judged
        }
        judged?.succeed()
    }

    private func finished() async throws {
        guard let task = task.withLock({ $0 }) else { return }
        try await withTaskCancellationHandler {
            try await task.futureResult.get()
        } onCancel: {
            cancel()
        }
    }

    private func cancel() {
        task.withLock { $0 }?.cancel()
    }

    private func headArrived(_ head: Result<HTTPResponseHead, any Error>) {
        let waiter = state.withLock { state -> CheckedContinuation<HTTPResponseHead, any Error>? in
            guard state.head == nil else { return nil }
            state.head = head
            defer { state.headWaiter = nil }
            return state.headWaiter
        }
        waiter?.resume(with: head)
    }

    // MARK: HTTPClientResponseDelegate, on the event loop

    func didReceiveHead(task: HTTPClient.Task<Void>, _ head: HTTPResponseHead) -> EventLoopFuture<Void> {
        if let admission, let start = admission.start(head) {
            state.withLock { $0.destination = .sink(admission.sink, position: start) }
            headArrived(.success(head))
            return task.eventLoop.makeSucceededVoidFuture()
        }
        let judged = task.eventLoop.makePromise(of: Void.self)
        state.withLock { $0.judged = judged }
        headArrived(.success(head))
        return judged.futureResult
    }

    func didReceiveBodyPart(task: HTTPClient.Task<Void>, _ buffer: ByteBuffer) -> EventLoopFuture<Void> {
        let (destination, tooLong) = state.withLock { state -> (Destination, Bool) in
            let destination = state.destination
            switch destination {
            case .sink(let sink, let position):
                state.destination = .sink(sink, position: position + UInt64(buffer.readableBytes))
                state.written += UInt64(buffer.readableBytes)
                return (destination, false)
            case .memory(let limit):
                var buffer = buffer
                state.collected.writeBuffer(&buffer)
                return (destination, state.collected.readableBytes > limit)
            case .nowhere, .undecided:
                state.dropped += buffer.readableBytes
                return (destination, state.dropped > Self.discardLimit)
            }
        }
        if tooLong { return task.eventLoop.makeFailedFuture(TooLong()) }
        guard case .sink(let sink, let position) = destination else { return task.eventLoop.makeSucceededVoidFuture() }
        let resumed = task.eventLoop.makePromise(of: Void.self)
        do {
            let takesMore = try sink.write(BufferBytes(buffer: buffer), at: position) { [self] error in
                guard let error else { return resumed.succeed() }
                state.withLock { $0.sinkFailure = error }
                resumed.fail(error)
            }
            if takesMore { resumed.succeed() }
        } catch {
            state.withLock { $0.sinkFailure = error }
            resumed.fail(error)
        }
        return resumed.futureResult
    }

    func didReceiveError(task: HTTPClient.Task<Void>, _ error: any Error) {
        headArrived(.failure(error))
    }

    func didFinishRequest(task: HTTPClient.Task<Void>) throws {}
}

/// Where and why a body broke off.
struct BrokenOff: Error {
    var position: UInt64
    var reason: String
}
