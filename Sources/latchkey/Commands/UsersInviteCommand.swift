import ArgumentParser
import Foundation
import LatchkeyMail
import LatchkeyPasswords
import LatchkeyServer

extension UsersCommand {
    /// `latchkey users invite EMAIL`: queues an invitation in the outbox that `serve` sends from.
    struct Invite: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "E-mail an invitation to create an account (with serve --sign-up invite or open); "
                + "it is queued in the outbox, which serve sends from.")
        @OptionGroup var store: StoreOptions
        @Option(help: "The issuer URL the link is under, as serve has it. Also LATCHKEY_ISSUER.") var issuer: String?
        @OptionGroup var smtp: MailCommand.SMTPOptions
        @Argument(help: "The address to invite; the account gets it, confirmed.") var email: String

        func run() async throws {
            bootstrapLogging()
            let settings: Settings
            let mail: MailSettings
            let issuer: String
            do {
                settings = try await store.allSettings(adding: smtp.flags + [("issuer", self.issuer)])
                guard let configured = try MailSettings(settings) else {
                    throw fail("No SMTP relay is set: give --smtp-url (or LATCHKEY_SMTP_URL), as serve has it.")
                }
                mail = configured
                guard let configuredIssuer = try settings.text("issuer") else {
                    throw fail("Give --issuer (or LATCHKEY_ISSUER), as serve has it: the invitation's link is under it.")
                }
                issuer = configuredIssuer
            } catch let error as SettingError {
                throw fail(error.description)
            }
            if let problem = ServerConfiguration.issuerProblem(issuer) { throw fail("--issuer \(issuer): \(problem)") }
            let opened = try await store.openStore()
            let keyEncryptionKey = try await store.keyEncryptionKey()
            let outbox = MailOutbox(
                store: opened, keyEncryptionKey: keyEncryptionKey, messageIDDomain: String(mail.from.domain))
            let server = AuthorizationServer(
                store: opened, configuration: ServerConfiguration(issuer: issuer), passwordHasher: BcryptPasswordHasher(),
                signingKeys: SigningKeyring(store: opened, keyEncryptionKey: keyEncryptionKey, signedTokenLifetime: 3600),
                mailer: AccountMailer(outbox: outbox, issuer: issuer))
            do {
                try await server.selfService.invite(email: email, actor: "cli")
            } catch let error as AdministrationError { throw fail(error.description) }
            try await server.flushAuditEvents()
            print("Invited \(email); serve sends the invitation through \(mail.client.relay). It works once, for 7 days.")
        }
    }
}
