import Foundation
import LatchkeyCore
import Logging

/// What every endpoint shares besides its store roles: the configuration, with the server's clock
/// and issuer, and where security events go (the log, the audit trail and the metrics).
public struct ServerContext: Sendable {
    public let configuration: ServerConfiguration
    /// Security events (`code.replay_detected`, `refresh.reuse_detected`, sign-ins): never a secret value.
    public let logger: Logger
    /// The same events, waiting to be stored for the admin console's Activity page.
    public let audit: AuditTrail

    public init(configuration: ServerConfiguration, logger: Logger, audit: AuditTrail) {
        self.configuration = configuration
        self.logger = logger
        self.audit = audit
    }

    var now: Date { configuration.now() }
    var issuer: String { configuration.issuer }

    /// Logs a security event with its fields (never a token, code, secret or password).
    func event(_ event: SecurityEvent, _ metadata: Logger.Metadata = [:]) {
        logger.notice("\(event)", metadata: metadata.merging(["event": "\(event)"]) { a, _ in a })
        audit.record(event, metadata, at: now)
        EventMetrics.record(event, metadata, clientLabels: configuration.metricsClientLabels)
    }
}

/// A part of the server that works within the shared ``ServerContext``, whose configuration,
/// clock, issuer and security events it reaches through these.
protocol ServerContextual {
    var context: ServerContext { get }
}

extension ServerContextual {
    var configuration: ServerConfiguration { context.configuration }
    var now: Date { context.now }
    var issuer: String { context.issuer }

    /// Logs a security event with its fields (never a token, code, secret or password).
    func event(_ event: SecurityEvent, _ metadata: Logger.Metadata = [:]) { context.event(event, metadata) }
}
