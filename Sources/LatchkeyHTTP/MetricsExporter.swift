import Hummingbird
import LatchkeyServer
import Logging
import Metrics
import NIOCore
import Prometheus

/// The process's swift-metrics in the Prometheus text format (version 0.0.4), served by
/// `GET /metrics` on a listener of its own (`latchkey serve --metrics-address`), so that the
/// figures never reach the public port.
///
/// Hummingbird's request metrics are renamed here for Prometheus: `http_server_requests_total`
/// and `http_server_request_duration_seconds` with labels `route` (the route's pattern, never the
/// raw path), `method` and `status`, and `http_server_active_requests`.
public struct MetricsExporter: Sendable {
    public let registry: PrometheusCollectorRegistry

    /// Makes swift-metrics report to a new registry. swift-metrics allows this once per process.
    public static func bootstrap() -> MetricsExporter {
        let registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.nameAndLabelSanitizer = { name, labels in
            (renamed[name] ?? name, labels.map { (renamedLabels[$0.0] ?? $0.0, $0.1) })
        }
        factory.defaultDurationHistogramBuckets = [
            .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10),
            .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500),
            .seconds(1), .milliseconds(2500), .seconds(5), .seconds(10),
        ]
        factory.durationHistogramBuckets[StoreMetrics.durationName] = [
            .microseconds(50), .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1),
            .milliseconds(2), .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(100),
            .milliseconds(500), .seconds(1), .seconds(5),
        ]
        factory.valueHistogramBuckets["latchkey_sqlite_group_commit_batch_size"] = [1, 2, 4, 8, 16, 32, 64]
        MetricsSystem.bootstrap(factory)
        MetricsSwitch.turnOn()
        return MetricsExporter(registry: registry)
    }

    private static let renamed = [
        "hb.requests": "http_server_requests_total",
        "hb.request.errors": "http_server_request_errors_total",
        "http.server.request.duration": "http_server_request_duration_seconds",
        "http.server.active_requests": "http_server_active_requests",
    ]
    private static let renamedLabels = [
        "http.route": "route", "http.request.method": "method", "http.response.status_code": "status",
        "error.type": "status",
    ]

    /// The listener: `GET /metrics` only.
    public func application(
        host: String, port: Int, logger: Logger, onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) -> some ApplicationProtocol {
        let router = Router()
        let registry = self.registry
        router.get("/metrics") { _, _ in
            var buffer = [UInt8]()
            buffer.reserveCapacity(16_384)
            registry.emit(into: &buffer)
            return Response(
                status: .ok,
                headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8", .cacheControl: "no-store"],
                body: .init(byteBuffer: ByteBuffer(bytes: buffer)))
        }
        return Application(
            router: router, configuration: .init(address: .hostname(host, port: port), serverName: nil),
            onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? port) }, logger: logger)
    }
}
