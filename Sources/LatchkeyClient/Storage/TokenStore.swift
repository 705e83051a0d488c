import Foundation

/// Where an app keeps its tokens between launches.
public protocol TokenStore: Sendable {
    func load(key: String) async throws -> TokenSet?
    func save(_ tokens: TokenSet, key: String) async throws
    func remove(key: String) async throws
}

/// Tokens in memory only, for tests and short-lived tools.
public actor InMemoryTokenStore: TokenStore {
    private var entries: [String: TokenSet] = [:]
    public init() {}
    public func load(key: String) -> TokenSet? { entries[key] }
    public func save(_ tokens: TokenSet, key: String) { entries[key] = tokens }
    public func remove(key: String) { entries[key] = nil }
}

/// Tokens in one JSON file readable only by its owner (mode 0600), replaced atomically on every
/// write so a crash leaves the old file or the new one, never half of either.
public actor FileTokenStore: TokenStore {
    public let url: URL

    public init(url: URL) {
        self.url = url
    }

    /// `$XDG_CONFIG_HOME/latchkey/credentials.json`, or `$HOME/.config/latchkey/credentials.json`
    /// (the XDG Base Directory rules: an empty or relative `XDG_CONFIG_HOME` is ignored).
    public static func defaultURL() -> URL {
        let environment = ProcessInfo.processInfo.environment
        let home =
            environment["HOME"].flatMap { $0.hasPrefix("/") ? URL(fileURLWithPath: $0) : nil }
            ?? FileManager.default.homeDirectoryForCurrentUser
        let base =
            environment["XDG_CONFIG_HOME"].flatMap { $0.hasPrefix("/") ? URL(fileURLWithPath: $0) : nil }
            ?? home.appendingPathComponent(".config")
        return base.appendingPathComponent("latchkey").appendingPathComponent("credentials.json")
    }

    public func load(key: String) throws -> TokenSet? { try read()[key] }

    public func save(_ tokens: TokenSet, key: String) throws {
        var entries = try read()
        entries[key] = tokens
        try write(entries)
    }

    public func remove(key: String) throws {
        var entries = try read()
        entries[key] = nil
        try write(entries)
    }

    /// Every stored entry, by key.
    public func all() throws -> [String: TokenSet] { try read() }

    private func read() throws -> [String: TokenSet] {
        guard FileManager.default.fileExists(atPath: url.path) else { return [:] }
        return try JSONDecoder().decode([String: TokenSet].self, from: Data(contentsOf: url))
    }

    private func write(_ entries: [String: TokenSet]) throws {
        let folder = url.deletingLastPathComponent()
        try FileManager.default.createDirectory(
            at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        let data = try encoder.encode(entries)
        // Write a 0600 temporary file beside the target, then rename it over the target (atomic on POSIX).
        let temporary = folder.appendingPathComponent(".\(url.lastPathComponent).\(UUID().uuidString)")
        guard FileManager.default.createFile(atPath: temporary.path, contents: data, attributes: [.posixPermissions: 0o600])
        else {
            throw CocoaError(.fileWriteUnknown)
        }
        if rename(temporary.path, url.path) != 0 {
            try? FileManager.default.removeItem(at: temporary)
            throw CocoaError(.fileWriteUnknown)
        }
    }
}
