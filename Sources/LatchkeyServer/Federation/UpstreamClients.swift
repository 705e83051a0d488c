import Foundation
import LatchkeyClient
import LatchkeyCore

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One `OAuthClient` per upstream provider, made on first use and kept for an hour: an OpenID
/// provider's endpoints and keys come from its discovery document (fetched again after that, or
/// when the provider is changed), and the client caches the key set its ID tokens are checked
/// with. Only the URLs an administrator configured are fetched (docs/threat-model.md FD6).
actor UpstreamClients {
    private struct Entry {
        var client: OAuthClient
        /// The provider as it was when the client was made: a change makes a new one.
        var provider: IdentityProvider
        var madeAt: Date
    }

    private var entries: [String: Entry] = [:]
    /// Providers whose configuration could not be had lately, with when and why: each start of a
    /// sign-in would otherwise make a request that may take the whole timeout.
    private var failures: [String: (provider: IdentityProvider, at: Date, error: any Error)] = [:]
    /// How long a failed discovery is answered from memory before it is tried again.
    static let failureLifetime: TimeInterval = 60
    private let keyEncryptionKey: KeyEncryptionKey
    /// The key sets of providers whose assertions are accepted, with the provider as it was,
    /// when they were read and when a read was last tried.
    var assertionKeys: [String: AssertionKeys] = [:]
    /// The reads of those sets under way, by provider.
    var keyReads: [String: Task<AssertionKeys, Never>] = [:]
    /// How long a discovered configuration is used before it is fetched again.
    static let lifetime: TimeInterval = 3600

    /// Requests to a provider give up after 10 seconds, so a provider that hangs cannot hold a
    /// browser's request (or the server's connections) for long.
    let session: URLSession = {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = 10
        configuration.timeoutIntervalForResource = 20
        configuration.httpCookieStorage = nil
        configuration.urlCache = nil
        return URLSession(configuration: configuration)
    }()

    init(keyEncryptionKey: KeyEncryptionKey) { self.keyEncryptionKey = keyEncryptionKey }

    /// The client for `provider`, whose redirect URI is `callback`.
    /// - Throws: ``ClientError`` when discovery fails; ``FederationFailure`` when the provider's
    ///   secret cannot be opened or its endpoints are not URLs.
    func client(for provider: IdentityProvider, at now: Date) async throws -> OAuthClient {
        if let entry = entries[provider.name], entry.provider == provider, now.timeIntervalSince(entry.madeAt) < Self.lifetime {
            return entry.client
        }
        if let failure = failures[provider.name], failure.provider == provider,
            now.timeIntervalSince(failure.at) < Self.failureLifetime
        {
            throw failure.error
        }
        let configuration: ProviderConfiguration
        do {
            configuration = try await self.configuration(of: provider)
            failures[provider.name] = nil
        } catch {
            failures[provider.name] = (provider, now, error)
            throw error
        }
        let authentication: LatchkeyClient.ClientAuthentication
        if let sealed = provider.sealedClientSecret {
            guard let secret = try? keyEncryptionKey.open(sealed, kid: Self.secretBinding(provider.name)) else {
                throw FederationFailure.misconfigured("its client secret cannot be opened with this key-encryption key")
            }
            authentication = .clientSecretBasic(secret: String(decoding: secret, as: UTF8.self))
        } else {
            authentication = .none
        }
        let client = OAuthClient(
            provider: configuration, clientID: provider.clientID, authentication: authentication, urlSession: session)
        entries[provider.name] = Entry(client: client, provider: provider, madeAt: now)
        return client
    }

    /// What the provider's client secret is sealed bound to, so it cannot be moved to another provider's row.
    static func secretBinding(_ name: String) -> String { "identity-provider:" + name }

    private func configuration(of provider: IdentityProvider) async throws -> ProviderConfiguration {
        switch provider.kind {
        case .openIDConnect:
            guard let issuer = provider.issuer else { throw FederationFailure.misconfigured("it has no issuer") }
            let discovered = try await ProviderConfiguration.discover(issuer: issuer, session: session)
            // What the document names is fetched too: only https, or http on loopback, as configured ones.
            let named = [
                discovered.authorizationEndpoint, discovered.tokenEndpoint, discovered.userinfoEndpoint, discovered.jwksURI,
            ]
            if let bad = named.compactMap({ $0 }).first(where: { !Administration.isProviderURL($0.absoluteString) }) {
                throw FederationFailure.misconfigured("its discovery document names \(bad), which is not https")
            }
            return discovered
        case .oauth2:
            guard let authorization = provider.authorizationEndpoint.flatMap(URL.init(string:)),
                let token = provider.tokenEndpoint.flatMap(URL.init(string:))
            else { throw FederationFailure.misconfigured("its authorization and token endpoints are not set") }
            return ProviderConfiguration(
                issuer: provider.issuer, authorizationEndpoint: authorization, tokenEndpoint: token,
                userinfoEndpoint: provider.userinfoEndpoint.flatMap(URL.init(string:)))
        }
    }

    /// `GET` the userinfo endpoint with `accessToken`: its JSON object.
    nonisolated func userInfo(at endpoint: URL, accessToken: String) async throws -> [String: Any] {
        var request = URLRequest(url: endpoint)
        request.setValue("Bearer " + accessToken, forHTTPHeaderField: "Authorization")
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        let data: Data
        let response: URLResponse
        do { (data, response) = try await session.data(for: request) } catch {
            throw FederationFailure.upstream("its userinfo endpoint could not be reached")
        }
        guard (response as? HTTPURLResponse)?.statusCode == 200,
            let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
        else { throw FederationFailure.upstream("its userinfo endpoint did not answer a JSON object") }
        return object
    }
}

/// The keys of providers whose assertions are accepted (``JWTBearerGrant``): read from the
/// `jwks_uri` of the provider's discovery document, kept for ``keySetLifetime``, and read again
/// for a `kid` the kept set lacks at most once per ``keySetRereadInterval``, so that forged
/// assertions naming made-up keys cannot make this server fetch in a loop.
extension UpstreamClients: AssertionIssuerKeys {
    static let keySetLifetime: TimeInterval = 600
    static let keySetRereadInterval: TimeInterval = 60

    func keySet(of provider: IdentityProvider, missing kid: String?, now: Date) async
        -> Result<AssertionKeySet, JWTAssertion.Rejection>
    {
        let kept = assertionKeys[provider.name].flatMap { $0.provider == provider ? $0 : nil }
        // Read at most once a minute, whatever asks: for a set gone stale, a kid it lacks, or
        // after a failure (answered from the failure meanwhile).
        if let kept, now.timeIntervalSince(kept.triedAt) < Self.keySetRereadInterval { return Self.answer(kept) }
        if let kept, let keys = kept.keys, now.timeIntervalSince(kept.readAt) < Self.keySetLifetime, !keys.lacks(kid: kid) {
            return .success(keys)
        }
        // One read per provider at a time, whatever the number of requests waiting for it.
        if let running = keyReads[provider.name] { return Self.answer(await running.value) }
        let start = kept ?? AssertionKeys(provider: provider)
        let read = Task { await self.readKeys(start, now: now) }
        keyReads[provider.name] = read
        let entry = await read.value
        keyReads[provider.name] = nil
        assertionKeys[provider.name] = entry
        return Self.answer(entry)
    }

    private func readKeys(_ start: AssertionKeys, now: Date) async -> AssertionKeys {
        var entry = start
        entry.triedAt = now
        do {
            let client = try await client(for: entry.provider, at: now)
            guard let address = client.provider.jwksURI else {
                throw JWTAssertion.Rejection("Its discovery document names no jwks_uri.")
            }
            var request = URLRequest(url: address)
            request.setValue("application/json", forHTTPHeaderField: "Accept")
            let (data, response) = try await session.data(for: request)
            guard (response as? HTTPURLResponse)?.statusCode == 200 else {
                throw JWTAssertion.Rejection("Its jwks_uri did not answer 200.")
            }
            entry.keys = try AssertionKeySet(json: data)
            entry.readAt = now
            entry.failure = nil
        } catch {
            // The last good set stays in use while reads fail.
            entry.failure = error as? JWTAssertion.Rejection ?? JWTAssertion.Rejection("Its keys could not be read: \(error)")
        }
        return entry
    }

    private static func answer(_ entry: AssertionKeys) -> Result<AssertionKeySet, JWTAssertion.Rejection> {
        if let keys = entry.keys { return .success(keys) }
        return .failure(entry.failure ?? JWTAssertion.Rejection("Its keys could not be read."))
    }
}

/// A provider's key set as last read, and the last attempt.
struct AssertionKeys: Sendable {
    var provider: IdentityProvider
    var keys: AssertionKeySet?
    var readAt = Date.distantPast
    var triedAt = Date.distantPast
    var failure: JWTAssertion.Rejection?
}
