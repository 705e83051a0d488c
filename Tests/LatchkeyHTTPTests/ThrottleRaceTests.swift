import Foundation
import HTTPTypes
import LatchkeyCore
import LatchkeyServer
import LatchkeyTestSupport
import Testing

/// RV14 (docs/threat-model.md): a throttle holds when every attempt comes at once, across two
/// instances on PostgreSQL (one instance on SQLite), because each attempt is counted before it is
/// decided; and an IPv6 address counts by its /64.
@Suite("RV14 Throttles hold under simultaneous attempts", .serialized)
struct ThrottleRaceTests {
    /// Starts one instance (SQLite) or two (PostgreSQL) of `deployment` with `extra` settings.
    func servers(_ kind: StoreKind, _ deployment: Deployment, extra: [String]) async throws -> ([Int], [ServeProcess]) {
        let ports = [try freePort(), try freePort()]
        let issuer = "http://127.0.0.1:\(ports[0])"
        var servers = [try await deployment.start(port: ports[0], issuer: issuer, extra: extra)]
        if kind == .postgres { servers.append(try await deployment.start(port: ports[1], issuer: issuer, extra: extra)) }
        return (Array(ports.prefix(servers.count)), servers)
    }

    /// Posts `form` to the page at `path` from `count` browsers spread over `ports`, each with the
    /// CSRF token of its own visit to the page, all at once; returns the statuses.
    func postAtOnce(_ count: Int, to path: String, form: [(String, String)], ports: [Int]) async throws -> [Int] {
        var visits: [(Browser, String)] = []
        for index in 0..<count {
            let browser = Browser(port: ports[index % ports.count])
            visits.append((browser, try await browser.get(path).field("csrf_token") ?? ""))
        }
        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for (browser, csrf) in visits {
                group.addTask { Int(try await browser.post(path, form: [("csrf_token", csrf)] + form).status.code) }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        for (browser, _) in visits { try await browser.close() }
        return statuses
    }

    @Test("60 simultaneous registrations from one address pass a limit of 5 exactly 5 times", arguments: TestStores.kinds)
    func registrations(kind: StoreKind) async throws {
        let deployment = try await Deployment.make(kind)
        let (ports, servers) = try await servers(
            kind, deployment, extra: ["--dynamic-registration", "open", "--registrations-per-address", "5"])
        let body = #"{"client_name":"Agent","redirect_uris":["http://127.0.0.1/callback"],"token_endpoint_auth_method":"none"}"#
        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<60 {
                let port = ports[index % ports.count]
                group.addTask {
                    let browser = Browser(port: port)
                    defer { Task { try? await browser.close() } }
                    return Int(
                        try await browser.post("/oauth2/register", body: body, contentType: "application/json").status.code)
                }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(statuses.filter { $0 == 201 }.count == 5, "\(statuses)")
        #expect(statuses.filter { $0 == 429 }.count == 55, "\(statuses)")
        for server in servers { #expect(try await server.terminate() == 0) }
    }

    @Test("12 simultaneous wrong passwords against a limit of 3: at most 3 are checked", arguments: TestStores.kinds)
    func signIns(kind: StoreKind) async throws {
        let deployment = try await Deployment.make(kind)
        let (ports, servers) = try await servers(kind, deployment, extra: ["--sign-in-attempts", "3"])
        let statuses = try await postAtOnce(
            12, to: "/login", form: [("username", "alice"), ("password", "wrong-password")], ports: ports)
        // 401: the password was checked and wrong; 503: refused for load before it was checked.
        #expect(statuses.filter { $0 == 401 || $0 == 503 }.count <= 3, "\(statuses)")
        #expect(statuses.filter { $0 == 429 }.count >= 9, "\(statuses)")
        #expect(statuses.allSatisfy { [401, 429, 503].contains($0) }, "\(statuses)")
        for server in servers { #expect(try await server.terminate() == 0) }
    }
}

extension ThrottleRaceTests {
    @Test(
        "DV1 30 simultaneous wrong user codes from one address against a limit of 5: exactly 5 are looked up",
        arguments: TestStores.kinds)
    func userCodes(kind: StoreKind) async throws {
        let deployment = try await Deployment.make(kind)
        let (ports, servers) = try await servers(kind, deployment, extra: ["--user-code-attempts-per-address", "5"])
        let statuses = try await postAtOnce(30, to: "/device", form: [("user_code", "BCDF-GHJK")], ports: ports)
        #expect(statuses.filter { $0 == 400 }.count == 5, "\(statuses)")
        #expect(statuses.filter { $0 == 429 }.count == 25, "\(statuses)")
        for server in servers { #expect(try await server.terminate() == 0) }
    }
}

@Suite("RV14 Client address blocks")
struct ClientAddressBlockTests {
    @Test("IPv6 counts by /64, IPv4-mapped as IPv4, IPv4 whole; anything else as it is")
    func blocks() {
        #expect(ClientAddressBlock.of("2001:db8:1:2:3:4:5:6") == "2001:db8:1:2::/64")
        #expect(ClientAddressBlock.of("2001:db8:1:2::ffff") == "2001:db8:1:2::/64")
        #expect(ClientAddressBlock.of("[2001:db8:1:2::1]") == "2001:db8:1:2::/64")
        #expect(ClientAddressBlock.of("fe80::1%eth0") == "fe80::/64")
        #expect(ClientAddressBlock.of("::ffff:192.0.2.1") == "192.0.2.1")
        #expect(ClientAddressBlock.of("192.0.2.1") == "192.0.2.1")
        #expect(ClientAddressBlock.of("::1") == "::/64")
        #expect(ClientAddressBlock.of("unknown") == "unknown")
    }

    /// The statuses of one open registration from each of `addresses`, in order, against a server
    /// allowing `perAddress` per address block and `overall` in all.
    func registrations(from addresses: [String], perAddress: Int = 20, overall: Int = 1_000) async throws -> [Int] {
        let fixture = try await Fixture.make {
            $0.dynamicRegistration.mode = .open
            $0.dynamicRegistration.registrationsPerAddress = perAddress
            $0.dynamicRegistration.registrationsOverall = overall
        }
        var statuses: [Int] = []
        for address in addresses {
            let answer = try await fixture.server.registration.register(
                Array(DynamicRegistrationBody.native.utf8), authorization: nil, clientAddress: address)
            statuses.append(answer.status)
        }
        return statuses
    }

    @Test("Two addresses of one IPv6 /64 share a registration budget; another /64 has its own")
    func registrationBudgetPerBlock() async throws {
        let addresses = ["2001:db8::1", "2001:db8::2", "2001:db8::3", "2001:db8:0:1::1"]
        #expect(try await registrations(from: addresses, perAddress: 2) == [201, 201, 429, 201])
    }

    @Test("A global cap holds registrations from many addresses")
    func registrationsOverall() async throws {
        let addresses = (1...5).map { "192.0.2.\($0)" }
        #expect(try await registrations(from: addresses, overall: 3) == [201, 201, 201, 429, 429])
    }
}

enum DynamicRegistrationBody {
    static let native =
        #"{"client_name":"Agent","redirect_uris":["http://127.0.0.1:33418/callback"],"scope":"openid","token_endpoint_auth_method":"none"}"#
}
