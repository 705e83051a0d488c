/// Compares secrets without an early exit, so the time taken does not tell an attacker
/// how many leading bytes were right (RFC 6819 §5.1.4.2.2; docs/threat-model.md T07, T41).
public enum ConstantTime {
    /// Whether `a` and `b` hold the same bytes. Runs over the whole of the longer input
    /// whatever the contents; only the lengths (which are not secret here) affect timing.
    public static func equals(_ a: some StringProtocol, _ b: some StringProtocol) -> Bool {
        equals(Array(a.utf8), Array(b.utf8))
    }

    /// Byte-array form of ``equals(_:_:)-(StringProtocol,StringProtocol)``.
    public static func equals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        var difference = UInt8(truncatingIfNeeded: a.count ^ b.count)
        let length = max(a.count, b.count)
        for index in 0..<length {
            let x = index < a.count ? a[index] : 0
            let y = index < b.count ? b[index] : 0
            difference |= x ^ y
        }
        return difference == 0
    }
}
