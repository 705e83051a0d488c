import Foundation
import LatchkeyCore

/// The scope an access token needs for the admin API. Only a `service` client's own token, from
/// client credentials, carries it there: a token a user granted an app never reaches the API.
public let adminAPIScope = "latchkey:admin"

/// An admin API answer: a status and a JSON body (none for 204).
public struct AdminAPIResponse: Sendable, Equatable {
    public var status: Int
    public var json: String?

    init(_ status: Int, _ object: Any?) {
        self.status = status
        json = object.map(Self.encode)
    }

    /// An error body: `error`, `error_description` and, when one setting is at fault, `field`.
    /// Client settings use RFC 7591 §3.2.2's codes (`invalid_redirect_uri`, `invalid_client_metadata`).
    public static func error(_ status: Int, _ code: String, _ description: String, field: String? = nil) -> AdminAPIResponse {
        var body: [String: Any] = ["error": code, "error_description": description]
        if let field { body["field"] = field }
        return AdminAPIResponse(status, body)
    }

    static func invalid(_ error: AdministrationError, clientMetadata: Bool = false) -> AdminAPIResponse {
        let code =
            clientMetadata
            ? (error.field == "redirect_uris" ? "invalid_redirect_uri" : "invalid_client_metadata") : "invalid_request"
        return .error(400, code, error.description, field: error.field)
    }

    static func notFound(_ what: String) -> AdminAPIResponse { .error(404, "not_found", "There is no \(what).") }

    static func encode(_ object: Any) -> String {
        let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
        return data.map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }
}

/// The admin API (`/admin/api/…`): apps, users, scopes and grants as JSON, for automation. Apps
/// use RFC 7591's client-metadata member names plus `application_type`, `consent_markdown`,
/// `owner`, `first_party` and `allow_implicit`, the same names the console's forms carry.
extension Console {
    /// The service client behind an `Authorization: Bearer` header whose token carries
    /// ``adminAPIScope`` and was issued to the client itself (client credentials, no user).
    public func adminAPIClient(authorization: String?) async throws -> Result<Client, BearerError> {
        switch try await accessTokens.validateBearer(authorization, requiring: adminAPIScope) {
        case .failure(let error): return .failure(error)
        case .success(let token):
            guard token.userID == nil, let client = try await clients.client(id: token.clientID), client.type == .service else {
                return .failure(.insufficientScope(adminAPIScope))
            }
            return .success(client)
        }
    }

    private func administration(for client: Client) -> Administration { administration.acting(as: client) }

    // MARK: Clients

    public func apiClients() async throws -> AdminAPIResponse {
        let usernames = try await usernamesByID()
        return AdminAPIResponse(200, ["clients": try await clients.clients().map { clientObject($0, usernames) }])
    }

    public func apiClient(id: String) async throws -> AdminAPIResponse {
        guard let client = try await clients.client(id: ClientID(rawValue: id)) else { return .notFound("client \(id)") }
        return AdminAPIResponse(200, clientObject(client, try await usernamesByID()))
    }

    /// `POST /admin/api/clients`: 201 with the client and, for a confidential one, its secret, shown once.
    public func apiRegisterClient(_ body: [UInt8], by caller: Client) async throws -> AdminAPIResponse {
        do {
            let registered = try await administration(for: caller).registerClient(
                try ClientSettings(try Self.decode(ClientInput.self, body), registered: nil, body: body))
            var object = clientObject(registered.client, try await usernamesByID())
            if let secret = registered.secret {
                object["client_secret"] = secret
                object["client_secret_expires_at"] = 0
            }
            return AdminAPIResponse(201, object)
        } catch let error as AdministrationError {
            return .invalid(error, clientMetadata: true)
        }
    }

    /// `PUT /admin/api/clients/{id}`: replaces every setting (a member left out is cleared);
    /// `application_type` may be left out but cannot change.
    public func apiReplaceClient(id: String, _ body: [UInt8], by caller: Client) async throws -> AdminAPIResponse {
        guard let client = try await clients.client(id: ClientID(rawValue: id)) else { return .notFound("client \(id)") }
        do {
            let input = try Self.decode(ClientInput.self, body)
            if let named = input.clientID, named != id {
                throw AdministrationError("client_id in the body names another client than the path.", field: "client_id")
            }
            let settings = try ClientSettings(input, registered: client.type, body: body)
            let updated = try await administration(for: caller).updateClient(id: id, settings)
            return AdminAPIResponse(200, clientObject(updated, try await usernamesByID()))
        } catch let error as AdministrationError {
            return .invalid(error, clientMetadata: true)
        }
    }

    public func apiDeleteClient(id: String, by caller: Client) async throws -> AdminAPIResponse {
        guard id != caller.id.rawValue else {
            return .error(400, "invalid_request", "A client cannot delete itself through its own token.")
        }
        return try await administration(for: caller).deleteClient(id: id) ? AdminAPIResponse(204, nil) : .notFound("client \(id)")
    }

    private func usernamesByID() async throws -> [UserID: String] {
        Dictionary(try await users.users().map { ($0.id, $0.username.rawValue) }) { first, _ in first }
    }

    private func clientObject(_ client: Client, _ usernames: [UserID: String]) -> [String: Any] {
        var object: [String: Any] = [
            "client_id": client.id.rawValue, "client_id_issued_at": Int(client.createdAt.timeIntervalSince1970),
            "client_name": client.name, "application_type": client.type.rawValue, "redirect_uris": client.redirectURIs,
            "scope": client.scopes.description, "grant_types": client.grantTypes,
            "response_types": client.type == .service ? [] : (client.allowImplicit ? ["code", "token"] : ["code"]),
            "token_endpoint_auth_method": client.tokenEndpointAuthMethod,
            "first_party": client.firstParty, "allow_implicit": client.allowImplicit,
            "require_pushed_authorization_requests": client.requirePushedAuthorizationRequests,
            "allow_device_code": client.allowDeviceCode,
        ]
        if let logo = client.logoURI { object["logo_uri"] = logo }
        if let policy = client.privacyPolicyURI { object["policy_uri"] = policy }
        if let uri = client.backchannelLogoutURI { object["backchannel_logout_uri"] = uri }
        if let jwksURI = client.keys?.jwksURI { object["jwks_uri"] = jwksURI }
        if let jwks = client.keys?.jwks, let set = try? JSONSerialization.jsonObject(with: Data(jwks.utf8)) {
            object["jwks"] = set
        }
        if let markdown = client.consentMarkdown { object["consent_markdown"] = markdown }
        if let owner = client.ownerUserID { object["owner"] = usernames[owner] ?? owner.rawValue }
        if let seconds = client.accessTokenLifetime { object["access_token_lifetime"] = seconds }
        if let seconds = client.refreshTokenLifetime { object["refresh_token_lifetime"] = seconds }
        if client.type != .service {
            object["id_token_signed_response_alg"] = client.idTokenSigningAlgorithm.rawValue
            object["post_logout_redirect_uris"] = client.postLogoutRedirectURIs
        }
        return object
    }

    // MARK: Users

    public func apiUsers() async throws -> AdminAPIResponse {
        AdminAPIResponse(200, ["users": try await users.users().map(userObject)])
    }

    public func apiUser(id: String) async throws -> AdminAPIResponse {
        guard let user = try await users.user(id: UserID(rawValue: id)) else { return .notFound("user \(id)") }
        return AdminAPIResponse(200, userObject(user))
    }

    /// `POST /admin/api/users`: `username`, `password`, optional `name` and `role`.
    public func apiCreateUser(_ body: [UInt8], by caller: Client) async throws -> AdminAPIResponse {
        do {
            let input = try Self.decode(UserInput.self, body)
            let user = try await administration(for: caller).createUser(
                username: input.username ?? "", displayName: input.name, password: input.password ?? "",
                role: input.role ?? .none, email: input.email, emailVerified: input.emailVerified ?? false)
            return AdminAPIResponse(201, userObject(user))
        } catch let error as AdministrationError {
            return .invalid(error)
        } catch let busy as PasswordHashingBusy {
            return .error(503, "temporarily_unavailable", "Try again in \(busy.retryAfter) seconds.")
        }
    }

    /// `PATCH /admin/api/users/{id}`: any of `name`, `email`, `email_verified`, `role`, `disabled`,
    /// `second_factor_required` and `password`, applied in that order (an empty `name` or `email`
    /// clears it).
    public func apiUpdateUser(id: String, _ body: [UInt8], by caller: Client) async throws -> AdminAPIResponse {
        guard let user = try await users.user(id: UserID(rawValue: id)) else { return .notFound("user \(id)") }
        let admin = administration(for: caller)
        let username = user.username.rawValue
        do {
            let change = try Self.decode(UserChange.self, body)
            if let password = change.password {
                try admin.passwordPolicy.check(password, username: username, email: change.email ?? user.email)
            }
            try Administration.checkEmail(change.email)
            if change.name != nil || change.email != nil || change.emailVerified != nil {
                _ = try await admin.setProfile(
                    username: username, displayName: change.name, email: change.email, emailVerified: change.emailVerified)
            }
            if let role = change.role { try await admin.setRole(username: username, role: role) }
            if let disabled = change.disabled { try await admin.setDisabled(username: username, disabled) }
            if let required = change.secondFactorRequired {
                try await admin.setSecondFactorRequired(username: username, required)
            }
            if let password = change.password { try await admin.setPassword(username: username, password: password) }
            return try await apiUser(id: id)
        } catch let error as AdministrationError {
            return .invalid(error)
        } catch let busy as PasswordHashingBusy {
            return .error(503, "temporarily_unavailable", "Try again in \(busy.retryAfter) seconds.")
        }
    }

    public func apiDeleteUser(id: String, by caller: Client) async throws -> AdminAPIResponse {
        guard let user = try await users.user(id: UserID(rawValue: id)) else { return .notFound("user \(id)") }
        _ = try await administration(for: caller).deleteUser(username: user.username.rawValue)
        return AdminAPIResponse(204, nil)
    }

    private func userObject(_ user: User) -> [String: Any] {
        var object: [String: Any] = [
            "user_id": user.id.rawValue, "username": user.username.rawValue, "role": user.role.rawValue,
            "disabled": user.disabledAt != nil, "created_at": Int(user.createdAt.timeIntervalSince1970),
            "second_factor_required": user.secondFactorRequired,
        ]
        if let name = user.displayName { object["name"] = name }
        if let email = user.email {
            object["email"] = email
            object["email_verified"] = user.emailVerified
        }
        return object
    }

    // MARK: Scopes and grants

    public func apiScopes() async throws -> AdminAPIResponse {
        AdminAPIResponse(
            200, ["scopes": try await catalogue.scopeCatalogue().map { ["name": $0.name, "description": $0.description] }])
    }

    /// `POST /admin/api/scopes`: adds a scope, or changes its description.
    public func apiSaveScope(_ body: [UInt8], by caller: Client) async throws -> AdminAPIResponse {
        do {
            let input = try Self.decode(ScopeInput.self, body)
            let name = input.name ?? ""
            let description = input.description ?? ""
            try await administration(for: caller).addScope(name: name, description: description)
            return AdminAPIResponse(200, ["name": name, "description": description])
        } catch let error as AdministrationError {
            return .invalid(error)
        }
    }

    public func apiDeleteScope(name: String, by caller: Client) async throws -> AdminAPIResponse {
        do {
            try await administration(for: caller).deleteScope(name: name)
            return AdminAPIResponse(204, nil)
        } catch let error as AdministrationError {
            return .error(409, "invalid_request", error.description)
        }
    }

    /// `GET /admin/api/grants?user_id=…`: the user's connected apps.
    public func apiGrants(userID: String?) async throws -> AdminAPIResponse {
        guard let userID else { return .error(400, "invalid_request", "Name a user: ?user_id=…", field: "user_id") }
        guard let user = try await users.user(id: UserID(rawValue: userID)) else { return .notFound("user \(userID)") }
        let apps = try await account.connectedApps(userID: user.id).map {
            [
                "client_id": $0.client.id.rawValue, "client_name": $0.client.name, "scope": $0.scope.description,
                "created_at": Int($0.authorizedAt.timeIntervalSince1970),
            ] as [String: Any]
        }
        return AdminAPIResponse(200, ["user_id": user.id.rawValue, "grants": apps])
    }

    /// `DELETE /admin/api/grants?user_id=…&client_id=…`: ends everything the user granted the app.
    public func apiRevokeGrants(userID: String?, clientID: String?, by caller: Client) async throws -> AdminAPIResponse {
        guard let userID, let clientID else {
            return .error(400, "invalid_request", "Name a user and an app: ?user_id=…&client_id=…")
        }
        guard let user = try await users.user(id: UserID(rawValue: userID)) else { return .notFound("user \(userID)") }
        try await administration(for: caller).revokeAuthorization(username: user.username.rawValue, clientID: clientID)
        return AdminAPIResponse(204, nil)
    }

    // MARK: JSON input

    /// Decodes one JSON object, refusing members `T` does not have and values of the wrong type,
    /// each with the member's name.
    static func decode<T: Decodable & MemberNamed>(_: T.Type, _ body: [UInt8]) throws -> T {
        guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else {
            throw AdministrationError("The body must be one JSON object.")
        }
        let known = Set(T.CodingKeys.allCases.map(\.stringValue))
        if let unknown = object.keys.sorted().first(where: { !known.contains($0) }) {
            throw AdministrationError("\(unknown) is not a member Latchkey reads here.", field: unknown)
        }
        // A member is given or left out: `null` would mean either, so it is refused.
        if let null = object.keys.sorted().first(where: { object[$0] is NSNull }) {
            throw AdministrationError("\(null) must not be null: leave it out instead.", field: null)
        }
        do {
            return try JSONDecoder().decode(T.self, from: Data(body))
        } catch let error as DecodingError {
            let context: DecodingError.Context
            var kind = "of another kind"
            switch error {
            case .typeMismatch(let expected, let found):
                context = found
                kind =
                    expected == Bool.self
                    ? "true or false"
                    : expected == String.self
                        ? "a string"
                        : expected == Int.self
                            ? "a number"
                            : "an array of strings"
            case .valueNotFound(_, let found), .keyNotFound(_, let found): context = found
            case .dataCorrupted(let found):
                context = found
                kind = "one of the values Latchkey knows"
            @unknown default: throw AdministrationError("The body could not be read.")
            }
            let field = context.codingPath.first?.stringValue ?? "body"
            throw AdministrationError("\(field) must be \(kind).", field: field)
        }
    }
}

/// A JSON input whose members are its coding keys.
protocol MemberNamed: Decodable {
    associatedtype CodingKeys: CodingKey & CaseIterable
}

/// `POST /admin/api/users`.
struct UserInput: MemberNamed {
    var username: String?
    var name: String?
    var password: String?
    var role: UserRole?
    var email: String?
    var emailVerified: Bool?
    enum CodingKeys: String, CodingKey, CaseIterable {
        case username, name, password, role, email
        case emailVerified = "email_verified"
    }
}

/// `PATCH /admin/api/users/{id}`.
struct UserChange: MemberNamed {
    var role: UserRole?
    var disabled: Bool?
    var password: String?
    var name: String?
    var email: String?
    var emailVerified: Bool?
    var secondFactorRequired: Bool?
    enum CodingKeys: String, CodingKey, CaseIterable {
        case role, disabled, password, name, email
        case emailVerified = "email_verified"
        case secondFactorRequired = "second_factor_required"
    }
}

/// `POST /admin/api/scopes`.
struct ScopeInput: MemberNamed {
    var name: String?
    var description: String?
    enum CodingKeys: String, CodingKey, CaseIterable { case name, description }
}

/// An app object of the admin API, as sent: RFC 7591 names plus Latchkey's own.
struct ClientInput: MemberNamed {
    var clientName: String?
    var applicationType: String?
    var redirectURIs: [String]?
    var scope: String?
    var logoURI: String?
    var policyURI: String?
    var consentMarkdown: String?
    var owner: String?
    var firstParty: Bool?
    var allowImplicit: Bool?
    var accessTokenLifetime: Int?
    var refreshTokenLifetime: Int?
    var idTokenSignedResponseAlg: String?
    var postLogoutRedirectURIs: [String]?
    var requirePushedAuthorizationRequests: Bool?
    var allowDeviceCode: Bool?
    /// The client's grants (RFC 7591 §2); without it, the type's defaults and the two flags above.
    var grantTypes: [String]?
    // Read back as the API wrote them; they must agree with the type.
    var responseTypes: [String]?
    var tokenEndpointAuthMethod: String?
    var clientID: String?
    var clientIDIssuedAt: Int?
    /// `jwks_uri`, or `jwks` (an object, read from the body as it is: see ``ClientSettings/init(_:registered:body:)``).
    var jwksURI: String?
    var jwks: JSONObjectMember?
    var backchannelLogoutURI: String?

    enum CodingKeys: String, CodingKey, CaseIterable {
        case clientName = "client_name", applicationType = "application_type", redirectURIs = "redirect_uris", scope
        case logoURI = "logo_uri", policyURI = "policy_uri", consentMarkdown = "consent_markdown", owner
        case firstParty = "first_party", allowImplicit = "allow_implicit", grantTypes = "grant_types"
        case accessTokenLifetime = "access_token_lifetime", refreshTokenLifetime = "refresh_token_lifetime"
        case responseTypes = "response_types", tokenEndpointAuthMethod = "token_endpoint_auth_method"
        case clientID = "client_id", clientIDIssuedAt = "client_id_issued_at"
        case idTokenSignedResponseAlg = "id_token_signed_response_alg"
        case postLogoutRedirectURIs = "post_logout_redirect_uris"
        case requirePushedAuthorizationRequests = "require_pushed_authorization_requests"
        case allowDeviceCode = "allow_device_code"
        case jwksURI = "jwks_uri", jwks
        case backchannelLogoutURI = "backchannel_logout_uri"
    }
}

/// A member that must be a JSON object, whose content the caller reads from the body itself.
struct JSONObjectMember: Decodable {
    private struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    init(from decoder: any Decoder) throws { _ = try decoder.container(keyedBy: AnyKey.self) }
}

extension ClientSettings {
    /// Reads an admin API app object. `registered` is the type when replacing (it cannot change).
    /// `body` is the object as sent, for `jwks`, kept as the client wrote it.
    init(_ input: ClientInput, registered: ClientType?, body: [UInt8]) throws {
        guard let type = registered ?? input.applicationType.flatMap(ClientType.init(rawValue:)) else {
            throw AdministrationError("application_type must be native, browser, web or service.", field: "application_type")
        }
        if let named = input.applicationType, named != type.rawValue {
            throw AdministrationError("A client's application_type cannot change.", field: "application_type")
        }
        var algorithm = SigningAlgorithm.rs256
        if let named = input.idTokenSignedResponseAlg {
            guard let known = SigningAlgorithm(rawValue: named) else {
                throw AdministrationError(
                    "id_token_signed_response_alg must be RS256 or ES256.", field: "id_token_signed_response_alg")
            }
            algorithm = known
        }
        self.init(
            type: type, name: input.clientName ?? "", redirectURIs: input.redirectURIs ?? [],
            scopes: (input.scope ?? "").split(separator: " ").map(String.init), logoURI: input.logoURI,
            consentMarkdown: input.consentMarkdown, privacyPolicyURI: input.policyURI, ownerUsername: input.owner,
            allowImplicit: input.allowImplicit ?? false, firstParty: input.firstParty ?? false,
            accessTokenLifetime: input.accessTokenLifetime, refreshTokenLifetime: input.refreshTokenLifetime,
            idTokenSigningAlgorithm: algorithm, postLogoutRedirectURIs: input.postLogoutRedirectURIs ?? [],
            requirePushedAuthorizationRequests: input.requirePushedAuthorizationRequests ?? false,
            allowDeviceCode: input.allowDeviceCode ?? false, grantTypes: input.grantTypes,
            backchannelLogoutURI: input.backchannelLogoutURI)
        var jwks: String?
        if input.jwks != nil, let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any],
            let set = object["jwks"], let data = try? JSONSerialization.data(withJSONObject: set, options: [.sortedKeys])
        {
            jwks = String(decoding: data, as: UTF8.self)
        }
        if jwks != nil, input.jwksURI != nil {
            throw AdministrationError("Send jwks or jwks_uri, not both (RFC 7591 §2).", field: "jwks")
        }
        keys = ClientKeys(jwks: jwks, jwksURI: input.jwksURI)
        // What the type and keys decide may be sent back as read, never otherwise (RFC 7591 §2);
        // private_key_jwt without keys is refused rather than read as a secret.
        let method = keys != nil ? "private_key_jwt" : (type.isConfidential ? "client_secret_basic" : "none")
        if let sent = input.tokenEndpointAuthMethod, sent != method {
            throw AdministrationError(
                sent == "private_key_jwt"
                    ? "token_endpoint_auth_method private_key_jwt needs jwks or jwks_uri."
                    : "This \(type.rawValue) client authenticates with \(method).",
                field: "token_endpoint_auth_method")
        }
        // The flags, when sent beside grant_types, must say what the list says.
        if let sent = input.allowImplicit, sent != allowImplicit {
            throw AdministrationError("allow_implicit and grant_types disagree.", field: "allow_implicit")
        }
        if let sent = input.allowDeviceCode, sent != allowDeviceCode {
            throw AdministrationError("allow_device_code and grant_types disagree.", field: "allow_device_code")
        }
        let responses = type == .service ? [] : (allowImplicit ? ["code", "token"] : ["code"])
        if let sent = input.responseTypes, Set(sent) != Set(responses) {
            throw AdministrationError(
                "response_types follow from application_type: \(responses.joined(separator: ", ")).", field: "response_types")
        }
    }
}
