import ArgumentParser
import Foundation
import LatchkeyCore
import LatchkeyServer

struct RegistrationTokensCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "registration-tokens",
        abstract:
            "Manage the initial access tokens that let developers register apps (serve --dynamic-registration initial-access-token).",
        subcommands: [Create.self, List.self, Delete.self])

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Make an initial access token (RFC 7591 §3), printed once; it registers any number of apps until it expires.")
        @OptionGroup var store: StoreOptions
        @OptionGroup var output: OutputOptions
        @Option(help: "Seconds the token is good for (default one day, at most 90 days).") var lifetime = 86_400

        func run() async throws {
            let made: (token: String, record: InitialAccessToken)
            do { made = try await store.administration().createInitialAccessToken(lifetime: TimeInterval(lifetime)) } catch let
                error
                as AdministrationError
            { throw fail(error.description) }
            if output.json {
                try output.printJSON([
                    "id": made.record.id, "initial_access_token": made.token,
                    "expires_at": Int(made.record.expiresAt.timeIntervalSince1970),
                ])
            } else {
                print(made.token)
                FileHandle.standardError.write(
                    Data("Token \(made.record.id), good until \(made.record.expiresAt). It is shown only this once.\n".utf8))
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the initial access tokens (never their values).")
        @OptionGroup var store: StoreOptions
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let tokens = try await store.openStore().initialAccessTokens()
            if output.json {
                try output.printJSON([
                    "tokens": tokens.map {
                        ["id": $0.id, "expires_at": Int($0.expiresAt.timeIntervalSince1970)] as [String: Any]
                    }
                ])
            } else {
                for token in tokens { print("\(token.id)  good until \(token.expiresAt)") }
            }
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Revoke an initial access token by its id.")
        @OptionGroup var store: StoreOptions
        @OptionGroup var output: OutputOptions
        @Argument var id: String

        func run() async throws {
            do { try await store.administration().deleteInitialAccessToken(id: id) } catch let error as AdministrationError {
                throw fail(error.description)
            }
            if output.json { try output.printJSON(["deleted": id]) } else { print("Revoked token \(id).") }
        }
    }
}
