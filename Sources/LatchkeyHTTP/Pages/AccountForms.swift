import Foundation
import LatchkeyCore
import LatchkeyServer

/// One of the self-service forms (sign-up, forgotten password, new password, e-mail
/// confirmation, the account page's changes), all drawn by `account-form.mustache`.
struct AccountForm {
    struct Field {
        var name: String
        var label: String
        var type = "text"
        var autocomplete: String
        var value: String?
        var hint: String?
        var readOnly = false
        /// A username or an address: no capital first letter, no spelling check.
        var plain = false
        var minLength: Int?
    }

    var title: String
    var heading: String
    var intro: [String] = []
    var action: String
    var fields: [Field] = []
    var hidden: [(name: String, value: String)] = []
    var submit: String
    var danger = false
    var links: [(label: String, href: String)] = []
    var error: String?
    /// The field the error is about, marked `aria-invalid` and focused.
    var errorField: String?
    /// Whether the page shows its form (a page of passkey buttons alone has none).
    var hasForm = true
    /// An image drawn by Latchkey itself (a QR code's SVG), put in the page as it is.
    var figure: String?
    /// A TOTP key to type, in the element with id `totp-secret`.
    var secret: String?
    /// Values to show as a list before the form (recovery codes).
    var list: [String] = []
    /// A page without a form: the way on, as its main button.
    var proceed: (label: String, href: String)?
    /// A "Use a passkey" button that posts a passkey's answer to ``action`` (the second step).
    var offersPasskey = false

    func context(csrfToken: String) -> [String: Any] {
        let focus = errorField ?? fields.first(where: { !$0.readOnly && ($0.value ?? "").isEmpty })?.name
        var context: [String: Any] = [
            "heading": heading, "intro": intro, "action": action, "csrfToken": csrfToken, "submit": submit,
            "danger": danger, "hasForm": !action.isEmpty, "list": list, "hasList": !list.isEmpty,
            "hidden": hidden.map { ["name": $0.name, "value": $0.value] },
            "links": links.map { ["label": $0.label, "href": $0.href] },
            "fields": fields.map { field -> [String: Any] in
                var item: [String: Any] = [
                    "name": field.name, "label": field.label, "type": field.type, "autocomplete": field.autocomplete,
                    "readOnly": field.readOnly, "plain": field.plain, "focus": field.name == focus,
                    "invalid": field.name == errorField,
                ]
                if let value = field.value, !value.isEmpty { item["value"] = value }
                if let hint = field.hint { item["hint"] = hint }
                if let minLength = field.minLength { item["minLength"] = minLength }
                return item
            },
        ]
        if let error { context["error"] = error }
        if !hasForm { context["hasForm"] = false }
        if let figure { context["figure"] = figure }
        if let secret { context["secret"] = secret }
        if let proceed { context["proceed"] = ["label": proceed.label, "href": proceed.href] }
        context["passkey"] = offersPasskey
        return context
    }
}

extension AccountForm {
    static func newPassword(_ minimumLength: Int, label: String = "Password") -> Field {
        Field(
            name: "password", label: label, type: "password", autocomplete: "new-password",
            hint: "At least \(minimumLength) characters; not your username, and not a password many people use.",
            minLength: minimumLength)
    }

    static func currentPassword() -> Field {
        Field(name: "current_password", label: "Current password", type: "password", autocomplete: "current-password")
    }

    /// `GET /signup`.
    static func signUp(_ form: SignUpForm, requestID: String?, minimumLength: Int, values: [String: String] = [:])
        -> AccountForm
    {
        var page = AccountForm(
            title: "Create an account", heading: "Create an account", action: "/signup", submit: "Create account")
        page.fields = [
            Field(name: "username", label: "Username", autocomplete: "username", value: values["username"], plain: true),
            Field(
                name: "email", label: "E-mail address", type: "email", autocomplete: "email",
                value: form.invitedEmail ?? values["email"],
                hint: form.invitedEmail == nil ? "We send a link to it to confirm it is yours." : "The invitation was sent here.",
                readOnly: form.invitedEmail != nil, plain: true),
            newPassword(minimumLength),
        ]
        if let invitation = form.invitation { page.hidden.append(("invitation", invitation)) }
        if let requestID { page.hidden.append(("request", requestID)) }
        let signIn = "/login" + (requestID.map { "?request=" + FormParameters.percentEncode($0) } ?? "")
        page.links = [("Already have an account? Sign in", signIn)]
        return page
    }

    /// `GET /password/forgot`.
    static func forgotPassword(login: String? = nil) -> AccountForm {
        AccountForm(
            title: "Forgot your password?", heading: "Forgot your password?",
            intro: [
                "Enter your username or e-mail address. If it matches an account, we e-mail a link to choose a new password."
            ],
            action: "/password/forgot",
            fields: [
                Field(name: "login", label: "Username or e-mail address", autocomplete: "username", value: login, plain: true)
            ],
            submit: "Send the link", links: [("Back to sign-in", "/login")])
    }

    /// `GET /password/reset?token=…`: the username goes along, for password managers.
    static func resetPassword(token: String, username: String, minimumLength: Int) -> AccountForm {
        AccountForm(
            title: "Choose a new password", heading: "Choose a new password",
            intro: [
                "For the account \(username). Setting it signs the account out everywhere, and every app must ask for access again."
            ],
            action: "/password/reset",
            fields: [
                Field(
                    name: "username", label: "Username", autocomplete: "username", value: username, readOnly: true, plain: true),
                newPassword(minimumLength, label: "New password"),
            ],
            hidden: [("token", token)], submit: "Set the new password")
    }

    /// `GET /email/verify?token=…`: opening the link changes nothing until the button is pressed.
    static func verifyEmail(token: String, email: String) -> AccountForm {
        AccountForm(
            title: "Confirm your e-mail address", heading: "Confirm your e-mail address",
            intro: ["Confirm that \(email) is your address."], action: "/email/verify", hidden: [("token", token)],
            submit: "Confirm \(email)")
    }

    /// `GET /account/password`.
    static func changePassword(minimumLength: Int) -> AccountForm {
        AccountForm(
            title: "Change your password", heading: "Change your password",
            intro: ["Every other session of your account ends, and every app must ask for access again."],
            action: "/account/password", fields: [currentPassword(), newPassword(minimumLength, label: "New password")],
            submit: "Change password", links: [("Back to your account", "/account")])
    }

    /// `GET /account/password` for an account without a password (made by an upstream provider):
    /// its first one, confirmed by a recent sign-in.
    static func setPassword(minimumLength: Int) -> AccountForm {
        AccountForm(
            title: "Set a password", heading: "Set a password",
            intro: ["Your account has none yet: with one, you can also sign in with your username."],
            action: "/account/password", fields: [newPassword(minimumLength, label: "New password")],
            submit: "Set password", links: [("Back to your account", "/account")])
    }

    /// `GET /account/email`.
    /// - Parameter needsPassword: the sign-in is older than the re-authentication window.
    static func changeEmail(current: String?, verified: Bool, needsPassword: Bool, value: String? = nil) -> AccountForm {
        let now =
            current.map { "Your address is \($0)" + (verified ? "." : ", not confirmed yet.") } ?? "Your account has no address."
        return AccountForm(
            title: "Change your e-mail address", heading: "Change your e-mail address",
            intro: [
                now, "We send a link to the new address; it replaces the old one when you open it, and the old one is told.",
            ],
            action: "/account/email",
            fields: [
                Field(name: "email", label: "New e-mail address", type: "email", autocomplete: "email", value: value, plain: true)
            ] + (needsPassword ? [currentPassword()] : []),
            submit: "Send the link", links: [("Back to your account", "/account")])
    }

    /// `GET /account/delete`.
    static func deleteAccount(username: String) -> AccountForm {
        AccountForm(
            title: "Delete your account", heading: "Delete your account",
            intro: [
                "This deletes the account \(username) for good: every app loses access, and it cannot be undone. "
                    + "Type your password to confirm."
            ],
            action: "/account/delete", fields: [currentPassword()], submit: "Delete my account", danger: true,
            links: [("Keep my account", "/account")])
    }
}

// The second factors' forms (docs/accounts.md, "Second factors").
extension AccountForm {
    /// `GET /login/second-factor`: the second step of sign-in, or a step-up: a code from the
    /// authenticator app or a recovery code, and a passkey when the account has one.
    static func secondStep(requestID: String?, next: String?, site: String, codes: Bool = true, passkey: Bool = false)
        -> AccountForm
    {
        var page = AccountForm(
            title: "Two-step sign-in", heading: codes ? "Enter your code" : "Confirm it is you",
            intro: codes
                ? [
                    "Open your authenticator app and enter the six-digit code it shows for \(site).",
                    "No phone at hand? Enter one of your recovery codes instead.",
                ]
                : passkey
                    ? ["Use one of your passkeys to finish signing in."]
                    : [
                        "Your passkeys cannot be used at this address. Ask the people who run this site to reset your "
                            + "second factors."
                    ],
            action: "/login/second-factor",
            fields: codes ? [Field(name: "code", label: "Code", autocomplete: "one-time-code", plain: true)] : [],
            submit: codes ? "Continue" : "", links: [("Sign in as someone else", "/login")])
        page.offersPasskey = passkey
        page.hasForm = codes
        if let requestID { page.hidden.append(("request", requestID)) }
        if let next { page.hidden.append(("next", next)) }
        return page
    }

    /// `GET /account/security/totp`: the key as a QR code and as text, and its first code.
    static func setUpTOTP(_ enrolment: TOTPEnrolment, requestID: String?, next: String?, needsPassword: Bool)
        -> AccountForm
    {
        var page = AccountForm(
            title: "Set up an authenticator app", heading: "Set up an authenticator app",
            intro: [
                "Scan the QR code with an authenticator app (such as a password manager, Google Authenticator or Authy), "
                    + "or type the key into it. Then enter the six-digit code the app shows."
            ],
            action: "/account/security/totp",
            fields: [
                Field(
                    name: "code", label: "Code from the app", autocomplete: "one-time-code",
                    hint: "Six digits; the app shows a new one every 30 seconds.", plain: true)
            ] + (needsPassword ? [currentPassword()] : []),
            hidden: [("factor", enrolment.factorID.rawValue)], submit: "Turn on two-step sign-in",
            links: [("Not now", "/account/security")])
        page.figure = (try? QRCode(encoding: enrolment.provisioningURI))?.svg(
            label: "QR code of the key for your authenticator app")
        page.secret = enrolment.keyText
        if let requestID { page.hidden.append(("request", requestID)) }
        if let next { page.hidden.append(("next", next)) }
        return page
    }

    /// The recovery codes, shown once, with the way on.
    static func recoveryCodes(_ codes: [String], next: String) -> AccountForm {
        var page = AccountForm(
            title: "Your recovery codes", heading: "Save your recovery codes",
            intro: [
                "Each code signs you in once if you lose your authenticator app. Keep them somewhere safe, "
                    + "such as a password manager: this is the only time they are shown."
            ],
            action: "", submit: "")
        page.list = codes
        page.proceed = ("I saved them: continue", next)
        return page
    }

    /// A form of the security page that only asks for the password.
    /// The form as `user` sees it: without a password to type (an account made by an upstream
    /// provider, or passwords turned off here), it has no password field, since a recent sign-in
    /// confirms the change instead.
    func asked(of user: User?, _ configuration: ServerConfiguration) -> AccountForm {
        guard let user, !configuration.usesPassword(user) else { return self }
        var form = self
        form.fields.removeAll { $0.name == "current_password" }
        form.intro = form.intro.map { $0.replacingOccurrences(of: " Type your password to confirm.", with: "") }
        return form
    }

    static func confirmWithPassword(_ action: String, heading: String, intro: String, submit: String, danger: Bool = false)
        -> AccountForm
    {
        AccountForm(
            title: heading, heading: heading, intro: [intro], action: action, fields: [currentPassword()], submit: submit,
            danger: danger, links: [("Back to security", "/account/security")])
    }
}
