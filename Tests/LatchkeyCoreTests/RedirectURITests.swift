import LatchkeyCore
import Testing

@Suite("Redirect URI matching and registration")
struct RedirectURITests {
    static let registered = "https://client.example.com/cb"

    @Test(
        "Exact string match only (docs/threat-model.md T16–T20)",
        arguments: [
            "https://attacker.example/cb", "https://client.example.com/cb/evil", "https://client.example.com/cb123",
            "https://client.example.com/Cb", "https://client.example.com/cb/../evil", "https://client.example.com/cb/%2E%2E/evil",
            "https://client.example.com/cb;x", "//client.example.com/cb", "https://client.example.com/cb?x=1",
            "https://client.example.com/cb#x", "https://client.example.com/cb#", "https://client.example.com@attacker.example/cb",
            "https://client.example.com.attacker.example/cb", "https://user:pass@client.example.com/cb",
            "HTTPS://client.example.com/cb", "https://CLIENT.example.com/cb", "https://client.example.com:443/cb",
            "https://client.example.com/cb/", "https://client.example.com./cb", "https://client.example.com/%63b",
            "http://client.example.com/cb", "https://client.example.com:8443/cb",
            "https://client.example.com%00.attacker.example/cb",
        ])
    func exactMatch(requested: String) {
        #expect(!RedirectURI.matches(requested: requested, registered: Self.registered))
        #expect(RedirectURI.matches(requested: Self.registered, registered: Self.registered))
    }

    @Test(
        "Loopback IP literals match any port (RFC 8252 §7.3, T21)",
        arguments: [
            ("http://127.0.0.1:51734/callback", "http://127.0.0.1/callback"),
            ("http://127.0.0.1/callback", "http://127.0.0.1/callback"),
            ("http://[::1]:51734/callback", "http://[::1]/callback"),
            ("http://127.0.0.1:1/callback", "http://127.0.0.1:8080/callback"),
        ])
    func loopbackAnyPort(requested: String, registered: String) {
        #expect(RedirectURI.matches(requested: requested, registered: registered))
    }

    @Test(
        "Loopback: everything but the port must match (T22)",
        arguments: [
            "http://127.0.0.1:51734/callback/x", "http://127.0.0.1:51734/Callback", "http://127.000.000.001:51734/callback",
            "http://127.0.0.1:51734/x/../callback", "HTTP://127.0.0.1:51734/callback", "https://127.0.0.1:51734/callback",
            "http://localhost:51734/callback", "http://127.0.0.2/callback", "http://127.0.0.1.attacker.example/callback",
            "http://[::ffff:127.0.0.1]:51734/callback", "http://127.0.0.1:99999/callback", "http://127.0.0.1:/callback",
            "http://127.0.0.1:80a/callback",
        ])
    func loopbackRest(requested: String) {
        #expect(!RedirectURI.matches(requested: requested, registered: "http://127.0.0.1/callback"))
    }

    @Test("A native app's localhost registration matches any port; a web app's, only its own (RFC 8252 §7.3)")
    func localhostAnyPort() {
        let registered = "http://localhost:3334/callback"
        #expect(RedirectURI.matches(requested: "http://localhost:51734/callback", registered: registered, localhostAnyPort: true))
        #expect(RedirectURI.matches(requested: "http://localhost/callback", registered: registered, localhostAnyPort: true))
        #expect(!RedirectURI.matches(requested: "http://localhost:51734/callback", registered: registered))
        for requested in [
            "http://localhost:51734/callback/x", "http://localhost.evil.example:51734/callback",
            "http://127.0.0.1:51734/callback",
            "http://LOCALHOST:51734/callback", "https://localhost:51734/callback", "http://localhost:99999/callback",
        ] {
            #expect(!RedirectURI.matches(requested: requested, registered: registered, localhostAnyPort: true))
        }
        // A loopback IP literal's registration is not a localhost one, nor the other way round.
        #expect(
            !RedirectURI.matches(
                requested: "http://localhost:51734/callback", registered: "http://127.0.0.1/callback", localhostAnyPort: true))
    }

    @Test(
        "Private-use schemes match exactly (T23)",
        arguments: [
            "com.example.app.evil:/oauth2redirect", "com.example.ap:/oauth2redirect", "COM.EXAMPLE.APP:/oauth2redirect",
            "com.example.app://oauth2redirect", "com.example.app:/oauth2redirect/../x", "javascript:alert(1)//",
        ])
    func customScheme(requested: String) {
        #expect(!RedirectURI.matches(requested: requested, registered: "com.example.app:/oauth2redirect"))
    }

    @Test(
        "Registration accepts the RFC 8252 kinds for native apps",
        arguments: [
            "com.example.app:/oauth2redirect", "https://app.example.com/cb", "http://127.0.0.1/callback", "http://[::1]/callback",
            "http://127.0.0.1:8080/cb", "http://localhost/callback", "http://localhost:3334/callback",
        ])
    func nativeRegistration(uri: String) {
        #expect(RedirectURI.registrationProblem(uri, policy: .native) == nil)
    }

    @Test(
        "Registration refuses dangerous or ambiguous URIs",
        arguments: [
            ("javascript:alert(1)", RedirectURI.Policy.native), ("data:text/html,x", .native), ("file:///etc/passwd", .native),
            ("vbscript:x", .native), ("myapp:/cb", .native), ("http://example.com/cb", .native),
            ("http://localhost.evil.example/cb", .native), ("http://localhost@evil.example/cb", .native),
            ("http://localhost:0/cb", .native), ("http://localhostx/cb", .web),
            ("https://a.example/cb#frag", .web), ("/relative/cb", .web), ("com.example.app:/cb", .web),
            ("http://example.com/cb", .web), ("https://a.example/c b", .web),
            // RV17: http(s) without an authority, an empty host or user information.
            ("https:evil.example/cb", .web), ("https:evil.example/cb", .native), ("https:/evil.example/cb", .web),
            ("https://:443/cb", .web), ("https://user@a.example/cb", .web), ("https://a.example@evil.example/cb", .native),
            ("http:127.0.0.1/callback", .native),
        ])
    func refusedRegistration(uri: String, policy: RedirectURI.Policy) {
        #expect(RedirectURI.registrationProblem(uri, policy: policy) != nil)
    }

    @Test("Parameters are appended to an existing query, encoded; none leaves the URI as it is")
    func appending() {
        #expect(
            RedirectURI.appending([("code", "c"), ("state", "a b")], to: "https://a.example/cb?tenant=1")
                == "https://a.example/cb?tenant=1&code=c&state=a%20b")
        #expect(RedirectURI.appending([("code", "c")], to: "com.example.app:/cb") == "com.example.app:/cb?code=c")
        // Nothing to append: the URI as registered, without a bare ? (a logout without state).
        #expect(RedirectURI.appending([], to: "https://rp.example/out") == "https://rp.example/out")
    }
}
