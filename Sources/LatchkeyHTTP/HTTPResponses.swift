import HTTPTypes
import Hummingbird
import LatchkeyCore
import LatchkeyServer

extension HTTPField.Name {
    /// RFC 9449 §4.1: the proof of possession sent with a request.
    static let dpop = HTTPField.Name("DPoP")!
    /// RFC 9449 §8.1: the nonce the server wants in the next proof.
    static let dpopNonce = HTTPField.Name("DPoP-Nonce")!
}

/// Response shapes with the headers each kind must carry.
enum HTTPResponses {
    /// JSON carrying or about token material: never cached (RFC 6749 §5.1, docs/threat-model.md T57).
    static func json(_ body: String, status: HTTPResponse.Status = .ok, extra: HTTPFields = [:]) -> Response {
        var headers: HTTPFields = [
            .contentType: "application/json;charset=UTF-8",
            .cacheControl: "no-store",
            .pragma: "no-cache",
        ]
        headers.append(contentsOf: extra)
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: body)))
    }

    /// An RFC 6749 §5.2 error body; 401 `invalid_client` after Basic carries the Basic challenge.
    static func tokenError(_ failure: TokenEndpointError) -> Response {
        var extra: HTTPFields = [:]
        // RFC 6749 §5.2: the challenge after a Basic attempt only. (RFC 9110 wants one on every 401,
        // but a Basic challenge to a public client makes Foundation's URLSession wait for
        // credentials that will never come: `latchkey token` hung on it.)
        if failure.error.code == .invalidClient, failure.usedBasicAuthentication {
            extra[.wwwAuthenticate] = "Basic realm=\"latchkey\", charset=\"UTF-8\""
        }
        if let retryAfter = failure.retryAfter {
            extra[.retryAfter] = "\(retryAfter)"
            return json(failure.error.jsonBody, status: .tooManyRequests, extra: extra)
        }
        if failure.error.code == .temporarilyUnavailable { extra[.retryAfter] = "5" }
        if let nonce = failure.dpopNonce { extra[.dpopNonce] = nonce }
        return json(failure.error.jsonBody, status: .init(code: failure.error.tokenEndpointStatus), extra: extra)
    }

    /// Headers every HTML page and browser redirect carries: no framing (RFC 9700 §4.16), no
    /// referrer leaks (§4.2.4), no caching, no sniffing. Set here rather than by Hummingbird's
    /// `ContentSecurityMiddleware`, which covers only the policy and `nosniff`, appends them to
    /// every response (JSON included) and cannot add the framing, referrer and cache headers.
    static var browserHeaders: HTTPFields {
        [
            .xFrameOptions: "DENY",
            .contentSecurityPolicy:
                "default-src 'none'; style-src 'unsafe-inline'; img-src https: data:; base-uri 'none'; frame-ancestors 'none'",
            .xContentTypeOptions: "nosniff",
            .referrerPolicy: "no-referrer",
            .cacheControl: "no-store",
        ]
    }

    /// A page with a passkey button: its script (`/assets/webauthn.js`) may load, and fetch the
    /// WebAuthn options from this origin.
    static func htmlWithPasskeys(_ body: String, status: HTTPResponse.Status = .ok, cookies: [Cookie] = []) -> Response {
        var response = html(body, status: status, cookies: cookies)
        response.headers[.contentSecurityPolicy] =
            (response.headers[.contentSecurityPolicy] ?? "") + "; script-src 'self'; connect-src 'self'"
        return response
    }

    /// A `response_mode=form_post` page: its script (`/assets/form-post.js`) may load. The form
    /// goes to the client's redirect URI, which the policy does not restrict (no `form-action`).
    static func formPost(_ body: String, cookies: [Cookie] = []) -> Response {
        var response = html(body, cookies: cookies)
        response.headers[.contentSecurityPolicy] = (response.headers[.contentSecurityPolicy] ?? "") + "; script-src 'self'"
        return response
    }

    static func html(_ body: String, status: HTTPResponse.Status = .ok, cookies: [Cookie] = []) -> Response {
        var headers = browserHeaders
        headers[.contentType] = "text/html; charset=utf-8"
        for cookie in cookies { headers.append(HTTPField(name: .setCookie, value: cookie.description)) }
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: body)))
    }

    /// 303 See Other: after a form POST the browser follows with GET, never re-posting
    /// credentials (RFC 9700 §4.12).
    static func redirect(_ location: String, cookies: [Cookie] = []) -> Response {
        var headers = browserHeaders
        headers[.location] = location
        for cookie in cookies { headers.append(HTTPField(name: .setCookie, value: cookie.description)) }
        return Response(status: .seeOther, headers: headers)
    }
}

extension HTTPField.Name {
    static let pragma = Self("Pragma")!
    static let xFrameOptions = Self("X-Frame-Options")!
    static let xContentTypeOptions = Self("X-Content-Type-Options")!
    static let referrerPolicy = Self("Referrer-Policy")!
}
