import Synchronization

/// Whether this process exports metrics. Until ``turnOn()`` (called when swift-metrics gets a
/// backend) ``EventMetrics`` and ``StoreMetrics`` do nothing, so a server without
/// `--metrics-address` pays nothing for them on its hot paths.
public enum MetricsSwitch {
    private static let on = Atomic<Bool>(false)

    public static func turnOn() { on.store(true, ordering: .relaxed) }

    static var isOn: Bool { on.load(ordering: .relaxed) }
}
