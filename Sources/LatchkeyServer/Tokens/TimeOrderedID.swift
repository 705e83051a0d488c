import Foundation
import LatchkeyCore

/// UUIDv7 identifiers (RFC 9562 §5.7): the creation time in milliseconds followed by random bits,
/// so that rows keyed by them append to their indexes. (Foundation's `UUID()` opened /dev/urandom
/// on every call, which showed in profiles; this draws from getrandom(2).)
enum TimeOrderedID {
    static func make(at date: Date) -> String {
        var generator = SystemRandomNumberGenerator()
        var bytes: [UInt8] = []
        bytes.reserveCapacity(16)
        for _ in 0..<2 { withUnsafeBytes(of: generator.next() as UInt64) { bytes.append(contentsOf: $0) } }
        let milliseconds = UInt64(max(0, date.timeIntervalSince1970 * 1000))
        for index in 0..<6 { bytes[index] = UInt8(truncatingIfNeeded: milliseconds >> (40 - 8 * UInt64(index))) }
        bytes[6] = 0x70 | (bytes[6] & 0x0F)  // version 7
        bytes[8] = 0x80 | (bytes[8] & 0x3F)  // variant 10
        // 8-4-4-4-12 hex digits.
        return [0..<4, 4..<6, 6..<8, 8..<10, 10..<16].map { RandomToken.lowercaseHex(bytes[$0]) }.joined(separator: "-")
    }
}
