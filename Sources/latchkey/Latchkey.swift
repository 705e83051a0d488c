import ArgumentParser
import NIOCore
import NIOPosix

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

    /// Parses the command line and runs the command. For `serve`, Swift's tasks first move onto
    /// the event loops that already serve the sockets and the PostgreSQL connections (SwiftNIO's
    /// `MultiThreadedEventLoopGroup.singleton`, installed as the global executor while only the
    /// main thread runs): a request, and each query it makes, then no longer hops from an event
    /// loop to Swift's own pool of threads and back. Password hashing keeps its own threads
    /// (`PasswordWorkers`), and SQLite its queues, so nothing slow runs on an event loop.
    static func main() async {
        if CommandLine.arguments.dropFirst().first == "serve" {
            NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()
        }
        await main(nil)
    }
}
