import Foundation
import LatchkeyCore

/// `grant_type=urn:ietf:params:oauth:grant-type:token-exchange` (RFC 8693): a web or service
/// client an administrator allowed (`grant_types`, `--allow-token-exchange`) trades a token for an
/// access token of its own, for the same subject, to call another resource.
///
/// - The subject token is an access token or an ID token this server issued and that is still
///   good: an access token that the client could introspect (issued to it, or, for a client an
///   administrator registered that is neither personal nor self-registered, any access token), an
///   ID token issued to it. A token bound to a DPoP key needs a proof made with that key.
/// - Without `actor_token` the new token stands for the subject alone (impersonation); with one,
///   which must be the client's own (issued to it), it names the actor in `act` (delegation,
///   §4.1), above any `act` the subject token carried, so a chain of exchanges keeps every hop, at
///   most ``maximumActorDepth`` deep.
/// - The scope may only narrow: what the subject token held, within what the client may ask for
///   and what the named resources (`resource`, or `audience` naming a registered resource) accept.
///   Without either, the new token is for the subject token's own resources.
/// - Only an access token is issued, without a refresh token, and it expires no later than the
///   subject token. It is stored only while the user's access is as it was when the subject
///   token was read (docs/threat-model.md RV23), so a revocation racing the exchange wins.
///
/// Refusals follow §2.2.2: `invalid_request` for a subject or actor token that is not good here,
/// `invalid_target` for a resource or audience this server cannot issue for, `invalid_scope`.
struct TokenExchangeGrant: TokenGrant {
    let grantType = GrantTypes.tokenExchange
    let parameters: [GrantParameter] = [
        .required("subject_token"), .required("subject_token_type"), .optional("actor_token"), .optional("actor_token_type"),
        .optional("requested_token_type"), .optional("resource"), .optional("audience"), .optional("scope"),
    ]
    let refusal = "This client may not exchange tokens; an administrator must allow it (grant_types)."
    var isGrantedByDefault: Bool { false }
    func permits(_ type: ClientType) -> Bool { type.isConfidential }

    /// The token type URIs of RFC 8693 §3 that Latchkey reads and issues.
    static let accessTokenType = "urn:ietf:params:oauth:token-type:access_token"
    static let idTokenType = "urn:ietf:params:oauth:token-type:id_token"
    /// How many actors an `act` chain may hold.
    static let maximumActorDepth = 4

    func issue(_ request: TokenGrantRequest, using services: TokenGrantServices) async throws -> TokenResponse {
        let (body, client) = (request.body, request.client)
        if let requested = body["requested_token_type"], requested != Self.accessTokenType {
            throw OAuthError.invalidRequest("Latchkey issues access tokens only: requested_token_type \(Self.accessTokenType).")
        }
        let subject = try await ExchangedToken.read(
            request.required("subject_token"), type: request.required("subject_token_type"), role: "subject_token",
            for: client, proofKey: request.keyThumbprint, using: services)
        var actor = subject.actor
        if let actorToken = body["actor_token"] {
            guard let actorType = body["actor_token_type"] else {
                throw OAuthError.invalidRequest("actor_token_type is required with actor_token (RFC 8693 §2.1).")
            }
            let acting = try await ExchangedToken.read(
                actorToken, type: actorType, role: "actor_token", for: client, proofKey: request.keyThumbprint,
                ownOnly: true, using: services)
            actor = try Self.act(by: acting, above: subject.actor)
        } else if body["actor_token_type"] != nil {
            throw OAuthError.invalidRequest("actor_token_type was sent without an actor_token.")
        }

        // `audience` (§2.1) names the same registered resources `resource` does; with neither, the
        // new token is for what the subject token was for (never for no resource in particular).
        var named = body.all("resource") + body.all("audience")
        if named.isEmpty { named = subject.audience.uris }
        let audience: [ProtectedResource]
        switch try await services.issuance.namedResources(FormParameters(named.map { ("resource", $0) })) {
        case .failure(let error): throw error
        case .success(let found): audience = found
        }
        var scope = subject.scope
        if let text = body["scope"] {
            guard let requested = ScopeSet(parsing: text) else {
                throw OAuthError.invalidScope("The scope is malformed: scopes are separated by single spaces.")
            }
            if let wider = requested.first(where: { !subject.scope.contains($0) }) {
                throw OAuthError.invalidScope("The scope \(wider) is not in the subject token: an exchange may only narrow it.")
            }
            scope = requested
        } else {
            scope = ScopeSet(scope.filter { client.scopes.contains($0) })
            scope = try services.issuance.scope(scope, for: audience)
        }
        if let error = try await services.issuance.checkAllowed(scope, for: client) { throw error }
        if let error = services.issuance.checkScope(scope, against: audience) { throw error }
        guard !scope.isEmpty else {
            throw OAuthError.invalidScope("None of the subject token's scopes is one this client may ask for.")
        }
        // An ID token reaches only what the person consented to, resource by resource.
        if let consent = subject.consent, !audience.isEmpty, !consent.covers(scope, for: ResourceSet(audience.map(\.uri))) {
            throw OAuthError.invalidScope("The person has not consented to this scope for the named resource.")
        }
        // The user's access as it stands now, then the subject token read again: a revocation that
        // came between the two reads refuses the exchange; one that comes later makes the insert
        // below store nothing.
        var accessEpoch: Int?
        if let user = subject.userID {
            guard let found = try await services.store.user(id: user), found.disabledAt == nil else {
                throw ExchangedToken.refusal("subject_token")
            }
            accessEpoch = found.accessEpoch
            _ = try await ExchangedToken.read(
                request.required("subject_token"), type: request.required("subject_token_type"), role: "subject_token",
                for: client, proofKey: request.keyThumbprint, using: services)
        }

        let resources = ResourceSet(audience.map(\.uri))
        let grant = GrantRecord(
            id: services.issuance.newGrantID(), clientID: client.id, userID: subject.userID, scope: scope,
            createdAt: services.now, authTime: subject.authTime, resources: resources, amr: subject.amr, actor: actor)
        var issued = try await services.issuance.mintTokens(
            grantID: grant.id, client: client, userID: subject.userID, accessScope: scope, refreshScope: nil,
            target: TokenTarget(
                audience: audience, granted: resources, authTime: subject.authTime, amr: subject.amr,
                keyThumbprint: request.keyThumbprint, actor: actor, expiresBy: subject.expiresAt))
        if let accessEpoch {
            guard try await services.store.insertGrant(grant, tokens: issued.records, whileAccessEpoch: accessEpoch) else {
                throw ExchangedToken.refusal("subject_token")
            }
        } else {
            try await services.store.insertGrant(grant, tokens: issued.records)
        }
        services.event(
            .tokenIssued,
            [
                "grant_type": "token_exchange", "client_type": "\(client.type)", "client_id": "\(client.id)",
                "subject_client_id": "\(subject.clientID)", "delegated": "\(body["actor_token"] != nil)",
            ])
        issued.response.issuedTokenType = Self.accessTokenType
        return issued.response
    }

    /// The `act` claim naming `acting`, with the chain `previous` inside it (§4.1: the current
    /// actor outermost).
    static func act(by acting: ExchangedToken, above previous: String?) throws -> String {
        let depth = previous.map { $0.components(separatedBy: #""act":"#).count } ?? 0
        guard depth < maximumActorDepth else {
            throw OAuthError.invalidRequest("The subject token's chain of actors is already \(maximumActorDepth) long.")
        }
        var members = #"{"sub":"# + JSONText.quote(acting.subject)
        members += #","client_id":"# + JSONText.quote(acting.clientID.rawValue)
        if let previous { members += #","act":"# + previous }
        return members + "}"
    }
}

/// A subject or actor token of an exchange, read and checked.
struct ExchangedToken {
    /// `sub`: the user, or for a client's own token the client.
    var subject: String
    var userID: UserID?
    /// The client the token was issued to.
    var clientID: ClientID
    var scope: ScopeSet
    var expiresAt: Date
    var authTime: Date?
    var amr: AuthenticationMethods?
    /// The token's own `act`, when it was itself made by an exchange with an actor.
    var actor: String?
    /// The resources the token is for.
    var audience: ResourceSet = .none
    /// For an ID token: the person's consent to the client, which bounds what it exchanges for.
    var consent: ConsentRecord?

    /// The one refusal for a token that cannot be exchanged, whatever the reason (§2.2.2), so it
    /// tells nothing of which tokens exist.
    static func refusal(_ role: String) -> OAuthError {
        OAuthError.invalidRequest(
            "The \(role) is not a token this server issued that is still good and that this client may exchange.")
    }

    /// Reads `value` as a token of `type` (an access token or an ID token of this server) that
    /// `client` may present: `invalid_request` otherwise, naming `role`, and never saying whether
    /// the token exists.
    /// - Parameters:
    ///   - proofKey: the thumbprint of the DPoP key the request proved it holds: a token bound to a
    ///     key is taken only with a proof made with that key.
    ///   - ownOnly: only a token issued to `client` (an actor token: the client acts, or its user).
    static func read(
        _ value: String, type: String, role: String, for client: Client, proofKey: String?, ownOnly: Bool = false,
        using services: TokenGrantServices
    ) async throws -> ExchangedToken {
        let refusal = Self.refusal(role)
        let now = services.now
        switch type {
        case TokenExchangeGrant.accessTokenType:
            guard let token = try await services.store.token(presented: value), token.kind == .access,
                token.isActive(at: now), IntrospectionEndpoint.mayIntrospect(token, caller: client),
                !ownOnly || token.clientID == client.id
            else { throw refusal }
            if let bound = token.keyThumbprint, bound != proofKey {
                throw OAuthError.invalidRequest(
                    "The \(role) is bound to a DPoP key (RFC 9449): send a DPoP proof made with that key.")
            }
            return ExchangedToken(
                subject: token.userID?.rawValue ?? token.clientID.rawValue, userID: token.userID, clientID: token.clientID,
                scope: token.scope, expiresAt: token.expiresAt, authTime: token.grantAuthTime, amr: token.grantAMR,
                actor: token.grantActor, audience: token.audience)
        case TokenExchangeGrant.idTokenType:
            // Not a JWT access token nor a logout token, which the same keys sign
            // (docs/threat-model.md RV12, BL3).
            guard JWSHeader(value)?.isIDTokenType == true else { throw refusal }
            guard let claims = try await services.issuance.signingKeys.verify(value, as: IDTokenClaims.self, at: now),
                claims.iss == services.context.issuer, claims.aud == client.id.rawValue,
                Date(timeIntervalSince1970: TimeInterval(claims.exp)) > now
            else { throw refusal }
            // An ID token says who signed in and grants nothing: the exchange reaches no further
            // than what that person consented to for this client, and only while a grant made no
            // later than the ID token still stands. Disabling the person, a new password or a
            // revocation ends those grants, so an ID token from before them exchanges for nothing,
            // even once the person has authorized the app again.
            let user = UserID(rawValue: claims.sub)
            let issuedAt = Date(timeIntervalSince1970: TimeInterval(claims.iat))
            let grants = try await services.store.activeGrants(userID: user, at: now)
            guard grants.contains(where: { $0.clientID == client.id && $0.createdAt <= issuedAt.addingTimeInterval(1) }),
                let consent = try await services.store.consent(userID: user, clientID: client.id), !consent.scope.isEmpty
            else { throw refusal }
            return ExchangedToken(
                subject: claims.sub, userID: user, clientID: client.id, scope: consent.scope,
                expiresAt: Date(timeIntervalSince1970: TimeInterval(claims.exp)),
                authTime: claims.authTime.map { Date(timeIntervalSince1970: TimeInterval($0)) },
                amr: claims.amr.map { AuthenticationMethods(storeValue: $0.joined(separator: " ")) }, consent: consent)
        default:
            throw OAuthError.invalidRequest(
                "The \(role)_type must be \(TokenExchangeGrant.accessTokenType) or \(TokenExchangeGrant.idTokenType).")
        }
    }
}
