import Hummingbird
import LatchkeyCore
import LatchkeyServer

/// The `/device` page (RFC 8628 §3.3): where a user types the code a TV or terminal shows.
extension BrowserRoutes {
    /// `GET /device`: the entry form, filled in from `verification_uri_complete`'s `user_code`
    /// (never submitted by itself: the user confirms the code matches the device's), or after a
    /// decision, the page saying to go back to the device.
    func deviceForm(_ request: Request) async throws -> Response {
        let context = try await session(request)
        let cookies = context.newCookie.map { [sessionCookie($0)] } ?? []
        let query = try? FormBody.query(request).get()
        switch query?["result"] {
        case "approved":
            return HTTPResponses.html(
                pages.messagePage(
                    heading: "Your device is connected",
                    message: "You can close this page and go back to your device: it signs in by itself in a few seconds.",
                    isError: false),
                cookies: cookies)
        case "denied":
            return HTTPResponses.html(
                pages.messagePage(
                    heading: "Access not allowed",
                    message: "Nothing was shared with the device. You can close this page.", isError: false),
                cookies: cookies)
        default:
            return HTTPResponses.html(
                pages.devicePage(csrfToken: context.session.csrfToken, userCode: query?["user_code"], error: nil),
                cookies: cookies)
        }
    }

    /// `POST /device`: checks the code, then on to sign-in or consent.
    func enterUserCode(_ request: Request, clientAddress: String) async throws -> Response {
        let form: FormParameters
        switch await FormBody.read(request) {
        case .failure(let error): return errorPage(error)
        case .success(let value): form = value
        }
        let context = try await session(request)
        let cookies = context.newCookie.map { [sessionCookie($0)] } ?? []
        switch try await server.authorization.enterUserCode(form, session: context.session, clientAddress: clientAddress) {
        case .forbidden(let message):
            return HTTPResponses.html(
                pages.messagePage(heading: "Request refused", message: message), status: .forbidden, cookies: cookies)
        case .retry(let message):
            return HTTPResponses.html(
                pages.devicePage(csrfToken: context.session.csrfToken, userCode: form["user_code"], error: message),
                status: .badRequest, cookies: cookies)
        case .throttled(let retryAfter):
            let minutes = (retryAfter + 59) / 60
            var response = HTTPResponses.html(
                pages.devicePage(
                    csrfToken: context.session.csrfToken, userCode: form["user_code"],
                    error: "Too many wrong codes were entered. Try again in \(minutes) minute\(minutes == 1 ? "" : "s")."),
                status: .tooManyRequests, cookies: cookies)
            response.headers[.retryAfter] = "\(retryAfter)"
            return response
        case .proceed(let step):
            return try await render(step, context)
        }
    }
}
