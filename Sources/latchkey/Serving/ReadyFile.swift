import Foundation

/// What `serve --ready-file PATH` writes once the server listens: one JSON object, so a supervisor
/// or a test learns the bound port and issuer without reading the human start-up text.
///
///     {"issuer":"http://127.0.0.1:41237","pid":4242,"port":41237,"metrics_port":41238,
///      "dev":{"client_id":"…","password":"…","username":"demo"}}
///
/// `metrics_port` is there only with `--metrics-address`; `dev` only when `--dev` created the demo user and client on this start. The file is
/// written to a temporary name beside it (mode 0600, since it may hold the demo password) and
/// renamed into place, so a reader never sees half of it.
struct ReadyFile: Encodable {
    struct Demo: Encodable, Sendable {
        var username: String
        var password: String
        var clientID: String
        enum CodingKeys: String, CodingKey {
            case username, password
            case clientID = "client_id"
        }
    }

    var issuer: String
    var port: Int
    var metricsPort: Int?
    var pid = Int(ProcessInfo.processInfo.processIdentifier)
    var demo: Demo?

    enum CodingKeys: String, CodingKey {
        case issuer, port, pid
        case metricsPort = "metrics_port"
        case demo = "dev"
    }

    func write(to path: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        var data = try encoder.encode(self)
        data.append(UInt8(ascii: "\n"))
        let temporary = path + ".tmp-\(pid)"
        guard FileManager.default.createFile(atPath: temporary, contents: data, attributes: [.posixPermissions: 0o600])
        else { throw CocoaError(.fileWriteNoPermission, userInfo: [NSFilePathErrorKey: temporary]) }
        if rename(temporary, path) != 0 {
            try? FileManager.default.removeItem(atPath: temporary)
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path])
        }
    }
}
