/// The admin console's templates (mustache, rendered into ``Templates/layout``): the files
/// `Templates/console-*.mustache` and `console.js`, embedded as ``Templates`` are. Form fields
/// carry the admin API's member names (`client_name`, `redirect_uris`, `scope`, …), so tests
/// and scripts drive both the same way.
enum ConsoleTemplates {
    /// Every page's template, by the name ``ConsoleRenderer`` renders it under.
    static let pages: [String: [UInt8]] = [
        "nav": PackageResources.console_nav_mustache,  // above every page: where to go, who is signed in
        "apps": PackageResources.console_apps_mustache,
        "appForm": PackageResources.console_app_form_mustache,
        "secret": PackageResources.console_secret_mustache,  // a new or rotated secret, shown once
        "confirm": PackageResources.console_confirm_mustache,  // "Are you sure?" for deleting, rotating, roles
        "reauthenticate": PackageResources.console_reauthenticate_mustache,
        "users": PackageResources.console_users_mustache,
        "user": PackageResources.console_user_mustache,
        "scopes": PackageResources.console_scopes_mustache,
        "resources": PackageResources.console_resources_mustache,
        "providers": PackageResources.console_providers_mustache,  // upstream identity providers people sign in through
        "activity": PackageResources.console_activity_mustache,
        "mail": PackageResources.console_mail_mustache,
    ]

    /// The copy button of the secret page; served from `/admin/assets/console.js` so the pages'
    /// policy allows no inline script.
    static let script = Templates.text(PackageResources.console_js)
}
