import Foundation
import LatchkeyCore
import LatchkeyServer
import LatchkeyTestSupport
import Testing

/// A grant is one type and one registry line: the token endpoint dispatches through the registry,
/// checks the client type and the required parameters first, and the metadata lists what it holds.
@Suite("Grant registry")
struct GrantRegistryTests {
    /// A grant as a later feature would add one (in its own file, in the server module).
    struct EchoGrant: TokenGrant {
        let grantType = "urn:example:params:oauth:grant-type:echo"
        let parameters: [GrantParameter] = [.required("word"), .optional("scope")]
        let refusal = "Only service clients may echo."
        func permits(_ type: ClientType) -> Bool { type == .service }
        func issue(_ request: TokenGrantRequest, on server: AuthorizationServer) async throws -> TokenResponse {
            TokenResponse(
                accessToken: "echo-" + request.required("word"), expiresIn: 1, refreshToken: nil, scope: "",
                userID: nil)
        }
    }

    @Test("The metadata's grant_types_supported is the registry's, in its order")
    func metadataFromRegistry() async throws {
        let fixture = try await Fixture.make()
        let metadata = try await fixture.server.metadata()
        #expect(Array(metadata.grantTypesSupported.prefix(4)) == GrantRegistry.standard.grantTypes)
        #expect(
            GrantRegistry.standard.grantTypes == [
                "authorization_code", "refresh_token", "client_credentials", "urn:ietf:params:oauth:grant-type:device_code",
            ])
    }

    @Test("A registered grant is dispatched to, after the client-type and required-parameter checks, and listed")
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
            await server.token(TokenRequest(body: FormParameters(parameters), authorization: basic))
        }
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
}
