import Foundation
import LatchkeyCore

/// Which `client_id` URLs may name a client by its metadata document (OAuth Client ID Metadata
/// Document), `serve --client-metadata-documents`.
public struct ClientMetadataDocumentPolicy: Sendable {
    public enum Mode: String, Sendable, CaseIterable {
        /// A `client_id` must be registered (the default).
        case off
        /// Any `https` URL on the public internet.
        case all
        /// Only URLs whose host is one of ``allowedDomains`` or under one.
        case listed
    }

    public var mode: Mode = .off
    /// For ``Mode/listed``: `example.com` allows `example.com` and `app.example.com`.
    public var allowedDomains: [String] = []
    /// How long a document is kept when its response says nothing (`Cache-Control: max-age`).
    public var defaultLifetime: TimeInterval = 3_600
    /// The bounds on a document's own `max-age`.
    public var lifetimeBounds: ClosedRange<TimeInterval> = 60...86_400
    /// The most clients known by their documents at once; beyond, new ones wait for housekeeping.
    public var maximumClients = 10_000

    public init(mode: Mode = .off, allowedDomains: [String] = []) {
        self.mode = mode
        self.allowedDomains = allowedDomains
    }

    /// Whether `host` may serve documents under this policy.
    func allows(host: String) -> Bool {
        switch mode {
        case .off: return false
        case .all: return true
        case .listed:
            let host = host.lowercased()
            return allowedDomains.contains { domain in
                let domain = domain.lowercased()
                return host == domain || host.hasSuffix("." + domain)
            }
        }
    }
}

/// A fetched document and how long it may be kept.
public struct FetchedDocument: Sendable {
    public var body: [UInt8]
    /// `Cache-Control: max-age`, when the response gave one.
    public var maxAge: TimeInterval?
    /// `Cache-Control: no-store` (or `no-cache`): use it for this request only.
    public var noStore: Bool

    public init(body: [UInt8], maxAge: TimeInterval?, noStore: Bool) {
        self.body = body
        self.maxAge = maxAge
        self.noStore = noStore
    }
}

/// Why a document was not fetched; the description is safe to show the app's developer.
public struct FetchRefusal: Error, Sendable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// Fetches a client metadata document over `https` without ever connecting to a forbidden
/// address (``ForbiddenNetworks``), following no redirect, within a size and time limit.
/// The HTTP layer provides it (`GuardedDocumentFetcher`).
public protocol ClientMetadataFetching: Sendable {
    func fetch(_ url: URL) async throws(FetchRefusal) -> FetchedDocument
    /// The same for a client's key set (`jwks_uri`), which may be larger than a metadata
    /// document: up to ``AssertionKeySet/maximumSize`` bytes.
    func fetchKeySet(_ url: URL) async throws(FetchRefusal) -> FetchedDocument
}

/// The rules of the Client ID Metadata Document draft for the URL and the document.
public enum ClientMetadataDocument {
    /// The largest document read, in bytes (the draft recommends 5 KB).
    public static let maximumSize = 5 * 1024

    /// Whether `clientID` is meant as a document URL at all: it starts with `https://`.
    public static func looksLikeURL(_ clientID: String) -> Bool { clientID.hasPrefix("https://") }

    /// Why `clientID` cannot be a client identifier URL, or `nil`: `https`, a host, a path other
    /// than `/`, no dot segments, no user information, no query, no fragment, at most 1,024 bytes.
    public static func identifierProblem(_ clientID: String) -> String? {
        guard clientID.utf8.count <= 1_024, !clientID.utf8.contains(0),
            let components = URLComponents(string: clientID), components.scheme == "https",
            let host = components.host, !host.isEmpty
        else { return "a client_id URL must be an https URL of at most 1,024 characters" }
        if components.user != nil || components.password != nil { return "a client_id URL must not hold a user or password" }
        if components.query != nil || components.fragment != nil { return "a client_id URL must have no query or fragment" }
        let path = components.percentEncodedPath
        if path.isEmpty || path == "/" { return "a client_id URL must have a path" }
        // An escaped slash or backslash would make the path that is fetched differ from the one compared.
        if path.lowercased().contains("%2f") || path.lowercased().contains("%5c") {
            return "a client_id URL must not escape / or \\ in its path"
        }
        let segments = path.split(separator: "/", omittingEmptySubsequences: false)
        if segments.contains(where: { segment in
            let decoded = String(segment).removingPercentEncoding ?? String(segment)
            return decoded == "." || decoded == ".."
        }) {
            return "a client_id URL must not contain . or .. segments"
        }
        return nil
    }

    /// The settings of a client from its document: `client_id` must equal the URL, redirect URIs
    /// must be given, and no shared secret may appear (a document is public).
    static func settings(_ body: [UInt8], clientID: String, defaultScopes: [String]) throws(AdministrationError)
        -> ClientSettings
    {
        let request = try RegistrationRequest(body)
        guard request.clientID == clientID else {
            throw AdministrationError("The document's client_id is not the URL it was fetched from.", field: "client_id")
        }
        for member in ["client_secret", "client_secret_expires_at"] where request.members.contains(member) {
            throw AdministrationError("A metadata document must not hold \(member).", field: member)
        }
        guard request.tokenEndpointAuthMethod == nil || request.tokenEndpointAuthMethod == "none" else {
            throw AdministrationError(
                "A client known by its metadata document is public: token_endpoint_auth_method must be none.",
                field: "token_endpoint_auth_method")
        }
        guard !request.redirectURIs.isEmpty else {
            throw AdministrationError("The document must list redirect_uris.", field: "redirect_uris")
        }
        // Logout redirects get no consent page: only to the document's own host, or back to the device.
        let host = URLComponents(string: clientID)?.host
        for uri in request.postLogoutRedirectURIs
        where !RegistrationRequest.staysOnDevice(uri) && URLComponents(string: uri)?.host != host {
            throw AdministrationError(
                "Post-logout redirect URI \(uri) must be on the document's own host.", field: "post_logout_redirect_uris")
        }
        var settings = try request.settings(openRegistration: false, defaultScopes: defaultScopes)
        if request.clientName == nil { settings.name = URLComponents(string: clientID)?.host ?? "Unnamed app" }
        return settings
    }
}

extension AuthorizationServer {
    /// Whether `client_id` URLs are accepted: a policy other than off, and a fetcher to use.
    public var acceptsClientMetadataDocuments: Bool { clientMetadataDocuments.accepted }

}

/// Clients known by their metadata documents: fetched under the server's policy, and registered
/// or updated through the administration, with the checks every registration passes.
struct ClientMetadataDocuments: Sendable, ServerContextual {
    let clients: any ClientStore
    let resources: any ResourceStore
    let administration: Administration
    /// Fetches documents; `nil` accepts none, whatever the policy says.
    let fetcher: (any ClientMetadataFetching)?
    let context: ServerContext

    /// Whether `client_id` URLs are accepted: a policy other than off, and a fetcher to use.
    var accepted: Bool { configuration.clientMetadataDocuments.mode != .off && fetcher != nil }

    /// Whether `client` may be used now (``ServerConfiguration/allowsUse(of:documentsAccepted:)``).
    func isAllowed(_ client: Client) -> Bool { configuration.allowsUse(of: client, documentsAccepted: accepted) }

    /// The client an authorization request names: a registered one, or one known by its metadata
    /// document, fetched (or fetched again, when the cached copy expired) under the policy.
    /// - Throws: ``OAuthError`` (`invalid_request`, for the error page) when a document URL
    ///   cannot be used.
    func client(forAuthorizationRequest id: String) async throws -> Client? {
        let cached = try await clients.client(id: ClientID(rawValue: id))
        if let cached, cached.registration != .metadataDocument { return cached }
        if let cached, isAllowed(cached), (cached.metadataExpiresAt ?? .distantPast) > now { return cached }
        // From here on: no client, or one known by its document that expired or that the policy
        // no longer allows (refused below, by the same checks as a new one).
        guard ClientMetadataDocument.looksLikeURL(id), accepted, let fetcher
        else { return nil }
        let policy = configuration.clientMetadataDocuments
        if let problem = ClientMetadataDocument.identifierProblem(id) {
            throw OAuthError.invalidRequest("The client_id URL cannot be used: \(problem).")
        }
        guard let url = URL(string: id), let host = url.host, policy.allows(host: host) else {
            throw OAuthError.invalidRequest("This server does not accept client metadata documents from that host.")
        }
        if cached == nil,
            try await clients.clientCount(registration: .metadataDocument) >= policy.maximumClients
        {
            throw OAuthError(.temporarilyUnavailable, "Too many apps are known by metadata documents; try again later.")
        }
        let document: FetchedDocument
        do {
            document = try await fetcher.fetch(url)
        } catch {
            // The reason goes to the operator's log only: told to whoever sent the client_id, it
            // would say which hosts resolve and which ports answer (docs/threat-model.md RV22).
            context.event(.clientMetadataFetchRefused, ["client_id": "\(id)", "reason": "\(error.description)"])
            throw OAuthError.invalidRequest("The client's metadata document could not be fetched.")
        }
        let lifetime =
            document.noStore
            ? 0
            : min(
                max(document.maxAge ?? policy.defaultLifetime, policy.lifetimeBounds.lowerBound), policy.lifetimeBounds.upperBound
            )
        do {
            let settings = try ClientMetadataDocument.settings(
                document.body, clientID: id, defaultScopes: try await resources.defaultRegistrationScopes())
            let admin = administration.acting(asRegistrantFrom: host)
            if let existing = cached {
                guard settings.type == existing.type else {
                    throw AdministrationError("The document changed the kind of app.", field: "application_type")
                }
                // Checked and applied first: a document that no longer passes does not get its old
                // version kept longer. An unchanged one only gets its new expiry (no audit event).
                var updated =
                    ClientSettings(existing, ownerUsername: nil) == settings
                    ? existing : try await admin.updateClient(id: id, settings)
                updated.metadataExpiresAt = now.addingTimeInterval(lifetime)
                _ = try await clients.updateClient(updated)
                return updated
            }
            var template = Client(id: ClientID(rawValue: id), registration: .metadataDocument, createdAt: now)
            template.metadataExpiresAt = now.addingTimeInterval(lifetime)
            do {
                return try await admin.registerClient(settings, as: template).client
            } catch StoreError.conflict {
                // Another request (or instance) stored it a moment ago.
                return try await clients.client(id: ClientID(rawValue: id))
            }
        } catch let error as AdministrationError {
            context.event(.clientMetadataInvalid, ["client_id": "\(id)", "reason": "\(error.description)"])
            throw OAuthError.invalidRequest("The client's metadata document is not valid: \(error.description)")
        }
    }
}

extension ServerConfiguration {
    /// Whether `client` may be used now: any registered client, and a client known by its metadata
    /// document only while documents are accepted (`documentsAccepted`) and the policy still
    /// accepts them from its host (one cached before the policy changed is refused at once, not
    /// when it expires).
    func allowsUse(of client: Client, documentsAccepted: Bool) -> Bool {
        guard client.registration == .metadataDocument else { return true }
        guard documentsAccepted, let host = URLComponents(string: client.id.rawValue)?.host else { return false }
        return clientMetadataDocuments.allows(host: host)
    }
}
