import ArgumentParser
import LatchkeyServer

struct ScopesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "scopes", abstract: "Manage the scope catalogue the consent page describes.",
        subcommands: [Add.self, List.self, Delete.self])

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Add a scope, or change its description.")
        @OptionGroup var store: StoreOptions
        @OptionGroup var output: OutputOptions
        @Argument var name: String
        @Option(help: "What the scope lets an app do, as the consent page shows it.") var description: String

        func run() async throws {
            do { try await store.administration().addScope(name: name, description: description) } catch let error
                as AdministrationError
            { throw fail(error.description) }
            if output.json {
                try output.printJSON(["name": name, "description": description])
            } else {
                print("Saved scope \(name).")
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the scope catalogue.")
        @OptionGroup var store: StoreOptions
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let scopes = try await store.openStore().scopeCatalogue()
            if output.json {
                try output.printJSON(["scopes": scopes.map { ["name": $0.name, "description": $0.description] }])
            } else {
                for scope in scopes {
                    print("\(scope.name.padding(toLength: 12, withPad: " ", startingAt: 0)) \(scope.description)")
                }
            }
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Remove a scope no client uses.")
        @OptionGroup var store: StoreOptions
        @OptionGroup var output: OutputOptions
        @Argument var name: String

        func run() async throws {
            do { try await store.administration().deleteScope(name: name) } catch let error as AdministrationError {
                throw fail(error.description)
            }
            if output.json { try output.printJSON(["deleted": name]) } else { print("Deleted scope \(name).") }
        }
    }
}
