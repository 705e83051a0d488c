/// The admin console's templates (mustache, rendered into ``Templates/layout``): the files
/// `Templates/console-*.mustache` and `console.js`, embedded as ``Templates`` are. Form fields
/// carry the admin API's member names (`client_name`, `redirect_uris`, `scope`, …), so tests
/// and scripts drive both the same way.
enum ConsoleTemplates {
    /// Above every console page: where to go, and who is signed in.
    static let nav = Templates.text(PackageResources.console_nav_mustache)
    static let apps = Templates.text(PackageResources.console_apps_mustache)
    static let appForm = Templates.text(PackageResources.console_app_form_mustache)
    /// A new or rotated secret, shown once.
    static let secret = Templates.text(PackageResources.console_secret_mustache)
    /// "Are you sure?" for deleting, rotating and changing roles.
    static let confirm = Templates.text(PackageResources.console_confirm_mustache)
    static let reauthenticate = Templates.text(PackageResources.console_reauthenticate_mustache)
    static let users = Templates.text(PackageResources.console_users_mustache)
    static let user = Templates.text(PackageResources.console_user_mustache)
    static let scopes = Templates.text(PackageResources.console_scopes_mustache)
    static let resources = Templates.text(PackageResources.console_resources_mustache)
    static let activity = Templates.text(PackageResources.console_activity_mustache)
    /// The copy button of the secret page; served from `/admin/assets/console.js` so the pages'
    /// policy allows no inline script.
    static let script = Templates.text(PackageResources.console_js)
}
