import Foundation
import LatchkeyCore
import LatchkeyPasswords
import LatchkeyServer
import LatchkeyTestSupport
import Synchronization
import Testing

/// Password hashing runs on its own threads with a bounded queue, so sign-ins cannot stall token
/// requests nor build an unbounded backlog.
@Suite("Password workers")
struct PasswordWorkersTests {
    /// Work that holds its thread until ``release()``, and says when it has started.
    final class Gate: Sendable {
        private let open = Mutex(false)
        private let started = Mutex(false)
        func release() { open.withLock { $0 = true } }
        func hold() {
            started.withLock { $0 = true }
            while !open.withLock({ $0 }) { usleep(1_000) }
        }
        /// Waits (up to five seconds) until some thread is in ``hold()``.
        func waitUntilHeld() async throws {
            for _ in 0..<2_500 where !started.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(2)) }
        }
    }

    @Test("Work runs on the pool's threads, not on the caller's")
    func offThePool() async throws {
        let workers = PasswordWorkers(threads: 1, queueLimit: 4)
        // NIO names its pool threads; the cooperative pool's threads have other names.
        let worker = try await workers.run { Thread.current.name ?? "" }
        #expect(worker.hasPrefix("TP-#"))
        let hash = try await BcryptPasswordHasher(cost: 4, workers: workers).hash("correct-horse")
        #expect(try await BcryptPasswordHasher(cost: 4, workers: workers).verify("correct-horse", hash: hash))
    }

    @Test("Beyond threads + queue, work is refused at once with a Retry-After, and admitted again once it drains")
    func bounded() async throws {
        let workers = PasswordWorkers(threads: 1, queueLimit: 0)
        let gate = Gate()
        let holder = Task { try await workers.run { gate.hold() } }
        try await gate.waitUntilHeld()
        await #expect(throws: PasswordHashingBusy.self) { try await workers.run { () } }
        do {
            try await workers.run { () }
        } catch let busy as PasswordHashingBusy {
            #expect(busy.retryAfter >= 1)
        }
        gate.release()
        try await holder.value
        try await workers.run { () }
    }

    @Test("A sign-in refused for load is .busy with Retry-After; the password is not checked and no failure is counted")
    func signInBusy() async throws {
        let fixture = try await Fixture.make()
        let workers = PasswordWorkers(threads: 1, queueLimit: 0)
        let server = AuthorizationServer(
            store: fixture.store, configuration: fixture.server.configuration,
            passwordHasher: BcryptPasswordHasher(cost: 4, workers: workers), signingKeys: fixture.server.signingKeys)
        let gate = Gate()
        let holder = Task { try await workers.run { gate.hold() } }
        defer { gate.release() }
        try await gate.waitUntilHeld()
        let anonymous = try await server.sessions.session(cookie: nil).session
        let form = FormParameters([("csrf_token", anonymous.csrfToken), ("username", "alice"), ("password", "wrong")])
        let result = try await server.sessions.signIn(form, session: anonymous, clientAddress: "127.0.0.1")
        guard case .busy(_, let retryAfter) = result else {
            Issue.record("expected .busy, got \(result)")
            return
        }
        #expect(retryAfter >= 1)
        gate.release()
        try await holder.value
        #expect(
            try await fixture.store.failures(
                key: ThrottleKey(rawValue: "account:" + RandomToken.hash("alice")), at: fixture.clock.now)?.failures ?? 0 == 0)
    }
}
