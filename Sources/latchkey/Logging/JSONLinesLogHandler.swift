import Foundation
import LatchkeyCore
import Logging

/// A swift-log handler that writes one JSON object per line to standard error: `time`, `level`,
/// `label`, `message`, then the metadata (the audit events' `event`, `client_id`, `user_id`, …)
/// as string fields. Log shippers read it without a parser of their own.
struct JSONLinesLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]
    var metadataProvider: Logger.MetadataProvider?

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var fields = metadata
        if let provided = metadataProvider?.get() { fields.merge(provided) { _, new in new } }
        if let own = event.metadata { fields.merge(own) { _, new in new } }
        var line = "{\"time\":\(JSONText.quote(Self.timestamp()))"
        line += ",\"level\":\(JSONText.quote(event.level.rawValue))"
        line += ",\"label\":\(JSONText.quote(label))"
        line += ",\"message\":\(JSONText.quote(event.message.description))"
        for (key, value) in fields.sorted(by: { $0.key < $1.key }) where !["time", "level", "label", "message"].contains(key) {
            line += ",\(JSONText.quote(key)):\(JSONText.quote(value.description))"
        }
        line += "}\n"
        Self.lock.withLock { FileHandle.standardError.write(Data(line.utf8)) }
    }

    private static let lock = NSLock()

    /// RFC 3339 in UTC with milliseconds, without a `DateFormatter`.
    private static func timestamp() -> String {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        var seconds = time_t(spec.tv_sec)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let millis = Int(spec.tv_nsec) / 1_000_000
        let ms = millis < 10 ? "00\(millis)" : millis < 100 ? "0\(millis)" : "\(millis)"
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T"
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)).\(ms)Z"
    }
}

/// Sends every logger of this process to ``JSONLinesLogHandler`` (once; later calls do nothing).
func bootstrapLogging() {
    _ = loggingBootstrapped
}

private let loggingBootstrapped: Bool = {
    LoggingSystem.bootstrap { JSONLinesLogHandler(label: $0) }
    return true
}()
