import Foundation
import LatchkeyCore
import LatchkeyServer
import Mustache

/// Renders the admin console's pages (``ConsoleTemplates``) into the shared layout.
struct ConsoleRenderer: Sendable {
    let pages: PageRenderer
    private let templates: [String: MustacheTemplate]
    /// `password-min-length`, which the password fields say and ask for.
    let passwordMinimumLength: Int

    init(pages: PageRenderer, passwordMinimumLength: Int) {
        self.pages = pages
        self.passwordMinimumLength = passwordMinimumLength
        // The templates are constants of this module: a parse failure is a programming error.
        templates = ConsoleTemplates.pages.mapValues { try! MustacheTemplate(string: Templates.text($0)) }
    }

    /// Where the viewer is, for the navigation's `aria-current`.
    enum Section { case apps, users, scopes, resources, providers, activity, mail }

    static let dateFormat = Date.FormatStyle(date: .abbreviated, time: .shortened, timeZone: .gmt)
    static func date(_ date: Date) -> String { date.formatted(dateFormat) + " UTC" }

    /// A console page: the navigation, an optional notice, then `template` rendered with `context`.
    func page(
        _ template: String, title: String, viewer: ConsoleUser, section: Section?, notice: String? = nil,
        _ context: [String: Any]
    ) -> String {
        var navigation: [String: Any] = [
            "isAdmin": viewer.isAdmin, "username": viewer.user.username.rawValue, "onApps": section == .apps,
            "onUsers": section == .users, "onScopes": section == .scopes, "onActivity": section == .activity,
            "onResources": section == .resources, "onProviders": section == .providers, "onMail": section == .mail,
        ]
        if let notice { navigation["notice"] = notice }
        let content = templates["nav"]!.render(navigation) + templates[template]!.render(context)
        return pages.page(title: title + " · Latchkey admin", content: content, wide: true)
    }

    func apps(_ apps: [ConsoleApp], viewer: ConsoleUser, notice: String?) -> String {
        let rows = apps.map { app -> [String: Any] in
            var row: [String: Any] = [
                "clientID": app.client.id.rawValue, "name": app.client.name, "typeLabel": Self.typeLabel(app.client.type),
                "created": Self.date(app.client.createdAt), "grants": String(app.activeGrants),
                "grantsPlural": app.activeGrants == 1 ? "" : "s", "firstParty": app.client.firstParty,
            ]
            if let logo = app.client.logoURI { row["logoURI"] = logo }
            if let owner = app.ownerUsername { row["owner"] = owner }
            return row
        }
        return page("apps", title: "Apps", viewer: viewer, section: .apps, notice: notice, ["apps": rows])
    }

    /// The new-app or edit-app form, filled with `settings`.
    /// - Parameters:
    ///   - app: the app being edited, or `nil` for a new one.
    ///   - preview: the consent page's preview, already rendered.
    ///   - error: what was wrong with the last submission, and the field it names.
    func appForm(
        _ settings: ClientSettings, app: ConsoleApp?, catalogue: [ScopeDefinition], viewer: ConsoleUser, preview: String?,
        error: AdministrationError?, defaults: (access: TimeInterval, refresh: TimeInterval)
    ) -> String {
        let types: [ClientType] = viewer.isAdmin ? [.native, .browser, .web, .service] : [.native, .browser, .web]
        var context: [String: Any] = [
            "heading": app.map { "Edit \($0.client.name)" } ?? "Register an app",
            "action": app.map { "/admin/apps/\($0.client.id)" } ?? "/admin/apps",
            "saveLabel": app == nil ? "Register app" : "Save changes",
            "isNew": app == nil, "isAdmin": viewer.isAdmin, "csrfToken": viewer.session.csrfToken,
            "type": settings.type.rawValue, "typeLabel": Self.typeLabel(settings.type),
            "types": types.map { ["value": $0.rawValue, "label": Self.typeLabel($0), "selected": $0 == settings.type] },
            "name": settings.name, "redirectURIs": settings.redirectURIs.joined(separator: "\n"),
            "scopes": catalogue.map {
                ["name": $0.name, "description": $0.description, "checked": settings.scopes.contains($0.name)] as [String: Any]
            },
            "logoURI": settings.logoURI ?? "", "policyURI": settings.privacyPolicyURI ?? "",
            "consentMarkdown": settings.consentMarkdown ?? "", "owner": settings.ownerUsername ?? "",
            "firstParty": settings.firstParty, "allowImplicit": settings.allowImplicit,
            "requirePushed": settings.requirePushedAuthorizationRequests, "allowDeviceCode": settings.allowDeviceCode,
            "allowTokenExchange": settings.allowTokenExchange,
            "accessLifetime": settings.accessTokenLifetime.map(String.init) ?? "",
            "refreshLifetime": settings.refreshTokenLifetime.map(String.init) ?? "",
            "defaultAccess": "\(Int(defaults.access)) s", "defaultRefresh": "\(Int(defaults.refresh)) s",
            "algorithms": SigningAlgorithm.allCases.map {
                [
                    "algValue": $0.rawValue, "algSelected": $0 == settings.idTokenSigningAlgorithm,
                    "algLabel": $0 == .rs256 ? "RS256 (every library accepts it)" : "ES256 (smaller, faster)",
                ] as [String: Any]
            },
            "postLogoutRedirectURIs": settings.postLogoutRedirectURIs.joined(separator: "\n"),
            "backchannelLogoutURI": settings.backchannelLogoutURI ?? "",
            // Keys are chosen at registration, for web and service apps, and may change later;
            // an app registered with a secret keeps it.
            "showsKeys": app.map { $0.client.keys != nil } ?? true,
            "jwksURI": settings.keys?.jwksURI ?? "", "jwks": settings.keys?.jwks ?? "",
        ]
        if let app {
            context["clientID"] = app.client.id.rawValue
            context["grants"] = String(app.activeGrants)
            context["grantsPlural"] = app.activeGrants == 1 ? "" : "s"
            context["confidential"] = app.client.type.isConfidential && app.client.keys == nil
        }
        if let preview { context["preview"] = preview }
        if let error {
            context["error"] = error.description
            if let field = error.field { context["errorOn_" + field] = true }
        }
        let title = app == nil ? "Register an app" : "Edit app"
        return page("appForm", title: title, viewer: viewer, section: .apps, context)
    }

    func secret(client: Client, secret: String?, heading: String, viewer: ConsoleUser) -> String {
        var context: [String: Any] = ["heading": heading, "clientID": client.id.rawValue, "name": client.name]
        if let secret { context["secret"] = secret }
        return page("secret", title: heading, viewer: viewer, section: .apps, context)
    }

    /// A confirmation form that posts `fields` to `action`.
    func confirm(
        heading: String, message: String, consequences: [String] = [], action: String, fields: [(String, String)] = [],
        button: String, back: String, asksPassword: Bool = false, viewer: ConsoleUser, section: Section
    ) -> String {
        page(
            "confirm", title: heading, viewer: viewer, section: section,
            [
                "heading": heading, "message": message, "consequences": consequences,
                "hasConsequences": !consequences.isEmpty, "action": action, "csrfToken": viewer.session.csrfToken,
                "fields": fields.map { ["name": $0.0, "value": $0.1] }, "button": button, "back": back,
                "password": asksPassword, "passwordMinimumLength": passwordMinimumLength,
            ])
    }

    /// - Parameters:
    ///   - asksPassword: offer the password field (the viewer has a password, and passwords are on here).
    ///   - passkey: offer "Use a passkey" instead of the password.
    ///   - provider: offer to sign in again through this upstream provider instead.
    func reauthenticate(
        next: String, error: String?, minutes: Int, viewer: ConsoleUser, asksPassword: Bool, passkey: Bool = false,
        provider: IdentityProvider? = nil
    ) -> String {
        var context: [String: Any] = [
            "next": next, "csrfToken": viewer.session.csrfToken, "username": viewer.user.username.rawValue,
            "minutes": String(minutes), "passkey": passkey, "hasPassword": asksPassword,
        ]
        if let provider {
            context["provider"] = [
                "displayName": provider.displayName,
                "href": FederationRoutes.startPath(provider.name, requestID: nil, next: next, fresh: true),
            ]
        }
        if let error { context["error"] = error }
        return page("reauthenticate", title: "Confirm it is you", viewer: viewer, section: nil, context)
    }

    /// - Parameters:
    ///   - invites: whether the page offers an invitation by e-mail (sign-up is on, e-mail is set up).
    ///   - inviteError: why the last invitation was refused.
    func users(
        _ users: [User], query: String, viewer: ConsoleUser, notice: String?, error: String?, invites: Bool = false,
        inviteError: String? = nil
    ) -> String {
        var context: [String: Any] = [
            "query": query, "csrfToken": viewer.session.csrfToken, "passwordMinimumLength": passwordMinimumLength,
            "invites": invites,
            "users": users.map { user -> [String: Any] in
                var row: [String: Any] = [
                    "id": user.id.rawValue, "username": user.username.rawValue, "admin": user.role == .admin,
                    "disabled": user.disabledAt != nil, "created": Self.date(user.createdAt),
                ]
                if let name = user.displayName { row["name"] = name }
                return row
            },
        ]
        if let error { context["error"] = error }
        if let inviteError { context["inviteError"] = inviteError }
        return page("users", title: "Users", viewer: viewer, section: .users, notice: notice, context)
    }

    /// - Parameter links: the user's links to upstream providers, with each provider (`nil` once deleted).
    func user(
        _ detail: ConsoleUserDetail, viewer: ConsoleUser, notice: String?,
        links: [(link: FederatedIdentity, provider: IdentityProvider?)] = []
    ) -> String {
        let user = detail.user
        var context: [String: Any] = [
            "id": user.id.rawValue, "username": user.username.rawValue, "admin": user.role == .admin,
            "otherRole": user.role == .admin ? "none" : "admin", "disabled": user.disabledAt != nil,
            "created": Self.date(user.createdAt), "csrfToken": viewer.session.csrfToken,
            "apps": detail.apps.map {
                [
                    "userID": user.id.rawValue, "clientID": $0.client.id.rawValue, "name": $0.client.name,
                    "scope": $0.scope.description, "since": Self.date($0.authorizedAt), "csrfToken": viewer.session.csrfToken,
                ]
            },
            // A session is named by its stored hash, never by the cookie value.
            "sessions": detail.sessions.map {
                [
                    "created": Self.date($0.createdAt), "lastSeen": Self.date($0.lastSeenAt), "handle": $0.idHash.rawValue,
                    "userID": user.id.rawValue, "csrfToken": viewer.session.csrfToken,
                ]
            },
            "hasSessions": !detail.sessions.isEmpty,
            "hasAuthenticator": detail.secondFactors.authenticator != nil,
            "recoveryCodesLeft": detail.secondFactors.recoveryCodesLeft,
            "secondFactorRequired": detail.secondFactors.required, "requiredForUser": user.secondFactorRequired,
        ]
        if let name = user.displayName { context["name"] = name }
        context["links"] = Self.linkRows(links)
        context["hasLinks"] = !links.isEmpty
        context["hasPassword"] = user.hasPassword
        return page("user", title: user.username.rawValue, viewer: viewer, section: .users, notice: notice, context)
    }

    /// The user page's "Sign-in through providers". Row keys differ from the page's (`name`,
    /// `created`): a key missing from a row would be looked up in the page's context instead.
    static func linkRows(_ links: [(link: FederatedIdentity, provider: IdentityProvider?)]) -> [[String: Any]] {
        links.map { item -> [String: Any] in
            var row: [String: Any] = [
                "providerName": item.provider?.displayName ?? item.link.provider, "linkedAt": Self.date(item.link.createdAt),
            ]
            row["linkEmail"] = item.link.email ?? false
            row["lastUsed"] = item.link.lastUsedAt.map(Self.date) ?? false
            return row
        }
    }

    func scopes(_ scopes: [ScopeDefinition], viewer: ConsoleUser, notice: String?, error: String?) -> String {
        var context: [String: Any] = [
            "csrfToken": viewer.session.csrfToken,
            "scopes": scopes.map {
                ["name": $0.name, "description": $0.description, "encodedName": FormParameters.percentEncode($0.name)]
            },
        ]
        if let error { context["error"] = error }
        return page("scopes", title: "Scopes", viewer: viewer, section: .scopes, notice: notice, context)
    }

    func resources(_ resources: [ProtectedResource], viewer: ConsoleUser, notice: String?, error: String?) -> String {
        var context: [String: Any] = [
            "csrfToken": viewer.session.csrfToken,
            "resources": resources.map { resource -> [String: Any] in
                var row: [String: Any] = [
                    "name": resource.name, "uri": resource.uri, "scopes": resource.scopes.description,
                    "format": resource.tokenFormat.rawValue, "encodedURI": FormParameters.percentEncode(resource.uri),
                ]
                if let seconds = resource.accessTokenLifetime { row["lifetime"] = String(seconds) }
                if resource.tokenFormat == .jwt { row["alg"] = resource.tokenSigningAlgorithm.rawValue }
                return row
            },
        ]
        if let error { context["error"] = error }
        return page("resources", title: "Resources", viewer: viewer, section: .resources, notice: notice, context)
    }

    /// The Sign-in providers page: each provider with the redirect URI to register there, and the
    /// form adding one.
    /// - Parameters:
    ///   - callbackPattern: the redirect URI of a provider named `NAME`, for the form's help.
    ///   - error: why the last submission was refused; its field is marked.
    ///   - typed: that submission, to fill the form with again (never its client secret).
    func providers(
        _ providers: [(provider: IdentityProvider, callback: String)], callbackPattern: String, viewer: ConsoleUser,
        notice: String?, error: AdministrationError?, typed: FormParameters?
    ) -> String {
        // A new provider makes accounts unless the administrator says otherwise.
        let createsAccounts: Bool = typed.map { $0["creates_accounts"] != nil } ?? true
        let rows: [[String: Any]] = providers.map { row in Self.providerRow(row.provider, callback: row.callback) }
        var context: [String: Any] = [
            "csrfToken": viewer.session.csrfToken, "callbackPattern": callbackPattern, "providers": rows,
            "kindOAuth2": typed?["kind"] == IdentityProviderKind.oauth2.rawValue, "createsAccountsChecked": createsAccounts,
            "linksVerifiedEmailChecked": typed?["links_verified_email"] != nil,
            "updatesProfileChecked": typed?["updates_profile"] != nil,
        ]
        for field in [
            "name", "display_name", "issuer", "client_id", "scopes", "authorization_endpoint", "token_endpoint",
            "userinfo_endpoint", "subject_claim", "username_claim", "allowed_email_domains",
        ] {
            context["typed_" + field] = typed?[field] ?? ""
        }
        if let error {
            context["error"] = error.description
            if let field = error.field { context["errorOn_" + field] = true }
        }
        return page("providers", title: "Sign-in providers", viewer: viewer, section: .providers, notice: notice, context)
    }

    /// One provider on the Sign-in providers page.
    static func providerRow(_ provider: IdentityProvider, callback: String) -> [String: Any] {
        var row: [String: Any] = [
            "name": provider.name, "displayName": provider.displayName, "kind": Self.kindLabel(provider.kind),
            "enabled": provider.enabled, "createsAccounts": provider.createsAccounts,
            "linksVerifiedEmail": provider.linksVerifiedEmail, "updatesProfile": provider.updatesProfile,
            "clientID": provider.clientID, "confidential": provider.sealedClientSecret != nil,
            "callback": callback, "added": Self.date(provider.createdAt),
            "encodedName": FormParameters.percentEncode(provider.name), "scope": false, "domains": false,
        ]
        row["issuer"] = provider.issuer ?? false
        if !provider.scope.isEmpty { row["scope"] = provider.scope.description }
        if !provider.allowedEmailDomains.isEmpty { row["domains"] = provider.allowedEmailDomains.joined(separator: " ") }
        return row
    }

    static func kindLabel(_ kind: IdentityProviderKind) -> String {
        switch kind {
        case .openIDConnect: "OpenID Connect"
        case .oauth2: "OAuth 2.0"
        }
    }

    /// The Activity page. `usernames` names the users the events mention.
    func activity(
        _ events: [AuditEvent], filters: ActivityFilters, limit: Int, retentionDays: Int, usernames: [String: String],
        viewer: ConsoleUser
    ) -> String {
        let context: [String: Any] = [
            "event": filters.event ?? "", "user": filters.user ?? "", "client": filters.client ?? "",
            "dayChoices": [1, 7, 30, 90].filter { $0 <= max(retentionDays, 1) || $0 == 1 }.map {
                ["value": String($0), "label": $0 == 1 ? "day" : "\($0) days", "selected": $0 == filters.days] as [String: Any]
            },
            "eventNames": ActivityFilters.eventNames, "count": String(events.count), "plural": events.count == 1 ? "" : "s",
            "capped": events.count >= limit, "retention": String(retentionDays),
            // Row keys differ from the filter's (`event`, `user`, `client`): a key missing from a
            // row would be looked up in the page's context instead.
            "events": events.map { event -> [String: Any] in
                var row: [String: Any] = ["name": event.event, "at": Self.date(event.at), "actor": false, "details": false]
                if let actor = event.actor { row["actor"] = usernames[actor].map { "\($0) (admin)" } ?? actor }
                row["aboutUser"] = event.userID.map { usernames[$0] ?? $0 } ?? false
                row["aboutClient"] = event.clientID ?? false
                if !event.details.isEmpty {
                    row["details"] = event.details.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(
                        separator: " ")
                }
                return row
            },
        ]
        return page("activity", title: "Activity", viewer: viewer, section: .activity, context)
    }

    /// The E-mail page: where mail goes, the outbox's counts and its newest messages.
    func mail(delivery: String?, counts: OutboxCounts, messages: [OutboxMessage], viewer: ConsoleUser) -> String {
        let context: [String: Any] = [
            "delivery": delivery ?? false, "queued": String(counts.queued), "sent": String(counts.sent),
            "failed": String(counts.failed), "hasMessages": !messages.isEmpty,
            "messages": messages.map { message -> [String: Any] in
                let status = message.sentAt != nil ? "sent" : message.failedAt != nil ? "given up" : "queued"
                return [
                    "recipient": message.recipient, "kind": message.kind, "status": status,
                    "queuedAt": Self.date(message.createdAt), "attempts": String(message.attempts),
                    "attemptsPlural": message.attempts == 1 ? "" : "s", "lastError": message.lastError ?? false,
                    "failed": message.failedAt != nil,
                ]
            },
        ]
        return page("mail", title: "E-mail", viewer: viewer, section: .mail, context)
    }

    static func typeLabel(_ type: ClientType) -> String {
        switch type {
        case .native: "Native / mobile app"
        case .browser: "Browser app (single-page)"
        case .web: "Web server app (with a secret)"
        case .service: "Service (client credentials)"
        }
    }
}
