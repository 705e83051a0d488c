import Foundation
import LatchkeyCore

extension User {
    /// Whether the account has a password: one made through an upstream provider has none until
    /// its owner sets one (at `/account/password`, or by a reset link).
    public var hasPassword: Bool { !passwordHash.isEmpty }
}

/// The accounts a sign-in through a provider leads to, and the links from the account page.
extension Federation {
    /// The account `identity` signs in to: the one linked to it; else, where the provider is
    /// trusted to, the one with its verified address; else a new one, where the provider may
    /// make them (docs/threat-model.md FD4).
    func account(for identity: UpstreamIdentity, at provider: IdentityProvider) async throws -> Result<User, FederationFailure> {
        if let user = try await linkedUser(provider.name, identity.subject) { return .success(user) }
        var sameAddress: [User] = []
        if let email = identity.email { sameAddress = try await store.users(email: email) }
        if provider.linksVerifiedEmail, identity.emailVerified {
            // A disabled account is not linked: the sign-in would be refused, and the link would stay.
            let confirmed = sameAddress.filter { $0.emailVerified && $0.disabledAt == nil }
            if confirmed.count == 1 {
                if try await store.insertFederatedIdentity(link(identity, provider, confirmed[0].id)) {
                    event(
                        .federationLinked,
                        ["user_id": "\(confirmed[0].id)", "identity_provider": "\(provider.name)", "by": "verified_email"])
                    return .success(confirmed[0])
                }
                return try await linkedUser(provider.name, identity.subject).map { .success($0) } ?? .failure(.notStartedHere)
            }
        }
        guard sameAddress.isEmpty else {
            return .failure(
                .refused(
                    "An account here already uses the address \(provider.displayName) gave. Sign in to it another way, then "
                        + "link \(provider.displayName) from your account's security page."))
        }
        guard provider.createsAccounts else {
            return .failure(
                .refused(
                    "No account here is linked to this \(provider.displayName) account, and \(provider.displayName) cannot make "
                        + "new ones. Sign in another way, then link it from your account's security page."))
        }
        if !provider.allowedEmailDomains.isEmpty {
            guard identity.emailVerified, let domain = identity.emailDomain, provider.allowedEmailDomains.contains(domain) else {
                return .failure(
                    .refused(
                        "Accounts are made here only for verified addresses in: \(provider.allowedEmailDomains.joined(separator: ", "))."
                    )
                )
            }
        }
        return .success(try await createAccount(for: identity, at: provider))
    }

    private func linkedUser(_ provider: String, _ subject: String) async throws -> User? {
        guard let link = try await store.federatedIdentity(provider: provider, subject: subject) else { return nil }
        return try await store.user(id: link.userID)
    }

    private func link(_ identity: UpstreamIdentity, _ provider: IdentityProvider, _ userID: UserID) -> FederatedIdentity {
        FederatedIdentity(
            provider: provider.name, subject: identity.subject, userID: userID, email: Self.usableEmail(identity.email),
            createdAt: now)
    }

    /// A new account without a password, named after the person's name there, with its link,
    /// in one transaction: of two first sign-ins at once, one makes the account and the other
    /// signs in to it. Its address counts as confirmed only when a provider trusted with verified
    /// addresses (`link-verified-email`) says it verified it, so that a provider not trusted so far
    /// cannot make an account that another provider's verified-address link would then lead to.
    private func createAccount(for identity: UpstreamIdentity, at provider: IdentityProvider) async throws -> User {
        let base = Self.username(for: identity, at: provider.name)
        // An address the provider does not say it verified is not kept: a reset link sent to it
        // would hand its owner an account the upstream account still signs in to.
        let email = identity.emailVerified ? Self.usableEmail(identity.email) : nil
        for attempt in 1...20 {
            let suffix = attempt < 10 ? String(attempt) : String(RandomToken.hash(base + String(attempt)).prefix(6))
            let candidate = attempt == 1 ? base : base + "-" + suffix
            if try await store.usernameTaken(ignoringCase: candidate) { continue }
            let user = User(
                id: UserID(rawValue: UUID().uuidString.lowercased()), username: Username(rawValue: candidate),
                displayName: Self.usableName(identity.name), passwordHash: "", email: email,
                emailVerified: email != nil && identity.emailVerified && provider.linksVerifiedEmail, createdAt: now)
            do {
                if try await store.insertFederatedUser(user, identity: link(identity, provider, user.id)) {
                    event(.federationAccountCreated, ["user_id": "\(user.id)", "identity_provider": "\(provider.name)"])
                    return user
                }
            } catch StoreError.conflict {
                continue  // the name was taken meanwhile
            }
            if let user = try await linkedUser(provider.name, identity.subject) { return user }
        }
        throw StoreError.conflict("No free username was found for a new account.")
    }

    /// A username from the person's name there or their address's local part, when it is one a
    /// person could choose at sign-up (ASCII letters, digits, `.`, `_`, `-`: nothing that passes
    /// for a link or another script's letters), cut to 48; else the provider's name and a hash of
    /// their id there.
    static func username(for identity: UpstreamIdentity, at provider: String) -> String {
        let local = identity.email.map { String($0.prefix { $0 != "@" }) }
        for candidate in [identity.username, local].compactMap({ $0.map { String($0.prefix(48)) } }) {
            if SelfService.usernameProblem(candidate) == nil { return candidate }
        }
        return provider + "-" + String(RandomToken.hash(identity.subject).prefix(12))
    }

    /// An address from a provider, if it is one an administrator could give.
    static func usableEmail(_ email: String?) -> String? {
        guard let email, SelfService.emailProblem(email) == nil else { return nil }
        return email
    }

    /// A display name from a provider: at most 100 characters, without control characters.
    static func usableName(_ name: String?) -> String? {
        let cleaned = String(
            (name ?? "").unicodeScalars.filter {
                !$0.properties.isNoncharacterCodePoint && !CharacterSet.controlCharacters.contains($0)
            }.prefix(100)
        )
        .trimmingCharacters(in: .whitespaces)
        return cleaned.isEmpty ? nil : cleaned
    }

    /// Name and address as the provider says now (`updates-profile`), after a completed sign-in.
    /// An address the provider verified, that no other account has and that an administrator could
    /// give replaces the old one, confirmed only when this provider is trusted with verified addresses.
    func updateProfile(of user: User, from identity: UpstreamIdentity, at provider: IdentityProvider) async throws {
        let name = Self.usableName(identity.name) ?? user.displayName
        var email = user.email
        var verified = user.emailVerified
        if identity.emailVerified, let given = Self.usableEmail(identity.email), given.lowercased() != user.email?.lowercased() {
            if try await store.users(email: given).allSatisfy({ $0.id == user.id }) {
                email = given
                verified = identity.emailVerified && provider.linksVerifiedEmail
            }
        } else if Self.usableEmail(identity.email) != nil {
            verified = user.emailVerified || (identity.emailVerified && provider.linksVerifiedEmail)
        }
        guard name != user.displayName || email != user.email || verified != user.emailVerified else { return }
        _ = try await store.setUserProfile(id: user.id, displayName: name, email: email, emailVerified: verified, at: now)
    }

    /// The end of a link round trip: the upstream account becomes a way into the account that
    /// started it, unless it is linked to another one already.
    func link(
        _ identity: UpstreamIdentity, provider: IdentityProvider, to userID: UserID, session: BrowserSession,
        clientAddress: String
    ) async throws -> FederationOutcome {
        guard session.userID == userID else { return refused(.notStartedHere, provider.name, clientAddress) }
        if try await store.insertFederatedIdentity(link(identity, provider, userID)) {
            event(.federationLinked, ["user_id": "\(userID)", "identity_provider": "\(provider.name)", "by": "account_page"])
            if let user = try await store.user(id: userID) {
                try await secondFactors.tell(user, "Sign-in through \(provider.displayName) was linked")
            }
            return .linked
        }
        if try await store.federatedIdentity(provider: provider.name, subject: identity.subject)?.userID == userID {
            return .linked
        }
        return refused(
            .refused("This \(provider.displayName) account is linked to another account here already."), provider.name,
            clientAddress)
    }

    /// `POST /federation/NAME/link`: a signed-in user starts linking a provider, with the
    /// account's password, or a recent sign-in when it has none (a stolen session alone cannot
    /// add a way in).
    /// - Returns: the provider's URL, or why not.
    public func beginLink(
        provider name: String, form: FormParameters, session: BrowserSession, clientAddress: String
    ) async throws -> Result<URL, FederationFailure> {
        guard form.repeatedNames.isEmpty, session.isCSRFToken(of: form) else {
            return .failure(.refused("This form has expired or did not come from this site. Reload the page and try again."))
        }
        guard let userID = session.userID, let user = try await store.user(id: userID), user.disabledAt == nil else {
            return .failure(.refused("Sign in first."))
        }
        switch try await sessions.confirm(user, password: form["password"], session: session, clientAddress: clientAddress) {
        case .confirmed: break
        case .throttled, .busy: return .failure(.refused("Too many attempts. Try again in a few minutes."))
        case .wrongPassword: return .failure(.refused("The password is not right."))
        case .signInTooOld: return .failure(.refused(BrowserSessions.signInAgain(configuration)))
        }
        return try await begin(provider: name, session: session, pendingID: nil, next: nil, linking: userID)
    }

    /// `POST /account/links/remove`: removes a link, unless it is the account's last way to sign
    /// in (no password, no passkey, no other link).
    public func unlink(_ form: FormParameters, session: BrowserSession) async throws -> Result<Void, FederationFailure> {
        guard form.repeatedNames.isEmpty, session.isCSRFToken(of: form), let name = form["provider"] else {
            return .failure(.refused("This form has expired or did not come from this site. Reload the page and try again."))
        }
        guard let userID = session.userID, let user = try await store.user(id: userID) else {
            return .failure(.refused("Sign in first."))
        }
        let links = try await store.federatedIdentities(userID: userID)
        guard links.contains(where: { $0.provider == name }) else { return .success(()) }
        // Another link counts only if its provider is enabled: a disabled one signs no one in.
        let enabled = Set(try await store.identityProviders().filter(\.enabled).map(\.name))
        let otherWays =
            links.contains { $0.provider != name && enabled.contains($0.provider) } || configuration.usesPassword(user)
        if !otherWays, try await store.passkeys(userID: userID).isEmpty {
            return .failure(
                .refused(
                    configuration.passwordSignIn
                        ? "This is the only way to sign in to your account. Add a passkey or set a password first, then remove it."
                        : "This is the only way to sign in to your account. Add a passkey first, then remove it."
                ))
        }
        if try await store.deleteFederatedIdentity(provider: name, userID: userID) {
            event(.federationUnlinked, ["user_id": "\(userID)", "identity_provider": "\(name)"])
            let displayName = try await store.identityProvider(name: name)?.displayName ?? name
            try await secondFactors.tell(user, "Sign-in through \(displayName) was removed")
        }
        return .success(())
    }

    /// The account's links, for its security page.
    public func links(of userID: UserID) async throws -> [FederatedIdentity] {
        try await store.federatedIdentities(userID: userID)
    }
}
