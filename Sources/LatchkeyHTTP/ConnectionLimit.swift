import HTTPTypes
import NIOCore
import NIOHTTPTypes
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A count of things in progress at once with a ceiling: open HTTP connections (shared by every
/// connection's ``ConnectionLimit``), document fetches (``GuardedDocumentFetcher``).
final class ConcurrencySlots: Sendable {
    let maximum: Int
    private let count = Atomic<Int>(0)

    init(maximum: Int) { self.maximum = maximum }

    /// Takes a slot; `false` (taking nothing) when all ``maximum`` are taken.
    func admit() -> Bool {
        var current = count.load(ordering: .relaxed)
        while current < maximum {
            let (exchanged, original) = count.compareExchange(
                expected: current, desired: current + 1, ordering: .relaxed)
            if exchanged { return true }
            current = original
        }
        return false
    }

    func release() { count.subtract(1, ordering: .relaxed) }

    var open: Int { count.load(ordering: .relaxed) }

    /// ``HTTPServingOptions/defaultMaximumConnections``.
    static func defaultMaximum() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < 1 << 31 else {
            return 16_384
        }
        return max(16, min(16_384, Int(limit.rlim_cur) - 64))
    }
}

/// Closes a connection at once when ``ConcurrencySlots/maximum`` are open already
/// (docs/threat-model.md RV4): connections that hold a server's descriptors, sending nothing or
/// half a request, are cut by the idle timeout, and until then they cannot take the descriptors
/// the store and the logs need.
final class ConnectionLimit: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart

    let connections: ConcurrencySlots
    private var counted = false

    init(_ connections: ConcurrencySlots) { self.connections = connections }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { admit(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        admit(context)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        release()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) { release() }

    private func admit(_ context: ChannelHandlerContext) {
        guard !counted else { return }
        guard connections.admit() else {
            context.close(promise: nil)
            return
        }
        counted = true
    }

    private func release() {
        guard counted else { return }
        counted = false
        connections.release()
    }
}
