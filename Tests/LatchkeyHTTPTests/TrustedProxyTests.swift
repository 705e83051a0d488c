import Foundation
import HTTPTypes
import LatchkeyCore
import LatchkeyHTTP
import LatchkeyServer
import LatchkeyTestSupport
import Testing

@Suite("--trusted-proxy: whose X-Forwarded-For counts")
struct TrustedProxyTests {
    @Test("Only a trusted proxy's X-Forwarded-For names the client, read from the right past the trusted hops")
    func clientAddress() throws {
        let proxies = try TrustedProxies(["10.0.0.0/8", "::1/128"])
        // Not a trusted peer: the header is whatever the client wrote, and is ignored.
        #expect(proxies.clientAddress(peer: "203.0.113.9", forwardedFor: ["198.51.100.1"]) == "203.0.113.9")
        // A trusted peer: the nearest untrusted hop; what the client put further left does not count.
        #expect(proxies.clientAddress(peer: "10.0.0.2", forwardedFor: ["1.2.3.4, 198.51.100.7, 10.0.0.5"]) == "198.51.100.7")
        #expect(proxies.clientAddress(peer: "::1", forwardedFor: ["198.51.100.7", "10.1.1.1"]) == "198.51.100.7")
        // Malformed: the last trusted hop, never the garbage.
        #expect(proxies.clientAddress(peer: "10.0.0.2", forwardedFor: ["evil, not-an-ip"]) == "10.0.0.2")
        #expect(proxies.clientAddress(peer: "10.0.0.2", forwardedFor: []) == "10.0.0.2")
        // RV15: a dual-stack listener (--host ::) reports an IPv4 peer as IPv4-mapped IPv6.
        #expect(proxies.clientAddress(peer: "::ffff:10.0.0.2", forwardedFor: ["198.51.100.7"]) == "198.51.100.7")
        #expect(proxies.clientAddress(peer: "::FFFF:10.0.0.2", forwardedFor: ["198.51.100.7"]) == "198.51.100.7")
        #expect(proxies.clientAddress(peer: "::ffff:192.0.2.1", forwardedFor: ["198.51.100.7"]) == "::ffff:192.0.2.1")
        let mappedRange = try TrustedProxies(["::ffff:10.0.0.0/104"])
        #expect(mappedRange.clientAddress(peer: "10.0.0.2", forwardedFor: ["198.51.100.7"]) == "198.51.100.7")
        #expect(throws: AdministrationError.self) { try TrustedProxies(["10.0.0.0/33"]) }
        #expect(throws: AdministrationError.self) { try TrustedProxies(["proxy.example"]) }
    }

    @Test("Behind a trusted proxy, failed sign-ins count against the forwarded address, not the proxy's")
    func throttlingPerForwardedAddress() async throws {
        try await withLiveServer(configure: { $0.trustedProxies = ["127.0.0.1/32"] }) { fixture, browser in
            let form = try await browser.get("/login")
            _ = try await browser.post(
                "/login",
                form: [("csrf_token", form.field("csrf_token")!), ("username", "alice"), ("password", "wrong password")],
                headers: [HTTPField.Name("X-Forwarded-For")!: "198.51.100.23"])
            let forwarded = try await fixture.store.failures(key: "address:198.51.100.23", at: fixture.clock.now)
            #expect(forwarded?.failures == 1)
            #expect(try await fixture.store.failures(key: "address:127.0.0.1", at: fixture.clock.now) == nil)
        }
        // Without --trusted-proxy the same header changes nothing.
        try await withLiveServer { fixture, browser in
            let form = try await browser.get("/login")
            _ = try await browser.post(
                "/login",
                form: [("csrf_token", form.field("csrf_token")!), ("username", "alice"), ("password", "wrong password")],
                headers: [HTTPField.Name("X-Forwarded-For")!: "198.51.100.23"])
            #expect(try await fixture.store.failures(key: "address:127.0.0.1", at: fixture.clock.now)?.failures == 1)
            #expect(try await fixture.store.failures(key: "address:198.51.100.23", at: fixture.clock.now) == nil)
        }
    }
}
