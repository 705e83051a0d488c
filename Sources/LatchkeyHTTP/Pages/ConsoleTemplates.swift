/// The admin console's templates (mustache, rendered into ``Templates/layout``). Form fields
/// carry the admin API's member names (`client_name`, `redirect_uris`, `scope`, …), so tests
/// and scripts drive both the same way.
enum ConsoleTemplates {
    /// Above every console page: where to go, and who is signed in.
    static let nav = """
        <nav class="console" aria-label="Admin console">
        <a href="/admin"{{#onApps}} aria-current="page"{{/onApps}}>Apps</a>
        {{#isAdmin}}<a href="/admin/users"{{#onUsers}} aria-current="page"{{/onUsers}}>Users</a>
        <a href="/admin/scopes"{{#onScopes}} aria-current="page"{{/onScopes}}>Scopes</a>
        <a href="/admin/resources"{{#onResources}} aria-current="page"{{/onResources}}>Resources</a>
        <a href="/admin/activity"{{#onActivity}} aria-current="page"{{/onActivity}}>Activity</a>{{/isAdmin}}
        <a href="/account">My account</a>
        <span class="who">{{username}}</span>
        </nav>
        {{#notice}}<p class="notice" role="status">{{notice}}</p>{{/notice}}
        """

    static let apps = """
        <h1>Apps</h1>
        <p><a class="button primary" href="/admin/apps/new">Register an app</a></p>
        {{^apps}}<p>No app is registered yet.</p>{{/apps}}
        <ul class="rows">
        {{#apps}}
        <li class="row">
        <div class="app">{{#logoURI}}<img src="{{logoURI}}" alt="" width="40" height="40">{{/logoURI}}
        <div><a href="/admin/apps/{{clientID}}"><strong>{{name}}</strong></a>
        <small class="meta">{{typeLabel}} · {{#owner}}owned by {{owner}} · {{/owner}}{{#firstParty}}first-party · {{/firstParty}}created {{created}} · {{grants}} active grant{{grantsPlural}}</small></div></div>
        </li>
        {{/apps}}
        </ul>
        """

    static let appForm = """
        <h1>{{heading}}</h1>
        {{#error}}<p class="error" role="alert">{{error}}</p>{{/error}}
        {{#clientID}}<p class="note">client_id <code>{{clientID}}</code></p>{{/clientID}}
        <form method="post" action="{{action}}" class="console-form">
        <input type="hidden" name="csrf_token" value="{{csrfToken}}">
        {{#isNew}}
        <label class="field" for="application_type">Type</label>
        <select id="application_type" name="application_type">
        {{#types}}<option value="{{value}}"{{#selected}} selected{{/selected}}>{{label}}</option>{{/types}}
        </select>
        {{/isNew}}
        {{^isNew}}<input type="hidden" name="application_type" value="{{type}}"><p><strong>Type:</strong> {{typeLabel}}</p>{{/isNew}}
        <label class="field" for="client_name">Name</label>
        <input type="text" id="client_name" name="client_name" value="{{name}}" required maxlength="100"{{#errorOn_client_name}} aria-invalid="true"{{/errorOn_client_name}}>
        <label class="field" for="redirect_uris">Redirect URIs <small>(one per line; none for a service client or an app that uses device sign-in only)</small></label>
        <textarea id="redirect_uris" name="redirect_uris" rows="3" spellcheck="false"{{#errorOn_redirect_uris}} aria-invalid="true"{{/errorOn_redirect_uris}}>{{redirectURIs}}</textarea>
        <fieldset>
        <legend>Scopes it may ask for</legend>
        {{#scopes}}
        <label class="scope" for="scope-{{name}}"><input type="checkbox" id="scope-{{name}}" name="scope" value="{{name}}"{{#checked}} checked{{/checked}}>
        <span><strong>{{description}}</strong><small>{{name}}</small></span></label>
        {{/scopes}}
        </fieldset>
        <label class="field" for="logo_uri">Logo URL <small>(https)</small></label>
        <input type="text" id="logo_uri" name="logo_uri" value="{{logoURI}}" inputmode="url" spellcheck="false">
        <label class="field" for="policy_uri">Privacy policy URL <small>(https)</small></label>
        <input type="text" id="policy_uri" name="policy_uri" value="{{policyURI}}" inputmode="url" spellcheck="false">
        <label class="field" for="consent_markdown">Consent text <small>(Markdown; HTML in it is shown as text)</small></label>
        <textarea id="consent_markdown" name="consent_markdown" rows="5">{{consentMarkdown}}</textarea>
        {{#isAdmin}}
        <label class="field" for="owner">Owner <small>(a username: only they may authorize it; empty for everyone)</small></label>
        <input type="text" id="owner" name="owner" value="{{owner}}" autocapitalize="none" spellcheck="false">
        <label class="check" for="first_party"><input type="checkbox" id="first_party" name="first_party" value="true"{{#firstParty}} checked{{/firstParty}}>
        <span>First-party: users are not asked for consent (it is still recorded and shown on their account page)</span></label>
        {{/isAdmin}}
        <label class="check" for="require_pushed_authorization_requests"><input type="checkbox" id="require_pushed_authorization_requests" name="require_pushed_authorization_requests" value="true"{{#requirePushed}} checked{{/requirePushed}}>
        <span>Pushed requests only: the app must send its authorization requests to /oauth2/par first, so they never travel in the browser's address bar (RFC 9126)</span></label>
        <label class="check" for="allow_device_code"><input type="checkbox" id="allow_device_code" name="allow_device_code" value="true"{{#allowDeviceCode}} checked{{/allowDeviceCode}}>
        <span>Device sign-in: the app may show a code that the user enters at /device on a phone or computer (RFC 8628; native and web apps, for TVs and command-line tools)</span></label>
        <div class="pair">
        <div><label class="field" for="access_token_lifetime">Access token lifetime <small>(seconds; empty for the default, {{defaultAccess}})</small></label>
        <input type="text" id="access_token_lifetime" name="access_token_lifetime" value="{{accessLifetime}}" inputmode="numeric"{{#errorOn_access_token_lifetime}} aria-invalid="true"{{/errorOn_access_token_lifetime}}></div>
        <div><label class="field" for="refresh_token_lifetime">Refresh token lifetime <small>(seconds; empty for the default, {{defaultRefresh}})</small></label>
        <input type="text" id="refresh_token_lifetime" name="refresh_token_lifetime" value="{{refreshLifetime}}" inputmode="numeric"{{#errorOn_refresh_token_lifetime}} aria-invalid="true"{{/errorOn_refresh_token_lifetime}}></div>
        </div>
        <fieldset>
        <legend>OpenID Connect</legend>
        <label class="field" for="id_token_signed_response_alg">ID token signature</label>
        <select id="id_token_signed_response_alg" name="id_token_signed_response_alg">
        {{#algorithms}}<option value="{{algValue}}"{{#algSelected}} selected{{/algSelected}}>{{algLabel}}</option>{{/algorithms}}
        </select>
        <label class="field" for="post_logout_redirect_uris">After sign-out, back to <small>(post-logout redirect URIs, one per line, compared exactly)</small></label>
        <textarea id="post_logout_redirect_uris" name="post_logout_redirect_uris" rows="2" spellcheck="false"{{#errorOn_post_logout_redirect_uris}} aria-invalid="true"{{/errorOn_post_logout_redirect_uris}}>{{postLogoutRedirectURIs}}</textarea>
        </fieldset>
        <label class="check" for="allow_implicit"><input type="checkbox" id="allow_implicit" name="allow_implicit" value="true"{{#allowImplicit}} checked{{/allowImplicit}}>
        <span>Browser apps only: allow the implicit grant (not recommended)</span></label>
        <div class="buttons">
        <button type="submit" name="action" value="preview">Preview consent page</button>
        <button class="primary" type="submit" name="action" value="save">{{saveLabel}}</button>
        </div>
        </form>
        {{#preview}}
        <section class="preview" aria-labelledby="preview-heading">
        <h2 id="preview-heading">Consent page preview</h2>
        <div class="preview-frame">{{{preview}}}</div>
        </section>
        {{/preview}}
        {{#clientID}}
        <section class="card danger-zone" aria-labelledby="more-heading">
        <h2 id="more-heading">More</h2>
        <p>{{grants}} active grant{{grantsPlural}}.</p>
        <p>{{#confidential}}<a href="/admin/apps/{{clientID}}/rotate-secret">Rotate the secret</a> · {{/confidential}}<a href="/admin/apps/{{clientID}}/delete">Delete this app</a></p>
        </section>
        {{/clientID}}
        """

    /// A new or rotated secret, shown once.
    static let secret = """
        <h1>{{heading}}</h1>
        <p>client_id <code>{{clientID}}</code></p>
        {{#secret}}
        <label class="field" for="client_secret">client_secret</label>
        <div class="copy"><input type="text" id="client_secret" value="{{secret}}" readonly spellcheck="false">
        <button type="button" data-copy="client_secret">Copy</button></div>
        <p class="error" role="alert">This is the only time the secret is shown: Latchkey keeps only its hash. Put it in your server's secret store now.</p>
        {{/secret}}
        <p><a href="/admin/apps/{{clientID}}">Back to {{name}}</a></p>
        <script src="/admin/assets/console.js"></script>
        """

    /// "Are you sure?" for deleting, rotating and changing roles.
    static let confirm = """
        <h1>{{heading}}</h1>
        <p>{{message}}</p>
        {{#hasConsequences}}<ul>{{#consequences}}<li>{{.}}</li>{{/consequences}}</ul>{{/hasConsequences}}
        <form method="post" action="{{action}}">
        <input type="hidden" name="csrf_token" value="{{csrfToken}}">
        {{#fields}}<input type="hidden" name="{{name}}" value="{{value}}">{{/fields}}
        {{#password}}
        <label class="field" for="password">New password <small>(at least 8 characters)</small></label>
        <input type="password" id="password" name="password" autocomplete="new-password" required minlength="8">
        {{/password}}
        <div class="buttons"><a class="button" href="{{back}}">Cancel</a><button class="primary danger" type="submit">{{button}}</button></div>
        </form>
        """

    static let reauthenticate = """
        <h1>Confirm it is you</h1>
        <p>This change needs your password, entered in the last {{minutes}} minutes.</p>
        {{#error}}<p class="error" role="alert">{{error}}</p>{{/error}}
        <form method="post" action="/admin/reauthenticate">
        <input type="hidden" name="csrf_token" value="{{csrfToken}}">
        <input type="hidden" name="next" value="{{next}}">
        <label class="field" for="password">Password for {{username}}</label>
        <input type="password" id="password" name="password" autocomplete="current-password" required autofocus>
        <div class="buttons"><button class="primary" type="submit">Continue</button></div>
        </form>
        """

    static let users = """
        <h1>Users</h1>
        <form method="get" action="/admin/users" class="search" role="search">
        <label class="field" for="q">Search by username or name</label>
        <div class="copy"><input type="text" id="q" name="q" value="{{query}}" autocapitalize="none" spellcheck="false">
        <button type="submit">Search</button></div>
        </form>
        <ul class="rows">
        {{#users}}
        <li class="row"><a href="/admin/users/{{id}}"><strong>{{username}}</strong></a>{{#name}} {{name}}{{/name}}
        <small class="meta">{{#admin}}administrator · {{/admin}}{{#disabled}}disabled · {{/disabled}}created {{created}}</small></li>
        {{/users}}
        </ul>
        {{^users}}<p>No user matches.</p>{{/users}}
        <section class="card" aria-labelledby="create-heading">
        <h2 id="create-heading">Create a user</h2>
        {{#error}}<p class="error" role="alert">{{error}}</p>{{/error}}
        <form method="post" action="/admin/users">
        <input type="hidden" name="csrf_token" value="{{csrfToken}}">
        <label class="field" for="new-username">Username</label>
        <input type="text" id="new-username" name="username" required autocapitalize="none" spellcheck="false" autocomplete="off">
        <label class="field" for="new-name">Display name</label>
        <input type="text" id="new-name" name="name" autocomplete="off">
        <label class="field" for="new-password">Password <small>(at least 8 characters)</small></label>
        <input type="password" id="new-password" name="password" required minlength="8" autocomplete="new-password">
        <label class="check" for="new-admin"><input type="checkbox" id="new-admin" name="role" value="admin"><span>Administrator</span></label>
        <div class="buttons"><button class="primary" type="submit">Create user</button></div>
        </form>
        </section>
        """

    static let user = """
        <h1>{{username}}</h1>
        <p class="note">{{#name}}{{name}} · {{/name}}{{#admin}}administrator · {{/admin}}{{#disabled}}<strong>disabled</strong> · {{/disabled}}created {{created}} · user_id <code>{{id}}</code></p>
        <section class="card" aria-labelledby="apps-heading">
        <h2 id="apps-heading">Connected apps</h2>
        {{^apps}}<p>None.</p>{{/apps}}
        {{#apps}}
        <form method="post" action="/admin/users/{{userID}}/revoke" class="inline-row">
        <input type="hidden" name="csrf_token" value="{{csrfToken}}">
        <input type="hidden" name="client_id" value="{{clientID}}">
        <span><strong>{{name}}</strong> <small>{{scope}} · since {{since}}</small></span>
        <button type="submit">Revoke {{name}}</button>
        </form>
        {{/apps}}
        </section>
        <section class="card" aria-labelledby="sessions-heading">
        <h2 id="sessions-heading">Browser sessions</h2>
        {{^sessions}}<p>None.</p>{{/sessions}}
        {{#sessions}}
        <form method="post" action="/admin/users/{{userID}}/end-session" class="inline-row">
        <input type="hidden" name="csrf_token" value="{{csrfToken}}">
        <input type="hidden" name="session" value="{{handle}}">
        <span>Signed in {{created}}, last used {{lastSeen}}</span>
        <button type="submit" aria-label="Sign out the session from {{created}}">Sign out</button>
        </form>
        {{/sessions}}
        {{#hasSessions}}
        <form method="post" action="/admin/users/{{id}}/end-sessions">
        <input type="hidden" name="csrf_token" value="{{csrfToken}}">
        <button type="submit">Sign out everywhere</button>
        </form>
        {{/hasSessions}}
        </section>
        <section class="card" aria-labelledby="actions-heading">
        <h2 id="actions-heading">Account</h2>
        <form method="post" action="/admin/users/{{id}}/{{#disabled}}enable{{/disabled}}{{^disabled}}disable{{/disabled}}">
        <input type="hidden" name="csrf_token" value="{{csrfToken}}">
        <button type="submit">{{#disabled}}Enable account{{/disabled}}{{^disabled}}Disable account (revokes every app's tokens){{/disabled}}</button>
        </form>
        <p><a href="/admin/users/{{id}}/password">Reset password</a> ·
        <a href="/admin/users/{{id}}/role?role={{otherRole}}">{{#admin}}Remove administrator role{{/admin}}{{^admin}}Make administrator{{/admin}}</a> ·
        <a href="/admin/users/{{id}}/delete">Delete user</a></p>
        </section>
        """

    static let scopes = """
        <h1>Scopes</h1>
        <p class="note">The catalogue the consent page describes scopes from. A scope in use by an app cannot be deleted.</p>
        <ul class="rows">
        {{#scopes}}
        <li class="row"><strong>{{name}}</strong> <span>{{description}}</span>
        <a href="/admin/scopes/delete?name={{encodedName}}" aria-label="Delete {{name}}">Delete</a></li>
        {{/scopes}}
        </ul>
        <section class="card" aria-labelledby="add-heading">
        <h2 id="add-heading">Add or change a scope</h2>
        {{#error}}<p class="error" role="alert">{{error}}</p>{{/error}}
        <form method="post" action="/admin/scopes">
        <input type="hidden" name="csrf_token" value="{{csrfToken}}">
        <label class="field" for="scope-name">Name</label>
        <input type="text" id="scope-name" name="name" required autocapitalize="none" spellcheck="false">
        <label class="field" for="scope-description">What it lets an app do</label>
        <input type="text" id="scope-description" name="description" required>
        <div class="buttons"><button class="primary" type="submit">Save scope</button></div>
        </form>
        </section>
        """

    static let resources = """
        <h1>Resources</h1>
        <p class="note">The APIs and MCP servers that apps may ask tokens for with <code>resource</code> (RFC 8707). Deleting one refuses new requests for it; tokens already issued last until they expire.</p>
        {{^resources}}<p>No resource is registered yet.</p>{{/resources}}
        <ul class="rows">
        {{#resources}}
        <li class="row"><div><strong>{{name}}</strong> <small class="meta">{{uri}} · {{scopes}} · {{format}} tokens{{#lifetime}} · {{lifetime}} s{{/lifetime}}</small></div>
        <a href="/admin/resources/delete?resource={{encodedURI}}" aria-label="Delete {{name}}">Delete</a></li>
        {{/resources}}
        </ul>
        <section class="card" aria-labelledby="add-resource-heading">
        <h2 id="add-resource-heading">Register a resource</h2>
        {{#error}}<p class="error" role="alert">{{error}}</p>{{/error}}
        <form method="post" action="/admin/resources">
        <input type="hidden" name="csrf_token" value="{{csrfToken}}">
        <label class="field" for="resource-uri">URI (what clients send as resource)</label>
        <input type="url" id="resource-uri" name="resource" required autocapitalize="none" spellcheck="false" placeholder="https://mcp.example.com/mcp">
        <label class="field" for="resource-name">Name (shown on the consent page)</label>
        <input type="text" id="resource-name" name="name" required>
        <label class="field" for="resource-scopes">Scopes it accepts, separated by spaces</label>
        <input type="text" id="resource-scopes" name="scopes" required autocapitalize="none" spellcheck="false">
        <label class="field" for="resource-format">Access tokens</label>
        <select id="resource-format" name="token_format">
        <option value="opaque">opaque (checked by introspection, revocable at once)</option>
        <option value="jwt">jwt (RFC 9068, checked by the resource itself; short-lived)</option>
        </select>
        <label class="field" for="resource-lifetime">Access-token lifetime in seconds (optional)</label>
        <input type="number" id="resource-lifetime" name="access_token_lifetime" min="60" inputmode="numeric">
        <div class="buttons"><button class="primary" type="submit">Register resource</button></div>
        </form>
        </section>
        """

    static let activity = """
        <h1>Activity</h1>
        <form method="get" action="/admin/activity" class="filters">
        <div class="pair">
        <div><label class="field" for="days">Last</label>
        <select id="days" name="days">{{#dayChoices}}<option value="{{value}}"{{#selected}} selected{{/selected}}>{{label}}</option>{{/dayChoices}}</select></div>
        <div><label class="field" for="event">Event</label>
        <input type="text" id="event" name="event" value="{{event}}" list="event-names" autocapitalize="none" spellcheck="false">
        <datalist id="event-names">{{#eventNames}}<option value="{{.}}">{{/eventNames}}</datalist></div>
        <div><label class="field" for="user">User (username or user_id)</label>
        <input type="text" id="user" name="user" value="{{user}}" autocapitalize="none" spellcheck="false"></div>
        <div><label class="field" for="client">App (client_id)</label>
        <input type="text" id="client" name="client" value="{{client}}" autocapitalize="none" spellcheck="false"></div>
        </div>
        <div class="buttons"><button class="primary" type="submit">Show</button></div>
        </form>
        <p class="note">{{count}} event{{plural}}, newest first{{#capped}} (only the newest {{count}} are shown: narrow the filters){{/capped}}. Events are kept for {{retention}} days.</p>
        <ul class="rows">
        {{#events}}
        <li class="row"><strong>{{name}}</strong> <small class="meta">{{at}}{{#actor}} · by {{actor}}{{/actor}}{{#aboutUser}} · user {{aboutUser}}{{/aboutUser}}{{#aboutClient}} · app {{aboutClient}}{{/aboutClient}}</small>
        {{#details}}<small class="meta">{{details}}</small>{{/details}}</li>
        {{/events}}
        </ul>
        """

    /// The copy button of the secret page; served from `/admin/assets/console.js` so the pages'
    /// policy allows no inline script.
    static let script = """
        document.querySelectorAll('button[data-copy]').forEach(function (button) {
          button.addEventListener('click', function () {
            var field = document.getElementById(button.getAttribute('data-copy'));
            field.select();
            (navigator.clipboard ? navigator.clipboard.writeText(field.value) : Promise.reject())
              .then(function () { button.textContent = 'Copied'; }, function () { document.execCommand('copy'); button.textContent = 'Copied'; });
          });
        });
        """
}
