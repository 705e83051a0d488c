import Foundation
import LatchkeyCore
import LatchkeyServer
import Mustache

/// Renders the login, consent and message pages into the layout.
struct PageRenderer: Sendable {
    private let layout: MustacheTemplate
    private let login: MustacheTemplate
    private let consent: MustacheTemplate
    private let message: MustacheTemplate
    private let account: MustacheTemplate
    private let logoutConfirmation: MustacheTemplate
    private let device: MustacheTemplate
    private let accountForm: MustacheTemplate
    private let accountSecurity: MustacheTemplate
    private let formPost: MustacheTemplate
    /// The sign-in page links to sign-up (`--sign-up open`) and to the forgotten-password form
    /// (when the server sends e-mail).
    var offersSignUp = false
    var offersReset = false
    /// Whether people sign in with passwords here (`password-sign-in on`).
    var offersPasswords = true
    /// The sign-in page offers "Sign in with a passkey" (where browsers can use passkeys).
    var offersPasskeys = false

    init() {
        // The templates are constants of this module: a parse failure is a programming error.
        layout = try! MustacheTemplate(string: Templates.layout)
        login = try! MustacheTemplate(string: Templates.login)
        consent = try! MustacheTemplate(string: Templates.consent)
        message = try! MustacheTemplate(string: Templates.message)
        account = try! MustacheTemplate(string: Templates.account)
        logoutConfirmation = try! MustacheTemplate(string: Templates.logoutConfirmation)
        device = try! MustacheTemplate(string: Templates.device)
        accountForm = try! MustacheTemplate(string: Templates.accountForm)
        accountSecurity = try! MustacheTemplate(string: Templates.accountSecurity)
        formPost = try! MustacheTemplate(string: Templates.formPost)
    }

    /// The page of a `response_mode=form_post` answer: a form of hidden fields that its script
    /// posts to the app at once, with a button for a browser that runs no script.
    func formPostPage(_ response: FormPostResponse) -> String {
        let host = URLComponents(string: response.action)?.host ?? response.action
        let context: [String: Any] = [
            "host": host, "action": response.action,
            "fields": response.fields.map { ["name": $0.name, "value": $0.value] },
        ]
        return page(title: "Back to " + host, content: formPost.render(context))
    }

    /// - Parameter wide: a wider column, for the admin console's lists and forms.
    func page(title: String, content: String, wide: Bool = false) -> String {
        layout.render(["title": title, "content": content, "wide": wide, "styles": Templates.styles] as [String: Any])
    }

    /// - Parameter username: what was typed before a failed attempt, so it need not be typed again.
    /// - Parameter next: an admin-console page to return to after sign-in.
    /// "Continue with …" on the sign-in page: an upstream identity provider's start.
    struct ProviderLink {
        var displayName: String
        var href: String
    }

    func loginPage(
        csrfToken: String, requestID: String?, client: Client?, error: String?, username: String? = nil, next: String? = nil,
        providers: [ProviderLink] = []
    ) -> String {
        var context: [String: Any] = ["csrfToken": csrfToken]
        if !providers.isEmpty {
            context["providers"] = providers.map { ["displayName": $0.displayName, "href": $0.href] }
            context["hasProviders"] = true
        }
        if let next { context["next"] = next }
        if let username, !username.isEmpty { context["username"] = username }
        if let requestID { context["requestID"] = requestID }
        if let client {
            context["clientName"] = client.name
            // Marked as on the consent page (docs/threat-model.md CM4), before the password is typed.
            if let unverified = Self.unverified(client) { context["unverified"] = unverified }
        }
        if let error { context["error"] = error }
        if offersPasswords { context["passwords"] = true }
        if offersReset, offersPasswords { context["forgot"] = true }
        if offersPasskeys { context["passkeys"] = true }
        if offersSignUp, offersPasswords {
            context["signUp"] = "/signup" + (requestID.map { "?request=" + FormParameters.percentEncode($0) } ?? "")
        }
        return page(title: "Sign in", content: login.render(context))
    }

    /// The device page's code entry (RFC 8628 §3.3), prefilled from `verification_uri_complete`.
    func devicePage(csrfToken: String, userCode: String?, error: String?) -> String {
        var context: [String: Any] = ["csrfToken": csrfToken]
        if let userCode, !userCode.isEmpty { context["userCode"] = userCode }
        if let error { context["error"] = error }
        return page(title: "Connect a device", content: device.render(context))
    }

    func consentPage(_ prompt: ConsentPrompt, username: String) -> String {
        page(title: "Allow \(prompt.client.name)?", content: consent.render(consentContext(prompt, username: username)))
    }

    /// The consent page's content for `client` asking every scope it is registered for, without
    /// its forms: the admin console's preview, rendered by the consent page's own template.
    func consentPreview(client: Client, catalogue: [ScopeDefinition], username: String) -> String {
        let scopes = client.scopes.names.map { name in
            catalogue.first { $0.name == name } ?? ScopeDefinition(name: name, description: name)
        }
        let prompt = ConsentPrompt(pendingID: "", client: client, scopes: scopes, csrfToken: "", lifetimeChoices: [])
        var context = consentContext(prompt, username: username)
        context["preview"] = true
        context["idPrefix"] = "preview-"
        // Below the console page's own h1 and the preview's h2.
        context["headingTag"] = "h3"
        return consent.render(context)
    }

    private func consentContext(_ prompt: ConsentPrompt, username: String) -> [String: Any] {
        var context: [String: Any] = [
            "headingTag": "h1",
            "clientName": prompt.client.name,
            "username": username,
            "csrfToken": prompt.csrfToken,
            "requestID": prompt.pendingID,
            "scopes": prompt.scopes.map { scope -> [String: Any] in
                var row: [String: Any] = ["name": scope.name, "description": scope.description]
                if let shared = prompt.sharedClaims[scope.name] { row["shares"] = shared }
                return row
            },
        ]
        if let logo = prompt.client.logoURI { context["logoURI"] = logo }
        if let policy = prompt.client.privacyPolicyURI { context["privacyPolicyURI"] = policy }
        if !prompt.lifetimeChoices.isEmpty {
            context["hasLifetimes"] = true
            context["lifetimes"] = prompt.lifetimeChoices.map { ["seconds": String($0.seconds), "label": $0.label] }
        }
        if let markdown = prompt.client.consentMarkdown, !markdown.isEmpty {
            context["consentHTML"] = SafeMarkdown.html(from: markdown)
        }
        if !prompt.resources.isEmpty {
            context["hasResources"] = true
            context["resources"] = prompt.resources.map { ["name": $0.name, "uri": $0.uri] }
        }
        if let redirectURI = prompt.redirectURI { context["returnsTo"] = Self.returnDescription(redirectURI) }
        if prompt.fromAnotherDevice { context["fromAnotherDevice"] = true }
        if let unverified = Self.unverified(prompt.client) { context["unverified"] = unverified }
        return context
    }

    /// What the pages say of a client this server has not verified: where its name comes from.
    static func unverified(_ client: Client) -> [String: String]? {
        switch client.registration {
        case .administrator: return nil
        case .dynamic: return ["origin": "It registered itself"]
        case .metadataDocument:
            let host = URLComponents(string: client.id.rawValue)?.host ?? client.id.rawValue
            return ["origin": "It is described by a document at", "host": host]
        }
    }

    /// Where a redirect URI takes the browser, in a person's words: the host of a web address, or
    /// "an app on this device" for a loopback or private-use-scheme redirect (RFC 8252 §7).
    static func returnDescription(_ redirectURI: String) -> [String: String] {
        guard let components = URLComponents(string: redirectURI), let scheme = components.scheme?.lowercased() else {
            return ["place": redirectURI]
        }
        let host = components.host ?? ""
        if scheme == "http" || scheme == "https" {
            let loopback = ["127.0.0.1", "[::1]", "::1", "localhost"].contains(host.lowercased())
            return loopback ? ["place": host, "kind": "an app on this device"] : ["place": host]
        }
        return ["place": scheme, "kind": "an app on this device"]
    }

    /// - Parameter catalogue: the scope descriptions, so the page says what each app can do in the
    ///   consent page's words.
    func accountPage(user: User, apps: [ConnectedApp], csrfToken: String, catalogue: [ScopeDefinition]) -> String {
        let formatter = Date.FormatStyle(date: .abbreviated, time: .shortened, timeZone: .gmt)
        let descriptions = Dictionary(catalogue.map { ($0.name, $0.description) }) { first, _ in first }
        var context: [String: Any] = [
            "username": user.username.rawValue,
            "emailVerified": user.emailVerified,
            "changesEmail": offersReset,
            "csrfToken": csrfToken,
            "hasApps": !apps.isEmpty,
            "apps": apps.map { app -> [String: Any] in
                var item: [String: Any] = [
                    "name": app.client.name, "clientID": app.client.id.rawValue,
                    "scopes": app.scope.names.map { ["name": $0, "description": descriptions[$0] ?? $0] },
                    "since": app.authorizedAt.formatted(formatter) + " UTC", "csrfToken": csrfToken,
                ]
                if let logo = app.client.logoURI { item["logoURI"] = logo }
                return item
            },
        ]
        if let email = user.email { context["email"] = email }
        return page(title: "Your account", content: account.render(context))
    }

    /// `GET /account/security`: the account's second factors.
    /// The security page's "Other ways to sign in": the account's links to upstream providers
    /// and the providers it may link.
    struct FederationSummary {
        var linked: [(FederatedIdentity, IdentityProvider?)]
        var unlinked: [IdentityProvider]
    }

    func securityPage(
        user: User, summary: SecondFactorSummary, csrfToken: String, passkeysAvailable: Bool,
        federation: FederationSummary? = nil
    ) -> String {
        let formatter = Date.FormatStyle(date: .abbreviated, time: .shortened, timeZone: .gmt)
        var context: [String: Any] = [
            "username": user.username.rawValue, "required": summary.required, "csrfToken": csrfToken,
            "passkeysAvailable": passkeysAvailable, "hasPasskeys": !summary.passkeys.isEmpty,
            "hasPassword": user.hasPassword && offersPasswords,
            "passkeys": summary.passkeys.map { passkey -> [String: Any] in
                var item: [String: Any] = [
                    "name": passkey.name, "encodedID": FormParameters.percentEncode(passkey.credentialID.rawValue),
                    "created": passkey.createdAt.formatted(formatter) + " UTC", "synced": passkey.backupEligible,
                ]
                if let used = passkey.lastUsedAt { item["lastUsed"] = used.formatted(formatter) + " UTC" }
                return item
            },
        ]
        if let authenticator = summary.authenticator {
            var item: [String: Any] = [
                "since": (authenticator.confirmedAt ?? authenticator.createdAt).formatted(formatter) + " UTC",
                "recoveryCodesLeft": summary.recoveryCodesLeft,
            ]
            if let used = authenticator.lastUsedAt { item["lastUsed"] = used.formatted(formatter) + " UTC" }
            context["authenticator"] = item
        }
        if let federation, !(federation.linked.isEmpty && federation.unlinked.isEmpty) {
            context["federation"] = [
                "hasLinks": !federation.linked.isEmpty, "hasPassword": user.hasPassword && offersPasswords,
                "linked": federation.linked.map { link, provider -> [String: Any] in
                    var item: [String: Any] = [
                        "name": link.provider, "displayName": provider?.displayName ?? link.provider,
                        "created": link.createdAt.formatted(formatter) + " UTC",
                    ]
                    if let email = link.email { item["email"] = email }
                    return item
                },
                "unlinked": federation.unlinked.map { ["name": $0.name, "displayName": $0.displayName] },
            ]
        }
        return page(title: "Security", content: accountSecurity.render(context))
    }

    /// A self-service form (``AccountForm``).
    func accountFormPage(_ form: AccountForm, csrfToken: String) -> String {
        page(title: form.title, content: accountForm.render(form.context(csrfToken: csrfToken)))
    }

    /// A self-service form's result, with the link onward.
    func noticePage(_ notice: Notice, isError: Bool = false) -> String {
        var context: [String: Any] = ["heading": notice.heading, "message": notice.message, "kind": isError ? "error" : "note"]
        if let link = notice.link { context["link"] = ["label": link.label, "href": link.href] }
        return page(title: notice.heading, content: message.render(context))
    }

    /// RP-initiated logout's question, when the request alone does not show the user asked for it.
    func logoutConfirmationPage(_ confirmation: LogoutConfirmation) -> String {
        var context: [String: Any] = [
            "csrfToken": confirmation.csrfToken,
            "carried": confirmation.carried.map { ["fieldName": $0.name, "fieldValue": $0.value] },
        ]
        if let name = confirmation.clientName { context["clientName"] = name }
        return page(title: "Sign out?", content: logoutConfirmation.render(context))
    }

    /// - Parameter advice: plain words for the person; then `message` and `code` go under
    ///   "Details for the app's developer".
    func messagePage(
        heading: String, message text: String, code: String? = nil, isError: Bool = true, advice: String? = nil
    ) -> String {
        var context: [String: Any] = ["heading": heading, "message": text, "kind": isError ? "error" : "note"]
        if let code { context["code"] = code }
        if let advice { context["advice"] = advice }
        return page(title: heading, content: message.render(context))
    }
}
