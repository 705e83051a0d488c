import Foundation
import Synchronization

/// Writes `--ready-file` once every listener has bound: the server's, and the metrics listener's
/// when there is one, whichever binds last.
final class Startup: Sendable {
    private struct Ports {
        var server: Int?
        var metrics: Int?
    }

    private let readyFile: String?
    private let issuer: String
    private let demo: ReadyFile.Demo?
    private let waitsForMetrics: Bool
    private let ports = Mutex(Ports())

    init(readyFile: String?, issuer: String, demo: ReadyFile.Demo?, waitsForMetrics: Bool) {
        self.readyFile = readyFile
        self.issuer = issuer
        self.demo = demo
        self.waitsForMetrics = waitsForMetrics
    }

    func serverListening(on port: Int) { report { $0.server = port } }
    func metricsListening(on port: Int) { report { $0.metrics = port } }

    private func report(_ change: (inout Ports) -> Void) {
        let complete: Ports? = ports.withLock { ports in
            change(&ports)
            return ports.server != nil && (ports.metrics != nil || !waitsForMetrics) ? ports : nil
        }
        guard let complete, let server = complete.server, let readyFile else { return }
        do {
            try ReadyFile(issuer: issuer, port: server, metricsPort: complete.metrics, demo: demo).write(to: readyFile)
        } catch {
            // Whoever waits for the file would wait forever: stop instead.
            FileHandle.standardError.write(Data("latchkey: cannot write --ready-file \(readyFile): \(error)\n".utf8))
            Foundation.exit(1)
        }
    }
}
