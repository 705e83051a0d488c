import Foundation
import Subprocess
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The built `latchkey` executable: beside the test bundle, or `$LATCHKEY_BIN`.
func latchkeyExecutable() throws -> URL {
    if let path = ProcessInfo.processInfo.environment["LATCHKEY_BIN"] { return URL(fileURLWithPath: path) }
    var candidates = [URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()]
    if let bundle = Bundle.main.executableURL { candidates.append(bundle.deletingLastPathComponent()) }
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()
    candidates.append(root.appendingPathComponent(".build/debug"))
    for directory in candidates {
        var url = directory
        // The Swift Testing runner may sit inside an .xctest bundle folder.
        for _ in 0..<4 {
            let candidate = url.appendingPathComponent("latchkey")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            url = url.deletingLastPathComponent()
        }
    }
    throw ProcessFailure("the latchkey executable was not built: run swift build --build-tests first")
}

struct ProcessFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

struct CommandResult {
    var status: Int32
    var stdout: String
    var stderr: String
    var json: [String: Any] { (try? JSONSerialization.jsonObject(with: Data(stdout.utf8))) as? [String: Any] ?? [:] }
}

/// Runs `latchkey ARGUMENTS` to completion with `input` on stdin. Processes start through
/// swift-subprocess rather than Foundation's `Process`, whose `run()` on Linux reads past a buffer
/// while listing the open descriptors and now and then crashed the test process when many were
/// open, as they are while tests run side by side.
func runLatchkey(_ arguments: [String], input: String? = nil, environment: [String: String] = [:]) async throws
    -> CommandResult
{
    let result = try await Subprocess.run(
        .path(.init(try latchkeyExecutable().path)), arguments: Arguments(arguments),
        environment: .inherit.updating(environment.overrides), input: .string(input ?? ""),
        output: .string(limit: 1 << 24), error: .string(limit: 1 << 24))
    return CommandResult(
        status: result.terminationStatus.code, stdout: result.standardOutput, stderr: result.standardError)
}

extension [String: String] {
    /// The variables as swift-subprocess takes them, each replacing the inherited one.
    var overrides: [Environment.Key: String?] {
        [Environment.Key: String?](uniqueKeysWithValues: map { (Environment.Key(stringLiteral: $0.key), Optional($0.value)) })
    }
}

extension TerminationStatus {
    /// The exit code, or the number of the signal that ended the process.
    var code: Int32 {
        switch self {
        case .exited(let code): code
        case .signaled(let signal): signal
        }
    }
}

/// A free loopback TCP port for a server a test starts. It is drawn below Linux's ephemeral range
/// (32768–60999), so that no outgoing connection of a test running beside it can take the port
/// between this check and the server's bind, and it is never one this process handed out before.
func freePort() throws -> Int {
    for _ in 0..<500 {
        let port = Int.random(in: 20_000..<32_768)
        guard handedOutPorts.withLock({ $0.insert(port).inserted }), canBind(port: port) else { continue }
        return port
    }
    throw ProcessFailure("no free port between 20000 and 32767")
}

private let handedOutPorts = Mutex<Set<Int>>([])

/// Whether a listener could bind `port` on 127.0.0.1 now.
private func canBind(port: Int) -> Bool {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = UInt16(port).bigEndian
    let length = socklen_t(MemoryLayout<sockaddr_in>.size)
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
    } == 0
}

/// `latchkey serve` as a child process whose stdout is collected as it comes.
final class ServeProcess: @unchecked Sendable {
    // @unchecked: the collected output and the exit status are guarded by `lock`.
    private let lock = NSLock()
    private var output: [UInt8] = []
    private var errors: [UInt8] = []
    private var exitStatus: Int32?
    private var run: Task<Void, any Error>?
    /// The child's process id.
    private(set) var processIdentifier: pid_t = 0

    /// What the server logs is kept (see ``stderr``), and its end shown when it fails to start.
    init(_ arguments: [String]) async throws {
        let executable = try latchkeyExecutable().path
        let (started, starting) = AsyncStream<pid_t>.makeStream()
        run = Task { [self] in
            defer { starting.finish() }
            // A failure to start or to read the output counts as an exit, so nothing waits on.
            do { try await collect(executable, arguments, starting) } catch {
                lock.withLock { exitStatus = exitStatus ?? -1 }
                throw error
            }
        }
        var iterator = started.makeAsyncIterator()
        guard let pid = await iterator.next() else {
            try await run?.value
            throw ProcessFailure("latchkey serve did not start")
        }
        processIdentifier = pid
    }

    /// Runs the server, collecting its output, and records its exit status.
    private func collect(
        _ executable: String, _ arguments: [String], _ starting: AsyncStream<pid_t>.Continuation
    ) async throws {
        let result = try await Subprocess.run(
            .path(.init(executable)), arguments: Arguments(["serve"] + arguments), input: .none, output: .sequence,
            error: .sequence
        ) { execution in
            starting.yield(execution.processIdentifier.value)
            starting.finish()
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for try await buffer in execution.standardError {
                        self.lock.withLock { self.errors += buffer.withUnsafeBytes { Array($0) } }
                    }
                }
                for try await buffer in execution.standardOutput {
                    self.lock.withLock { self.output += buffer.withUnsafeBytes { Array($0) } }
                }
                try await group.waitForAll()
            }
        }
        lock.withLock { exitStatus = result.terminationStatus.code }
    }

    var stdout: String { lock.withLock { String(decoding: output, as: UTF8.self) } }
    /// What the server logged (its audit events, one JSON object per line).
    var stderr: String { lock.withLock { String(decoding: errors, as: UTF8.self) } }
    var isRunning: Bool { lock.withLock { exitStatus == nil } }

    /// Waits until the process has exited and its output is read, and returns its exit status.
    @discardableResult
    func waitUntilExit() async throws -> Int32 {
        try await run?.value
        return lock.withLock { exitStatus ?? -1 }
    }

    /// Waits until stdout contains `text` (or fails after `seconds`).
    func waitFor(_ text: String, seconds: Double = 30) async throws {
        let deadline = Date().addingTimeInterval(seconds)
        while !stdout.contains(text) {
            guard Date() < deadline, isRunning else {
                throw ProcessFailure("latchkey serve did not print \(text): \(stdout) \(stderr.suffix(2_000))")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// Sends SIGTERM and returns the exit status.
    func terminate(seconds: Double = 20) async throws -> Int32 {
        // Once it has exited its pid may already name another process.
        guard isRunning else { return try await waitUntilExit() }
        kill(processIdentifier, SIGTERM)
        let deadline = Date().addingTimeInterval(seconds)
        while isRunning {
            guard Date() < deadline else {
                kill(processIdentifier, SIGKILL)
                throw ProcessFailure("latchkey serve did not stop on SIGTERM")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        return try await waitUntilExit()
    }
}
