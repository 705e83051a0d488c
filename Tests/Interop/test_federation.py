"""Sign-in through upstream identity providers (federation), over real HTTP, with a requests.Session
as the browser, driving the pages as a person would: the app's authorization request, the sign-in
page's "Continue with …" link, the upstream's pages, the callback, the consent page, the tokens.

The upstreams: a second `latchkey serve` (an OpenID provider we wrote, with a sign-in page and a
confidential first-party web client), Tests/Interop/authlib_provider.py (one we did not write,
which signs its one user in without a page), in its good mode and in misbehaving ones, and
Tests/Support/github_like_provider.py (a plain OAuth 2.0 provider with GitHub's shape: no ID token,
who signed in from GET /user, a numeric `id`; a thread of this process). One downstream `latchkey
serve` for the module holds every provider, each with its own name; each Authlib provider is a
process of its own (its user's claims and its mode are per process), started when a test first asks
for it, and so is each GitHub-like one.

What these tests hold the server to where docs/accounts.md ("Upstream identity providers") leaves
a detail open:

- The upstream Latchkey runs with `--host localhost` (issuer http://localhost:PORT), the downstream
  on 127.0.0.1: cookies ignore ports, so two Latchkeys on one host name would share one `lk_session`
  cookie in one browser (each would overwrite the other's). The downstream must therefore accept an
  http issuer on localhost (as it must on 127.0.0.1 for the Authlib provider) and fetch from it.
- Redirects: Latchkey's browser redirects are 303; 302 and 303 are both accepted everywhere. GET /account when not
  signed in is a redirect to /login. POST /account/links/remove, when it works, redirects to
  /account/security.
- Failure statuses: 400 for the protocol's failures (a state of another browser, a state used
  already, a mix-up, a wrong `iss`, an ID token that fails validation); 403 for refusals by policy
  (an e-mail address an account here has when the provider may not link it, --no-create-accounts,
  removing the last way to sign in, linking a (NAME, sub) that another account has). Every failure
  of a sign-in is an HTML page whose text holds "Sign-in with DISPLAY did not complete", DISPLAY
  being the display name of the provider whose callback path was used (for the mix-up, corp's).
  The heading of a refused *link* (from the account page) is not checked, only its 403.
- The ID token of a federated sign-in without a second factor has amr exactly ["fed"], and
  "idp": NAME. An account a provider created has the IdP's preferred_username as its username
  (when free) and the IdP's e-mail, confirmed when the IdP says it verified it and the provider is
  trusted with verified addresses (--link-verified-email), as /userinfo shows.
- GET /federation/NAME/start with no query lands, after the callback, on /account.
- The upstream authorization request: its state and nonce are at least 22 characters (128 bits in
  base64url); code_challenge is 43 (S256); scope holds openid, profile and email by default.
- /account/security: a linked provider has a form action="/account/links/remove" holding
  name="provider" value="NAME"; a provider not linked has a form action="/federation/NAME/link"
  (button "Link DISPLAY"), with a name="password" field only when the account has a password. A
  wrong password on that form answers 400, 401 or 403, and does not go to the upstream.
- `providers` JSON: `scope` may be a space-separated string or a list (both are read); `callback` is
  ISSUER/federation/NAME/callback under the issuer serve (last) runs with; extra members are allowed
  but none named like a secret. `add --json` prints the object; disable, enable and delete are run
  without --json. A name with upper case or `_`, one of 33 characters, a name in use, and an issuer
  whose discovery cannot be fetched are each refused with a non-zero exit.
- `idp_hint=NAME` answers a redirect whose path is /federation/NAME/start and whose query is only
  `request`.
- After a failed callback in a browser that was signed in already (the same callback opened twice),
  only the failure page is checked, not whether that browser's session survives.
- A plain OAuth 2.0 provider (`--kind oauth2`, configured as for GitHub: `--subject-claim id
  --username-claim login --scope read:user --scope user:email`): the upstream authorization request
  asks for the configured scope and nothing more (no openid), with PKCE S256; the token request says
  Accept: application/json (GitHub answers a form otherwise) and takes a token answer with neither
  expires_in nor id_token; the subject is the userinfo member named (GitHub's is a JSON number),
  not the username, so a user renamed there finds the same account. An account made has the
  username member as its username (else NAME-2, NAME-3, … when taken) and the name member as its
  name; a JSON null e-mail is no address. A userinfo answer without the subject member fails the
  sign-in (400).
"""
import html
import json
import re
import secrets
import time
from types import SimpleNamespace
from urllib.parse import parse_qs, quote, urlencode, urljoin, urlsplit

import pyotp
import pytest
import requests

from github_like_provider import OMIT, GitHubLikeProvider
from latchkey_process import free_port, hidden_fields, pkce, run_latchkey, serving
from upstream_provider import AuthlibUpstream

PASSWORD = "correct horse battery staple"
TIMEOUT = 30                  # seconds for any one HTTP request
REDIRECTS = (302, 303)
SCOPE = "openid profile email"
APP_NAME = "Field Notes"
GRACE_EMAIL = "grace@example.com"

# The Authlib upstreams, by provider name at the downstream: (authlib_provider.py options, further
# `latchkey providers add` options). Each user has an e-mail address of its own unless the test needs
# a clash, so that the order the tests run in does not change which rule an account meets.
AUTHLIB_IDPS = {
    "authlib": ([], []),  # Ada (sub user-42, ada@example.com, verified); display name: the default (NAME)
    "nonce": (["--mode", "wrong-nonce", "--sub", "user-n", "--preferred-username", "nina",
               "--email", "nina@example.com"], ["--display-name", "Nonce Test IdP"]),
    "aud": (["--mode", "wrong-audience", "--sub", "user-a", "--preferred-username", "aaron",
             "--email", "aaron@example.com"], ["--display-name", "Audience Test IdP"]),
    "unverified": (["--sub", "user-g1", "--preferred-username", "grace-up", "--email", GRACE_EMAIL,
                    "--email-verified", "false"], ["--link-verified-email", "--display-name", "Unverified IdP"]),
    "verified": (["--sub", "user-g2", "--preferred-username", "grace-up", "--email", GRACE_EMAIL,
                  "--email-verified", "true"], ["--link-verified-email", "--display-name", "Verified IdP"]),
    "closed": (["--sub", "user-c", "--preferred-username", "casey", "--email", "casey@example.net"],
               ["--no-create-accounts", "--display-name", "Closed IdP"]),
    "linker": (["--sub", "user-77", "--preferred-username", "fred", "--email", "fred@example.org"],
               ["--display-name", "Linker"]),
    "staff": (["--sub", "user-s", "--preferred-username", "sam-admin", "--email", "sam@example.org"],
              ["--display-name", "Staff SSO"]),
    "twostep": (["--sub", "user-t", "--preferred-username", "tess", "--email", "tess@example.org"],
                ["--display-name", "Two Step IdP"]),
    "only": (["--sub", "user-o", "--preferred-username", "olga", "--email", "olga@example.org"],
             ["--display-name", "Only Way"]),
    "stale": (["--mode", "stale-sign-in", "--sub", "user-st", "--preferred-username", "stan",
               "--email", "stan@example.org"], ["--display-name", "Stale IdP"]),
}


# ---------------------------------------------------------------------------------------------- servers

@pytest.fixture(scope="module")
def down(tmp_path_factory):
    """The downstream: the Latchkey that signs people in through the upstreams."""
    with serving(tmp_path_factory) as server:
        yield server


class App:
    """A native app at the downstream (not first-party: the consent page shows), and its requests."""

    def __init__(self, server):
        self.server = server
        self.redirect_uri = f"http://127.0.0.1:{free_port()}/callback"
        self.client_id = server.cli("clients", "create", "--type", "native", "--name", APP_NAME, "--redirect-uri",
                                    self.redirect_uri, "--scope", "openid", "--scope", "profile",
                                    "--scope", "email")["client_id"]

    def authorize(self, browser, **extra):
        """GET /oauth2/authorize as the browser; the answer (not followed), with this attempt's values."""
        verifier, challenge = pkce()
        attempt = SimpleNamespace(verifier=verifier, state=secrets.token_urlsafe(16), nonce=secrets.token_urlsafe(16))
        attempt.response = fetch(browser, self.server.url("/oauth2/authorize?" + urlencode({
            "response_type": "code", "client_id": self.client_id, "redirect_uri": self.redirect_uri,
            "scope": SCOPE, "state": attempt.state, "nonce": attempt.nonce, "code_challenge": challenge,
            "code_challenge_method": "S256", **extra})))
        return attempt

    def tokens(self, location, attempt):
        """Exchanges the code in the redirect to the app, with the attempt's PKCE verifier."""
        assert location.startswith(self.redirect_uri + "?"), location
        query = parse_qs(urlsplit(location).query)
        assert query["state"] == [attempt.state] and query["iss"] == [self.server.issuer], location
        response = requests.post(self.server.url("/oauth2/token"), timeout=TIMEOUT, data={
            "grant_type": "authorization_code", "code": query["code"][0], "redirect_uri": self.redirect_uri,
            "client_id": self.client_id, "code_verifier": attempt.verifier})
        assert response.status_code == 200, response.text
        return response.json()

    def refresh(self, refresh_token):
        response = requests.post(self.server.url("/oauth2/token"), timeout=TIMEOUT, data={
            "grant_type": "refresh_token", "refresh_token": refresh_token, "client_id": self.client_id})
        assert response.status_code == 200, response.text
        return response.json()


@pytest.fixture(scope="module")
def app(down):
    return App(down)


@pytest.fixture(scope="module")
def corp(tmp_path_factory, down):
    """A second `latchkey serve` as the upstream, at the downstream as provider `corp` ("Corp SSO"):
    a user with a confirmed e-mail address, and a confidential first-party web client whose
    redirect URI is the downstream's callback."""
    with serving(tmp_path_factory, "--host", "localhost") as upstream:
        assert urlsplit(upstream.issuer).hostname != urlsplit(down.issuer).hostname, \
            "the two Latchkeys need different host names, or one browser would mix their session cookies"
        upstream.cli("users", "create", "carol", "--name", "Carol Kent", "--email", "carol@corp.example",
                     "--email-verified", "--password-stdin", stdin=PASSWORD + "\n")
        callback = down.issuer + "/federation/corp/callback"
        web = upstream.cli("clients", "create", "--type", "web", "--name", "Downstream Latchkey",
                           "--redirect-uri", callback, "--scope", "openid", "--scope", "profile",
                           "--scope", "email", "--first-party")
        assert web["client_secret"], web
        added = down.cli("providers", "add", "corp", "--issuer", upstream.issuer, "--client-id", web["client_id"],
                         "--client-secret-stdin", "--display-name", "Corp SSO", "--link-verified-email",
                         stdin=web["client_secret"] + "\n")
        assert added["name"] == "corp" and added["callback"] == callback, added
        yield SimpleNamespace(server=upstream, client_id=web["client_id"], callback=callback, username="carol",
                              email="carol@corp.example", display="Corp SSO")


class AuthlibIdPs:
    """The Authlib upstreams of AUTHLIB_IDPS, each started and added at the downstream on first use."""

    def __init__(self, down, workdir):
        self.down, self.workdir, self.started = down, workdir, {}

    def get(self, name):
        if name not in self.started:
            options, provider_options = AUTHLIB_IDPS[name]
            client_id, secret = f"downstream-{name}", secrets.token_urlsafe(24)
            callback = self.down.issuer + f"/federation/{name}/callback"
            process = AuthlibUpstream(self.workdir, "--client-id", client_id, f"--client-secret={secret}",
                                      "--redirect-uri", callback, *options)
            try:
                self.down.cli("providers", "add", name, "--issuer", process.issuer, "--client-id", client_id,
                              "--client-secret-stdin", *provider_options, stdin=secret + "\n")
            except BaseException:
                process.stop()
                raise
            display = provider_options[provider_options.index("--display-name") + 1] \
                if "--display-name" in provider_options else name
            self.started[name] = SimpleNamespace(name=name, process=process, issuer=process.issuer,
                                                 client_id=client_id, callback=callback, display=display)
        return self.started[name]

    def stop(self):
        for idp in self.started.values():
            idp.process.stop()


@pytest.fixture(scope="module")
def idps(tmp_path_factory, down):
    pool = AuthlibIdPs(down, tmp_path_factory.mktemp("authlib-idps"))
    yield pool
    pool.stop()


class GitHubLikeIdPs:
    """Tests/Support/github_like_provider.py upstreams (plain OAuth 2.0, GitHub's shape), each a thread
    of this process with its own client and user, added at the downstream as `--kind oauth2` providers
    configured as for GitHub, on first use."""

    def __init__(self, down):
        self.down, self.started = down, {}

    def get(self, name, display, user=None, provider_options=(), flags=()):
        if name not in self.started:
            client_id, secret = "Ov23li" + secrets.token_hex(7), secrets.token_hex(20)  # GitHub's shapes
            callback = self.down.issuer + f"/federation/{name}/callback"
            hub = GitHubLikeProvider(client_id, secret, callback, user=user)
            try:
                options = {"--subject-claim": "id", "--username-claim": "login", **dict(provider_options)}
                added = self.down.cli(
                    "providers", "add", name, "--kind", "oauth2", "--client-id", client_id, "--client-secret-stdin",
                    "--authorization-endpoint", hub.authorization_endpoint, "--token-endpoint", hub.token_endpoint,
                    "--userinfo-endpoint", hub.userinfo_endpoint, "--scope", "read:user", "--scope", "user:email",
                    "--display-name", display, *[item for pair in options.items() for item in pair], *flags,
                    stdin=secret + "\n")
                assert added["kind"] == "oauth2" and added["callback"] == callback, added
            except BaseException:
                hub.stop()
                raise
            self.started[name] = SimpleNamespace(name=name, display=display, hub=hub, client_id=client_id,
                                                 callback=callback)
        return self.started[name]

    def stop(self):
        for idp in self.started.values():
            idp.hub.stop()


@pytest.fixture(scope="module")
def hubs(down):
    pool = GitHubLikeIdPs(down)
    yield pool
    pool.stop()


# ---------------------------------------------------------------------------------------------- the browser's way

def fetch(browser, url):
    return browser.get(url, allow_redirects=False, timeout=TIMEOUT)


def describe(response):
    return f"{response.request.method} {response.url} answered {response.status_code}: {response.text[:600]}"


def redirect_target(response):
    """The absolute URL a redirect sends the browser to."""
    assert response.status_code in REDIRECTS and "Location" in response.headers, describe(response)
    return urljoin(response.url, response.headers["Location"])


def start_link(page, name):
    """The href of the sign-in page's link to /federation/NAME/start, unescaped; None when there is none."""
    found = re.search(r'<a\b[^>]*\bhref="(/federation/' + re.escape(name) + r'/start(?:\?[^"]*)?)"', page)
    return html.unescape(found.group(1)) if found else None


def through_upstream(browser, url, down, credentials=None):
    """Follows the browser from the upstream's authorization URL through the upstream, signing in on
    its sign-in page with `credentials` (username, password) when it shows one, until the upstream
    sends it back under the downstream's issuer. Returns that URL (the callback), not yet opened."""
    for _ in range(12):
        if url.startswith(down.issuer + "/"):
            return url
        response = fetch(browser, url)
        if response.is_redirect:
            url = urljoin(url, response.headers["Location"])
            continue
        if response.status_code == 200 and 'action="/login"' in response.text and credentials:
            username, password = credentials
            posted = browser.post(urljoin(url, "/login"), allow_redirects=False, timeout=TIMEOUT, data={
                **hidden_fields(response.text), "username": username, "password": password})
            assert posted.status_code == 303, describe(posted)
            url = urljoin(url, posted.headers["Location"])
            continue
        raise AssertionError("the upstream did not send the browser back: " + describe(response))
    raise AssertionError(f"more than 12 hops at the upstream, the last to {url}")


def round_trip(browser, down, name, credentials=None):
    """A sign-in through provider NAME begun without an app (GET /federation/NAME/start): through the
    upstream and back. Returns the callback URL the upstream sent the browser to, not yet opened."""
    started = fetch(browser, down.url(f"/federation/{name}/start"))
    return through_upstream(browser, redirect_target(started), down, credentials)


def allow_consent(browser, down, response):
    """From the callback's redirect to /consent?request=…: the consent page, every scope allowed, or
    straight to the app when consent is remembered. Returns (the redirect to the app, the consent page or None)."""
    location = redirect_target(response)
    assert urlsplit(location).path == "/consent", location
    consent = fetch(browser, location)
    if consent.status_code == 303:
        return redirect_target(consent), None
    assert consent.status_code == 200, describe(consent)
    scopes = re.findall(r'name="scope" value="([^"]*)"', consent.text)
    decision = browser.post(down.url("/oauth2/authorize"), allow_redirects=False, timeout=TIMEOUT,
                            data=[*hidden_fields(consent.text).items(), ("decision", "allow"),
                                  *[("scope", scope) for scope in scopes]])
    assert decision.status_code == 303, describe(decision)
    return decision.headers["Location"], consent


def federated_app_sign_in(browser, down, app, idp, credentials=None, check_upstream_request=None):
    """The app's authorization request at the downstream, its sign-in page, the page's "Continue with"
    link, the upstream, the callback, the consent page, the code exchange. Returns (tokens, consent
    page or None when consent was remembered)."""
    attempt = app.authorize(browser)
    login_url = redirect_target(attempt.response)
    assert urlsplit(login_url).path == "/login", login_url
    request_id = parse_qs(urlsplit(login_url).query)["request"][0]
    login = fetch(browser, login_url)
    assert login.status_code == 200, describe(login)
    assert f"Continue with {idp.display}" in html.unescape(login.text), login.text
    start = start_link(login.text, idp.name)
    assert start is not None, login.text
    assert urlsplit(start).path == f"/federation/{idp.name}/start", start
    assert parse_qs(urlsplit(start).query) == {"request": [request_id]}, start
    started = fetch(browser, down.url(start))
    upstream_url = redirect_target(started)
    if check_upstream_request:
        check_upstream_request(upstream_url)
    back = through_upstream(browser, upstream_url, down, credentials)
    assert back.startswith(idp.callback + "?"), back
    arrived = fetch(browser, back)
    location, consent = allow_consent(browser, down, arrived)
    return app.tokens(location, attempt), consent


def check_upstream_authorization_request(url, endpoint, client_id, redirect_uri):
    """The downstream's authorization request at the upstream (RFC 6749, RFC 7636, OpenID Connect)."""
    parts = urlsplit(url)
    assert f"{parts.scheme}://{parts.netloc}{parts.path}" == endpoint, url
    query = parse_qs(parts.query)
    assert all(len(values) == 1 for values in query.values()), query
    one = {key: values[0] for key, values in query.items()}
    assert one["response_type"] == "code" and one["client_id"] == client_id, one
    assert one["redirect_uri"] == redirect_uri, one
    assert {"openid", "profile", "email"} <= set(one["scope"].split()), one
    assert one["code_challenge_method"] == "S256" and len(one["code_challenge"]) == 43, one
    assert len(one["state"]) >= 22 and len(one.get("nonce", "")) >= 22, one
    return one


def assert_failed(response, display, status=400):
    """The failure page of a sign-in through a provider."""
    assert response.status_code == status, describe(response)
    assert response.headers.get("Content-Type", "").startswith("text/html"), response.headers
    assert f"Sign-in with {display} did not complete" in html.unescape(response.text), response.text[:1500]
    assert "Location" not in response.headers


def assert_signed_out(browser, down):
    account = fetch(browser, down.url("/account"))
    assert account.status_code in REDIRECTS and urlsplit(account.headers["Location"]).path == "/login", \
        "the browser is signed in: " + describe(account)


def signed_in_as(browser, down):
    """The username /account names, or None when the browser is not signed in."""
    account = fetch(browser, down.url("/account"))
    if account.status_code in REDIRECTS:
        return None
    assert account.status_code == 200, describe(account)
    return html.unescape(re.search(r"Signed in as <strong>([^<]+)</strong>", account.text).group(1))


def password_sign_in(browser, down, username, password=PASSWORD):
    page = fetch(browser, down.url("/login"))
    signed_in = browser.post(down.url("/login"), allow_redirects=False, timeout=TIMEOUT,
                             data={**hidden_fields(page.text), "username": username, "password": password})
    assert signed_in.status_code == 303 and signed_in.headers["Location"] == "/account", describe(signed_in)


def sign_out(browser, down):
    account = fetch(browser, down.url("/account"))
    out = browser.post(down.url("/logout"), data={"csrf_token": csrf_token(account.text)}, allow_redirects=False,
                       timeout=TIMEOUT)
    assert out.status_code == 303, describe(out)
    assert_signed_out(browser, down)


def csrf_token(page):
    return re.search(r'name="csrf_token" value="([^"]*)"', page).group(1)


def security_page(browser, down):
    page = fetch(browser, down.url("/account/security"))
    assert page.status_code == 200, describe(page)
    assert "Other ways to sign in" in page.text, page.text
    return page.text


def forms(page, action):
    """The inner HTML of each form of the page that posts to `action` (a regular expression)."""
    return re.findall(r'<form\b[^>]*\baction="' + action + r'"[^>]*>(.*?)</form>', page, re.DOTALL)


def linked(page):
    """The providers /account/security lists as linked: those with a Remove form."""
    return {html.unescape(name) for form in forms(page, "/account/links/remove")
            for name in re.findall(r'name="provider" value="([^"]*)"', form)}


def link_forms(page):
    """The "Link DISPLAY" forms of /account/security, by provider name."""
    return {name: form for name, form in re.findall(
        r'<form\b[^>]*\baction="/federation/([a-z0-9-]+)/link"[^>]*>(.*?)</form>', page, re.DOTALL)}


def users(down):
    return {user["username"] for user in down.cli("users", "list")["users"]}


def claims_of(server, id_token):
    """The ID token's claims, its signature verified with the downstream's published keys."""
    from joserfc import jwt
    from joserfc.jwk import KeySet
    metadata = requests.get(server.url("/.well-known/openid-configuration"), timeout=TIMEOUT).json()
    keys = requests.get(metadata["jwks_uri"], timeout=TIMEOUT).json()
    return jwt.decode(id_token, KeySet.import_key_set(keys), algorithms=["RS256", "ES256"]).claims


def userinfo(server, access_token):
    response = requests.get(server.url("/userinfo"), headers={"Authorization": f"Bearer {access_token}"},
                            timeout=TIMEOUT)
    assert response.status_code == 200, response.text
    return response.json()


# ---------------------------------------------------------------------------------------------- a, b: sign-in

def test_an_app_signs_in_through_another_latchkey(down, app, corp):
    browser = requests.Session()
    tokens, consent = federated_app_sign_in(
        browser, down, app, SimpleNamespace(name="corp", display=corp.display, callback=corp.callback),
        credentials=(corp.username, PASSWORD),
        check_upstream_request=lambda url: check_upstream_authorization_request(
            url, corp.server.issuer + "/oauth2/authorize", corp.client_id, corp.callback))
    assert consent is not None and APP_NAME in consent.text, "the downstream's own consent page for its app"
    claims = claims_of(down, tokens["id_token"])
    assert claims["iss"] == down.issuer and claims["aud"] in (app.client_id, [app.client_id]), claims
    assert claims["amr"] == ["fed"] and claims["idp"] == "corp", claims
    identity = userinfo(down, tokens["access_token"])
    assert identity["sub"] == claims["sub"]
    assert identity["email"] == corp.email and identity["email_verified"] is True, identity
    assert identity["preferred_username"] == corp.username, identity

    refreshed = app.refresh(tokens["refresh_token"])
    assert refreshed["access_token"] != tokens["access_token"]
    assert userinfo(down, refreshed["access_token"])["sub"] == claims["sub"]

    # Another browser, another sign-in at the upstream: the same account here.
    again, _ = federated_app_sign_in(
        requests.Session(), down, app, SimpleNamespace(name="corp", display=corp.display, callback=corp.callback),
        credentials=(corp.username, PASSWORD))
    assert claims_of(down, again["id_token"])["sub"] == claims["sub"]
    assert [name for name in users(down) if name.startswith(corp.username)] == [corp.username]


def test_an_app_signs_in_through_the_authlib_provider(down, app, idps):
    idp = idps.get("authlib")
    tokens, _ = federated_app_sign_in(
        requests.Session(), down, app, idp,
        check_upstream_request=lambda url: check_upstream_authorization_request(
            url, idp.issuer + "/authorize", idp.client_id, idp.callback))
    claims = claims_of(down, tokens["id_token"])
    assert claims["amr"] == ["fed"] and claims["idp"] == "authlib", claims
    identity = userinfo(down, tokens["access_token"])
    # The provider says it verified the address, but it is not trusted with verified addresses
    # (--link-verified-email), so the address is not confirmed here.
    assert identity["email"] == "ada@example.com" and identity["email_verified"] is False, identity
    assert identity["preferred_username"] == "ada", identity
    stats = idp.process.stats()
    assert stats["token_requests"] >= 1 and stats["jwks_requests"] >= 1, stats
    assert app.refresh(tokens["refresh_token"])["access_token"]


# ---------------------------------------------------------------------------------------------- c: attacks

def test_a_callback_with_another_browsers_state_is_refused(down, idps):
    idp = idps.get("authlib")
    starter = requests.Session()  # browser A, which began the sign-in
    back = round_trip(starter, down, "authlib")
    assert "lk_session" in starter.cookies, "start sets the session cookie the state is bound to"
    other = requests.Session()  # browser B, with a session of its own, brings A's state and code
    assert fetch(other, down.url("/login")).status_code == 200
    assert_failed(fetch(other, back), idp.display)
    assert_signed_out(other, down)


def test_a_code_from_one_provider_delivered_to_another_is_refused(down, idps, corp):
    idps.get("authlib")
    browser = requests.Session()
    back = urlsplit(round_trip(browser, down, "authlib"))
    assert back.path == "/federation/authlib/callback"
    mixed = down.url("/federation/corp/callback?" + back.query)
    assert_failed(fetch(browser, mixed), corp.display)
    assert_signed_out(browser, down)


def test_an_iss_that_is_not_the_providers_is_refused(down, idps):
    idp = idps.get("authlib")
    browser = requests.Session()
    back = round_trip(browser, down, "authlib")
    assert_failed(fetch(browser, back + "&iss=" + quote("https://attacker.example", safe="")), idp.display)
    assert_signed_out(browser, down)
    # The provider's own issuer in `iss` is fine (RFC 9207), though this provider never sends one.
    browser = requests.Session()
    back = round_trip(browser, down, "authlib")
    arrived = fetch(browser, back + "&iss=" + quote(idp.issuer, safe=""))
    assert urlsplit(redirect_target(arrived)).path == "/account"
    assert signed_in_as(browser, down) == "ada"


@pytest.mark.parametrize("name", ["nonce", "aud"])
def test_an_id_token_that_fails_validation_is_refused(down, idps, name):
    idp = idps.get(name)
    browser = requests.Session()
    back = round_trip(browser, down, name)
    assert_failed(fetch(browser, back), idp.display)
    assert_signed_out(browser, down)
    assert idp.process.stats()["token_requests"] == 1, "the code was exchanged, then the ID token refused"
    assert not {"nina", "aaron"} & users(down)


def test_an_unverified_email_does_not_link_an_existing_account(down, idps):
    down.cli("users", "create", "grace", "--email", GRACE_EMAIL, "--email-verified", "--password-stdin",
             stdin=PASSWORD + "\n")
    unverified = idps.get("unverified")
    before = users(down)
    browser = requests.Session()
    back = round_trip(browser, down, "unverified")
    assert_failed(fetch(browser, back), unverified.display, status=403)
    assert_signed_out(browser, down)
    assert users(down) == before
    # Grace's account has no link to it.
    grace = requests.Session()
    password_sign_in(grace, down, "grace")
    assert "unverified" not in linked(security_page(grace, down))

    # The same address, which the IdP says it verified: linked, and signed in as grace.
    verified = idps.get("verified")
    browser = requests.Session()
    arrived = fetch(browser, round_trip(browser, down, "verified"))
    assert urlsplit(redirect_target(arrived)).path == "/account", describe(arrived)
    assert signed_in_as(browser, down) == "grace"
    assert users(down) == before
    assert linked(security_page(browser, down)) == {"verified"}
    assert verified.process.stats()["token_requests"] == 1


def test_a_used_state_is_refused(down, idps):
    idp = idps.get("authlib")
    browser = requests.Session()
    back = round_trip(browser, down, "authlib")
    first = fetch(browser, back)
    assert urlsplit(redirect_target(first)).path == "/account"
    assert signed_in_as(browser, down) == "ada"
    assert_failed(fetch(browser, back), idp.display)  # the same callback again: reload, back button
    replayer = requests.Session()  # and from another browser, having seen the URL
    assert_failed(fetch(replayer, back), idp.display)
    assert_signed_out(replayer, down)


# ---------------------------------------------------------------------------------------------- d: policy and hints

def test_no_create_accounts_refuses_a_first_sign_in_and_idp_hint_skips_the_sign_in_page(down, app, idps):
    closed = idps.get("closed")
    browser = requests.Session()
    attempt = app.authorize(browser, idp_hint="closed")
    start = urlsplit(redirect_target(attempt.response))
    assert start.path == "/federation/closed/start" and list(parse_qs(start.query)) == ["request"], start
    back = through_upstream(browser, redirect_target(fetch(browser, start.geturl())), down)
    assert_failed(fetch(browser, back), closed.display, status=403)
    assert_signed_out(browser, down)
    assert "casey" not in users(down)

    idps.get("authlib")
    attempt = app.authorize(requests.Session(), kc_idp_hint="authlib")
    start = urlsplit(redirect_target(attempt.response))
    assert start.path == "/federation/authlib/start" and list(parse_qs(start.query)) == ["request"], start


# ---------------------------------------------------------------------------------------------- e: the CLI

PROVIDER_FIELDS = {"name", "display_name", "kind", "issuer", "client_id", "scopes", "enabled", "creates_accounts",
                   "allowed_email_domains", "links_verified_email", "updates_profile", "callback"}


def providers(down, *args, stdin=None):
    return run_latchkey(["providers", *args, *down.store_args], stdin=stdin)


def test_the_providers_commands(down, idps):
    base = idps.get("authlib")  # an issuer whose discovery document is there to fetch
    secret = "spare-secret-" + secrets.token_urlsafe(16)
    added = providers(down, "add", "spare", "--issuer", base.issuer, "--client-id", "spare-client",
                      "--client-secret-stdin", "--display-name", "Spare IdP", "--scope", "openid", "--scope", "email",
                      "--json", stdin=secret + "\n")
    assert added.returncode == 0, added.stderr
    assert secret not in added.stdout and secret not in added.stderr
    expected = {"name": "spare", "display_name": "Spare IdP", "kind": "oidc", "issuer": base.issuer,
                "client_id": "spare-client", "enabled": True, "creates_accounts": True, "allowed_email_domains": [],
                "links_verified_email": False, "updates_profile": False,
                "callback": down.issuer + "/federation/spare/callback"}

    def check(provider, **changes):
        assert PROVIDER_FIELDS <= set(provider), provider
        assert not [key for key in provider if "secret" in key], provider
        assert {key: provider[key] for key in expected} == {**expected, **changes}, provider
        assert provider["scopes"] == ["openid", "email"], provider

    check(json.loads(added.stdout))
    listed = providers(down, "list", "--json")
    assert listed.returncode == 0 and secret not in listed.stdout, listed.stderr
    by_name = {provider["name"]: provider for provider in json.loads(listed.stdout)["providers"]}
    check(by_name["spare"])
    assert by_name["authlib"]["display_name"] == "authlib" and by_name["authlib"]["issuer"] == base.issuer
    plain = providers(down, "list")
    assert plain.returncode == 0 and "spare" in plain.stdout and secret not in plain.stdout, plain.stderr
    shown = providers(down, "show", "spare", "--json")
    assert shown.returncode == 0 and secret not in shown.stdout, shown.stderr
    check(json.loads(shown.stdout))

    # Refused: bad names, a name in use, an issuer whose discovery cannot be fetched.
    for name in ("Spare_2", "x" * 33):
        bad = providers(down, "add", name, "--issuer", base.issuer, "--client-id", "c")
        assert bad.returncode != 0 and bad.stderr.strip(), (name, bad.stdout)
    again = providers(down, "add", "spare", "--issuer", base.issuer, "--client-id", "other")
    assert again.returncode != 0 and again.stderr.strip()
    nowhere = providers(down, "add", "nowhere", "--issuer", f"http://127.0.0.1:{free_port()}", "--client-id", "c")
    assert nowhere.returncode != 0 and nowhere.stderr.strip()
    names = {provider["name"] for provider in json.loads(providers(down, "list", "--json").stdout)["providers"]}
    assert "nowhere" not in names and not {"Spare_2", "x" * 33} & names

    # Enabled: on the sign-in page, and start goes to the upstream.
    page = fetch(requests.Session(), down.url("/login"))
    assert start_link(page.text, "spare") == "/federation/spare/start" and "Continue with Spare IdP" in page.text
    started = fetch(requests.Session(), down.url("/federation/spare/start"))
    assert redirect_target(started).startswith(base.issuer + "/authorize?")
    assert parse_qs(urlsplit(redirect_target(started)).query)["client_id"] == ["spare-client"]

    assert providers(down, "disable", "spare").returncode == 0
    check(json.loads(providers(down, "show", "spare", "--json").stdout), enabled=False)
    page = fetch(requests.Session(), down.url("/login"))
    assert "/federation/spare/" not in page.text and "Spare IdP" not in page.text
    assert fetch(requests.Session(), down.url("/federation/spare/start")).status_code == 404

    assert providers(down, "enable", "spare").returncode == 0
    assert start_link(fetch(requests.Session(), down.url("/login")).text, "spare") == "/federation/spare/start"

    assert providers(down, "delete", "spare").returncode == 0
    assert "spare" not in {provider["name"] for provider in json.loads(providers(down, "list", "--json").stdout)["providers"]}
    assert providers(down, "show", "spare").returncode != 0
    assert fetch(requests.Session(), down.url("/federation/spare/start")).status_code == 404
    assert "/federation/spare/" not in fetch(requests.Session(), down.url("/login")).text


# ---------------------------------------------------------------------------------------------- f: linking

def test_linking_from_the_account_page(down, idps):
    idps.get("authlib")  # another provider, whose Link form the account made by `linker` shows without a password
    linker = idps.get("linker")
    down.cli("users", "create", "frank", "--password-stdin", stdin=PASSWORD + "\n")
    frank = requests.Session()
    password_sign_in(frank, down, "frank")
    page = security_page(frank, down)
    assert "linker" not in linked(page)
    form = link_forms(page)["linker"]
    assert "Link Linker" in form and 'name="password"' in form and 'name="csrf_token"' in form, form

    # A wrong password does not go to the upstream.
    wrong = frank.post(down.url("/federation/linker/link"), allow_redirects=False, timeout=TIMEOUT,
                       data={"csrf_token": csrf_token(page), "password": "not the password"})
    assert wrong.status_code in (400, 401, 403), describe(wrong)
    going = frank.post(down.url("/federation/linker/link"), allow_redirects=False, timeout=TIMEOUT,
                       data={"csrf_token": csrf_token(page), "password": PASSWORD})
    back = through_upstream(frank, redirect_target(going), down)
    assert back.startswith(linker.callback + "?"), back
    arrived = fetch(frank, back)
    assert urlsplit(redirect_target(arrived)).path == "/account/security", describe(arrived)
    page = security_page(frank, down)
    assert "linker" in linked(page) and "linker" not in link_forms(page)

    # Without the form's CSRF token (missing, or another session's), nothing goes anywhere.
    for token in (None, "forged-" + csrf_token(page)):
        data = {"password": PASSWORD, **({"csrf_token": token} if token else {})}
        forged = frank.post(down.url("/federation/authlib/link"), data=data, allow_redirects=False, timeout=TIMEOUT)
        assert forged.status_code == 403 and "Location" not in forged.headers, describe(forged)
        kept = frank.post(down.url("/account/links/remove"), data={**({"csrf_token": token} if token else {}),
                                                                    "provider": "linker"},
                          allow_redirects=False, timeout=TIMEOUT)
        assert kept.status_code == 403, describe(kept)
    assert "linker" in linked(security_page(frank, down))

    # Signed out, then in through the provider: the same account.
    sign_out(frank, down)
    arrived = fetch(frank, round_trip(frank, down, "linker"))
    assert urlsplit(redirect_target(arrived)).path == "/account"
    assert signed_in_as(frank, down) == "frank"

    # Removed (frank has a password): the link is gone...
    page = security_page(frank, down)
    removed = frank.post(down.url("/account/links/remove"), allow_redirects=False, timeout=TIMEOUT,
                         data={"csrf_token": csrf_token(page), "provider": "linker"})
    assert urlsplit(redirect_target(removed)).path == "/account/security"
    page = security_page(frank, down)
    assert "linker" not in linked(page) and "linker" in link_forms(page)

    # ...so the provider's user is someone new here: an account of its own, with no password.
    fred = requests.Session()
    arrived = fetch(fred, round_trip(fred, down, "linker"))
    assert urlsplit(redirect_target(arrived)).path == "/account"
    assert signed_in_as(fred, down) == "fred"
    page = security_page(fred, down)
    assert linked(page) == {"linker"}
    assert link_forms(page) and not [f for f in link_forms(page).values() if 'name="password"' in f], page
    # Its only way to sign in cannot be removed.
    refused = fred.post(down.url("/account/links/remove"), allow_redirects=False, timeout=TIMEOUT,
                        data={"csrf_token": csrf_token(page), "provider": "linker"})
    assert refused.status_code == 403, describe(refused)
    assert linked(security_page(fred, down)) == {"linker"}

    # And frank cannot take the link that is fred's.
    page = security_page(frank, down)
    going = frank.post(down.url("/federation/linker/link"), allow_redirects=False, timeout=TIMEOUT,
                       data={"csrf_token": csrf_token(page), "password": PASSWORD})
    taken = fetch(frank, through_upstream(frank, redirect_target(going), down))
    assert taken.status_code == 403, describe(taken)
    assert "linker" not in linked(security_page(frank, down))
    assert linked(security_page(fred, down)) == {"linker"}

    # fred sets a first password, with his fresh sign-in instead of a current one...
    form = fetch(fred, down.url("/account/password"))
    assert "Set a password" in form.text and 'name="current_password"' not in form.text, form.text
    set_password = fred.post(down.url("/account/password"), allow_redirects=False, timeout=TIMEOUT,
                             data={"csrf_token": csrf_token(form.text), "password": PASSWORD + " too"})
    assert set_password.status_code in (200, 303), describe(set_password)
    password_sign_in(requests.Session(), down, "fred", PASSWORD + " too")
    # ...so the link is no longer his only way in, and goes.
    page = security_page(fred, down)
    removed = fred.post(down.url("/account/links/remove"), allow_redirects=False, timeout=TIMEOUT,
                        data={"csrf_token": csrf_token(page), "provider": "linker"})
    assert urlsplit(redirect_target(removed)).path == "/account/security", describe(removed)


def test_an_administrator_without_a_password_confirms_by_signing_in_again_through_the_provider(down, idps):
    staff = idps.get("staff")
    sam = requests.Session()
    assert urlsplit(redirect_target(fetch(sam, round_trip(sam, down, "staff")))).path == "/account"
    down.cli("users", "set-role", "sam-admin", "admin")
    page = fetch(sam, down.url("/admin/reauthenticate?next=" + quote("/admin/providers", safe="")))
    assert page.status_code == 200, describe(page)
    # No password to type: the page offers a fresh sign-in through the provider instead.
    assert 'name="password"' not in page.text, page.text
    link = re.search(r'href="(/federation/staff/start\?next=[^"]+)"[^>]*>Sign in again with Staff SSO<', page.text)
    assert link, page.text
    back = through_upstream(sam, redirect_target(fetch(sam, down.url(html.unescape(link.group(1))))), down)
    assert back.startswith(staff.callback + "?"), back
    # The provider was asked to sign sam in again, and its auth_time shows it did.
    upstream_request = parse_qs(urlsplit(redirect_target(fetch(sam, down.url(html.unescape(link.group(1)))))).query)
    assert upstream_request["prompt"] == ["login"] and upstream_request["max_age"] == ["0"], upstream_request
    arrived = fetch(sam, back)
    assert urlsplit(redirect_target(arrived)).path == "/admin/providers", describe(arrived)
    assert fetch(sam, down.url("/admin/providers")).status_code == 200
    # Signed in, a start with nothing to sign in for does not swap the session.
    assert urlsplit(redirect_target(fetch(sam, down.url("/federation/staff/start")))).path == "/account"


def test_a_fresh_sign_in_needs_a_provider_that_shows_it_asked_again(down, app, idps, hubs):
    stale = idps.get("stale")
    # The provider signed its user in an hour ago: so says the session here, and the app's ID token.
    tokens, _ = federated_app_sign_in(requests.Session(), down, app, stale)
    auth_time = claims_of(down, tokens["id_token"])["auth_time"]
    assert time.time() - 3700 < auth_time < time.time() - 3500, auth_time
    stan = requests.Session()
    assert urlsplit(redirect_target(fetch(stan, round_trip(stan, down, "stale")))).path == "/account"
    # The app asks for prompt=login: the sign-in page's links ask the providers for it too...
    attempt = app.authorize(stan, prompt="login")
    login = fetch(stan, redirect_target(attempt.response))
    start = start_link(login.text, "stale")
    assert parse_qs(urlsplit(start).query).get("fresh") == ["1"], start
    # ...and one whose auth_time is an hour old is refused: it did not ask again.
    back = through_upstream(stan, redirect_target(fetch(stan, down.url(html.unescape(start)))), down)
    assert_failed(fetch(stan, back), "Stale IdP")
    # A plain OAuth 2.0 provider cannot show it asked again at all.
    github = hubs.get("gh-fresh", "Fresh Hub", user={"id": 4001, "login": "fresh", "name": "Fresh"})
    refused = fetch(requests.Session(), down.url(f"/federation/{github.name}/start?fresh=1"))
    assert refused.status_code == 403 and "did not complete" in refused.text, describe(refused)


def test_an_account_made_by_a_provider_sets_up_a_second_factor_and_then_owes_it_after_the_provider(down, app, idps):
    idp = idps.get("twostep")
    tess = requests.Session()
    assert urlsplit(redirect_target(fetch(tess, round_trip(tess, down, "twostep")))).path == "/account"
    # No password to type: a fresh sign-in through the provider confirms the set-up.
    page = fetch(tess, down.url("/account/security/totp"))
    assert page.status_code == 200 and 'name="current_password"' not in page.text, describe(page)
    totp = pyotp.TOTP(re.search(r'id="totp-secret"[^>]*>([^<]+)<', page.text).group(1).replace(" ", ""))
    hidden = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', page.text))  # with `factor`
    done = tess.post(down.url("/account/security/totp"), allow_redirects=False, timeout=TIMEOUT,
                     data={**hidden, "code": totp.now()})
    assert done.status_code == 200 and "recovery" in done.text.lower(), describe(done)
    # New recovery codes need no password either, from this fresh session.
    renew = fetch(tess, down.url("/account/security/recovery-codes"))
    assert 'name="current_password"' not in renew.text, renew.text
    sign_out(tess, down)

    # Now the provider alone is not enough: the second step follows, and the app sees both.
    browser = requests.Session()
    attempt = app.authorize(browser)
    started = fetch(browser, down.url(start_link(fetch(browser, redirect_target(attempt.response)).text, "twostep")))
    arrived = fetch(browser, through_upstream(browser, redirect_target(started), down))
    step = redirect_target(arrived)
    assert urlsplit(step).path == "/login/second-factor", describe(arrived)
    assert fetch(browser, down.url("/account")).status_code in (302, 303), "not signed in before the second step"
    form = fetch(browser, step)
    code = totp.at(int(time.time()) + 30)  # the next step's code: the set-up used this one
    stepped = browser.post(down.url("/login/second-factor"), allow_redirects=False, timeout=TIMEOUT,
                           data={**hidden_fields(form.text), "code": code})
    location, _ = allow_consent(browser, down, stepped)
    tokens = app.tokens(location, attempt)
    claims = claims_of(down, tokens["id_token"])
    assert claims["amr"] == ["fed", "otp", "mfa"] and claims["idp"] == "twostep", claims
    assert claims["acr"] == "urn:latchkey:acr:2", claims


def test_a_provider_trusted_with_the_profile_keeps_name_and_address_up_to_date(down, app, hubs):
    idp = hubs.get("gh-profile", "Profile Hub",
                   user={"id": 3001, "login": "ren", "name": "Ren Old", "email": "ren@old.example",
                         "email_verified": True},
                   flags=("--update-profile",))
    first, _ = federated_app_sign_in(requests.Session(), down, app, idp)
    before = userinfo(down, first["access_token"])
    assert before["name"] == "Ren Old" and before["email"] == "ren@old.example", before
    assert before["email_verified"] is False, "a provider without email_verified vouches for no address"
    idp.hub.set_user(name="Ren New", email="ren@new.example", email_verified=True)
    second, _ = federated_app_sign_in(requests.Session(), down, app, idp)
    after = userinfo(down, second["access_token"])
    assert after["sub"] == before["sub"], (before, after)
    assert after["name"] == "Ren New" and after["email"] == "ren@new.example", after


def test_with_passwords_turned_off_people_sign_in_only_through_providers(tmp_path_factory):
    refused = run_latchkey(["serve", "--data-dir", str(tmp_path_factory.mktemp("refused")), "--port", "0",
                            "--password-sign-in", "off", "--sign-up", "open"])
    assert refused.returncode != 0 and "password-sign-in" in refused.stderr, refused.stderr
    with serving(tmp_path_factory, "--password-sign-in", "off") as closed:
        pool = AuthlibIdPs(closed, tmp_path_factory.mktemp("only-idp"))
        try:
            pool.get("only")
            closed.cli("users", "create", "pat", "--password-stdin", stdin=PASSWORD + "\n")
            browser = requests.Session()
            login = fetch(browser, closed.url("/login"))
            assert 'name="password"' not in login.text and "Continue with Only Way" in login.text, login.text
            assert "/password/forgot" not in login.text and "/signup" not in login.text
            # A password, even the right one, signs no one in.
            posted = browser.post(closed.url("/login"), allow_redirects=False, timeout=TIMEOUT,
                                  data={**hidden_fields(login.text), "username": "pat", "password": PASSWORD})
            assert posted.status_code == 403, describe(posted)
            assert fetch(browser, closed.url("/account")).status_code in (302, 303)
            for path in ("/password/forgot", "/account/password", "/password/reset?token=x"):
                assert fetch(browser, closed.url(path)).status_code == 404, path
            # The provider signs in; the account's changes ask for no password.
            arrived = fetch(browser, round_trip(browser, closed, "only"))
            assert urlsplit(redirect_target(arrived)).path == "/account", describe(arrived)
            assert signed_in_as(browser, closed) == "olga"
            delete = fetch(browser, closed.url("/account/delete"))
            assert delete.status_code == 200 and 'name="current_password"' not in delete.text, delete.text
        finally:
            pool.stop()


def test_the_console_page_to_return_to_never_leaves_the_console(down, idps):
    idps.get("authlib")
    for elsewhere in ("https://evil.example/", "//evil.example/admin", "/admin/../account", "/\\evil.example"):
        browser = requests.Session()
        started = fetch(browser, down.url("/federation/authlib/start?next=" + quote(elsewhere, safe="")))
        back = through_upstream(browser, redirect_target(started), down)
        arrived = fetch(browser, back)
        target = urlsplit(urljoin(down.issuer + "/", redirect_target(arrived)))
        assert target.netloc == urlsplit(down.issuer).netloc and target.path == "/admin", (elsewhere, target)


# ---------------------------------------------------------------------------------------------- g: plain OAuth 2.0

def check_github_like_authorization_request(url, idp):
    """The downstream's authorization request at a plain OAuth 2.0 provider: the scope configured
    (no openid added), PKCE S256, its callback, a state of 128 bits or more."""
    parts = urlsplit(url)
    assert f"{parts.scheme}://{parts.netloc}{parts.path}" == idp.hub.authorization_endpoint, url
    query = parse_qs(parts.query)
    assert all(len(values) == 1 for values in query.values()), query
    one = {key: values[0] for key, values in query.items()}
    assert one["response_type"] == "code" and one["client_id"] == idp.client_id, one
    assert one["redirect_uri"] == idp.callback, one
    assert one["scope"].split() == ["read:user", "user:email"], one
    assert one["code_challenge_method"] == "S256" and len(one["code_challenge"]) == 43, one
    assert len(one["state"]) >= 22, one


def first_free(base, taken):
    """The username an account made for `base` gets: base, else base-2, base-3, …"""
    return next(name for name in [base] + [f"{base}-{n}" for n in range(2, 10)] if name not in taken)


def test_an_app_signs_in_through_a_github_like_oauth2_provider(down, app, hubs):
    idp = hubs.get("github", "GitHub")  # id 1234567 (a JSON number), login octocat, name The Octocat, email null
    before = users(down)
    tokens, _ = federated_app_sign_in(
        requests.Session(), down, app, idp,
        check_upstream_request=lambda url: check_github_like_authorization_request(url, idp))
    claims = claims_of(down, tokens["id_token"])
    assert claims["amr"] == ["fed"] and claims["idp"] == "github", claims
    identity = userinfo(down, tokens["access_token"])
    assert identity["sub"] == claims["sub"]
    assert identity["name"] == "The Octocat", identity
    assert identity.get("email") is None, identity  # GitHub's null (a private address) is no address
    username = first_free("octocat", before)
    assert identity["preferred_username"] == username, identity
    assert users(down) - before == {username}
    stats = idp.hub.stats()
    assert stats["token_requests"] == 1 and stats["userinfo_requests"] == 1, (stats, idp.hub.log())
    assert "application/json" in stats["token_accept"], "GitHub answers JSON only when asked for it"
    assert stats["userinfo_authorization"] in ("Bearer", "token"), stats

    # The user renames themselves at GitHub: the numeric id, not the login, finds the same account.
    idp.hub.set_user(login="octocat-renamed")
    again, _ = federated_app_sign_in(requests.Session(), down, app, idp)
    assert claims_of(down, again["id_token"])["sub"] == claims["sub"]
    assert userinfo(down, again["access_token"])["preferred_username"] == username
    assert users(down) - before == {username}

    # Someone else (another id) takes the login octocat there: an account of their own here, under
    # the next free name.
    idp.hub.set_user(id=7654321, login="octocat", name="Another Octocat")
    other, _ = federated_app_sign_in(requests.Session(), down, app, idp)
    other_claims = claims_of(down, other["id_token"])
    assert other_claims["sub"] != claims["sub"] and other_claims["idp"] == "github", other_claims
    other_identity = userinfo(down, other["access_token"])
    second = first_free("octocat", before | {username})
    assert other_identity["preferred_username"] == second and other_identity["name"] == "Another Octocat"
    assert users(down) - before == {username, second}
    assert idp.hub.stats()["token_requests"] == 3


@pytest.mark.parametrize("name, display, user, options", [
    # The provider is told the id is in `uid`, which GitHub's answer does not have.
    ("gh-uid", "Hub By Uid", {"id": 2001, "login": "monalisa", "name": "Mona Lisa"}, {"--subject-claim": "uid"}),
    # The provider's answer leaves out `id`.
    ("gh-noid", "Hub Without Id", {"id": OMIT, "login": "hubot", "name": "Hubot"}, {}),
], ids=["subject-claim-uid", "no-id"])
def test_a_userinfo_answer_without_the_subject_claim_fails(down, hubs, name, display, user, options):
    idp = hubs.get(name, display, user=user, provider_options=options)
    before = users(down)
    browser = requests.Session()
    back = round_trip(browser, down, name)
    assert back.startswith(idp.callback + "?"), back
    assert_failed(fetch(browser, back), display)
    assert_signed_out(browser, down)
    assert users(down) == before
    stats = idp.hub.stats()
    assert stats["token_requests"] == 1 and stats["userinfo_requests"] == 1, (stats, idp.hub.log())
