import HTTPTypes
import Logging
import Synchronization

/// Request ids and the access log.
///
/// Every request gets an id, sent back as `X-Request-Id` and added as `request_id` to every log
/// line written while the request is served (through a swift-log metadata provider reading a
/// task-local value, so the server's own loggers need no change). An `X-Request-Id` that arrives
/// is kept only from a trusted proxy (`--trusted-proxy`), and only when it is short plain text:
/// from anyone else a client could write what it likes into the operator's logs.
public enum RequestLog {
    /// The id of the request this task serves, if any.
    @TaskLocal public static var id: String?

    /// Adds `request_id` to every log line written while a request is served.
    public static let metadataProvider = Logger.MetadataProvider {
        guard let id = RequestLog.id else { return [:] }
        return ["request_id": .string(id)]
    }

    static let header = HTTPField.Name("X-Request-Id")!

    /// A new id: 32 hex digits, a random half chosen once per process and a counter, so ids are
    /// unique across instances and cheap to make. They name requests; they are not secrets.
    static func next() -> String {
        let count = counter.add(1, ordering: .relaxed).newValue
        // Written straight into the string's storage: this runs for every request.
        return String(unsafeUninitializedCapacity: 32) { buffer in
            for index in 0..<16 {
                let shift = UInt64(60 - 4 * index)
                buffer[index] = digits[Int((prefix >> shift) & 0xF)]
                buffer[16 + index] = digits[Int((count >> shift) & 0xF)]
            }
            return 32
        }
    }

    private static let prefix = UInt64.random(in: .min ... .max)
    private static let counter = Atomic<UInt64>(UInt64.random(in: .min ... .max))
    private static let digits = Array("0123456789abcdef".utf8)

    /// Whether an incoming id may be kept: 1 to 128 characters of letters, digits and `-._:`.
    static func isAcceptable(_ id: String) -> Bool {
        (1...128).contains(id.utf8.count)
            && id.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                    UInt8(ascii: ":"):
                    true
                default: false
                }
            }
    }
}
