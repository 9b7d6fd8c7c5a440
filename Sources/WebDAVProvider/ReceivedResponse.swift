import AsyncHTTPClient
import NIOHTTP1

/// What `WebDAVClient.send` judges of an answer before its caller reads the body: the status and
/// headers, and a way to drop the body so the connection can serve the next request.
protocol ReceivedResponse: Sendable {
    var status: HTTPResponseStatus { get }
    var headers: HTTPHeaders { get }
    func discardBody() async
}

extension HTTPClientResponse: ReceivedResponse {
    func discardBody() async {
        _ = try? await body.collect(upTo: 1 << 20)
    }
}

extension StreamedResponse: ReceivedResponse {
    func discardBody() async {
        await body.discard()
    }
}
