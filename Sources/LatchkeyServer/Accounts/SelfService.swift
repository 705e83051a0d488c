import Foundation
import LatchkeyCore

/// A page to show when a self-service form is done, or refused.
public struct Notice: Sendable, Equatable {
    public var heading: String
    public var message: String
    /// Where the person goes next: a path on this server.
    public var link: Link?

    public struct Link: Sendable, Equatable {
        public var label: String
        public var href: String

        public init(label: String, href: String) {
            self.label = label
            self.href = href
        }
    }

    public init(heading: String, message: String, link: Link? = nil) {
        self.heading = heading
        self.message = message
        self.link = link
    }
}

/// What a self-service form's `POST` comes to.
public enum SelfServiceOutcome: Sendable {
    /// 404: the feature is off (`--sign-up off`).
    case notFound
    /// 403: the form has no valid CSRF token, or nobody is signed in.
    case forbidden
    /// 400: show the form again with `message`, next to `field` when there is one.
    case invalid(field: String?, message: String)
    /// 429: too many attempts from this address or for this account; try after `retryAfter` seconds.
    case throttled(retryAfter: Int)
    /// 503: the password could not be checked now.
    case busy(retryAfter: Int)
    /// Done: show `notice`. With `session`, the browser is now signed in with it (a fresh
    /// session); with `signedOut`, its session ended.
    case done(Notice, session: SessionContext? = nil, signedOut: Bool = false)
    /// Done and signed in with a fresh session: go on to `next`.
    case signedIn(SessionContext, next: String)
    /// New recovery codes to show once (a second factor was set up, or the codes renewed); with
    /// `session`, the browser is now signed in with it (a fresh session with both factors). The
    /// page goes on to `next`.
    case recoveryCodes([String], session: SessionContext?, next: String)
}

/// Accounts people run themselves (docs/accounts.md): sign-up, e-mail verification,
/// password reset by e-mail and the account page's changes. It touches users, e-mailed links,
/// sessions and throttles, and sends e-mail through the outbox when the server has one.
///
/// Every link it sends is an absolute URL under the configured issuer, never under the request's
/// `Host` (docs/threat-model.md AC4); every link's secret is stored as its SHA-256 and works once
/// (AC2).
public struct SelfService: Sendable, ServerContextual {
    let users: any UserStore
    let links: any AccountLinkStore
    let sessionStore: any SessionStore
    let throttles: any ThrottleStore
    let sessions: BrowserSessions
    let passwordHasher: any PasswordHasher
    let passwordPolicy: PasswordPolicy
    /// `nil` when the server sends no e-mail (`smtp-url` not set).
    let mailer: AccountMailer?
    let context: ServerContext

    /// How long a verification link works.
    public static let verificationLifetime: TimeInterval = 24 * 3600
    /// How long a reset link works.
    public static let resetLifetime: TimeInterval = 3600
    /// How long an invitation works.
    public static let invitationLifetime: TimeInterval = 7 * 86_400
    /// Reset requests answered from one client address block in an hour.
    static let resetRequestsPerAddress = 10
    /// Reset links sent to one account in an hour; more requests are answered alike and send nothing.
    static let resetsPerAccount = 3
    /// Verification links sent to one account in an hour.
    static let verificationsPerAccount = 3
    static let hour: TimeInterval = 3600

    /// Whether the server can send e-mail, which reset, verification and invitations need.
    public var sendsMail: Bool { mailer != nil }
    public var signUp: SignUpPolicy { configuration.signUp }
    /// The fewest characters a new password may have, for the forms' hints.
    public var passwordMinimumLength: Int { passwordPolicy.minimumLength }
    var siteName: String { URL(string: issuer)?.host ?? issuer }

    /// Checks a form's CSRF token against the session's; a repeated field is refused too.
    func isGenuine(_ form: FormParameters, _ session: BrowserSession) -> Bool {
        form.repeatedNames.isEmpty && session.isCSRFToken(of: form)
    }

    /// Counts one attempt against `key` in an hour's window.
    /// - Returns: the seconds to wait when the count went over `limit`, else `nil`.
    func overLimit(_ key: String, limit: Int) async throws -> Int? {
        let window = try await throttles.recordFailure(key: ThrottleKey(rawValue: key), at: now, window: Self.hour)
        return window.failures > limit ? window.secondsLeft(at: now) : nil
    }

    /// An outcome to answer instead of going on, thrown by the steps the forms share.
    struct Refused: Error {
        let outcome: SelfServiceOutcome
    }

    /// Checks a new password against the policy (``PasswordPolicy``) and hashes it.
    /// - Throws: ``Refused`` with the policy's reason (`400`), or `503` when the hashers are busy.
    func hashNewPassword(_ password: String, username: String, email: String?) async throws -> String {
        do {
            try passwordPolicy.check(password, username: username, email: email)
            return try await passwordHasher.hash(password)
        } catch let error as AdministrationError {
            throw Refused(outcome: .invalid(field: "password", message: error.description))
        } catch let busy as PasswordHashingBusy {
            throw Refused(outcome: .busy(retryAfter: busy.retryAfter))
        }
    }

    /// A new link's secret and its stored record.
    func makeLink(
        _ purpose: AccountLinkPurpose, userID: UserID?, email: String, lifetime: TimeInterval,
        pendingRequestID: PendingRequestID? = nil
    ) -> (secret: String, link: AccountLink) {
        let secret = RandomToken.generate(.accountLink)
        let link = AccountLink(
            hash: AccountLinkHash(of: secret), purpose: purpose, userID: userID, email: email,
            pendingRequestID: pendingRequestID, createdAt: now, expiresAt: now.addingTimeInterval(lifetime))
        return (secret, link)
    }

    /// An absolute URL under the issuer: `path?token=secret`.
    func url(_ path: String, token secret: String) -> String {
        issuer + path + "?token=" + FormParameters.percentEncode(secret)
    }

    /// A pending authorization request's handle as a form or link carries it, if it can be one
    /// (``RandomToken/Kind/pendingRequest``); anything else is dropped, never stored.
    static func pendingRequest(_ value: String?) -> PendingRequestID? {
        guard let value, value.hasPrefix(RandomToken.Kind.pendingRequest.rawValue), value.utf8.count <= 64,
            value.utf8.allSatisfy({ $0 > 32 && $0 < 127 })
        else { return nil }
        return PendingRequestID(rawValue: value)
    }

    /// An address a person may give: `name@domain`, ASCII only (so that looking accounts up by
    /// address agrees on both stores, ``UserStore/users(email:)``), at most 254 characters.
    static func emailProblem(_ email: String) -> String? {
        do { try Administration.checkEmail(email) } catch let error as AdministrationError { return error.description } catch {
            return "\(error)"
        }
        if email.isEmpty { return "Enter an e-mail address." }
        guard email.unicodeScalars.allSatisfy({ $0.isASCII && $0.value > 32 && $0.value != 127 }) else {
            return "Latchkey takes e-mail addresses written in ASCII letters only."
        }
        // What the mail sender takes, so that every address kept here can be written to.
        guard MailAddress(email) != nil else { return "The e-mail address \(email) is not one Latchkey can send to." }
        return nil
    }

    /// A username a person may choose at sign-up: ASCII letters, digits, `.`, `_` and `-`,
    /// starting with a letter or digit, at most 64. Narrower than what an administrator may give,
    /// so that a name cannot pass for a link or another script's letters in the e-mails and pages.
    static func usernameProblem(_ username: String) -> String? {
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
        guard (1...64).contains(username.count), username.allSatisfy({ allowed.contains($0) }),
            username.first.map({ $0.isLetter || $0.isNumber }) == true
        else { return "A username is 1 to 64 letters, digits, dots, dashes or underscores, starting with a letter or digit." }
        return nil
    }
}
