import Foundation
import LatchkeyServer
import Logging
import ServiceLifecycle

/// Sends the queued back-channel logouts: every second, or at once after one was handled (there
/// may be more). Any instance may run it; the store's claims keep two from sending one logout,
/// and a logout queued before a crash or a restart is sent after it.
struct BackChannelLogoutService: Service {
    let logouts: BackChannelLogout
    let logger: Logger
    var pollInterval: Duration = .seconds(1)

    func run() async throws {
        while !Task.isCancelled, !Task.isShuttingDownGracefully {
            var handled = 0
            do {
                let results = try await cancelWhenGracefulShutdown { try await logouts.deliverDue(limit: 1) }
                handled = results.count
                for (delivery, outcome) in results {
                    let metadata: Logger.Metadata = [
                        "client_id": "\(delivery.clientID)", "attempt": "\(delivery.attempts)",
                    ]
                    switch outcome {
                    case .delivered: logger.info("back-channel logout delivered", metadata: metadata)
                    case .tryAgain(let error):
                        logger.warning(
                            "back-channel logout not delivered; will retry",
                            metadata: metadata.merging(["error": "\(error)"]) { $1 })
                    case .gaveUp(let error):
                        logger.error(
                            "back-channel logout given up", metadata: metadata.merging(["error": "\(error)"]) { $1 })
                    }
                }
            } catch {
                logger.warning("the back-channel logouts could not be read; will retry", metadata: ["error": "\(error)"])
            }
            if handled == 0 {
                do { try await cancelWhenGracefulShutdown { try await Task.sleep(for: pollInterval) } } catch { return }
            }
        }
    }
}
