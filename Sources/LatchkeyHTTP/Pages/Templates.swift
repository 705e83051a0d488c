import Foundation

/// The page templates (mustache; `{{x}}` is HTML-escaped, `{{{x}}}` only for our own rendered
/// HTML), in `Sources/LatchkeyHTTP/Templates/`. SwiftPM embeds those files in the binary when it
/// builds (`embedInCode`), so nothing is looked up at run time and the binary needs no resource
/// bundle next to it.
enum Templates {
    static let layout = text(PackageResources.layout_mustache)
    static let login = text(PackageResources.login_mustache)
    static let consent = text(PackageResources.consent_mustache)
    static let account = text(PackageResources.account_mustache)
    static let logoutConfirmation = text(PackageResources.logout_confirmation_mustache)
    static let device = text(PackageResources.device_mustache)
    static let message = text(PackageResources.message_mustache)
    static let accountForm = text(PackageResources.account_form_mustache)
    static let accountSecurity = text(PackageResources.account_security_mustache)
    /// The passkey buttons' script, served from `/assets/webauthn.js` (pages allow scripts from
    /// their own origin only, and only those with a passkey button).
    static let webAuthnScript = text(PackageResources.webauthn_js)
    /// `response_mode=form_post`'s page, and the script that posts its form, served from
    /// `/assets/form-post.js`.
    static let formPost = text(PackageResources.form_post_mustache)
    static let formPostScript = text(PackageResources.form_post_js)
    /// The pages' style sheet, inlined into ``layout`` as `styles` (the pages' policy allows
    /// inline styles, not style sheets from elsewhere).
    static let styles = text(PackageResources.pages_css)

    /// A template file's text, without the newline that ends the file.
    static func text(_ bytes: [UInt8]) -> String {
        let text = String(decoding: bytes, as: UTF8.self)
        return text.hasSuffix("\n") ? String(text.dropLast()) : text
    }
}
