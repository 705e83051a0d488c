import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL

/// One connection to the relay: sends command lines and waits for each reply, within the timeout.
final class SMTPSession: Sendable {
    private let channel: any Channel
    private let timeout: Duration
    private let relay: String
    /// Why the connection failed, kept beyond the pipeline's life.
    private let lastFailure: NIOLockedValueBox<SMTPError?>

    private init(channel: any Channel, timeout: Duration, relay: String, lastFailure: NIOLockedValueBox<SMTPError?>) {
        self.channel = channel
        self.lastFailure = lastFailure
        self.timeout = timeout
        self.relay = relay
    }

    /// Connects, with TLS from the first byte when `implicitTLS` is given. After `sessionTimeout`
    /// the connection is closed, whatever is under way.
    static func open(relay: SMTPRelay, implicitTLS tls: NIOSSLContext?, timeout: Duration, sessionTimeout: Duration)
        async throws -> SMTPSession
    {
        let serverName = relay.hostIsAddress ? nil : relay.host
        let lastFailure = NIOLockedValueBox<SMTPError?>(nil)
        let bootstrap = ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(TimeAmount(timeout))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let tls {
                        try channel.pipeline.syncOperations.addHandler(
                            NIOSSLClientHandler(context: tls, serverHostname: serverName))
                    }
                    try channel.pipeline.syncOperations.addHandler(SMTPReplyHandler(lastFailure: lastFailure))
                }
            }
        do {
            let channel = try await bootstrap.connect(host: relay.host, port: relay.port).get()
            let session = SMTPSession(
                channel: channel, timeout: timeout, relay: "\(relay.host):\(relay.port)", lastFailure: lastFailure)
            let seconds = sessionTimeout.components.seconds
            let deadline = channel.eventLoop.scheduleTask(in: TimeAmount(sessionTimeout)) {
                session.close(because: .connection("The session with the SMTP relay took longer than \(seconds) s."))
            }
            channel.closeFuture.whenComplete { _ in deadline.cancel() }
            return session
        } catch {
            throw SMTPError.connection("Could not connect to the SMTP relay \(relay.host):\(relay.port): \(error)")
        }
    }

    /// The next reply, which must have `code`.
    @discardableResult
    func expect(_ code: Int, _ name: String) async throws -> SMTPReply { try await expect([code], name) }

    private func expect(_ codes: [Int], _ name: String) async throws -> SMTPReply {
        let reply = try await nextReply()
        guard codes.contains(reply.code) else { throw SMTPError.refused(command: name, reply: reply) }
        return reply
    }

    /// Sends `line` and waits for a reply with one of `codes`. `name` is what errors call the
    /// command: the command itself unless told, never a line that holds a secret.
    @discardableResult
    func command(_ line: String, expect codes: Int..., name: String? = nil) async throws -> SMTPReply {
        do {
            try await channel.writeAndFlush(ByteBuffer(string: line + "\r\n")).get()
        } catch {
            // The connection ended (a failed TLS handshake, a closed socket): the reader knows why.
            _ = try await nextReply()
            throw SMTPError.connection("The connection to the SMTP relay \(relay) ended: \(error)")
        }
        return try await expect(codes, name ?? String(line.prefix { $0 != " " && $0 != ":" }))
    }

    /// `EHLO`, answering the extensions the relay offers.
    func hello(_ clientName: String) async throws -> [String: [String]] {
        try await command("EHLO \(clientName)", expect: 250).extensions
    }

    /// Turns the connection to TLS after the relay's 220 to `STARTTLS`. Any byte the relay sent
    /// after that 220 would be read as if it came over TLS, so it ends the session (the command
    /// injection of CVE-2011-0411).
    func startTLS(_ tls: NIOSSLContext, serverName: String?) async throws {
        try await channel.eventLoop.submit { [channel] in
            let replies = try channel.pipeline.syncOperations.handler(type: SMTPReplyHandler.self)
            guard !replies.holdsUnreadInput else {
                throw SMTPError.protocolViolation("The SMTP relay sent more after its STARTTLS answer; the session was ended.")
            }
            try channel.pipeline.syncOperations.addHandler(
                NIOSSLClientHandler(context: tls, serverHostname: serverName), position: .first)
        }.get()
    }

    /// `QUIT`, whose answer does not matter: the message is already taken.
    func quit() async {
        _ = try? await command("QUIT", expect: 221)
        close(because: nil)
    }

    /// Closes the connection; `reason`, when given, is what a command waiting for a reply is told.
    func close(because reason: SMTPError?) {
        if let reason { lastFailure.withLockedValue { if $0 == nil { $0 = reason } } }
        channel.close(promise: nil)
    }

    /// The connection's own address as an `EHLO` address literal (RFC 5321 §4.1.3).
    var localAddressLiteral: String {
        guard let address = channel.localAddress?.ipAddress else { return "[127.0.0.1]" }
        return address.contains(":") ? "[IPv6:\(address)]" : "[\(address)]"
    }

    private func nextReply() async throws -> SMTPReply {
        let promise = channel.eventLoop.makePromise(of: SMTPReply.self)
        let (timeout, relay) = (TimeAmount(self.timeout), self.relay)
        channel.eventLoop.execute { [channel, lastFailure] in
            do {
                try channel.pipeline.syncOperations.handler(type: SMTPReplyHandler.self).nextReply(
                    promise, within: timeout, relay: relay)
            } catch {
                promise.fail(
                    lastFailure.withLockedValue { $0 } ?? .connection("The connection to the SMTP relay \(relay) is closed."))
            }
        }
        return try await promise.futureResult.get()
    }
}

extension TimeAmount {
    init(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        self = .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}
