import ArgumentParser
import Foundation
import LatchkeyServer

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

struct UsersCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "users", abstract: "Manage the people who sign in.",
        subcommands: [
            Create.self, List.self, Delete.self, SetPassword.self, SetProfile.self, SetRole.self, Disable.self, Enable.self,
            Invite.self, ResetSecondFactors.self, RequireSecondFactor.self,
        ])

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create a user (asks for the password, or reads it from stdin).")
        @OptionGroup var store: StoreOptions
        @OptionGroup var output: OutputOptions
        @Argument var username: String
        @Option(help: "The display name.") var name: String?
        @Flag(help: "Read the password from the first line of standard input.") var passwordStdin = false
        @Flag(help: "Make the user an administrator (the admin console at /admin).") var admin = false
        @Option(help: "The email address apps granted the email scope see.") var email: String?
        @Flag(help: "The email address is known to be this user's (email_verified).") var emailVerified = false

        func run() async throws {
            let password = try readPassword(fromStdin: passwordStdin)
            let user: User
            do {
                user = try await store.administration().createUser(
                    username: username, displayName: name, password: password, role: admin ? .admin : .none, email: email,
                    emailVerified: emailVerified)
            } catch let error as AdministrationError { throw fail(error.description) }
            if output.json {
                try output.printJSON([
                    "user_id": user.id.rawValue, "username": user.username.rawValue, "name": user.displayName,
                    "role": user.role.rawValue, "email": user.email,
                ])
            } else {
                print("Created user \(user.username) (user_id \(user.id)).")
            }
        }
    }

    struct SetProfile: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "set-profile",
            abstract: "Change the name or email address that apps are told (an empty value clears it).")
        @OptionGroup var store: StoreOptions
        @OptionGroup var output: OutputOptions
        @Argument var username: String
        @Option(help: "The display name.") var name: String?
        @Option(help: "The email address.") var email: String?
        @Option(help: "Whether the address is verified: true or false.") var emailVerified: Bool?

        func run() async throws {
            let user: User
            do {
                user = try await store.administration().setProfile(
                    username: username, displayName: name, email: email, emailVerified: emailVerified)
            } catch let error as AdministrationError { throw fail(error.description) }
            if output.json {
                try output.printJSON([
                    "user_id": user.id.rawValue, "name": user.displayName, "email": user.email,
                    "email_verified": user.emailVerified,
                ])
            } else {
                print("Updated \(user.username).")
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List users.")
        @OptionGroup var store: StoreOptions
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let users = try await store.openStore().users()
            if output.json {
                try output.printJSON([
                    "users": users.map {
                        [
                            "user_id": $0.id.rawValue, "username": $0.username.rawValue, "name": $0.displayName as Any,
                            "role": $0.role.rawValue, "disabled": $0.disabledAt != nil, "email": $0.email as Any,
                        ]
                    }
                ])
            } else if users.isEmpty {
                print("No users. Create one with: latchkey users create USERNAME")
            } else {
                for user in users {
                    let notes = [user.role == .admin ? "admin" : nil, user.disabledAt != nil ? "disabled" : nil].compactMap { $0 }
                    print(
                        "\(user.id)  \(user.username)\(user.displayName.map { "  (\($0))" } ?? "")"
                            + (notes.isEmpty ? "" : "  [\(notes.joined(separator: ", "))]"))
                }
            }
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Delete a user and everything they granted.")
        @OptionGroup var store: StoreOptions
        @OptionGroup var output: OutputOptions
        @Argument var username: String

        func run() async throws {
            guard try await store.administration().deleteUser(username: username) else {
                throw fail("There is no user named \(username).")
            }
            if output.json { try output.printJSON(["deleted": username]) } else { print("Deleted user \(username).") }
        }
    }

    struct SetPassword: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "set-password", abstract: "Change a password and sign the user out of every browser.")
        @OptionGroup var store: StoreOptions
        @OptionGroup var output: OutputOptions
        @Argument var username: String
        @Flag(help: "Read the password from the first line of standard input.") var passwordStdin = false

        func run() async throws {
            let password = try readPassword(fromStdin: passwordStdin)
            do { try await store.administration().setPassword(username: username, password: password) } catch let error
                as AdministrationError
            { throw fail(error.description) }
            if output.json { try output.printJSON(["username": username]) } else { print("Password changed for \(username).") }
        }
    }
}

extension UsersCommand {
    struct SetRole: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "set-role", abstract: "Make a user an administrator (admin) or an ordinary user (none).")
        @OptionGroup var store: StoreOptions
        @OptionGroup var output: OutputOptions
        @Argument var username: String
        @Argument(help: "admin or none.") var role: String

        func run() async throws {
            guard let role = UserRole(rawValue: role) else { throw fail("The role must be admin or none.") }
            do { try await store.administration().setRole(username: username, role: role) } catch let error
                as AdministrationError
            { throw fail(error.description) }
            if output.json {
                try output.printJSON(["username": username, "role": role.rawValue])
            } else {
                print("\(username) is now \(role == .admin ? "an administrator" : "an ordinary user").")
            }
        }
    }

    struct Disable: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Disable an account: it cannot sign in, and its sessions and every app's tokens end at once.")
        @OptionGroup var store: StoreOptions
        @OptionGroup var output: OutputOptions
        @Argument var username: String

        func run() async throws { try await setDisabled(true, username: username, store: store, output: output) }
    }

    struct Enable: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Enable a disabled account again (the apps it used must be authorized again).")
        @OptionGroup var store: StoreOptions
        @OptionGroup var output: OutputOptions
        @Argument var username: String

        func run() async throws { try await setDisabled(false, username: username, store: store, output: output) }
    }
}

extension UsersCommand {
    struct ResetSecondFactors: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "reset-second-factors",
            abstract: "Remove an account's authenticator app and recovery codes, for someone who lost them.")
        @OptionGroup var store: StoreOptions
        @OptionGroup var output: OutputOptions
        @Argument var username: String

        func run() async throws {
            do { try await store.administration().resetSecondFactors(username: username) } catch let error
                as AdministrationError
            {
                throw fail(error.description)
            }
            if output.json {
                try output.printJSON(["username": username, "second_factors": "reset"])
            } else {
                print("Reset \(username)'s second factors: the password alone signs in until new ones are set up.")
            }
        }
    }

    struct RequireSecondFactor: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "require-second-factor",
            abstract: "Require an account to sign in with a second factor (on), or stop requiring it (off).")
        @OptionGroup var store: StoreOptions
        @OptionGroup var output: OutputOptions
        @Argument var username: String
        @Argument(help: "on or off") var setting: String

        func run() async throws {
            guard setting == "on" || setting == "off" else { throw fail("Say on or off.") }
            do { try await store.administration().setSecondFactorRequired(username: username, setting == "on") } catch let error
                as AdministrationError
            {
                throw fail(error.description)
            }
            if output.json {
                try output.printJSON(["username": username, "second_factor_required": setting == "on"])
            } else {
                print(setting == "on" ? "\(username) must now use a second factor." : "\(username) no longer must.")
            }
        }
    }
}

/// `users disable` and `users enable`.
private func setDisabled(_ disabled: Bool, username: String, store: StoreOptions, output: OutputOptions) async throws {
    do { try await store.administration().setDisabled(username: username, disabled) } catch let error as AdministrationError {
        throw fail(error.description)
    }
    if output.json {
        try output.printJSON(["username": username, "disabled": disabled])
    } else {
        print("\(disabled ? "Disabled" : "Enabled") \(username).")
    }
}

/// Reads a password from stdin's first line, or twice from the terminal without echo.
func readPassword(fromStdin: Bool) throws -> String {
    if fromStdin {
        guard let line = readLine(strippingNewline: true) else { throw fail("No password on standard input.") }
        return line
    }
    guard isatty(STDIN_FILENO) == 1 else {
        throw fail("Standard input is not a terminal: pass --password-stdin and pipe the password in.")
    }
    guard let first = getpass("Password: ").map({ String(cString: $0) }),
        let second = getpass("Repeat password: ").map({ String(cString: $0) })
    else { throw fail("Could not read a password.") }
    guard first == second else { throw fail("The passwords do not match.") }
    return first
}
