import Foundation
import Hummingbird
import LatchkeyCore
import LatchkeyServer

/// Sign-in through upstream identity providers (docs/accounts.md, "Upstream identity
/// providers"): `/federation/NAME/start` goes there, `/federation/NAME/callback` comes back, and
/// the account's security page links and unlinks them.
struct FederationRoutes: Sendable {
    let server: AuthorizationServer
    let browser: BrowserRoutes
    var pages: PageRenderer { browser.pages }
    var federation: Federation { server.federation }

    func register(on router: Router<LatchkeyRequestContext>) {
        router.get("/federation/:name/start") { request, context in
            try await start(request, name: context.parameters.get("name") ?? "")
        }
        router.get("/federation/:name/callback") { request, context in
            try await callback(request, name: context.parameters.get("name") ?? "", clientAddress: context.clientAddress)
        }
        router.post("/federation/:name/link") { request, context in
            try await link(request, name: context.parameters.get("name") ?? "", clientAddress: context.clientAddress)
        }
        router.post("/account/links/remove") { request, _ in try await unlink(request) }
    }

    /// Where the sign-in page's "Continue with …" goes; `fresh` asks the provider for a new
    /// sign-in (``Federation/begin(provider:session:pendingID:next:linking:fresh:)``).
    static func startPath(_ name: String, requestID: String?, next: String?, fresh: Bool = false) -> String {
        var query: [(String, String)] = []
        if let requestID {
            query.append(("request", requestID))
        } else if let next {
            query.append(("next", next))
        }
        if fresh { query.append(("fresh", "1")) }
        let path = "/federation/" + name + "/start"
        return query.isEmpty ? path : path + "?" + FormParameters(query).encoded
    }

    /// The methods a federation path answers, for `Allow`.
    static func allow(_ path: String) -> String? {
        if path == "/account/links/remove" { return "POST" }
        let segments = path.split(separator: "/", omittingEmptySubsequences: false)
        guard segments.count == 4, segments[1] == "federation", !segments[2].isEmpty else { return nil }
        switch segments[3] {
        case "start", "callback": return "GET, HEAD"
        case "link": return "POST"
        default: return nil
        }
    }

    /// `GET /federation/NAME/start[?request=…|?next=…]`: to the provider.
    func start(_ request: Request, name: String) async throws -> Response {
        let context = try await browser.session(request)
        let query = (try? FormBody.query(request).get()) ?? FormParameters([])
        let requestID = query.isRepeated("request") ? nil : query["request"]
        let next = requestID == nil ? query["next"].map(ConsoleRoutes.consolePath) : nil
        let fresh = query["fresh"] != nil
        // Signed in already, with nothing to sign in for: a page elsewhere cannot swap the
        // browser's session for another through a provider that answers without asking.
        if context.session.userID != nil, requestID == nil, next == nil, !fresh {
            return HTTPResponses.redirect("/account", cookies: cookies(context))
        }
        switch try await federation.begin(
            provider: name, session: context.session, pendingID: requestID, next: next, fresh: fresh)
        {
        case .success(let url): return HTTPResponses.redirect(url.absoluteString, cookies: cookies(context))
        case .failure(let failure): return try await failurePage(failure, name: name, cookies: cookies(context))
        }
    }

    /// `GET /federation/NAME/callback`: back from the provider.
    func callback(_ request: Request, name: String, clientAddress: String) async throws -> Response {
        let context = try await browser.session(request)
        let outcome = try await federation.complete(
            provider: name, query: request.uri.query ?? "", session: context.session, clientAddress: clientAddress)
        switch outcome {
        case .failed(let failure):
            // Signed in before (a link, or a new sign-in an app asked for): that session is as it was.
            return try await failurePage(
                failure, name: name, signedIn: context.session.userID != nil, cookies: cookies(context))
        case .linked:
            return HTTPResponses.redirect("/account/security", cookies: cookies(context))
        case .signIn(.signedIn(let fresh, let pendingID), let next):
            return browser.afterSignIn(fresh, pendingID: pendingID, next: next)
        case .signIn(.secondFactorNeeded(let fresh, let pendingID), let next):
            return browser.secondStep(fresh, pendingID: pendingID, next: next)
        case .signIn:
            return try await failurePage(.refused("This sign-in cannot continue."), name: name, cookies: cookies(context))
        }
    }

    /// `POST /federation/NAME/link`: a signed-in user links the provider (with their password).
    func link(_ request: Request, name: String, clientAddress: String) async throws -> Response {
        let form: FormParameters
        switch await FormBody.read(request) {
        case .failure(let error): return browser.errorPage(error)
        case .success(let value): form = value
        }
        let context = try await browser.session(request)
        switch try await federation.beginLink(provider: name, form: form, session: context.session, clientAddress: clientAddress)
        {
        case .success(let url): return HTTPResponses.redirect(url.absoluteString, cookies: cookies(context))
        case .failure(let failure):
            return try await failurePage(failure, name: name, signedIn: true, cookies: cookies(context))
        }
    }

    /// `POST /account/links/remove`.
    func unlink(_ request: Request) async throws -> Response {
        let form: FormParameters
        switch await FormBody.read(request) {
        case .failure(let error): return browser.errorPage(error)
        case .success(let value): form = value
        }
        let context = try await browser.session(request)
        switch try await federation.unlink(form, session: context.session) {
        case .success: return HTTPResponses.redirect("/account/security", cookies: cookies(context))
        case .failure(let failure):
            return HTTPResponses.html(
                pages.messagePage(heading: "The link was not removed", message: failure.message),
                status: .forbidden, cookies: cookies(context))
        }
    }

    /// "Sign-in with NAME did not complete", with why: 404 for no such provider, 403 for a rule
    /// here, 400 for the rest. No session changed: someone `signedIn` is still signed in as before.
    func failurePage(_ failure: FederationFailure, name: String, signedIn: Bool = false, cookies: [Cookie]) async throws
        -> Response
    {
        let displayName = try await server.store.identityProvider(name: name)?.displayName ?? name
        let status: HTTPResponse.Status =
            failure == .unknownProvider ? .notFound : failure.isRefusal ? .forbidden : .badRequest
        let advice =
            signedIn
            ? "Nothing changed: you are signed in as before. Go back and try again."
            : "You are not signed in. Go back to the app or the sign-in page and try again."
        return HTTPResponses.html(
            pages.messagePage(heading: "Sign-in with \(displayName) did not complete", message: failure.message, advice: advice),
            status: status, cookies: cookies)
    }

    func cookies(_ context: SessionContext) -> [Cookie] { context.newCookie.map { [browser.sessionCookie($0)] } ?? [] }
}
