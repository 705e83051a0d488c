import Foundation
import LatchkeyCore
import LatchkeyServer
import LatchkeyTestSupport
import Testing

@Suite("Client ID Metadata Documents: the URL, the document and the forbidden addresses")
struct ClientMetadataDocumentTests {
    static func v4(_ text: String) -> [UInt8] { text.split(separator: ".").map { UInt8($0)! } }
    static func v6(_ groups: [UInt16]) -> [UInt8] { groups.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xff)] } }

    @Test("CM1 Loopback, private, link-local (cloud metadata), mapped and reserved addresses are forbidden; public ones are not")
    func forbiddenAddresses() {
        for address in [
            "127.0.0.1", "127.1.2.3", "10.0.0.1", "172.16.0.1", "172.31.255.255", "192.168.1.1", "169.254.169.254",
            "100.64.0.1", "0.0.0.0", "224.0.0.1", "255.255.255.255", "192.0.2.1", "198.18.0.1",
        ] {
            #expect(ForbiddenNetworks.isForbidden(Self.v4(address)), "\(address)")
        }
        for address in ["93.184.216.34", "8.8.8.8", "172.32.0.1", "192.169.0.1", "1.1.1.1"] {
            #expect(!ForbiddenNetworks.isForbidden(Self.v4(address)), "\(address)")
        }
        let forbidden6: [[UInt16]] = [
            [0, 0, 0, 0, 0, 0, 0, 1], [0, 0, 0, 0, 0, 0, 0, 0], [0xfe80, 0, 0, 0, 0, 0, 0, 1],
            [0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254],
            [0, 0, 0, 0, 0, 0xffff, 0x7f00, 1],  // ::ffff:127.0.0.1
            [0, 0, 0, 0, 0, 0xffff, 0xa9fe, 0xa9fe],  // ::ffff:169.254.169.254
            [0x64, 0xff9b, 0, 0, 0, 0, 0x0a00, 1],  // NAT64 of 10.0.0.1
            [0x2001, 0xdb8, 0, 0, 0, 0, 0, 1], [0xff02, 0, 0, 0, 0, 0, 0, 1],
        ]
        for groups in forbidden6 { #expect(ForbiddenNetworks.isForbidden(Self.v6(groups)), "\(groups)") }
        #expect(!ForbiddenNetworks.isForbidden(Self.v6([0x2606, 0x4700, 0, 0, 0, 0, 0, 0x1111])))
        #expect(!ForbiddenNetworks.isForbidden(Self.v6([0, 0, 0, 0, 0, 0xffff, 0x0808, 0x0808])))
        // The test-only switch opens loopback, and nothing else.
        #expect(!ForbiddenNetworks.isForbidden(Self.v4("127.0.0.1"), allowLoopback: true))
        #expect(!ForbiddenNetworks.isForbidden(Self.v6([0, 0, 0, 0, 0, 0, 0, 1]), allowLoopback: true))
        #expect(ForbiddenNetworks.isForbidden(Self.v4("169.254.169.254"), allowLoopback: true))
        #expect(ForbiddenNetworks.isForbidden(Self.v4("10.1.1.1"), allowLoopback: true))
    }

    @Test("CM2 A client_id URL is https with a path, and without user, query, fragment or dot segments")
    func identifierRules() {
        #expect(ClientMetadataDocument.identifierProblem("https://app.example/oauth/client.json") == nil)
        #expect(ClientMetadataDocument.identifierProblem("https://app.example:8443/c") == nil)
        for bad in [
            "http://app.example/c", "https://app.example", "https://app.example/", "https://u:p@app.example/c",
            "https://app.example/c?x=1", "https://app.example/c#f", "https://app.example/a/../c", "https://app.example/./c",
            "https://app.example/%2e%2e/c", "https:///c", "https://app.example/.%2e/c", "https://app.example/%2E./c",
            "https://app.example/a%2Fb", "https://app.example/a%5cb",
        ] {
            #expect(ClientMetadataDocument.identifierProblem(bad) != nil, "\(bad)")
        }
    }

    @Test("CM3 The policy allows every host, listed domains and their subdomains, or none")
    func policy() async throws {
        let fixture = try await Fixture.make {
            $0.clientMetadataDocuments = ClientMetadataDocumentPolicy(mode: .listed, allowedDomains: ["tools.example"])
        }
        // Without a fetcher the server accepts no document URL, whatever the policy.
        #expect(try await fixture.server.metadata().clientIDMetadataDocumentSupported == false)
        let step = try await fixture.server.authorization.authorize(
            FormParameters([
                ("response_type", "code"), ("client_id", "https://tools.example/client.json"), ("scope", "profile"),
                ("redirect_uri", "http://127.0.0.1/cb"),
            ]), session: try await fixture.signedInSession())
        guard case .errorPage = step else { Issue.record("an unknown client gets the error page"); return }
    }
}
