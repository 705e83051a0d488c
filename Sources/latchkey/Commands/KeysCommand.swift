import ArgumentParser
import Foundation
import LatchkeyServer

struct KeysCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys", abstract: "Manage the keys that sign ID tokens (published at /oauth2/jwks).",
        subcommands: [List.self, Rotate.self])

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the published signing keys.")
        @OptionGroup var store: StoreOptions
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let now = Date()
            let keys = try await store.openStore().signingKeys(at: now)
            if output.json {
                try output.printJSON(["keys": keys.map { describe($0, at: now) }])
            } else if keys.isEmpty {
                print("No signing keys yet: latchkey serve creates the first ones when it starts.")
            } else {
                for key in keys { print("\(key.kid)  \(key.algorithm.rawValue)  \(status(key, at: now))") }
            }
        }
    }

    struct Rotate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add a new key per algorithm: published now, signing after the lead time; the old ones stay "
                + "published until what they signed has expired.")
        @OptionGroup var store: StoreOptions
        @OptionGroup var output: OutputOptions
        @Option(
            help:
                "Seconds between publishing the new keys and signing with them, so relying parties that cache the key set see them first."
        )
        var leadTime: Double = 86_400
        @Option(help: "The longest lifetime of what the keys sign (the server's --id-token-lifetime).")
        var idTokenLifetime: Double = 3_600

        func run() async throws {
            guard leadTime >= 0, idTokenLifetime >= 1 else {
                throw fail("--lead-time must be 0 or more; --id-token-lifetime at least 1.")
            }
            let keyring = SigningKeyring(
                store: try await store.openStore(), keyEncryptionKey: try await store.keyEncryptionKey(),
                signedTokenLifetime: idTokenLifetime)
            let now = Date()
            let added: [SigningKeyRecord]
            do { added = try await keyring.rotate(leadTime: leadTime, at: now) } catch let error as SigningKeyError {
                throw fail(error.description)
            }
            if output.json {
                try output.printJSON(["added": added.map { describe($0, at: now) }])
            } else {
                for key in added {
                    print("Added \(key.algorithm.rawValue) key \(key.kid): \(status(key, at: now)).")
                }
            }
        }
    }
}

private func describe(_ key: SigningKeyRecord, at now: Date) -> [String: Any?] {
    [
        "kid": key.kid, "alg": key.algorithm.rawValue, "created_at": Int(key.createdAt.timeIntervalSince1970),
        "activates_at": Int(key.activatesAt.timeIntervalSince1970),
        "published_until": key.publishedUntil.map { Int($0.timeIntervalSince1970) }, "status": status(key, at: now),
    ]
}

/// `published, signing from …`, `signing`, `retired, published until …`.
private func status(_ key: SigningKeyRecord, at now: Date) -> String {
    let format = Date.ISO8601FormatStyle()
    if let until = key.publishedUntil { return "retired, published until \(until.formatted(format))" }
    if key.activatesAt > now { return "published, signing from \(key.activatesAt.formatted(format))" }
    return "signing"
}
