import Foundation

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

/// Starts processes one at a time: Foundation's `Process.run()` on Linux crashed (a segmentation
/// fault copying memory in `run()`) while other tests ran beside it; scripts/test also runs the
/// tests one after another.
private let spawnLock = NSLock()

func spawning(_ start: () throws -> Void) rethrows {
    spawnLock.lock()
    defer { spawnLock.unlock() }
    try start()
}

/// Runs `latchkey ARGUMENTS` to completion with `input` on stdin.
func runLatchkey(_ arguments: [String], input: String? = nil, environment: [String: String] = [:]) throws -> CommandResult {
    let process = Process()
    process.executableURL = try latchkeyExecutable()
    process.arguments = arguments
    process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
    let out = Pipe(), err = Pipe(), stdin = Pipe()
    process.standardOutput = out
    process.standardError = err
    process.standardInput = stdin
    try spawning { try process.run() }
    if let input { stdin.fileHandleForWriting.write(Data(input.utf8)) }
    try stdin.fileHandleForWriting.close()
    let output = out.fileHandleForReading.readDataToEndOfFile()
    let errors = err.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return CommandResult(
        status: process.terminationStatus, stdout: String(decoding: output, as: UTF8.self),
        stderr: String(decoding: errors, as: UTF8.self))
}

/// A free loopback TCP port, found by binding port 0.
func freePort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw ProcessFailure("socket failed") }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
    }
    guard bound == 0 else { throw ProcessFailure("bind failed") }
    _ = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    return Int(UInt16(bigEndian: address.sin_port))
}

/// `latchkey serve` as a child process whose stdout is collected line by line.
final class ServeProcess: @unchecked Sendable {
    // @unchecked: `output` is guarded by `lock`; the Process is only touched from the test's task.
    let process = Process()
    private let lock = NSLock()
    private var output = ""
    private var errors = ""

    /// - Parameter captureStandardError: keep what the server logs (see ``stderr``); off, it goes to
    ///   /dev/null, so no extra pipe can be inherited by processes a test starts afterwards.
    init(_ arguments: [String], captureStandardError: Bool = false) throws {
        process.executableURL = try latchkeyExecutable()
        process.arguments = ["serve"] + arguments
        let pipe = Pipe()
        let errorPipe = Pipe()
        process.standardOutput = pipe
        process.standardError = captureStandardError ? errorPipe : FileHandle.nullDevice
        pipe.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let data = handle.availableData
            guard let self, !data.isEmpty else { return }
            self.lock.withLock { self.output += String(decoding: data, as: UTF8.self) }
        }
        if captureStandardError {
            errorPipe.fileHandleForReading.readabilityHandler = { [weak self] handle in
                let data = handle.availableData
                guard let self, !data.isEmpty else { return }
                self.lock.withLock { self.errors += String(decoding: data, as: UTF8.self) }
            }
        }
        try spawning { try process.run() }
    }

    var stdout: String { lock.withLock { output } }
    /// What the server logged (its audit events, one JSON object per line).
    var stderr: String { lock.withLock { errors } }

    /// Waits until stdout contains `text` (or fails after `seconds`).
    func waitFor(_ text: String, seconds: Double = 30) async throws {
        let deadline = Date().addingTimeInterval(seconds)
        while !stdout.contains(text) {
            guard Date() < deadline, process.isRunning else {
                throw ProcessFailure("latchkey serve did not print \(text): \(stdout)")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// Sends SIGTERM and returns the exit status.
    func terminate(seconds: Double = 20) async throws -> Int32 {
        process.terminate()
        let deadline = Date().addingTimeInterval(seconds)
        while process.isRunning {
            guard Date() < deadline else {
                kill(process.processIdentifier, SIGKILL)
                throw ProcessFailure("latchkey serve did not stop on SIGTERM")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        return process.terminationStatus
    }
}
