/// A CBOR data item (RFC 8949), as much of it as WebAuthn needs: attestation objects and COSE
/// keys are maps of integers, text, bytes, arrays and booleans.
enum CBOR: Equatable, Hashable, Sendable {
    case unsigned(UInt64)
    /// A negative integer `-1 - n`, kept as `n` so that every value fits.
    case negative(UInt64)
    case bytes([UInt8])
    case text(String)
    case array([CBOR])
    case map([CBOR: CBOR])
    case bool(Bool)
    case null

    /// An integer key or value, as COSE labels are (`1`, `-7`, `-257`).
    var int: Int? {
        switch self {
        case .unsigned(let value): value <= UInt64(Int.max) ? Int(value) : nil
        case .negative(let value): value < UInt64(Int.max) ? -1 - Int(value) : nil
        default: nil
        }
    }

    static func int(_ value: Int) -> CBOR { value >= 0 ? .unsigned(UInt64(value)) : .negative(UInt64(-1 - value)) }

    subscript(key: CBOR) -> CBOR? {
        guard case .map(let entries) = self else { return nil }
        return entries[key]
    }

    subscript(label: Int) -> CBOR? { self[.int(label)] }
    subscript(name: String) -> CBOR? { self[.text(name)] }
}

/// Why a CBOR item was refused.
struct CBORError: Error, Equatable, CustomStringConvertible {
    let description: String
}

/// A strict CBOR decoder: definite lengths only, no tags, floats or undefined, no duplicate map
/// keys, integers and lengths in their shortest form, text that is valid UTF-8, at most 16 levels
/// deep, and nothing left over unless the caller asks for the rest (the authenticator data's COSE
/// key is followed by its extensions).
struct CBORDecoder {
    private let bytes: [UInt8]
    private(set) var offset = 0
    static let maximumDepth = 16

    init(_ bytes: some Collection<UInt8>) { self.bytes = Array(bytes) }

    /// Decodes exactly one item that fills all of `bytes`.
    static func decode(_ bytes: some Collection<UInt8>) throws -> CBOR {
        var decoder = CBORDecoder(bytes)
        let item = try decoder.next()
        guard decoder.offset == decoder.bytes.count else { throw CBORError(description: "bytes after the CBOR item") }
        return item
    }

    /// Decodes the next item; ``offset`` then points after it.
    mutating func next() throws -> CBOR { try item(depth: 0) }

    private mutating func byte() throws -> UInt8 {
        guard offset < bytes.count else { throw CBORError(description: "the CBOR item ends early") }
        defer { offset += 1 }
        return bytes[offset]
    }

    private mutating func take(_ count: UInt64) throws -> ArraySlice<UInt8> {
        guard count <= UInt64(bytes.count - offset) else { throw CBORError(description: "the CBOR item ends early") }
        defer { offset += Int(count) }
        return bytes[offset..<offset + Int(count)]
    }

    /// The argument of an initial byte (RFC 8949 §3), refused unless in its shortest form.
    private mutating func argument(_ info: UInt8) throws -> UInt64 {
        switch info {
        case 0..<24: return UInt64(info)
        case 24...27:
            let count = 1 << Int(info - 24)
            var value: UInt64 = 0
            for byte in try take(UInt64(count)) { value = value << 8 | UInt64(byte) }
            let smallest: UInt64 = [24, 0x100, 0x1_0000, 0x1_0000_0000][Int(info - 24)]
            guard value >= smallest else { throw CBORError(description: "a CBOR integer not in its shortest form") }
            return value
        case 31: throw CBORError(description: "an indefinite-length CBOR item")
        default: throw CBORError(description: "a reserved CBOR additional value")
        }
    }

    private mutating func item(depth: Int) throws -> CBOR {
        guard depth < Self.maximumDepth else { throw CBORError(description: "CBOR nested too deep") }
        let initial = try byte()
        let major = initial >> 5
        let info = initial & 0x1f
        switch major {
        case 0: return .unsigned(try argument(info))
        case 1: return .negative(try argument(info))
        case 2: return .bytes(Array(try take(try argument(info))))
        case 3:
            guard let text = String(validating: try take(try argument(info)), as: UTF8.self) else {
                throw CBORError(description: "CBOR text that is not UTF-8")
            }
            return .text(text)
        case 4:
            let count = try argument(info)
            guard count <= UInt64(bytes.count - offset) else { throw CBORError(description: "the CBOR item ends early") }
            var items: [CBOR] = []
            for _ in 0..<count { items.append(try item(depth: depth + 1)) }
            return .array(items)
        case 5:
            let count = try argument(info)
            guard count <= UInt64(bytes.count - offset) else { throw CBORError(description: "the CBOR item ends early") }
            var entries: [CBOR: CBOR] = [:]
            for _ in 0..<count {
                let key = try item(depth: depth + 1)
                let value = try item(depth: depth + 1)
                guard entries.updateValue(value, forKey: key) == nil else {
                    throw CBORError(description: "a CBOR map with a duplicate key")
                }
            }
            return .map(entries)
        case 7:
            switch info {
            case 20: return .bool(false)
            case 21: return .bool(true)
            case 22: return .null
            default: throw CBORError(description: "a CBOR float or simple value WebAuthn does not use")
            }
        default:
            throw CBORError(description: "a CBOR tag")
        }
    }
}
