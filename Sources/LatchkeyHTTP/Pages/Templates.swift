/// The page templates (mustache; `{{x}}` is HTML-escaped, `{{{x}}}` only for our own rendered HTML).
/// Kept in Swift so the binary needs no resource bundle next to it.
enum Templates {
    static let layout = """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <meta name="referrer" content="no-referrer">
        <title>{{title}}</title>
        <style>
        :root { color-scheme: light dark; --accent: #2457c5; --focus: #2457c5; }
        @media (prefers-color-scheme: dark) { :root { --focus: #8ab4f8; } }
        * { box-sizing: border-box; }
        body { margin: 0; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; background: Canvas; color: CanvasText; }
        main { max-width: 28rem; margin: 0 auto; padding: 1.5rem 1rem 3rem; }
        h1 { font-size: 1.35rem; line-height: 1.3; margin: 0.5rem 0 1rem; }
        .app { display: flex; align-items: center; gap: 0.75rem; }
        .app img { width: 56px; height: 56px; border-radius: 12px; object-fit: cover; }
        label.field { display: block; margin: 0.75rem 0 0.25rem; font-weight: 600; }
        select { width: 100%; padding: 0.6rem; font-size: 1rem; border-radius: 8px; }
        h2 { font-size: 1.1rem; margin: 0; }
        input[type=text], input[type=password], input[type=url], input[type=number], input[type=email] { width: 100%; padding: 0.7rem; font-size: 1rem; border: 1px solid #8888; border-radius: 8px; background: Field; color: FieldText; }
        fieldset { border: 1px solid #8884; border-radius: 10px; padding: 0.5rem 0.75rem; margin: 1rem 0; }
        legend { font-weight: 600; padding: 0 0.25rem; }
        .scope { display: flex; gap: 0.6rem; align-items: flex-start; padding: 0.6rem 0; border-top: 1px solid #8882; }
        .scope:first-of-type { border-top: 0; }
        .scope input { width: 1.3rem; height: 1.3rem; margin-top: 0.15rem; flex: none; }
        .scope small { display: block; opacity: 0.75; }
        .buttons { display: flex; gap: 0.75rem; margin-top: 1.25rem; }
        button { flex: 1; padding: 0.8rem; font: inherit; font-size: 1rem; border-radius: 8px; border: 1px solid var(--accent); background: transparent; color: inherit; cursor: pointer; }
        button.primary { background: var(--accent); color: #fff; }
        button:focus-visible, input:focus-visible, select:focus-visible, a:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; }
        .note { font-size: 0.9rem; opacity: 0.8; }
        .error { border-left: 4px solid #c53030; padding: 0.5rem 0.75rem; background: #c5303014; }
        .consent-text { border-left: 3px solid #8886; padding-left: 0.75rem; }
        .unverified { border-left: 4px solid #b7791f; padding: 0.5rem 0.75rem; background: #b7791f1a; }
        .returns-to strong { font-size: 1.05rem; overflow-wrap: anywhere; }
        .resources ul { margin: 0.25rem 0 0.75rem; padding-left: 1.2rem; }
        .resources small { display: block; opacity: 0.75; overflow-wrap: anywhere; }
        form.signout { margin-top: 1.5rem; text-align: center; }
        form.signout button { flex: none; min-height: 44px; padding: 0.4rem 1rem; font-size: 0.95rem; border-color: #8888; }
        .card { border: 1px solid #8884; border-radius: 10px; padding: 0.75rem; margin: 1rem 0; }
        .card ul { margin: 0.5rem 0; padding-left: 1.2rem; }
        details { margin-top: 1rem; }
        main.wide { max-width: 52rem; }
        nav.console { display: flex; flex-wrap: wrap; gap: 0.25rem 1rem; align-items: center; padding-bottom: 0.75rem; border-bottom: 1px solid #8884; }
        nav.console a { padding: 0.5rem 0; }
        nav.console a[aria-current=page] { font-weight: 700; }
        nav.console .who { margin-left: auto; opacity: 0.8; }
        .notice { border-left: 4px solid #2f855a; padding: 0.5rem 0.75rem; background: #2f855a14; }
        ul.rows { list-style: none; padding: 0; margin: 1rem 0; }
        li.row { padding: 0.75rem 0; border-top: 1px solid #8883; overflow-wrap: anywhere; }
        li.row a { padding: 0.25rem 0; }
        small.meta { display: block; opacity: 0.8; }
        textarea { width: 100%; padding: 0.7rem; font: inherit; border: 1px solid #8888; border-radius: 8px; background: Field; color: FieldText; }
        label.check { display: flex; gap: 0.6rem; align-items: flex-start; margin: 0.9rem 0; }
        label.check input { width: 1.3rem; height: 1.3rem; margin-top: 0.15rem; flex: none; }
        .button { display: inline-block; flex: 1; text-align: center; padding: 0.8rem 1rem; border-radius: 8px; border: 1px solid var(--accent); color: inherit; text-decoration: none; }
        .button.primary { background: var(--accent); color: #fff; }
        button.danger { background: #b42318; border-color: #b42318; }
        .copy { display: flex; gap: 0.5rem; }
        .copy button { flex: none; }
        .inline-row { display: flex; flex-wrap: wrap; gap: 0.5rem; align-items: center; justify-content: space-between; padding: 0.5rem 0; border-top: 1px solid #8883; }
        .inline-row button { flex: none; }
        .preview-frame { border: 2px dashed #8888; border-radius: 10px; padding: 0.75rem 1rem; max-width: 28rem; }
        code { overflow-wrap: anywhere; }
        .pair { display: grid; grid-template-columns: repeat(auto-fit, minmax(14rem, 1fr)); gap: 0 1rem; }
        </style>
        </head>
        <body><main{{#wide}} class="wide"{{/wide}}>
        {{{content}}}
        </main></body>
        </html>
        """

    static let login = """
        <h1>Sign in</h1>
        {{#clientName}}<p>to continue to <strong>{{clientName}}</strong></p>{{/clientName}}
        {{#unverified}}<p class="unverified"><strong>Not verified by this server.</strong> {{origin}}{{#host}} <strong>{{host}}</strong>{{/host}}: its name is its own claim. Sign in only if you started this yourself.</p>{{/unverified}}
        {{#error}}<p class="error" role="alert">{{error}}</p>{{/error}}
        <form method="post" action="/login">
        <input type="hidden" name="csrf_token" value="{{csrfToken}}">
        {{#requestID}}<input type="hidden" name="request" value="{{requestID}}">{{/requestID}}
        {{#next}}<input type="hidden" name="next" value="{{next}}">{{/next}}
        <label class="field" for="username">Username</label>
        <input type="text" id="username" name="username" value="{{username}}" autocomplete="username" autocapitalize="none" spellcheck="false" required{{^username}} autofocus{{/username}}>
        <label class="field" for="password">Password</label>
        <input type="password" id="password" name="password" autocomplete="current-password" required{{#username}} autofocus{{/username}}>
        <div class="buttons"><button class="primary" type="submit">Sign in</button></div>
        </form>
        """

    static let consent = """
        <div class="app">
        {{#logoURI}}<img src="{{logoURI}}" alt="{{clientName}} logo">{{/logoURI}}
        <{{headingTag}}><strong>{{clientName}}</strong> wants to access your account</{{headingTag}}>
        </div>
        <p class="note">Signed in as <strong>{{username}}</strong>.</p>
        {{#fromAnotherDevice}}<p class="unverified" role="alert"><strong>This request comes from another device</strong>, such as a TV or a terminal, through the code you entered. Allow it only if you started it yourself on a device in front of you: if someone sent you the code, deny.</p>{{/fromAnotherDevice}}
        {{#unverified}}<p class="unverified"><strong>Not verified by this server.</strong> {{origin}}{{#host}} <strong>{{host}}</strong>{{/host}}: its name and logo are its own claims. Allow it only if you started this sign-in yourself.</p>{{/unverified}}
        {{#returnsTo}}<p class="returns-to">Your answer goes to <strong>{{place}}</strong>{{#kind}} ({{kind}}){{/kind}}.</p>{{/returnsTo}}
        {{#hasResources}}<div class="resources"><p>It will use this access at:</p>
        <ul>{{#resources}}<li><strong>{{name}}</strong> <small>{{uri}}</small></li>{{/resources}}</ul></div>{{/hasResources}}
        {{#consentHTML}}<div class="consent-text">{{{consentHTML}}}</div>{{/consentHTML}}
        {{^preview}}<form method="post" action="/oauth2/authorize">
        <input type="hidden" name="csrf_token" value="{{csrfToken}}">
        <input type="hidden" name="request" value="{{requestID}}">{{/preview}}
        <fieldset>
        <legend>Allow {{clientName}} to:</legend>
        {{#scopes}}
        <label class="scope" for="{{idPrefix}}scope-{{name}}"><input type="checkbox" id="{{idPrefix}}scope-{{name}}" name="scope" value="{{name}}" checked{{#preview}} disabled{{/preview}}>
        <span><strong>{{description}}</strong>{{#shares}}<small class="shares">Shares: {{shares}}</small>{{/shares}}<small>{{name}}</small></span></label>
        {{/scopes}}
        </fieldset>
        <p class="note">You can untick anything you do not want to share; {{clientName}} gets only what stays ticked.</p>
        {{#hasLifetimes}}
        <label class="field" for="lifetime">Keep this access for</label>
        <select id="lifetime" name="lifetime">
        {{#lifetimes}}<option value="{{seconds}}">{{label}}</option>{{/lifetimes}}
        </select>
        <p class="note">The app gets no way to renew it: after this it must ask you again.</p>
        {{/hasLifetimes}}
        {{#privacyPolicyURI}}<p><a href="{{privacyPolicyURI}}" rel="noopener noreferrer" target="_blank">{{clientName}} privacy policy</a></p>{{/privacyPolicyURI}}
        {{^preview}}
        <div class="buttons">
        <button type="submit" name="decision" value="deny">Deny</button>
        <button class="primary" type="submit" name="decision" value="allow">Allow</button>
        </div>
        </form>
        <form class="signout" method="post" action="/logout">
        <input type="hidden" name="csrf_token" value="{{csrfToken}}">
        <button type="submit">Not {{username}}? Sign out</button>
        </form>
        {{/preview}}
        {{#preview}}<div class="buttons" aria-hidden="true"><span class="button">Deny</span><span class="button primary">Allow</span></div>{{/preview}}
        """

    static let account = """
        <h1>Connected apps</h1>
        <p class="note">Signed in as <strong>{{username}}</strong>.</p>
        {{^apps}}<p>No app is connected to your account.</p>{{/apps}}
        {{#hasApps}}<p class="note">These apps can use your account. Disconnecting one ends its access at once; it will have to ask you again.</p>{{/hasApps}}
        {{#apps}}
        <section class="card" aria-labelledby="app-{{clientID}}">
        <div class="app">{{#logoURI}}<img src="{{logoURI}}" alt="{{name}} logo">{{/logoURI}}<h2 id="app-{{clientID}}">{{name}}</h2></div>
        <p>It can:</p>
        <ul>{{#scopes}}<li>{{description}} <small>({{name}})</small></li>{{/scopes}}</ul>
        <p><small>Since {{since}}</small></p>
        <form method="post" action="/account/revoke">
        <input type="hidden" name="csrf_token" value="{{csrfToken}}">
        <input type="hidden" name="client_id" value="{{clientID}}">
        <div class="buttons"><button type="submit">Disconnect {{name}}</button></div>
        </form>
        </section>
        {{/apps}}
        <form class="signout" method="post" action="/logout">
        <input type="hidden" name="csrf_token" value="{{csrfToken}}">
        <button type="submit">Sign out</button>
        </form>
        """

    static let logoutConfirmation = """
        <h1>Sign out of Latchkey?</h1>
        {{#clientName}}<p><strong>{{clientName}}</strong> asks to sign you out.</p>{{/clientName}}
        <p class="note">Signing out here ends your Latchkey session in this browser; apps keep what you allowed them.</p>
        <form method="post" action="/oauth2/logout">
        <input type="hidden" name="csrf_token" value="{{csrfToken}}">
        {{#carried}}<input type="hidden" name="{{fieldName}}" value="{{fieldValue}}">{{/carried}}
        <div class="buttons">
        <button type="submit" name="decision" value="stay">Stay signed in</button>
        <button class="primary" type="submit" name="decision" value="logout">Sign out</button>
        </div>
        </form>
        """

    static let device = """
        <h1>Connect a device</h1>
        <p>Enter the code your TV, console or terminal shows.</p>
        {{#error}}<p class="error" role="alert">{{error}}</p>{{/error}}
        <form method="post" action="/device">
        <input type="hidden" name="csrf_token" value="{{csrfToken}}">
        <label class="field" for="user_code">Code</label>
        <input type="text" id="user_code" name="user_code" value="{{userCode}}" autocomplete="off" autocapitalize="characters" spellcheck="false" maxlength="16" placeholder="XXXX-XXXX" aria-describedby="user_code_help" required autofocus>
        <p class="note" id="user_code_help">Eight letters; capitals and the dash are optional.{{#userCode}} Check that it matches the code on your device before you continue.{{/userCode}}</p>
        <div class="buttons"><button class="primary" type="submit">Continue</button></div>
        </form>
        """

    static let message = """
        <h1>{{heading}}</h1>
        {{#advice}}<p class="error" role="alert">{{advice}}</p>
        <details><summary>Details for the app's developer</summary>
        <p>{{message}}</p>
        {{#code}}<p class="note">Error code: <code>{{code}}</code></p>{{/code}}
        </details>{{/advice}}
        {{^advice}}<p class="{{kind}}" role="alert">{{message}}</p>
        {{#code}}<p class="note">Error code: <code>{{code}}</code></p>{{/code}}{{/advice}}
        """
}
