import NIOConcurrencyHelpers
import NIOCore

/// Reads the relay's replies off the connection and hands each to the command waiting for it.
/// Lives on the channel's event loop. A reply that comes before anyone waits (the greeting) is
/// kept until asked for. Limits: lines of 2,048 bytes, replies of 64 lines (RFC 5321 §4.5.3.1.5
/// allows 512-byte lines): a relay cannot make the client hold more than that.
final class SMTPReplyHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    static let maximumLineLength = 2_048
    static let maximumLines = 64

    private var buffer = ByteBuffer()
    private var partial: SMTPReply?
    private var ready: [SMTPReply] = []
    private var waiting: EventLoopPromise<SMTPReply>?
    private var failure: SMTPError? {
        didSet { lastFailure.withLockedValue { $0 = failure } }
    }
    /// The failure, readable after the connection is gone and this handler with it.
    let lastFailure: NIOLockedValueBox<SMTPError?>
    private var timer: Scheduled<Void>?
    private var context: ChannelHandlerContext?

    init(lastFailure: NIOLockedValueBox<SMTPError?>) { self.lastFailure = lastFailure }

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }
    func handlerRemoved(context: ChannelHandlerContext) { self.context = nil }

    /// Whether bytes have come that are not yet a whole reply, or a reply no one asked for.
    var holdsUnreadInput: Bool { buffer.readableBytes > 0 || partial != nil || !ready.isEmpty }

    /// Completes `promise` with the next reply, or fails it when the connection fails first or
    /// no reply comes within `timeout` (which also ends the connection).
    func nextReply(_ promise: EventLoopPromise<SMTPReply>, within timeout: TimeAmount, relay: String) {
        if !ready.isEmpty {
            promise.succeed(ready.removeFirst())
        } else if let failure {
            promise.fail(failure)
        } else if let context {
            waiting = promise
            let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
            timer = context.eventLoop.scheduleTask(in: timeout) {
                let handler = loopBound.value
                handler.fail(
                    .connection("The SMTP relay \(relay) did not answer within \(timeout.nanoseconds / 1_000_000_000) s."))
                handler.context?.close(promise: nil)
            }
        } else {
            promise.fail(SMTPError.connection("The connection to the SMTP relay is closed."))
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var incoming = unwrapInboundIn(data)
        buffer.writeBuffer(&incoming)
        do {
            while let line = try nextLine() { try take(line) }
            if buffer.readableBytes > Self.maximumLineLength {
                throw SMTPError.protocolViolation("The SMTP relay sent a line longer than \(Self.maximumLineLength) bytes.")
            }
        } catch {
            fail(error as? SMTPError ?? .protocolViolation("\(error)"))
            context.close(promise: nil)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        fail(.connection("The SMTP relay closed the connection."))
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        fail(.connection("The connection to the SMTP relay failed: \(error)"))
        context.close(promise: nil)
    }

    /// Fails the waiting command. A reason the session gave when it closed the connection (a
    /// deadline, a cancellation) wins over what the closing itself looks like from here.
    private func fail(_ error: SMTPError) {
        if failure == nil { failure = lastFailure.withLockedValue { $0 } ?? error }
        timer?.cancel()
        timer = nil
        waiting?.fail(failure ?? error)
        waiting = nil
    }

    /// The next line without its CRLF (a lone LF is taken too), or nil while it is incomplete.
    private func nextLine() throws -> String? {
        guard let end = buffer.readableBytesView.firstIndex(of: UInt8(ascii: "\n")) else { return nil }
        let length = end - buffer.readerIndex
        guard length <= Self.maximumLineLength else {
            throw SMTPError.protocolViolation("The SMTP relay sent a line longer than \(Self.maximumLineLength) bytes.")
        }
        var bytes = buffer.readBytes(length: length + 1) ?? []
        bytes.removeLast()
        if bytes.last == UInt8(ascii: "\r") { bytes.removeLast() }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// `ddd-text` continues a reply, `ddd text` or `ddd` ends it (RFC 5321 §4.2.1).
    private func take(_ line: String) throws {
        let bytes = Array(line.utf8)
        guard bytes.count >= 3, bytes[0...2].allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
            bytes.count == 3 || bytes[3] == UInt8(ascii: "-") || bytes[3] == UInt8(ascii: " "),
            let code = Int(String(decoding: bytes[0...2], as: UTF8.self)), (200...599).contains(code)
        else {
            throw SMTPError.protocolViolation("The SMTP relay sent a line that is not a reply: \(line.prefix(80))")
        }
        let text = bytes.count > 4 ? String(decoding: bytes[4...], as: UTF8.self) : ""
        var reply = partial ?? SMTPReply(code: code, lines: [])
        guard reply.code == code else {
            throw SMTPError.protocolViolation("The SMTP relay changed the code in the middle of a reply.")
        }
        reply.lines.append(text)
        guard reply.lines.count <= Self.maximumLines else {
            throw SMTPError.protocolViolation("The SMTP relay sent a reply of more than \(Self.maximumLines) lines.")
        }
        if bytes.count > 3 && bytes[3] == UInt8(ascii: "-") {
            partial = reply
            return
        }
        partial = nil
        if let waiting {
            self.waiting = nil
            timer?.cancel()
            timer = nil
            waiting.succeed(reply)
        } else {
            ready.append(reply)
            guard ready.count <= Self.maximumLines else {
                throw SMTPError.protocolViolation("The SMTP relay sent replies no command asked for.")
            }
        }
    }
}
