import Logging
import Metrics
import Synchronization

/// Counts the security events of the endpoints (``ServerContext``) and ``Administration`` as swift-metrics
/// counters, named for Prometheus (`latchkey serve --metrics-address` exports them). The events
/// are the one place every grant, sign-in and consent already reports to, so the counters move
/// exactly with the audit log.
///
/// Labels take values from small fixed sets (grant types, client types, outcomes), never a user.
/// `client_id` is a label of `latchkey_tokens_issued_total` only when the operator asks for it
/// (``ServerConfiguration/metricsClientLabels``), since every registered client adds series.
public enum EventMetrics {
    /// A counter's name and labels.
    struct Series: Hashable {
        var name: String
        var labels: [String]
    }

    /// Counters made once per series: making one asks the metrics backend, which takes a lock and
    /// a lookup; incrementing one is an atomic add.
    private static let counters = Mutex<[Series: Counter]>([:])

    /// Counts `event` with its log fields, if it is one that has a counter.
    static func record(_ event: SecurityEvent, _ metadata: Logger.Metadata, clientLabels: Bool = false) {
        guard MetricsSwitch.isOn, let (counter, dimensions) = series(for: event, metadata, clientLabels: clientLabels) else {
            return
        }
        let series = Series(name: counter, labels: dimensions.flatMap { [$0.0, $0.1] })
        let made = counters.withLock { counters in
            if let existing = counters[series] { return existing }
            let made = Counter(label: counter, dimensions: dimensions)
            counters[series] = made
            return made
        }
        made.increment()
    }

    /// The counter and labels for `event`, or `nil` for events that are not counted.
    static func series(for event: SecurityEvent, _ metadata: Logger.Metadata, clientLabels: Bool)
        -> (String, [(String, String)])?
    {
        func field(_ key: String) -> String { metadata[key].map { "\($0)" } ?? "" }
        switch event {
        case .tokenIssued:
            var labels = [("grant_type", field("grant_type")), ("client_type", field("client_type"))]
            if clientLabels { labels.append(("client_id", field("client_id"))) }
            return ("latchkey_tokens_issued_total", labels)
        case .refreshReuseDetected: return ("latchkey_refresh_token_reuse_total", [])
        case .codeReplayDetected: return ("latchkey_code_replays_total", [])
        case .loginSucceeded: return ("latchkey_sign_ins_total", [("result", "succeeded")])
        case .loginFailed, .loginRefusedDisabled: return ("latchkey_sign_ins_total", [("result", "failed")])
        case .loginThrottled: return ("latchkey_sign_ins_total", [("result", "throttled")])
        case .loginBusy: return ("latchkey_sign_ins_total", [("result", "busy")])
        case .clientAuthenticationFailed:
            return ("latchkey_client_authentication_failures_total", [("reason", "invalid_client")])
        case .clientAuthenticationThrottled:
            return ("latchkey_client_authentication_failures_total", [("reason", "throttled")])
        case .consentGranted: return ("latchkey_consents_total", [("decision", "granted")])
        case .consentDenied: return ("latchkey_consents_total", [("decision", "denied")])
        case .tokenRevoked: return ("latchkey_revocations_total", [("by", "client")])
        case .grantRevokedByUser: return ("latchkey_revocations_total", [("by", "user")])
        case .grantRevokedByAdmin: return ("latchkey_revocations_total", [("by", "admin")])
        case .deviceUserCodeEntered: return ("latchkey_device_user_codes_total", [("result", "entered")])
        case .deviceUserCodeRefused: return ("latchkey_device_user_codes_total", [("result", "refused")])
        case .deviceUserCodeThrottled: return ("latchkey_device_user_codes_total", [("result", "throttled")])
        default: return nil
        }
    }
}
