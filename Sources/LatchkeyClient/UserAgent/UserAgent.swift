import Foundation

/// Opens the authorization URL where the user can see and trust it: the system browser, never
/// an embedded web view (RFC 8252 §8.12).
public protocol UserAgent: Sendable {
    func open(_ url: URL) async throws
}

/// The user's default browser: `$BROWSER` if set (a command; `%s` stands for the URL, else the URL
/// is appended), else `xdg-open` on Linux and `open` on macOS.
public struct SystemBrowser: UserAgent {
    public init() {}

    public func open(_ url: URL) async throws {
        let command: String
        if let browser = ProcessInfo.processInfo.environment["BROWSER"]?.split(separator: ":").first, !browser.isEmpty {
            command = browser.contains("%s") ? browser.replacingOccurrences(of: "%s", with: "\"$1\"") : browser + " \"$1\""
        } else {
            #if os(macOS)
                command = "open \"$1\""
            #else
                command = "xdg-open \"$1\""
            #endif
        }
        // The URL is passed as a positional argument, never spliced into the shell text.
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", command, "latchkey-browser", url.absoluteString]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch {
            throw ClientError.network("cannot start a browser (\(command)): \(error.localizedDescription)")
        }
    }
}
