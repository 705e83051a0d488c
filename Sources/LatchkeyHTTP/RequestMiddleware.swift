import Dispatch
import Foundation
import HTTPTypes
import Hummingbird
import LatchkeyCore
import LatchkeyServer
import Logging

/// What the server does around every route, in one middleware:
/// - the client's address: behind a trusted proxy (`--trusted-proxy`), the one it forwarded in
///   `X-Forwarded-For` (see ``TrustedProxies/clientAddress(peer:forwardedFor:)``);
/// - the request's id, sent back as `X-Request-Id` and bound to every log line written while the
///   route runs (see ``RequestLog``), and, when asked, one access-log line: method, path without
///   its query (which may hold a code or a token), status, duration, client address;
/// - `405` with `Allow` and an RFC 6749 error body for a known path asked with a method it does
///   not answer (Hummingbird answers such a request `404`, as for an unknown path);
/// - `503` with `Retry-After` for a store failure escaping a route (docs/threat-model.md I5):
///   never a credential error, never a crash. Pages answer an HTML page a person can read; the
///   machine endpoints answer `temporarily_unavailable` in JSON.
///
/// One layer rather than four, because every layer costs each request an asynchronous call and a
/// copy of the request context (docs/performance.md has what that was worth on `/healthz`).
struct RequestMiddleware: RouterMiddleware {
    let proxies: TrustedProxies
    let accessLog: Logger?
    let pages = PageRenderer()

    func handle(
        _ request: Request, context: LatchkeyRequestContext,
        next: (Request, LatchkeyRequestContext) async throws -> Response
    ) async throws -> Response {
        let start = accessLog == nil ? 0 : DispatchTime.now().uptimeNanoseconds
        var context = context
        if !proxies.isEmpty {
            context.clientAddress = proxies.clientAddress(
                peer: context.clientAddress, forwardedFor: request.headers[values: Self.forwardedFor])
        }
        let id = requestID(request, context: context)
        var response: Response
        do {
            response = try await RequestLog.$id.withValue(id) { try await next(request, context) }
        } catch let error as StoreError {
            response = storeFailure(error, request: request, context: context, id: id)
        } catch let error as any HTTPResponseError {
            if error.status == .notFound, let allow = RouteTable.allow(request.uri.path) {
                response = methodNotAllowed(allow: allow)
            } else {
                // Thrown on, so that the metrics middleware (outside this one) counts it as an
                // error (an unknown path as `NotFound`), with the id added to the response it becomes.
                log(request, status: error.status, context: context, id: id, since: start)
                throw IdentifiedError(base: error, id: id)
            }
        }
        response.headers[RequestLog.header] = id
        log(request, status: response.status, context: context, id: id, since: start)
        return response
    }

    static let forwardedFor = HTTPField.Name("X-Forwarded-For")!

    /// An incoming `X-Request-Id` is kept only from a trusted proxy and only when it is short plain
    /// text; otherwise the server makes its own.
    private func requestID(_ request: Request, context: LatchkeyRequestContext) -> String {
        if let incoming = request.headers[RequestLog.header], RequestLog.isAcceptable(incoming),
            let peer = context.remoteAddress?.ipAddress, proxies.contains(peer)
        {
            return incoming
        }
        return RequestLog.next()
    }

    private func methodNotAllowed(allow: String) -> Response {
        var response = HTTPResponses.tokenError(TokenEndpointError(.invalidRequest("This endpoint accepts \(allow) only.")))
        response.status = .methodNotAllowed
        response.headers[.allow] = allow
        return response
    }

    private func storeFailure(
        _ error: StoreError, request: Request, context: LatchkeyRequestContext, id: String
    ) -> Response {
        context.logger.error(
            "store failure", metadata: ["error": "\(error)", "path": "\(request.uri.path)", "request_id": "\(id)"])
        if RouteTable.isPage(request.uri.path) {
            var page = HTTPResponses.html(
                pages.messagePage(
                    heading: "Latchkey is unavailable for a moment",
                    message: "It cannot reach its data store, so nothing was changed. Try again in a few seconds; "
                        + "if it keeps happening, tell the people who run this site."),
                status: .serviceUnavailable)
            page.headers[.retryAfter] = "5"
            return page
        }
        let failure = TokenEndpointError(
            OAuthError(.temporarilyUnavailable, "The server cannot reach its store; try again shortly."))
        return HTTPResponses.tokenError(failure)
    }

    private func log(
        _ request: Request, status: HTTPResponse.Status, context: LatchkeyRequestContext, id: String, since start: UInt64
    ) {
        guard let accessLog else { return }
        let micros = (DispatchTime.now().uptimeNanoseconds &- start) / 1_000
        accessLog.info(
            "request",
            metadata: [
                "request_id": .string(id), "method": .string(request.method.rawValue),
                "path": .string(request.uri.path), "status": .stringConvertible(status.code),
                "duration_ms": .string(String(format: "%.3f", Double(micros) / 1_000)),
                "client_address": .string(context.clientAddress),
            ])
    }
}

/// An error thrown on by ``RequestMiddleware``: answered as the error it wraps, with the request's
/// `X-Request-Id`.
struct IdentifiedError: HTTPResponseError {
    let base: any HTTPResponseError
    let id: String

    var status: HTTPResponse.Status { base.status }

    func response(from request: Request, context: some RequestContext) throws -> Response {
        var response = try base.response(from: request, context: context)
        response.headers[RequestLog.header] = id
        return response
    }
}
