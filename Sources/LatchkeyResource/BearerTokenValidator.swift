import Crypto
import Foundation
import LatchkeyCore

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What a resource gives ``BearerTokenValidator`` to check a DPoP proof (RFC 9449 §7.1): the
/// `DPoP` header and the request it must have been made for.
public struct DPoPRequest: Sendable {
    /// The `DPoP` header, if the request had one.
    public var proof: String?
    /// The request's method (`htm`).
    public var method: String
    /// The request's URL as clients reach it (`htu`): the resource's public origin and the path.
    public var url: String

    public init(proof: String?, method: String, url: String) {
        self.proof = proof
        self.method = method
        self.url = url
    }
}

/// The outcome of checking a request's bearer token.
public enum BearerTokenValidation: Sendable {
    /// The token is good for this resource and has the scopes asked for.
    case valid(AccessTokenInfo)
    /// Answer with ``BearerChallenge/status`` and its `WWW-Authenticate` header.
    case rejected(BearerChallenge)
    /// The authorization server could not be asked (answer 503): the token is neither good nor bad.
    case unavailable(String)
}

/// Checks the bearer tokens that reach a resource server (RFC 6750), issued by one authorization
/// server for this resource (RFC 8707):
///
/// - a JWT access token (RFC 9068) is verified locally: `typ` `at+jwt`, a signature by a key of
///   the issuer's key set (RS256 or ES256 only, by the key's own algorithm), `iss`, an `aud` that
///   names this resource, and `exp`;
/// - any other token is sent to the introspection endpoint (RFC 7662), and the answer kept a short
///   while; only an answer whose `token_type` is `Bearer` or `DPoP` is accepted, so a refresh
///   token never passes for an access token;
///
/// then the scopes a request needs are checked, and the sign-in the configuration requires
/// (RFC 9470: ``ResourceServerConfiguration/requiredACRValues`` and
/// ``ResourceServerConfiguration/maxAuthenticationAge``, by the token's `acr` and `auth_time`).
/// The key set is fetched once and kept; a token signed by a key not in it fetches it again, at
/// most once every 30 seconds.
///
/// A DPoP-bound token (RFC 9449, `cnf.jkt`) is accepted only as `Authorization: DPoP` with a
/// proof for this request, made with its key, carrying its hash (`ath`), seen here for the first
/// time; sent as a bearer token it is refused.
public actor BearerTokenValidator {
    public nonisolated let configuration: ResourceServerConfiguration
    private let session: URLSession
    private var keySet: (keys: PublicKeySet, fetchedAt: Date)?
    private var lastKeySetRefresh: Date?
    private var discoveredJWKSURI: URL?
    private var keySetFetch: Task<PublicKeySet, any Error>?
    private var introspected: [String: (info: AccessTokenInfo?, until: Date)] = [:]
    /// The DPoP proofs accepted, by hash of key and `jti`, until they are too old to pass anyway.
    private var proofsSeen: [String: Date] = [:]
    private let now: @Sendable () -> Date

    /// How long after its `iat` a DPoP proof is accepted.
    static let proofLifetime: TimeInterval = 120
    /// The most introspection answers kept.
    static let introspectionCacheSize = 10_000

    public init(
        configuration: ResourceServerConfiguration, session: URLSession = .shared,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.configuration = configuration
        self.session = session
        self.now = now
    }

    /// Checks the `Authorization` header of a request that needs `requiredScopes` (all of them),
    /// and the sign-in behind the token against the configuration's requirement
    /// (``stepUpChallenge(for:)``).
    /// - Parameters:
    ///   - authorization: the request's `Authorization` header (`Bearer` or `DPoP`), `nil` when it has none.
    ///   - requiredScopes: every scope the request needs.
    ///   - dpop: the request's `DPoP` header, method and URL, for `Authorization: DPoP`
    ///     (RFC 9449 §7); without it a DPoP-bound token is refused.
    public func validate(authorization: String?, requiredScopes: [String] = [], dpop: DPoPRequest? = nil) async
        -> BearerTokenValidation
    {
        guard let authorization else {
            return .rejected(challenge(401, error: nil, "The request has no access token.", scope: requiredScopes))
        }
        let parts = authorization.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: false)
        let scheme = parts.first?.lowercased()
        guard parts.count == 2, scheme == "bearer" || scheme == "dpop", !parts[1].isEmpty,
            parts[1].allSatisfy({ $0.isASCII && !$0.isWhitespace })
        else {
            return .rejected(
                challenge(400, error: "invalid_request", "Send the token as: Authorization: Bearer TOKEN (or DPoP TOKEN)."))
        }
        let token = String(parts[1])
        let usesDPoP = scheme == "dpop"
        let outcome: Result<AccessTokenInfo, BearerChallenge>
        do {
            if let header = JWSHeader(token), configuration.introspection == nil || Self.isAccessTokenType(header.typ) {
                outcome = try await checkJWT(token, header: header)
            } else {
                outcome = try await introspect(token)
            }
        } catch {
            return .unavailable("The authorization server could not be reached: \(error)")
        }
        switch outcome {
        case .failure(var refusal):
            if usesDPoP { refusal.scheme = "DPoP" }
            return .rejected(refusal)
        case .success(let info):
            if let refusal = checkBinding(info, token: token, usesDPoP: usesDPoP, request: dpop) {
                return .rejected(refusal)
            }
            let missing = requiredScopes.filter { !info.scopes.contains($0) }
            guard missing.isEmpty else {
                return .rejected(
                    challenge(
                        403, error: "insufficient_scope", "The token lacks the scope \(missing.joined(separator: " ")).",
                        scope: requiredScopes, scheme: usesDPoP ? "DPoP" : "Bearer"))
            }
            if var refusal = stepUpChallenge(for: info) {
                if usesDPoP { refusal.scheme = "DPoP" }
                return .rejected(refusal)
            }
            return .valid(info)
        }
    }

    /// The RFC 9470 §3 challenge for a token whose sign-in falls short of the configuration's
    /// ``ResourceServerConfiguration/requiredACRValues`` (its `acr` is none of them, or missing) or
    /// ``ResourceServerConfiguration/maxAuthenticationAge`` (its `auth_time` is older, or missing);
    /// `nil` when it meets both. ``validate(authorization:requiredScopes:dpop:)`` asks this of every
    /// token it accepts.
    ///
    /// The challenge is `401` `insufficient_user_authentication` with `resource_metadata`, and
    /// names every requirement, `acr_values` and `max_age`, met or not, so that one new sign-in
    /// meets them all.
    public func stepUpChallenge(for token: AccessTokenInfo) -> BearerChallenge? {
        let required = configuration.requiredACRValues
        let reachedLevel = required.isEmpty || token.acr.map({ required.contains($0) }) == true
        let description: String
        if !reachedLevel {
            description = "A different authentication level is required."
        } else if let maxAge = configuration.maxAuthenticationAge, !Self.isRecent(token.authTime, maxAge, now: now()) {
            description = "A more recent authentication is required."
        } else {
            return nil
        }
        var refusal = challenge(401, error: "insufficient_user_authentication", description)
        refusal.acrValues = required
        refusal.maxAge = configuration.maxAuthenticationAge
        return refusal
    }

    /// Whether a sign-in at `authTime` is at most `maxAge` seconds before `now`, in whole seconds
    /// (`auth_time` has no fractions); a sign-in with no time never is.
    static func isRecent(_ authTime: Date?, _ maxAge: Int, now: Date) -> Bool {
        guard let authTime else { return false }
        let elapsed = now.timeIntervalSince1970.rounded(.down) - authTime.timeIntervalSince1970.rounded(.down)
        return elapsed <= Double(maxAge)
    }

    /// A `401` challenge with no error: what a request without a token gets.
    public nonisolated var unauthenticatedChallenge: BearerChallenge {
        BearerChallenge(
            status: 401, error: nil, errorDescription: nil, scope: [], resourceMetadata: configuration.metadataURL)
    }

    // MARK: DPoP (RFC 9449 §7)

    /// The refusal for a token sent the wrong way for its binding, or with a proof that does not
    /// hold; `nil` when all is well.
    private func checkBinding(_ info: AccessTokenInfo, token: String, usesDPoP: Bool, request: DPoPRequest?)
        -> BearerChallenge?
    {
        guard usesDPoP else {
            return info.keyThumbprint == nil
                ? nil : invalidToken("The token is DPoP-bound: send it as Authorization: DPoP with a proof.")
        }
        func refused(_ description: String) -> BearerChallenge {
            challenge(401, error: "invalid_dpop_proof", description, scheme: "DPoP")
        }
        guard let bound = info.keyThumbprint else {
            return challenge(
                401, error: "invalid_token", "The token is not DPoP-bound; send it as a bearer token.", scheme: "DPoP")
        }
        guard let request else { return refused("This resource does not check DPoP proofs.") }
        guard let proof = request.proof else { return refused("A DPoP-bound token needs a DPoP proof.") }
        let checked: DPoPProof
        do {
            checked = try DPoPProof(
                verifying: proof, method: request.method, url: request.url, accessToken: token, now: now(),
                lifetime: Self.proofLifetime)
        } catch { return refused(error.description) }
        guard ConstantTime.equals(checked.keyThumbprint, bound) else {
            return refused("The DPoP proof was made with another key than the token's.")
        }
        let time = now()
        let seen = RandomToken.hash(checked.keyThumbprint + " " + checked.jti)
        if let until = proofsSeen[seen], until > time {
            return refused("This DPoP proof was used before; make a new one for every request.")
        }
        if proofsSeen.count >= configuration.dpopProofMemory {
            proofsSeen = proofsSeen.filter { $0.value > time }
            // Full of proofs that could still be replayed: forgetting any of them would let it
            // pass again, so a new one is refused until room is made (docs/threat-model.md RV18).
            guard proofsSeen.count < configuration.dpopProofMemory else {
                return refused("Too many DPoP proofs in the last minutes; try again shortly.")
            }
        }
        proofsSeen[seen] = checked.issuedAt.addingTimeInterval(Self.proofLifetime + 60)
        return nil
    }

    // MARK: JWT access tokens (RFC 9068 §4)

    static func isAccessTokenType(_ typ: String?) -> Bool {
        guard let typ = typ?.lowercased() else { return false }
        return typ == "at+jwt" || typ == "application/at+jwt"
    }

    private func checkJWT(_ token: String, header: JWSHeader) async throws -> Result<AccessTokenInfo, BearerChallenge> {
        // §4 step 1: the type keeps an ID token or another JWT from passing for an access token.
        guard Self.isAccessTokenType(header.typ) else {
            return .failure(invalidToken("The token is a JWT but not an access token (typ must be at+jwt)."))
        }
        var keys = try await currentKeySet(refresh: false)
        var verified = await keys.verify(token, as: JWTAccessTokenPayload.self, allowed: ["RS256", "ES256"])
        if case .failure(.unknownKey) = verified, let refreshed = try await refreshedKeySet() {
            keys = refreshed
            verified = await keys.verify(token, as: JWTAccessTokenPayload.self, allowed: ["RS256", "ES256"])
        }
        let claims: JWTAccessTokenPayload
        switch verified {
        case .failure: return .failure(invalidToken("The token's signature does not verify."))
        case .success(let payload): claims = payload
        }
        let time = now().timeIntervalSince1970
        if claims.cnf?.hasUnknownMethod == true {
            return .failure(invalidToken("The token is bound by a confirmation method this resource does not know."))
        }
        guard claims.iss == configuration.issuer else {
            return .failure(invalidToken("The token was issued by another server."))
        }
        guard claims.aud.contains(configuration.resource) else {
            return .failure(invalidToken("The token is not for this resource (aud)."))
        }
        guard time < claims.exp + configuration.clockSkew else { return .failure(invalidToken("The token has expired.")) }
        if let iat = claims.iat, iat > time + configuration.clockSkew + 60 {
            return .failure(invalidToken("The token was issued in the future."))
        }
        return .success(
            AccessTokenInfo(
                subject: claims.sub, clientID: claims.clientID, scopes: Self.scopes(claims.scope), audience: claims.aud,
                expiresAt: Date(timeIntervalSince1970: claims.exp), keyThumbprint: claims.cnf?.jkt, acr: claims.acr,
                authTime: claims.authTime.map(Date.init(timeIntervalSince1970:))))
    }

    /// The issuer's key set: the one kept while it is fresh; else one fetch, shared by every
    /// request that needs it meanwhile. When the fetch fails, the keys already kept go on serving.
    private func currentKeySet(refresh: Bool) async throws -> PublicKeySet {
        if !refresh, let keySet, now().timeIntervalSince(keySet.fetchedAt) < configuration.keySetLifetime {
            return keySet.keys
        }
        let fetch: Task<PublicKeySet, any Error>
        if let running = keySetFetch {
            fetch = running
        } else {
            fetch = Task { try await self.fetchKeySet() }
            keySetFetch = fetch
        }
        do {
            let keys = try await fetch.value
            if keySetFetch == fetch {
                keySet = (keys, now())
                keySetFetch = nil
            }
            return keys
        } catch {
            if keySetFetch == fetch { keySetFetch = nil }
            if let kept = keySet?.keys { return kept }
            throw error
        }
    }

    private func fetchKeySet() async throws -> PublicKeySet {
        let data = try await fetch(URLRequest(url: try await jwksURI()))
        return try await PublicKeySet.parse(data)
    }

    /// The key set read again for an unknown `kid`, unless it was read again in the last 30 s
    /// (so tokens with made-up key ids cannot make the server hammer the issuer).
    private func refreshedKeySet() async throws -> PublicKeySet? {
        if let last = lastKeySetRefresh, now().timeIntervalSince(last) < 30 { return nil }
        lastKeySetRefresh = now()
        return try await currentKeySet(refresh: true)
    }

    private func jwksURI() async throws -> URL {
        if let url = configuration.jwksURI ?? discoveredJWKSURI { return url }
        guard let metadataURL = configuration.authorizationServerMetadataURL else { throw URLError(.badURL) }
        let data = try await fetch(URLRequest(url: metadataURL))
        guard let object = try JSONSerialization.jsonObject(with: data) as? [String: Any],
            object["issuer"] as? String == configuration.issuer,
            let text = object["jwks_uri"] as? String, let url = URL(string: text)
        else { throw URLError(.cannotParseResponse) }
        discoveredJWKSURI = url
        return url
    }

    // MARK: Introspection (RFC 7662)

    private func introspect(_ token: String) async throws -> Result<AccessTokenInfo, BearerChallenge> {
        guard let credentials = configuration.introspection else {
            return .failure(invalidToken("The token is not a JWT access token, and this resource does not introspect."))
        }
        let key = RandomToken.hash(token)
        let time = now()
        if let cached = introspected[key], time < cached.until {
            return cached.info.map { .success($0) } ?? .failure(invalidToken("The token is not active."))
        }
        var request = URLRequest(url: credentials.endpoint)
        request.httpMethod = "POST"
        request.setValue("application/x-www-form-urlencoded", forHTTPHeaderField: "Content-Type")
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        let basic =
            FormParameters.percentEncode(credentials.clientID) + ":" + FormParameters.percentEncode(credentials.clientSecret)
        request.setValue("Basic " + Data(basic.utf8).base64EncodedString(), forHTTPHeaderField: "Authorization")
        request.httpBody = Data(FormParameters([("token", token), ("token_type_hint", "access_token")]).encoded.utf8)
        let answer = try JSONDecoder().decode(IntrospectionAnswer.self, from: try await fetch(request))
        var info: AccessTokenInfo?
        var until = time.addingTimeInterval(configuration.introspectionCacheLifetime)
        if answer.active, answer.isAccessToken, answer.aud.contains(configuration.resource) {
            info = AccessTokenInfo(
                subject: answer.sub, clientID: answer.clientID, scopes: Self.scopes(answer.scope), audience: answer.aud,
                expiresAt: answer.exp.map(Date.init(timeIntervalSince1970:)), keyThumbprint: answer.cnf?.jkt,
                acr: answer.acr, authTime: answer.authTime.map(Date.init(timeIntervalSince1970:)))
            if let exp = info?.expiresAt { until = min(until, exp) }
        }
        remember(key, info: info, until: until)
        guard answer.active else { return .failure(invalidToken("The token is not active.")) }
        guard answer.isAccessToken else {
            return .failure(invalidToken("The token is not an access token (token_type is not Bearer or DPoP)."))
        }
        if answer.cnf?.hasUnknownMethod == true {
            return .failure(invalidToken("The token is bound by a confirmation method this resource does not know."))
        }
        guard let info else { return .failure(invalidToken("The token is not for this resource (aud).")) }
        return .success(info)
    }

    private func remember(_ key: String, info: AccessTokenInfo?, until: Date) {
        if introspected.count >= Self.introspectionCacheSize {
            let time = now()
            introspected = introspected.filter { $0.value.until > time }
            if introspected.count >= Self.introspectionCacheSize { introspected.removeAll(keepingCapacity: true) }
        }
        introspected[key] = (info, until)
    }

    // MARK: Helpers

    private func fetch(_ request: URLRequest) async throws -> Data {
        var request = request
        request.timeoutInterval = configuration.requestTimeout
        let (data, response) = try await session.data(for: request)
        guard let http = response as? HTTPURLResponse, http.statusCode == 200 else {
            throw URLError(.badServerResponse)
        }
        return data
    }

    private static func scopes(_ text: String?) -> Set<String> {
        Set((text ?? "").split(separator: " ").map(String.init))
    }

    private func invalidToken(_ description: String) -> BearerChallenge {
        challenge(401, error: "invalid_token", description)
    }

    private nonisolated func challenge(
        _ status: Int, error: String?, _ description: String, scope: [String] = [], scheme: String = "Bearer"
    ) -> BearerChallenge {
        BearerChallenge(
            status: status, error: error, errorDescription: error == nil ? nil : description, scope: scope,
            resourceMetadata: configuration.metadataURL, scheme: scheme)
    }
}
