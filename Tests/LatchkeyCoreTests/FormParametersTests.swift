import LatchkeyCore
import Testing

@Suite("application/x-www-form-urlencoded codec")
struct FormParametersTests {
    @Test("Decodes percent-encoding and + as space, in order")
    func decodes() throws {
        let form = try FormParameters(decoding: "a=1&b=x+y%2Bz&c=%C3%A9&empty=&flag")
        #expect(form["a"] == "1")
        #expect(form["b"] == "x y+z")
        #expect(form["c"] == "é")
        #expect(form["empty"] == nil, "an empty value counts as omitted (RFC 6749 §3.1)")
        #expect(form["flag"] == nil)
        #expect(form.repeatedNames.isEmpty)
    }

    @Test("Records repeated names instead of picking one value (RFC 6749 §3.1, docs/threat-model.md T30/T31)")
    func repeated() throws {
        let form = try FormParameters(decoding: "code=a&state=s&code=b&code=c")
        #expect(form.repeatedNames == ["code"])
        #expect(form.isRepeated("code"))
        #expect(!form.isRepeated("state"))
    }

    @Test(
        "Refuses malformed percent-encoding and invalid UTF-8 (T34, T35)",
        arguments: [
            "code=%ZZ", "code=%", "code=%4", "code=%C3%28", "code=%FF",
        ])
    func malformed(text: String) {
        #expect(throws: FormParameters.DecodingError.self) { try FormParameters(decoding: text) }
    }

    @Test("Array syntax is just a name (no qs magic)")
    func noArrays() throws {
        let form = try FormParameters(decoding: "code[]=a&code[x]=y")
        #expect(form["code"] == nil)
        #expect(form["code[]"] == "a")
    }

    @Test("NUL and CRLF survive decoding intact, for the caller to refuse")
    func controls() throws {
        let form = try FormParameters(decoding: "client_id=web%00&state=x%0d%0aSet-Cookie")
        #expect(form["client_id"] == "web\u{0}")
        #expect(form["state"] == "x\r\nSet-Cookie")
    }

    @Test("Too many parameters are refused")
    func tooMany() {
        let text = (0..<300).map { "p\($0)=1" }.joined(separator: "&")
        #expect(throws: FormParameters.DecodingError.tooManyParameters) { try FormParameters(decoding: text) }
    }

    @Test("Encoding escapes everything but unreserved characters, so CRLF cannot split a header")
    func encodes() throws {
        let form = FormParameters([("state", "a b&c=d+é\r\n"), ("x", "-._~")])
        #expect(form.encoded == "state=a%20b%26c%3Dd%2B%C3%A9%0D%0A&x=-._~")
        #expect(try FormParameters(decoding: form.encoded) == form)
    }
}

@Suite("Scopes (RFC 6749 §3.3)")
struct ScopeSetTests {
    @Test("Parses space-delimited scope tokens")
    func parses() throws {
        let scope = try #require(ScopeSet(parsing: "profile activity profile"))
        #expect(scope.names == ["profile", "activity"])
        #expect(scope.description == "profile activity")
        #expect(ScopeSet(["activity", "profile"]) == scope)
    }

    @Test(
        "Refuses what the scope-token grammar does not allow",
        arguments: [
            "read  write", " read", "read ", "read\nwrite", "r\"ad", "r\\ad", "réad", "",
        ])
    func refuses(text: String) {
        #expect(ScopeSet(parsing: text) == nil)
    }

    @Test("Intersection keeps the first set's order; subset is by membership")
    func setAlgebra() {
        let asked = ScopeSet(["profile", "activity", "sleep"])
        #expect(asked.intersection(ScopeSet(["sleep", "profile", "admin"])).names == ["profile", "sleep"])
        #expect(ScopeSet(["sleep"]).isSubset(of: asked))
        #expect(!ScopeSet(["admin"]).isSubset(of: asked))
    }
}

@Suite("RFC 6749 error bodies")
struct OAuthErrorTests {
    @Test("JSON body and status")
    func json() {
        let error = OAuthError.invalidGrant("The code is bad.")
        #expect(error.jsonBody == #"{"error":"invalid_grant","error_description":"The code is bad."}"#)
        #expect(error.tokenEndpointStatus == 400)
        #expect(OAuthError.invalidClient("x").tokenEndpointStatus == 401)
        #expect(OAuthError(.temporarilyUnavailable).tokenEndpointStatus == 503)
        #expect(OAuthError(.accessDenied).jsonBody == #"{"error":"access_denied"}"#)
        // error_description keeps to RFC 6749's %x20-21 / %x23-5B / %x5D-7E, whatever a request echoed into it.
        #expect(OAuthError.invalidRequest("The \"x\u{1}\\é\" parameter §3").errorDescription == "The 'x???' parameter ?3")
    }

    @Test("The token response has the docs/design.md §2 shape")
    func tokenResponse() throws {
        let response = TokenResponse(accessToken: "a", expiresIn: 28800, refreshToken: "r", scope: "profile", userID: "u")
        #expect(
            response.jsonBody
                == #"{"access_token":"a","token_type":"Bearer","expires_in":28800,"refresh_token":"r","scope":"profile","user_id":"u"}"#
        )
    }
}
