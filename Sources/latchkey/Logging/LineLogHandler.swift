import Foundation
import LatchkeyCore
import LatchkeyHTTP
import Logging
import Synchronization

/// How log lines are written: `json` (one object per line) or `logfmt` (`key=value` pairs).
enum LogFormat: String, Sendable {
    case json, logfmt
}

/// A swift-log handler that writes one line per event to standard error: `time`, `level`,
/// `label`, `message`, then the metadata (the audit events' `event`, `client_id`, `user_id`, …,
/// and `request_id` while a request is served) as string fields, as JSON or as logfmt. Log
/// shippers read either without a parser of their own.
struct LineLogHandler: LogHandler {
    let label: String
    let format: LogFormat
    var logLevel: Logger.Level
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
        let head = [
            ("time", Self.timestamp()), ("level", event.level.rawValue), ("label", label),
            ("message", event.message.description),
        ]
        let rest = fields.sorted { $0.key < $1.key }.filter { !Self.headNames.contains($0.key) }.map {
            ($0.key, $0.value.description)
        }
        let line: String
        switch format {
        case .json:
            line = "{" + (head + rest).map { "\(JSONText.quote($0.0)):\(JSONText.quote($0.1))" }.joined(separator: ",") + "}\n"
        case .logfmt:
            line = (head + rest).map { "\(Self.logfmtKey($0.0))=\(Self.logfmtValue($0.1))" }.joined(separator: " ") + "\n"
        }
        Self.lock.withLock { FileHandle.standardError.write(Data(line.utf8)) }
    }

    private static let headNames: Set<String> = ["time", "level", "label", "message"]
    private static let lock = NSLock()

    /// A logfmt key: the characters other than space, `=` and `"`, which would end it.
    static func logfmtKey(_ key: String) -> String {
        let kept = key.unicodeScalars.filter { $0.value > 0x20 && $0 != "=" && $0 != "\"" && $0.value != 0x7F }
        return kept.isEmpty ? "_" : String(String.UnicodeScalarView(kept))
    }

    /// A logfmt value: bare when it is plain, else quoted with `\`, `"` and control characters escaped.
    static func logfmtValue(_ value: String) -> String {
        let plain =
            !value.isEmpty && value.unicodeScalars.allSatisfy { $0.value > 0x20 && $0.value < 0x7F && $0 != "=" && $0 != "\"" }
        if plain { return value }
        var quoted = "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": quoted += "\\\""
            case "\\": quoted += "\\\\"
            case "\n": quoted += "\\n"
            case "\r": quoted += "\\r"
            case "\t": quoted += "\\t"
            default:
                if scalar.value < 0x20 || scalar.value == 0x7F {
                    quoted += String(format: "\\u%04x", scalar.value)
                } else {
                    quoted.unicodeScalars.append(scalar)
                }
            }
        }
        return quoted + "\""
    }

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

/// Sends every logger of this process to ``LineLogHandler``, with `request_id` while a request
/// is served. swift-log takes this once per process: later calls do nothing.
func bootstrapLogging(format: LogFormat = .json, level: Logger.Level = .info) {
    LoggingOnce.shared.run {
        LoggingSystem.bootstrap(
            { label, provider in
                LineLogHandler(label: label, format: format, logLevel: level, metadataProvider: provider)
            }, metadataProvider: RequestLog.metadataProvider)
    }
}

/// Runs a closure at most once per process.
private final class LoggingOnce: Sendable {
    static let shared = LoggingOnce()
    private let done = Mutex(false)

    func run(_ body: () -> Void) {
        let first = done.withLock { done in
            defer { done = true }
            return !done
        }
        if first { body() }
    }
}
