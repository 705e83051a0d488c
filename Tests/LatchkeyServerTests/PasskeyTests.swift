import Crypto
import Foundation
import LatchkeyCore
import Testing

@testable import LatchkeyServer

/// The WebAuthn checks over plain bytes: the strict CBOR decoder, COSE keys, and the registration
/// and assertion checks, each refusal by the rule that makes it. The same with real
/// authenticators is `Tests/Interop/test_passkeys.py` and the browser test with Chromium's.
@Suite("Passkeys")
struct PasskeyTests {
    static func hex(_ text: String) -> [UInt8] {
        var bytes: [UInt8] = []
        var index = text.startIndex
        while index < text.endIndex {
            let next = text.index(index, offsetBy: 2)
            bytes.append(UInt8(text[index..<next], radix: 16)!)
            index = next
        }
        return bytes
    }

    /// A minimal CBOR encoder for the tests' own authenticator (shortest forms, keys in the order given).
    static func encode(_ item: CBOR) -> [UInt8] {
        func head(_ major: UInt8, _ value: UInt64) -> [UInt8] {
            switch value {
            case 0..<24: return [major << 5 | UInt8(value)]
            case 24..<256: return [major << 5 | 24, UInt8(value)]
            case 256..<65_536: return [major << 5 | 25, UInt8(value >> 8), UInt8(value & 0xff)]
            default: return [major << 5 | 26] + (0..<4).reversed().map { UInt8((value >> (8 * UInt64($0))) & 0xff) }
            }
        }
        switch item {
        case .unsigned(let value): return head(0, value)
        case .negative(let value): return head(1, value)
        case .bytes(let bytes): return head(2, UInt64(bytes.count)) + bytes
        case .text(let text): return head(3, UInt64(text.utf8.count)) + Array(text.utf8)
        case .array(let items): return head(4, UInt64(items.count)) + items.flatMap(encode)
        case .map(let entries):
            return head(5, UInt64(entries.count))
                + entries.sorted { encode($0.key).lexicographicallyPrecedes(encode($1.key)) }
                .flatMap { encode($0.key) + encode($0.value) }
        case .bool(let value): return [value ? 0xf5 : 0xf4]
        case .null: return [0xf6]
        }
    }

    @Test("RFC 8949 Appendix A's examples decode")
    func rfcExamples() throws {
        #expect(try CBORDecoder.decode(Self.hex("00")) == .unsigned(0))
        #expect(try CBORDecoder.decode(Self.hex("1903e8")) == .unsigned(1000))
        #expect(try CBORDecoder.decode(Self.hex("1bffffffffffffffff")) == .unsigned(.max))
        #expect(try CBORDecoder.decode(Self.hex("3863")).int == -100)
        #expect(try CBORDecoder.decode(Self.hex("6449455446")) == .text("IETF"))
        #expect(try CBORDecoder.decode(Self.hex("4401020304")) == .bytes([1, 2, 3, 4]))
        #expect(try CBORDecoder.decode(Self.hex("83010203")) == .array([.unsigned(1), .unsigned(2), .unsigned(3)]))
        #expect(try CBORDecoder.decode(Self.hex("a201020304")) == .map([.unsigned(1): .unsigned(2), .unsigned(3): .unsigned(4)]))
        #expect(try CBORDecoder.decode(Self.hex("f5")) == .bool(true))
    }

    @Test("PK1 Indefinite lengths, duplicate keys, trailing bytes, long forms, tags, floats and bad UTF-8 are refused")
    func strictness() {
        let refused = [
            "9f01ff",  // an indefinite-length array
            "5f42010243030405ff",  // an indefinite-length byte string
            "a201010102",  // the key 1 twice
            "0101",  // a byte after the item
            "1805",  // 5 written in two bytes
            "190005",  // and in three
            "c11a514b67b0",  // a tag
            "f93c00",  // a half-precision float
            "f7",  // undefined
            "62c328",  // text that is not UTF-8
            "43010203ff",  // bytes after a byte string
            "5a7fffffff",  // a length far beyond the input
            "84010203",  // an array that ends early
            String(repeating: "81", count: 20) + "01",  // nested deeper than 16
        ]
        for text in refused {
            #expect(throws: CBORError.self, "\(text)") { _ = try CBORDecoder.decode(Self.hex(text)) }
        }
    }

    /// A software authenticator with a P-256 key, for the checks below.
    struct Authenticator {
        let key = P256.Signing.PrivateKey()
        let credentialID = Array(repeating: UInt8(7), count: 32)
        static let rpID = "localhost"
        static let origin = "http://localhost:8443"

        var coseKey: CBOR {
            let point = Array(key.publicKey.x963Representation)
            return .map([
                .int(1): .int(2), .int(3): .int(-7), .int(-1): .int(1), .int(-2): .bytes(Array(point[1..<33])),
                .int(-3): .bytes(Array(point[33..<65])),
            ])
        }

        func authenticatorData(flags: UInt8, count: UInt32, attested: Bool, rpID: String = rpID) -> [UInt8] {
            var data = Array(SHA256.hash(data: Data(rpID.utf8))) + [flags]
            data += [UInt8(count >> 24), UInt8((count >> 16) & 0xff), UInt8((count >> 8) & 0xff), UInt8(count & 0xff)]
            if attested {
                data += Array(repeating: 0, count: 16) + [0, UInt8(credentialID.count)] + credentialID + encode(coseKey)
            }
            return data
        }

        static func clientData(_ type: String, _ challenge: [UInt8], origin: String = origin, crossOrigin: Bool = false)
            -> [UInt8]
        {
            Array(
                #"{"type":"\#(type)","challenge":"\#(Base64URL.encode(challenge))","origin":"\#(origin)","crossOrigin":\#(crossOrigin)}"#
                    .utf8)
        }

        func sign(_ authenticatorData: [UInt8], _ clientData: [UInt8]) throws -> [UInt8] {
            Array(try key.signature(for: authenticatorData + Array(SHA256.hash(data: Data(clientData)))).derRepresentation)
        }
    }

    func expectation(_ challenge: [UInt8], userVerification: Bool = false) -> WebAuthnExpectation {
        WebAuthnExpectation(
            rpID: Authenticator.rpID, origin: Authenticator.origin, challenge: challenge,
            requireUserVerification: userVerification)
    }

    @Test("PK2 A registration with attestation none gives the credential; its key then verifies assertions")
    func registrationThenAssertion() throws {
        let device = Authenticator()
        let challenge = Array(repeating: UInt8(1), count: 32)
        let attestation = Self.encode(
            .map([
                .text("fmt"): .text("none"), .text("attStmt"): .map([:]),
                .text("authData"): .bytes(device.authenticatorData(flags: 0x45, count: 0, attested: true)),
            ]))
        let registered = try expectation(challenge).verifyRegistration(
            clientDataJSON: Authenticator.clientData("webauthn.create", challenge), attestationObject: attestation)
        #expect(registered.id == device.credentialID && registered.key.algorithm == .es256)
        #expect(COSEKey(storeValue: registered.key.storeValue) == registered.key)

        // A packed attestation is not asked for, so not accepted either.
        let packed = Self.encode(
            .map([
                .text("fmt"): .text("packed"), .text("attStmt"): .map([.text("alg"): .int(-7)]),
                .text("authData"): .bytes(device.authenticatorData(flags: 0x45, count: 0, attested: true)),
            ]))
        #expect(throws: WebAuthnError.self) {
            _ = try expectation(challenge).verifyRegistration(
                clientDataJSON: Authenticator.clientData("webauthn.create", challenge), attestationObject: packed)
        }

        let next = Array(repeating: UInt8(2), count: 32)
        let data = device.authenticatorData(flags: 0x05, count: 1, attested: false)
        let client = Authenticator.clientData("webauthn.get", next)
        let signature = try device.sign(data, client)
        let verified = try expectation(next, userVerification: true).verifyAssertion(
            clientDataJSON: client, authenticatorData: data, signature: signature, key: registered.key)
        #expect(verified.signCount == 1 && verified.userVerified)
    }

    @Test("PK3 An assertion is refused for another challenge, origin, type, relying party, flag or signature")
    func assertionRefusals() throws {
        let device = Authenticator()
        let key = try COSEKey(device.coseKey)
        let challenge = Array(repeating: UInt8(3), count: 32)
        func attempt(
            flags: UInt8 = 0x05, rpID: String = Authenticator.rpID, client: [UInt8]? = nil, tamper: Bool = false,
            extra: [UInt8] = [], userVerification: Bool = true
        ) throws {
            let data = device.authenticatorData(flags: flags, count: 9, attested: false, rpID: rpID) + extra
            let clientData = client ?? Authenticator.clientData("webauthn.get", challenge)
            var signature = try device.sign(data, clientData)
            if tamper { signature[signature.count - 1] ^= 1 }
            _ = try expectation(challenge, userVerification: userVerification).verifyAssertion(
                clientDataJSON: clientData, authenticatorData: data, signature: signature, key: key)
        }
        try attempt()
        try attempt(flags: 0x01, userVerification: false)  // presence alone, where verification is not required
        let refusals: [() throws -> Void] = [
            { try attempt(client: Authenticator.clientData("webauthn.get", Array(repeating: 4, count: 32))) },
            { try attempt(client: Authenticator.clientData("webauthn.get", challenge, origin: "http://evil.localhost:8443")) },
            { try attempt(client: Authenticator.clientData("webauthn.create", challenge)) },
            { try attempt(client: Authenticator.clientData("webauthn.get", challenge, crossOrigin: true)) },
            { try attempt(client: Array("not json".utf8)) },
            { try attempt(rpID: "evil.example") },
            { try attempt(flags: 0x04) },  // verified but not present
            { try attempt(flags: 0x01) },  // present but not verified, where verification is required
            { try attempt(tamper: true) },
            { try attempt(extra: [0]) },  // a byte after the authenticator data
        ]
        for (index, refusal) in refusals.enumerated() {
            #expect(throws: WebAuthnError.self, "refusal \(index)") { try refusal() }
        }
    }

    @Test("COSE keys: a curve, type or length that does not go with the algorithm is refused")
    func coseKeys() throws {
        let device = Authenticator()
        guard case .map(var entries) = device.coseKey else { return }
        entries[.int(-1)] = .int(2)  // P-384 named for an ES256 key
        #expect(throws: (any Error).self) { _ = try COSEKey(.map(entries)) }
        entries[.int(-1)] = .int(1)
        entries[.int(1)] = .int(1)  // OKP with alg -7
        #expect(throws: (any Error).self) { _ = try COSEKey(.map(entries)) }
        let ed = Curve25519.Signing.PrivateKey()
        let edKey = try COSEKey(
            .map([
                .int(1): .int(1), .int(3): .int(-8), .int(-1): .int(6), .int(-2): .bytes(Array(ed.publicKey.rawRepresentation)),
            ]))
        let message = Array("signed".utf8)
        #expect(edKey.isValidSignature(Array(try ed.signature(for: message)), for: message))
        #expect(!edKey.isValidSignature(Array(try ed.signature(for: message)), for: Array("other".utf8)))
    }
}
