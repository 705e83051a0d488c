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

    func context(csrfToken: String) -> [String: Any] {
        let focus = errorField ?? fields.first(where: { !$0.readOnly && ($0.value ?? "").isEmpty })?.name
        var context: [String: Any] = [
            "heading": heading, "intro": intro, "action": action, "csrfToken": csrfToken, "submit": submit,
            "danger": danger,
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
