import ArgumentParser

struct MigrateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Bring the store's schema up to date (serve does this too at start-up; safe with several instances).")
    @OptionGroup var store: StoreOptions

    func run() async throws {
        _ = try await store.openStore()
        say("The schema at \(try await store.settings().location) is up to date.")
    }
}
