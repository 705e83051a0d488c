import Foundation
import LatchkeyCore
import LatchkeyServer
import LatchkeyTestSupport
import Testing

/// A grant is one type and one registry line: the token endpoint dispatches through the registry,
/// checks the client's grant list, its type and the required parameters first, and the metadata
/// lists what it holds.
@Suite("Grant registry")
struct GrantRegistryTests {
    /// A grant as a later feature would add one (in its own file, in the server module).
    struct EchoGrant: TokenGrant {
        let grantType = "urn:example:params:oauth:grant-type:echo"
        let parameters: [GrantParameter] = [.required("word"), .optional("scope")]
        let refusal = "Only service clients may echo."
        func permits(_ type: ClientType) -> Bool { type == .service }
        func issue(_ request: TokenGrantRequest, using services: TokenGrantServices) async throws -> TokenResponse {
            TokenResponse(
                accessToken: "echo-" + request.required("word"), expiresIn: 1, refreshToken: nil, scope: "",
                userID: nil)
        }
    }

    @Test("The metadata's grant_types_supported is the registry's, in its order")
    func metadataFromRegistry() async throws {
        let fixture = try await Fixture.make()
        let metadata = try await fixture.server.metadata()
        #expect(Array(metadata.grantTypesSupported.prefix(6)) == GrantRegistry.standard.grantTypes)
        #expect(
            GrantRegistry.standard.grantTypes == [
                "authorization_code", "refresh_token", "client_credentials", "urn:ietf:params:oauth:grant-type:device_code",
                "urn:ietf:params:oauth:grant-type:token-exchange", "urn:ietf:params:oauth:grant-type:jwt-bearer",
            ])
    }

    @Test("A registered grant is dispatched to, after the grant-list, client-type and required-parameter checks, and listed")
    func addedGrant() async throws {
        let fixture = try await Fixture.make()
        let server = AuthorizationServer(
            store: fixture.store, configuration: fixture.server.configuration,
            passwordHasher: fixture.server.passwordHasher, signingKeys: fixture.server.signingKeys,
            grants: GrantRegistry(GrantRegistry.standard.grants + [EchoGrant()]))
        let echo = EchoGrant().grantType
        #expect(try await server.metadata().grantTypesSupported.contains(echo))
        #expect(try await !fixture.server.metadata().grantTypesSupported.contains(echo))

        func token(_ parameters: [(String, String)], basic: String? = nil) async -> Result<TokenResponse, TokenEndpointError> {
            await server.tokenEndpoint.token(TokenRequest(body: FormParameters(parameters), authorization: basic))
        }
        // A client uses a grant its list holds: the service client gets it from an administrator.
        let unlisted = await token([("grant_type", echo), ("word", "hello")], basic: fixture.serviceBasic)
        #expect(unlisted.failure?.error.code == .unauthorizedClient)
        var service = fixture.service
        service.grantTypes.append(echo)
        #expect(try await fixture.store.updateClient(service))
        let ok = await token([("grant_type", echo), ("word", "hello")], basic: fixture.serviceBasic)
        #expect((try? ok.get())?.accessToken == "echo-hello")
        let missing = await token([("grant_type", echo)], basic: fixture.serviceBasic)
        #expect(missing.failure?.error.code == .invalidRequest)
        #expect(missing.failure?.error.errorDescription == "The word parameter is missing.")
        let refused = await token([("grant_type", echo), ("word", "x"), ("client_id", fixture.native.id.rawValue)])
        #expect(refused.failure?.error.code == .unauthorizedClient)
        // Not registered on the standard server.
        let unknown = await fixture.token([("grant_type", echo), ("word", "x")], authorization: fixture.serviceBasic)
        #expect(unknown.failure?.error.code == .unsupportedGrantType)
    }

    @Test("A client's grants are its grant_types list: the defaults of its kind, and what an administrator adds within the rules")
    func grantLists() async throws {
        let fixture = try await Fixture.make()
        let registry = GrantRegistry.standard
        #expect(registry.defaultGrantTypes(for: .native) == ["authorization_code", "refresh_token"])
        #expect(registry.defaultGrantTypes(for: .service) == ["client_credentials"])
        #expect(registry.optionalGrantTypes(for: .browser) == [GrantTypes.implicit])
        #expect(
            registry.optionalGrantTypes(for: .web) == [GrantTypes.deviceCode, GrantTypes.tokenExchange, GrantTypes.jwtBearer])
        #expect(registry.optionalGrantTypes(for: .service) == [GrantTypes.tokenExchange, GrantTypes.jwtBearer])
        #expect(registry.problem(["authorization_code", "refresh_token", GrantTypes.tokenExchange], for: .native) != nil)
        #expect(registry.problem(["client_credentials"], for: .native) != nil)
        #expect(registry.problem(["authorization_code", "refresh_token", "implicit"], for: .native) != nil)
        #expect(registry.problem(["authorization_code", "refresh_token", GrantTypes.deviceCode], for: .native) == nil)

        // The token endpoint asks the list, not the kind: an app without refresh_token in its list
        // cannot refresh, even with a refresh token in hand.
        let issued = try await fixture.exchange(try await fixture.code()).get()
        var native = fixture.native
        native.grantTypes = ["authorization_code"]
        #expect(try await fixture.store.updateClient(native))
        #expect(await fixture.refresh(issued.refreshToken!).failure?.error.code == .unauthorizedClient)

        // An administrator gives grants by the list, and is held to the rules.
        let tv = try await fixture.admin.registerClient(
            ClientSettings(type: .native, name: "TV", grantTypes: ["authorization_code", "refresh_token", GrantTypes.deviceCode]))
        #expect(tv.client.allowDeviceCode && tv.client.grantTypes.count == 3)
        await #expect(throws: AdministrationError.self) {
            _ = try await fixture.admin.registerClient(
                ClientSettings(
                    type: .native, name: "Bad", redirectURIs: ["com.example.app:/cb"], grantTypes: ["client_credentials"]))
        }
    }
}
