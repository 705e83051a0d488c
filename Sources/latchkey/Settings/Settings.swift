import Configuration
import Foundation
import Synchronization

/// A setting that cannot be used: the message is one sentence naming it, and `serve` exits 2
/// before anything binds.
struct SettingError: Error, CustomStringConvertible {
    var description: String
}

/// The effective settings of one run: a flag (`--NAME`) over an environment variable
/// (`LATCHKEY_NAME`) over the configuration file (`--config FILE` or `LATCHKEY_CONFIG`, one JSON
/// object of `"NAME": value`) over the default in ``Setting/all``. swift-configuration reads the
/// four sources in that order; this type adds the checks (an unknown name, a value of the wrong
/// kind or out of range) and remembers where each value came from, for `--print-config`.
struct Settings: Sendable {
    private let reader: ConfigReader
    private let recorder: AccessRecorder
    /// The configuration file, when there is one.
    let file: String?

    /// - Parameter arguments: the command's arguments after its name, such as `["--port", "0"]`.
    init(arguments: [String], environment: [String: String] = ProcessInfo.processInfo.environment) async throws {
        try Self.checkArguments(arguments)
        let flags = CommandLineArgumentsProvider(arguments: ["latchkey"] + arguments)
        let variables = EnvironmentVariablesProvider(environmentVariables: environment).prefixKeys(with: "latchkey")
        let first = ConfigReader(providers: [flags, variables])
        let file = first.string(forKey: "config").flatMap { $0.isEmpty ? nil : $0 }
        var providers: [any ConfigProvider] = [flags, variables]
        if let file {
            try Self.checkFile(file)
            let location = ConfigReader(
                provider: InMemoryProvider(values: ["filePath": ConfigValue(.string(file), isSecret: false)]))
            do {
                providers.append(
                    try await FileProvider<JSONSnapshot>(
                        parsingOptions: .init(secretsSpecifier: .specific(Set(Self.secretNames))), config: location))
            } catch {
                throw SettingError(description: "The configuration file \(file) cannot be read: \(error).")
            }
        }
        providers.append(InMemoryProvider(name: "defaults", values: Self.defaults))
        recorder = AccessRecorder()
        reader = ConfigReader(providers: providers, accessReporter: recorder)
        self.file = file
    }

    // MARK: Typed values

    func seconds(_ name: String) throws -> Double {
        let setting = try known(name)
        let value = try read(setting) { $0.double(forKey: $1) }
        guard let value else { throw missing(setting) }
        if case .seconds(let range) = setting.kind, !range.contains(value) {
            throw outOfRange(
                setting, value: format(value), range: "\(format(range.lowerBound)) to \(format(range.upperBound)) seconds")
        }
        return value
    }

    func count(_ name: String) throws -> Int {
        let setting = try known(name)
        let value = try read(setting) { $0.int(forKey: $1) }
        guard let value else { throw missing(setting) }
        if case .count(let range) = setting.kind, !range.contains(value) {
            throw outOfRange(setting, value: "\(value)", range: "\(range.lowerBound) to \(range.upperBound)")
        }
        return value
    }

    func flag(_ name: String) throws -> Bool {
        let setting = try known(name)
        return try read(setting) { $0.bool(forKey: $1) } ?? false
    }

    func text(_ name: String) throws -> String? {
        let setting = try known(name)
        return try read(setting) { $0.string(forKey: $1, isSecret: setting.isSecret) }.flatMap { $0.isEmpty ? nil : $0 }
    }

    func choice(_ name: String) throws -> String {
        let setting = try known(name)
        guard case .choice(let words) = setting.kind, let value = try read(setting, { $0.string(forKey: $1) }) else {
            throw missing(setting)
        }
        guard words.contains(value) else {
            throw SettingError(
                description:
                    "\(setting.name) must be one of \(words.joined(separator: ", ")), not \"\(value)\" (\(source(of: setting))).")
        }
        return value
    }

    func list(_ name: String) throws -> [String] {
        let setting = try known(name)
        return try read(setting) { $0.stringArray(forKey: $1) }?.filter { !$0.isEmpty } ?? []
    }

    /// A sentence for a value that passed its kind's checks but not a rule between settings.
    func problem(_ name: String, _ text: String) -> SettingError {
        let setting = Setting.named(name)
        return SettingError(description: "\(name) \(text) (\(setting.map(source(of:)) ?? "default")).")
    }

    // MARK: Where values come from

    /// Where the value of `setting` came from, as a person would look for it: from the last read
    /// of it, so call this after reading it.
    func source(of setting: Setting) -> String {
        guard let event = recorder.last(setting.name) else { return "not set" }
        for result in event.providerResults {
            guard case .success(let lookup) = result.result, lookup.value != nil else { continue }
            return describe(provider: result.providerName, encodedKey: lookup.encodedKey)
        }
        return "not set"
    }

    private func describe(provider: String, encodedKey: String) -> String {
        if provider.contains("CommandLineArguments") { return "flag \(encodedKey)" }
        if provider.contains("EnvironmentVariables") { return "environment \(encodedKey)" }
        if provider.contains("FileProvider") { return "file \(file ?? "")" }
        return "default"
    }

    /// `--print-config`: every setting, its effective value (secrets redacted) and its source.
    func printed() throws -> String {
        var lines = [
            "# Effective configuration: flags, then LATCHKEY_* environment variables, then "
                + (file.map { "the file \($0)" } ?? "no configuration file") + ", then the defaults."
        ]
        for (section, settings) in Setting.all {
            lines.append("")
            lines.append("# \(section)")
            for setting in settings {
                let value: String
                switch setting.kind {
                case .seconds: value = format(try seconds(setting.name))
                case .count: value = "\(try count(setting.name))"
                case .flag: value = "\(try flag(setting.name))"
                case .choice: value = "\"\(try choice(setting.name))\""
                case .list: value = "[" + (try list(setting.name)).map { "\"\($0)\"" }.joined(separator: ", ") + "]"
                case .text:
                    value = try text(setting.name).map { setting.isSecret ? "<redacted>" : "\"\($0)\"" } ?? "(not set)"
                }
                let line = "\(setting.name) = \(value)"
                lines.append(
                    line.padding(toLength: max(line.count, 48), withPad: " ", startingAt: 0) + "  # \(source(of: setting))")
            }
        }
        return lines.joined(separator: "\n")
    }

    // MARK: Reading

    private func known(_ name: String) throws -> Setting {
        guard let setting = Setting.named(name) else { throw SettingError(description: "internal error: no setting \(name)") }
        return setting
    }

    /// Reads `setting` with `get`, turning a value that is not of its kind into a ``SettingError``.
    private func read<T>(_ setting: Setting, _ get: (ConfigReader, ConfigKey) -> T?) throws -> T? {
        let value = get(reader, ConfigKey(setting.name))
        if let event = recorder.last(setting.name) {
            for result in event.providerResults {
                guard case .failure = result.result else { continue }
                let key = result.providerName.contains("FileProvider") ? setting.name : setting.environmentName
                let from = describe(
                    provider: result.providerName,
                    encodedKey: result.providerName.contains("CommandLine") ? "--\(setting.name)" : key)
                throw SettingError(description: "\(setting.name) must be \(setting.kind.expected) (\(from)).")
            }
            if let error = event.conversionError {
                throw SettingError(description: "\(setting.name) must be \(setting.kind.expected): \(error).")
            }
        }
        return value
    }

    private func missing(_ setting: Setting) -> SettingError {
        SettingError(description: "\(setting.name) must be set.")
    }

    private func outOfRange(_ setting: Setting, value: String, range: String) -> SettingError {
        let reason = setting.reason.map { ", \($0)" } ?? ""
        return SettingError(
            description: "\(setting.name) must be from \(range)\(reason), not \(value) (\(source(of: setting))).")
    }

    private func format(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int(value)) : String(value)
    }

    // MARK: Checks before reading

    private static var secretNames: [String] { Setting.all.flatMap(\.settings).filter(\.isSecret).map(\.name) }

    /// Refuses an unknown `--NAME`, a secret given as a flag, a value with no option before it,
    /// and an option that needs a value but has none.
    private static func checkArguments(_ arguments: [String]) throws {
        var expectsValue: String?
        var index = arguments.startIndex
        while index < arguments.endIndex {
            let argument = arguments[index]
            index += 1
            guard argument.hasPrefix("--") else {
                guard expectsValue != nil else {
                    throw SettingError(description: "\"\(argument)\" is not a setting: settings are given as --NAME VALUE.")
                }
                expectsValue = nil
                continue
            }
            if let pending = expectsValue { throw SettingError(description: "--\(pending) needs a value.") }
            let name = String(argument.dropFirst(2).prefix { $0 != "=" })
            let hasValue = argument.contains("=")
            if name == "config" {
                expectsValue = hasValue ? nil : name
                continue
            }
            if name == "print-config" { continue }
            guard let setting = Setting.named(name) else {
                throw SettingError(description: "--\(name) is not a setting of latchkey serve (see latchkey serve --help).")
            }
            guard !setting.notAFlag else {
                throw SettingError(
                    description:
                        "--\(name) cannot be a flag, which other users see in the process list: use \(setting.environmentName) or the configuration file."
                )
            }
            if case .flag = setting.kind {
                // `--NAME` alone is on; `--NAME true|false` names the value.
                if index < arguments.endIndex, ["true", "false"].contains(arguments[index]) { index += 1 }
                continue
            }
            if !hasValue { expectsValue = name }
            if case .list = setting.kind, !hasValue {
                // A list takes one value per flag, so that repeating the flag adds to it.
                guard index < arguments.endIndex, !arguments[index].hasPrefix("--") else {
                    throw SettingError(description: "--\(name) needs a value.")
                }
                if arguments[index].contains(",") {
                    throw SettingError(description: "--\(name) takes one value; repeat the flag for several.")
                }
                index += 1
                expectsValue = nil
            }
        }
        if let pending = expectsValue { throw SettingError(description: "--\(pending) needs a value.") }
    }

    /// Refuses a file that is not one JSON object of known settings.
    private static func checkFile(_ path: String) throws {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw SettingError(description: "The configuration file \(path) cannot be read.")
        }
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw SettingError(description: "The configuration file \(path) must hold one JSON object of \"setting\": value.")
        }
        for name in object.keys.sorted() where Setting.named(name) == nil {
            throw SettingError(description: "The configuration file \(path) names \"\(name)\", which is not a setting.")
        }
    }

    private static let defaults: [AbsoluteConfigKey: ConfigValue] = {
        var values: [AbsoluteConfigKey: ConfigValue] = [:]
        for setting in Setting.all.flatMap(\.settings) {
            let content: ConfigContent
            switch setting.defaultValue {
            case .none: continue
            case .number(let value): content = .double(value)
            case .whole(let value): content = .int(value)
            case .on(let value): content = .bool(value)
            case .text(let value): content = .string(value)
            case .list(let value): content = .stringArray(value)
            }
            values[AbsoluteConfigKey(ConfigKey(setting.name))] = ConfigValue(content, isSecret: setting.isSecret)
        }
        return values
    }()
}

extension Setting.Kind {
    /// What a value of this kind looks like, for messages.
    var expected: String {
        switch self {
        case .seconds: "a number of seconds"
        case .count: "a whole number"
        case .flag: "true or false"
        case .text, .choice: "text"
        case .list: "a list of text"
        }
    }
}

/// Keeps the last access to each key, to tell where a value came from or why it was refused.
final class AccessRecorder: AccessReporter {
    private let events = Mutex<[String: AccessEvent]>([:])

    func report(_ event: AccessEvent) {
        events.withLock { $0[event.metadata.key.components.joined(separator: ".")] = event }
    }

    func last(_ name: String) -> AccessEvent? { events.withLock { $0[name] } }
}
