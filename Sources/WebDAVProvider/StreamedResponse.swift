import AsyncHTTPClient
import NIOHTTP1

/// The head of a GET's answer, with its body waiting on the connection (`StreamedBody`).
struct StreamedResponse: Sendable {
    let head: HTTPResponseHead
    let body: StreamedBody

    var status: HTTPResponseStatus { head.status }
    var headers: HTTPHeaders { head.headers }
}
