import Foundation
import LatchkeyClient
import LatchkeyCore
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("Client: RFC 9470 step-up challenges, and authorization requests that answer them")
struct StepUpChallengeTests {
    @Test("RFC 9470 §3's two examples: acr_values, and max_age")
    func rfcExamples() throws {
        let first =
            #"Bearer error="insufficient_user_authentication","#
            + #" error_description="A different authentication level is required", acr_values="myACR""#
        let level = try #require(StepUpChallenge(wwwAuthenticate: first))
        #expect(level == StepUpChallenge(acrValues: ["myACR"], errorDescription: "A different authentication level is required"))
        let second =
            #"Bearer error="insufficient_user_authentication","#
            + #" error_description="More recent authentication is required", max_age="5""#
        let recent = try #require(StepUpChallenge(wwwAuthenticate: second))
        #expect(recent.maxAge == 5 && recent.acrValues.isEmpty)
        #expect(recent.errorDescription == "More recent authentication is required")
    }

    @Test("What LatchkeyResource sends: resource_metadata first, several acr values, max_age")
    func latchkeyResource() {
        let header =
            #"Bearer resource_metadata="http://127.0.0.1:9001/.well-known/oauth-protected-resource/mcp", "#
            + #"error="insufficient_user_authentication", error_description="A more recent authentication is required.", "#
            + #"acr_values="urn:latchkey:acr:2 urn:example:strong", max_age="300""#
        let challenge = StepUpChallenge(wwwAuthenticate: header)
        #expect(challenge?.acrValues == ["urn:latchkey:acr:2", "urn:example:strong"])
        #expect(challenge?.maxAge == 300)
        #expect(challenge?.description == "acr_values urn:latchkey:acr:2 urn:example:strong, max_age 300")
    }

    @Test("Scheme and parameter names in any case, token values, spaces around =, and escapes in quoted strings")
    func grammar() {
        let loose = StepUpChallenge(
            wwwAuthenticate: #"bEaReR ERROR = insufficient_user_authentication ,Max_Age=0,  ACR_Values="a  b""#)
        #expect(loose == StepUpChallenge(acrValues: ["a", "b"], maxAge: 0))
        let escaped = StepUpChallenge(
            wwwAuthenticate:
                #"Bearer error="insufficient_user_authentication", error_description="say \"again\" \\ now", acr_values="\u\r\n""#
        )
        #expect(escaped?.errorDescription == #"say "again" \ now"#)
        #expect(escaped?.acrValues == ["urn"])
        // A challenge that names nothing is still one: sign in again.
        #expect(StepUpChallenge(wwwAuthenticate: #"Bearer error="insufficient_user_authentication""#) == StepUpChallenge())
        // The DPoP scheme, as a resource answers a DPoP-bound token (RFC 9449 §7.1).
        #expect(
            StepUpChallenge(wwwAuthenticate: #"DPoP algs="ES256 RS256", error="insufficient_user_authentication", max_age=60"#)?
                .maxAge == 60)
    }

    @Test("Other errors, other schemes and no challenge at all are not step-up challenges")
    func otherAnswers() {
        for header in [
            #"Bearer error="invalid_token", error_description="The token has expired.""#,
            #"Bearer error="insufficient_scope", scope="mcp:tools""#,
            #"Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource""#,
            #"Bearer error="INSUFFICIENT_USER_AUTHENTICATION""#,  // error codes are case-sensitive
            #"Basic realm="api", error="insufficient_user_authentication""#,
            "Bearer", "",
        ] {
            #expect(StepUpChallenge(wwwAuthenticate: header) == nil, "\(header)")
        }
    }

    @Test("Malformed values give nil: unterminated quotes, missing commas, repeated parameters, bad max_age")
    func malformed() {
        for header in [
            #"Bearer error="insufficient_user_authentication", acr_values="a"#,
            #"Bearer error="insufficient_user_authentication" acr_values="a""#,
            #"Bearer error="insufficient_user_authentication", acr_values="a", acr_values="b""#,
            #"Bearer error="insufficient_user_authentication", ACR_VALUES="a", acr_values="a""#,
            #"Bearer error="insufficient_user_authentication", max_age="-1""#,
            #"Bearer error="insufficient_user_authentication", max_age="5s""#,
            #"Bearer error="insufficient_user_authentication", max_age="""#,
            #"Bearer error="insufficient_user_authentication", acr_values=""#,
            "Bearer error=\"insufficient_user_authentication\", error_description=\"a\u{1}b\"",
        ] {
            #expect(StepUpChallenge(wwwAuthenticate: header) == nil, "\(header)")
        }
    }

    /// Several challenges in one value (repeated headers joined with commas): each is read as a
    /// whole, and the first Bearer or DPoP one with the error counts; the rest are ignored.
    @Test("Several challenges in one header: the step-up one is found among the others")
    func severalChallenges() {
        let header =
            #"Newauth realm="apps", type=1, title="Login to \"apps\"", Negotiate abc==, "#
            + #"Bearer error="insufficient_user_authentication", acr_values="urn:latchkey:acr:2", DPoP algs="ES256""#
        #expect(StepUpChallenge(wwwAuthenticate: header)?.acrValues == ["urn:latchkey:acr:2"])
        #expect(StepUpChallenge(wwwAuthenticate: #"DPoP algs="ES256", Bearer error="invalid_token""#) == nil)
    }

    @Test("acr_values and max_age go on the authorization request only when asked for, space-separated")
    func authorizationRequest() throws {
        let provider = ProviderConfiguration(
            issuer: "https://auth.example.com", authorizationEndpoint: URL(string: "https://auth.example.com/oauth2/authorize")!,
            tokenEndpoint: URL(string: "https://auth.example.com/oauth2/token")!, issParameterSupported: true)
        let client = OAuthClient(provider: provider, clientID: "notes")
        let plain = try FormParameters(
            decoding: try #require(
                client.beginAuthorization(scope: ["profile"], redirectURI: "com.example.notes:/cb").authorizationURL.query))
        #expect(plain["acr_values"] == nil && plain["max_age"] == nil)
        let challenge = StepUpChallenge(acrValues: ["urn:latchkey:acr:2", "urn:example:strong"], maxAge: 300)
        let session = client.beginAuthorization(
            scope: ["profile"], redirectURI: "com.example.notes:/cb", acrValues: challenge.acrValues,
            maxAge: challenge.maxAge)
        let query = try FormParameters(decoding: try #require(session.authorizationURL.query))
        #expect(query["acr_values"] == "urn:latchkey:acr:2 urn:example:strong")
        #expect(query["max_age"] == "300")
        #expect(query["code_challenge_method"] == "S256" && query["scope"] == "profile")
        #expect(challenge.authorizationParameters.map { $0.0 } == ["acr_values", "max_age"])
    }
}
