import ArgumentParser
import Foundation
import LatchkeyCore
import LatchkeyMail
import LatchkeyPasswords
import LatchkeyServer

extension UsersCommand {
    /// `latchkey users invite EMAIL`: queues an invitation in the outbox that `serve` sends from.
    struct Invite: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "E-mail an invitation to create an account (with serve --sign-up invite or open); "
                + "it is queued in the store's outbox, which serve sends from.")
        @OptionGroup var store: StoreOptions
        @Option(
            help:
                "The issuer the link is under. Also LATCHKEY_ISSUER; by default the one serve last started with on this store."
        )
        var issuer: String?
        @Option(help: "The address the invitation comes from. Also LATCHKEY_MAIL_FROM; by default serve's.")
        var mailFrom: String?
        @Argument(help: "The address to invite; the account gets it, confirmed.") var email: String

        func run() async throws {
            bootstrapLogging()
            let settings: Settings
            do {
                settings = try await store.allSettings(adding: [("issuer", issuer), ("mail-from", mailFrom)])
            } catch let error as SettingError {
                throw fail(error.description)
            }
            let opened = try await store.openStore()
            // What serve records when it starts, unless given here.
            let recordedIssuer = try await opened.serverFact(name: "issuer")
            guard let issuer = try settings.text("issuer") ?? recordedIssuer else {
                throw fail("No issuer is known: start serve once on this store, or give --issuer.")
            }
            if let problem = ServerConfiguration.issuerProblem(issuer) { throw fail("issuer \(issuer): \(problem)") }
            if try await opened.serverFact(name: "sign_up") == SignUpPolicy.Mode.off.rawValue {
                throw fail(
                    "serve last started here with --sign-up off, so the invitation's link would lead nowhere: "
                        + "start it with --sign-up invite (or open) first.")
            }
            let recordedSender = try await opened.serverFact(name: "mail_from")
            guard let fromText = try settings.text("mail-from") ?? recordedSender, let from = MailAddress(fromText)
            else {
                throw fail("No sender is known: start serve with smtp-url and mail-from on this store, or give --mail-from.")
            }
            let keyEncryptionKey = try await store.keyEncryptionKey()
            let outbox = MailOutbox(store: opened, keyEncryptionKey: keyEncryptionKey, messageIDDomain: String(from.domain))
            let server = AuthorizationServer(
                store: opened, configuration: ServerConfiguration(issuer: issuer), passwordHasher: BcryptPasswordHasher(),
                signingKeys: SigningKeyring(store: opened, keyEncryptionKey: keyEncryptionKey, signedTokenLifetime: 3600),
                mailer: AccountMailer(outbox: outbox, issuer: issuer))
            do {
                try await server.selfService.invite(email: email, actor: "cli")
            } catch let error as AdministrationError { throw fail(error.description) }
            try await server.flushAuditEvents()
            print("Invited \(email) to \(issuer)/signup; serve sends it from its outbox. It works once, for 7 days.")
        }
    }
}
