import Foundation
import LatchkeyTestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `latchkey serve`'s settings: one list, read from flags over `LATCHKEY_*` variables over the
/// configuration file over the defaults; `--print-config` shows the result without secrets; a
/// bad value stops serve with one sentence and exit code 2, before anything binds.
@Suite("serve configuration")
struct ConfigurationTests {
    func folder() throws -> URL {
        try Scratch.folder("configuration")
    }

    func writeJSON(_ object: [String: Any], in folder: URL) throws -> String {
        let path = folder.appendingPathComponent("latchkey.json").path
        try JSONSerialization.data(withJSONObject: object).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// `name = value  # source` lines of `--print-config`, by name.
    func printed(_ output: String) -> [String: (value: String, source: String)] {
        var settings: [String: (String, String)] = [:]
        for line in output.split(separator: "\n") where !line.hasPrefix("#") {
            guard let equals = line.range(of: " = "), let hash = line.range(of: "  # ") else { continue }
            let name = String(line[..<equals.lowerBound])
            let value = line[equals.upperBound..<hash.lowerBound].trimmingCharacters(in: .whitespaces)
            settings[name] = (value, String(line[hash.upperBound...]))
        }
        return settings
    }

    @Test("A flag wins over a variable, a variable over the file, the file over the default")
    func precedence() async throws {
        let dir = try folder()
        let file = try writeJSON(
            [
                "code-lifetime": 30, "access-token-lifetime": 100, "sign-in-window": 500,
                "trusted-proxy": ["10.0.0.0/8", "192.168.0.0/16"], "dynamic-registration": "open", "require-pkce": true,
            ], in: dir)
        let result = try await runLatchkey(
            ["serve", "--config", file, "--print-config", "--code-lifetime", "50"],
            environment: ["LATCHKEY_CODE_LIFETIME": "45", "LATCHKEY_ACCESS_TOKEN_LIFETIME": "200"])
        #expect(result.status == 0, "\(result.stderr)")
        let settings = printed(result.stdout)
        #expect(settings["code-lifetime"]?.value == "50")
        #expect(settings["code-lifetime"]?.source == "flag --code-lifetime")
        #expect(settings["access-token-lifetime"]?.value == "200")
        #expect(settings["access-token-lifetime"]?.source == "environment LATCHKEY_ACCESS_TOKEN_LIFETIME")
        #expect(settings["sign-in-window"]?.value == "500")
        #expect(settings["sign-in-window"]?.source == "file \(file)")
        #expect(settings["trusted-proxy"]?.value == #"["10.0.0.0/8", "192.168.0.0/16"]"#)
        #expect(settings["dynamic-registration"]?.value == #""open""#)
        #expect(settings["require-pkce"]?.value == "true")
        #expect(settings["session-lifetime"]?.value == "43200")
        #expect(settings["session-lifetime"]?.source == "default")
        #expect(settings.count > 40, "every setting is listed")

        // LATCHKEY_CONFIG names the file too; a flag turns a file's `true` off.
        let viaVariable = try await runLatchkey(
            ["serve", "--print-config", "--require-pkce", "false"], environment: ["LATCHKEY_CONFIG": file])
        #expect(printed(viaVariable.stdout)["require-pkce"]?.value == "false")
        #expect(printed(viaVariable.stdout)["code-lifetime"]?.value == "30")
    }

    @Test("--print-config never shows a secret")
    func secretsRedacted() async throws {
        let dir = try folder()
        let file = try writeJSON(
            [
                "database-url": "postgres://latchkey:file-password-123@db.example/latchkey",
                "smtp-url": "smtps://mailer:smtp-password-456@mail.example",
                "mail-from": "latchkey@example.com",
            ], in: dir)
        let key = "q1d3mXQ3z0Ub0a7Jm6Jk0Yp6c7Xx8mJ8mP2jC6bq7sE="
        let result = try await runLatchkey(
            ["serve", "--config", file, "--print-config"],
            environment: ["LATCHKEY_KEY_ENCRYPTION_KEY": key])
        #expect(result.status == 0, "\(result.stderr)")
        for secret in ["file-password-123", key, "smtp-password-456"] {
            #expect(!result.stdout.contains(secret))
        }
        let settings = printed(result.stdout)
        #expect(settings["database-url"]?.value == "<redacted>")
        #expect(settings["smtp-url"]?.value == "<redacted>")
        #expect(settings["key-encryption-key"]?.value == "<redacted>")
        #expect(settings["key-encryption-key"]?.source == "environment LATCHKEY_KEY_ENCRYPTION_KEY")
        // Where `ps` would show it to everyone, the key is refused.
        let asFlag = try await runLatchkey(["serve", "--key-encryption-key", key])
        #expect(asFlag.status == 2)
        #expect(!asFlag.stderr.contains(key))
        let passwordAsFlag = try await runLatchkey(["serve", "--smtp-password", "smtp-password-789"])
        #expect(passwordAsFlag.status == 2)
        #expect(!passwordAsFlag.stderr.contains("smtp-password-789"))
        // The SMTP password given apart from the URL: redacted too.
        let apart = try await runLatchkey(
            ["serve", "--print-config", "--smtp-url", "smtps://mailer@mail.example", "--mail-from", "latchkey@example.com"],
            environment: ["LATCHKEY_SMTP_PASSWORD": "smtp-password-789"])
        #expect(apart.status == 0, "\(apart.stderr)")
        #expect(!apart.stdout.contains("smtp-password-789"))
        #expect(printed(apart.stdout)["smtp-password"]?.value == "<redacted>")
    }

    @Test(
        "A bad value: exit code 2, one sentence naming the setting and where it came from, nothing bound or created",
        arguments: [
            (["--port", "http"], [:], nil, "port must be a whole number (flag --port)"),
            (["--password-min-length", "7"], [:], nil, "password-min-length must be from 8 to 64"),
            ([], ["LATCHKEY_PORT": "70000"], nil, "port must be from 0 to 65535, not 70000 (environment LATCHKEY_PORT)"),
            (["--code-lifetime", "900"], [:], nil, "code-lifetime must be from 1 to 600 seconds, RFC 6749 §4.1.2"),
            ([], ["LATCHKEY_SIGN_IN_WINDOW": "soon"], nil, "sign-in-window must be a number of seconds (environment"),
            ([], [:], #"{"access-token-lifetime": "1h"}"#, "access-token-lifetime must be a number of seconds (file"),
            ([], [:], #"{"acess-token-lifetime": 60}"#, #"names "acess-token-lifetime", which is not a setting"#),
            ([], [:], #"["port", 1]"#, "must hold one JSON object"),
            (["--log-level", "loud"], [:], nil, "log-level must be one of trace, debug, info"),
            (["--trusted-proxy", "10.0.0.0/33"], [:], nil, "the prefix length must be 0 to 32"),
            (["--tls-certificate", "/nonexistent.pem"], [:], nil, "tls-certificate needs tls-key too"),
            (["--metrics-address", "here"], [:], nil, "metrics-address must be HOST:PORT or PORT"),
            (["--issuer", "https://auth.example.com/"], [:], nil, "issuer is not usable"),
            (["--portt", "1"], [:], nil, "--portt is not a setting of latchkey serve"),
            (["--client-metadata-documents", "listed"], [:], nil, "listed needs at least one client-metadata-domain"),
        ] as [([String], [String: String], String?, String)])
    func badValues(arguments: [String], environment: [String: String], file: String?, message: String) async throws {
        let dir = try folder()
        let data = dir.appendingPathComponent("data").path
        let ready = dir.appendingPathComponent("ready.json").path
        var extra: [String] = []
        if let file {
            let path = dir.appendingPathComponent("latchkey.json").path
            try Data(file.utf8).write(to: URL(fileURLWithPath: path))
            extra = ["--config", path]
        }
        let result = try await runLatchkey(
            ["serve", "--data-dir", data, "--ready-file", ready] + extra + arguments, environment: environment)
        #expect(result.status == 2)
        #expect(result.stderr.contains(message), "\(result.stderr)")
        #expect(result.stderr.split(separator: "\n").count == 1, "one sentence: \(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: ready), "nothing listened")
        #expect(!FileManager.default.fileExists(atPath: data), "no store was created")
    }

    @Test("Admin commands find the store serve uses through the same file, and a flag still wins")
    func adminCommandsReadTheFile() async throws {
        let dir = try folder()
        let data = dir.appendingPathComponent("from-file").path
        let file = try writeJSON(["data-dir": data, "port": 9000], in: dir)
        let created = try await runLatchkey(["scopes", "add", "photos.read", "--description", "See photos", "--config", file])
        #expect(created.status == 0, "\(created.stderr)")
        #expect(FileManager.default.fileExists(atPath: data + "/latchkey.sqlite"))
        let listed = try await runLatchkey(["scopes", "list", "--json"], environment: ["LATCHKEY_CONFIG": file])
        #expect(listed.stdout.contains("photos.read"))
        let elsewhere = dir.appendingPathComponent("from-flag").path
        _ = try await runLatchkey(["scopes", "list", "--config", file, "--data-dir", elsewhere])
        #expect(FileManager.default.fileExists(atPath: elsewhere + "/latchkey.sqlite"))
        let broken = try writeJSON(["data-dir": 7], in: dir)
        let refused = try await runLatchkey(["scopes", "list", "--config", broken])
        #expect(refused.status != 0)
        #expect(refused.stderr.contains("data-dir must be text"), "\(refused.stderr)")
    }

    @Test("serve runs on the file's settings: the server's metadata shows them")
    func fileApplies() async throws {
        let dir = try folder()
        let file = try writeJSON(
            ["data-dir": dir.appendingPathComponent("data").path, "dynamic-registration": "open", "port": 0], in: dir)
        let ready = dir.appendingPathComponent("ready.json").path
        let server = try await ServeProcess(["--config", file, "--ready-file", ready])
        // The ready file, not the start-up text: it is written once every listener is bound,
        // just after that text is printed.
        let deadline = Date().addingTimeInterval(30)
        while !FileManager.default.fileExists(atPath: ready) {
            guard Date() < deadline, server.isRunning else { throw ProcessFailure("no ready file: \(server.stdout)") }
            try await Task.sleep(for: .milliseconds(50))
        }
        let object = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: ready))) as? [String: Any]
        let issuer = try #require(object?["issuer"] as? String)
        let (body, _) = try await URLSession.shared.data(
            from: URL(string: issuer + "/.well-known/oauth-authorization-server")!)
        let metadata = try JSONSerialization.jsonObject(with: body) as? [String: Any]
        #expect(metadata?["registration_endpoint"] as? String == issuer + "/oauth2/register")
        #expect(FileManager.default.fileExists(atPath: dir.appendingPathComponent("data/latchkey.sqlite").path))
        #expect(try await server.terminate() == 0)
    }
}
