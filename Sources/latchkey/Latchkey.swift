import ArgumentParser

@main
struct Latchkey: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "latchkey",
        abstract: "Run a Latchkey OAuth 2.0 authorization server and manage its clients, users and scopes.",
        subcommands: [
            ServeCommand.self, ClientsCommand.self, UsersCommand.self, ScopesCommand.self, MigrateCommand.self, LoginCommand.self,
            ProofCommand.self,
            TokenCommand.self, BackupCommand.self, KeysCommand.self, ResourcesCommand.self, ProvidersCommand.self,
            RegistrationTokensCommand.self, MailCommand.self,
        ])
}
