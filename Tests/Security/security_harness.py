"""Black-box harness for the docs/threat-model.md catalogue: real `latchkey serve` processes, fixtures built
through the real CLI, a cookie-keeping browser that drives the login and consent forms, and the
catalogue's assertion shorthands (REDIRECT-ERR, NO-REDIRECT, TOKEN-ERR, DEAD) as functions.

Only pytest and requests are used. Nothing here knows the server's internals: every check goes over HTTP
(or, for fixtures, through the `latchkey` admin commands on the server's data directory).
"""
import base64
import glob
import math
import os
import re
import secrets
import subprocess
import threading
from urllib.parse import parse_qs, quote

import requests

from latchkey_process import LatchkeyServer, pkce, run_latchkey, s256  # noqa: F401  (pkce, s256: re-exported)

TIMEOUT = 20
# The sign-in window of the `throttle` server (seconds): long enough for a loaded 2-core machine to make
# a dozen bcrypt-checked attempts inside one window, short enough to wait out twice.
THROTTLE_WINDOW = 8


# --------------------------------------------------------------------------------------------- processes

_help_cache = {}


def serve_supports(option):
    """Whether `latchkey serve --help` lists an option (used only to pick non-essential tuning)."""
    if "serve" not in _help_cache:
        _help_cache["serve"] = run_latchkey(["serve", "--help"]).stdout
    return option in _help_cache["serve"]


CATALOGUE_DATABASE_URL = os.environ.get("LATCHKEY_CATALOGUE_DATABASE_URL")


def store_for(data_dir):
    """A server's store: SQLite in `data_dir`, or, when LATCHKEY_CATALOGUE_DATABASE_URL names a
    PostgreSQL cluster (scripts/test runs the grant, revocation and throttle cases that way too), a
    fresh database of its own there, with its key-encryption key in `data_dir`."""
    if not CATALOGUE_DATABASE_URL:
        return ["--data-dir", data_dir]
    name = "catalogue_" + secrets.token_hex(8)
    psql = sorted(glob.glob("/usr/lib/postgresql/*/bin/psql"))[-1:] or ["psql"]
    subprocess.run([psql[0], "-q", CATALOGUE_DATABASE_URL, "-c", f"CREATE DATABASE {name}"], check=True)
    os.makedirs(data_dir, exist_ok=True)
    key_file = os.path.join(data_dir, "key-encryption.key")
    with open(key_file, "w") as key:
        key.write(base64.b64encode(secrets.token_bytes(32)).decode() + "\n")
    return ["--database-url", CATALOGUE_DATABASE_URL.rsplit("/", 1)[0] + "/" + name, "--key-encryption-key-file", key_file]


class Server(LatchkeyServer):
    """One `latchkey serve` with its own SQLite data directory (started by Tests/Support/latchkey_process.py;
    its ready file and logs are in DATA_DIR-serve), and the users and clients made for the catalogue."""

    def __init__(self, data_dir, extra_args=(), issuer=None):
        self.data = str(data_dir)
        self.extra_args = list(extra_args)
        self.clients = {}
        self.users = {}
        super().__init__([*store_for(self.data), *self.extra_args, *(["--issuer", issuer] if issuer else [])],
                         workdir=self.data + "-serve")

    # ---- admin commands on this server's data

    def add_user(self, name, password):
        self.users[name] = self.cli("users", "create", name, "--password-stdin", stdin=password + "\n")
        self.users[name]["password"] = password
        return self.users[name]

    def add_client(self, key, type_, redirects=(), scopes=(), implicit=False, owner=None, name=None):
        args = ["clients", "create", "--type", type_, "--name", name or key]
        for uri in redirects:
            args += ["--redirect-uri", uri]
        for scope in scopes:
            args += ["--scope", scope]
        if implicit:
            args.append("--allow-implicit")
        if owner:
            args += ["--owner", owner]
        info = self.cli(*args)
        client = {"id": info["client_id"], "secret": info.get("client_secret"), "type": type_,
                  "redirects": list(redirects), "scopes": list(scopes), "key": key}
        if key:
            self.clients[key] = client
        return client

    # ---- plain HTTP

    def get(self, path, **kw):
        kw.setdefault("allow_redirects", False)
        kw.setdefault("timeout", TIMEOUT)
        return requests.get(self.url(path), **kw)

    def post(self, path, **kw):
        kw.setdefault("allow_redirects", False)
        kw.setdefault("timeout", TIMEOUT)
        return requests.post(self.url(path), **kw)

    def raw_request(self, method, path_and_query, headers=None, body=None):
        """Sends the URL exactly as given (requests would re-quote `%2E` or `%ZZ`)."""
        session = requests.Session()
        prepared = session.prepare_request(requests.Request(method, self.base + "/", headers=headers or {}, data=body))
        prepared.url = self.base + path_and_query
        return session.send(prepared, allow_redirects=False, timeout=TIMEOUT)


CATALOGUE_SCOPES = {
    "read": "Read your data", "write": "Change your data", "admin": "Administer the server",
    "svc.read": "Read service data",
}


def provision(server, spa=True):
    """The catalogue's fixture (docs/threat-model.md §0) built through the real CLI."""
    for name, description in CATALOGUE_SCOPES.items():
        server.cli("scopes", "add", name, "--description", description)
    server.add_user("alice", "correct-horse")
    server.add_user("bob", "battery-staple")
    server.add_client("native", "native", ["com.example.app:/oauth2redirect", "http://127.0.0.1/callback",
                                           "http://[::1]/callback"], ["read", "write", "profile"])
    server.add_client("native2", "native", ["com.example.other:/cb"], ["read", "profile"])
    server.add_client("multi", "browser", ["https://a.example/cb", "https://a.example/cb2"], ["read", "profile"])
    server.add_client("web", "web", ["https://client.example.com/cb", "https://client.example.com/cb?tenant=1"],
                      ["read", "write", "profile"])
    server.add_client("web2", "web", ["https://client2.example.com/cb"], ["read", "profile"])
    server.add_client("legacy", "web", ["https://legacy.example.com/cb"], ["read", "profile"])
    server.add_client("svc", "service", [], ["svc.read"])
    server.add_client("svc2", "service", [], ["svc.read"])
    if spa:
        server.add_client("spa", "browser", ["https://spa.example/cb"], ["read", "profile"], implicit=True)
    server.add_client("rs", "service", [], ["profile"])
    return server


# --------------------------------------------------------------------------------------------- URLs

def split_location(location):
    """(base, query dict, fragment dict) of a redirect, for any scheme."""
    rest, _, fragment = location.partition("#")
    base, _, query = rest.partition("?")
    return base, parse_qs(query, keep_blank_values=True), parse_qs(fragment, keep_blank_values=True)


def form_fields(html):
    """The hidden fields of a page's forms (first value of each)."""
    fields = {}
    for name, value in re.findall(r'name="([^"]+)" value="([^"]*)"', html):
        fields.setdefault(name, value)
    return fields


# --------------------------------------------------------------------------------------------- browser

class Browser:
    """A user's browser: keeps cookies, never follows redirects on its own."""

    def __init__(self, server, user=None):
        self.server = server
        self.session = requests.Session()
        self.user = user

    def get(self, path, **kw):
        kw.setdefault("allow_redirects", False)
        kw.setdefault("timeout", TIMEOUT)
        return self.session.get(self.server.url(path), **kw)

    def post(self, path, **kw):
        kw.setdefault("allow_redirects", False)
        kw.setdefault("timeout", TIMEOUT)
        return self.session.post(self.server.url(path), **kw)

    def raw_get(self, path_and_query):
        prepared = self.session.prepare_request(requests.Request("GET", self.server.base + "/"))
        prepared.url = self.server.base + path_and_query
        return self.session.send(prepared, allow_redirects=False, timeout=TIMEOUT)

    def authorize(self, params):
        """GET /oauth2/authorize; `params` is a dict or a list of pairs (repeats allowed)."""
        return self.get("/oauth2/authorize", params=params)

    def login_page(self, path="/login"):
        page = self.get(path)
        assert page.status_code == 200, page.text
        return page

    def sign_in(self, username=None, password=None, request_id=None, extra_headers=None):
        page = self.login_page("/login" + (f"?request={quote(request_id)}" if request_id else ""))
        fields = form_fields(page.text)
        user = username or self.user
        password = password if password is not None else self.server.users[user]["password"]
        data = {"csrf_token": fields["csrf_token"], "username": user, "password": password}
        if request_id:
            data["request"] = request_id
        return self.post("/login", data=data, headers=extra_headers or {})

    def follow(self, response, grant=None, decision="allow", user=None, consent_hook=None):
        """Continues from an /authorize answer through login and consent as the user would, and returns
        the first response that is neither a login nor a consent step (normally the 303 to the app)."""
        user = user or self.user
        for _ in range(8):
            if response.status_code == 200 and 'action="/oauth2/authorize"' in response.text:
                if consent_hook:
                    consent_hook(response)
                response = self.submit_consent(response, grant=grant, decision=decision)
                continue
            if response.status_code != 303:
                return response
            location = response.headers["Location"]
            if location.startswith("/login"):
                page = self.get(location)
                if page.status_code == 303:
                    response = page
                    continue
                fields = form_fields(page.text)
                response = self.post("/login", data={**{k: v for k, v in fields.items() if k in ("csrf_token", "request")},
                                                     "username": user,
                                                     "password": self.server.users[user]["password"]})
                assert response.status_code == 303, f"sign-in failed: {response.status_code} {response.text[:300]}"
                continue
            if location.startswith("/consent"):
                page = self.get(location)
                if page.status_code != 200:
                    response = page
                    continue
                if consent_hook:
                    consent_hook(page)
                response = self.submit_consent(page, grant=grant, decision=decision)
                continue
            return response
        raise AssertionError("too many redirects")

    def submit_consent(self, page, grant=None, decision="allow"):
        fields = form_fields(page.text)
        offered = re.findall(r'name="scope" value="([^"]*)"', page.text)
        scopes = offered if grant is None else grant
        data = [("csrf_token", fields["csrf_token"]), ("request", fields["request"]), ("decision", decision)]
        data += [("scope", s) for s in scopes]
        return self.post("/oauth2/authorize", data=data)

    def consent_page_for(self, params):
        """Drives /authorize and sign-in up to the consent page and returns it (it must be shown)."""
        response = self.authorize(params)
        for _ in range(6):
            assert response.status_code in (200, 303), response.text[:500]
            if response.status_code == 200:
                return response
            location = response.headers["Location"]
            if location.startswith("/login"):
                page = self.get(location)
                if page.status_code == 303:
                    response = page
                    continue
                fields = form_fields(page.text)
                response = self.post("/login", data={"csrf_token": fields["csrf_token"], "request": fields["request"],
                                                     "username": self.user,
                                                     "password": self.server.users[self.user]["password"]})
            elif location.startswith("/consent"):
                response = self.get(location)
            else:
                raise AssertionError(f"expected a consent page, got a redirect to {location}")
        raise AssertionError("no consent page")


def auth_params(client, redirect_uri=None, scope="read", state=None, challenge=None, method="S256",
                response_type="code", omit_redirect=False, extra=()):
    params = [("response_type", response_type), ("client_id", client["id"])]
    if not omit_redirect:
        params.append(("redirect_uri", redirect_uri or client["redirects"][0]))
    if scope is not None:
        params.append(("scope", scope))
    if state is not None:
        params.append(("state", state))
    if challenge is not None:
        params.append(("code_challenge", challenge))
        if method is not None:
            params.append(("code_challenge_method", method))
    params += list(extra)
    return params


class Grant:
    """What one sign-in produced: the code (and its redirect), the verifier, and tokens once exchanged."""

    def __init__(self, client, code, verifier, redirect_uri, state, location):
        self.client, self.code, self.verifier, self.redirect_uri = client, code, verifier, redirect_uri
        self.state, self.location = state, location
        self.tokens = None

    @property
    def at(self):
        return self.tokens["access_token"]

    @property
    def rt(self):
        return self.tokens["refresh_token"]


def get_code(browser, client, scope="read write profile", redirect_uri=None, pkce_on=True, state=None,
             grant=None, omit_redirect=False, extra=()):
    """getCode(client, params): drives /authorize, login and consent; returns a Grant with the code."""
    verifier, challenge = pkce() if pkce_on else (None, None)
    state = state if state is not None else secrets.token_urlsafe(12)
    redirect_uri = redirect_uri or client["redirects"][0]
    params = auth_params(client, redirect_uri=redirect_uri, scope=scope, state=state, challenge=challenge,
                         omit_redirect=omit_redirect, extra=extra)
    response = browser.follow(browser.authorize(params), grant=grant)
    assert response.status_code == 303, f"no redirect to the app: {response.status_code} {response.text[:500]}"
    location = response.headers["Location"]
    assert location.startswith(redirect_uri), location
    _, query, _ = split_location(location)
    assert "code" in query, f"no code in {location}"
    assert query.get("state") == [state]
    return Grant(client, query["code"][0], verifier, redirect_uri, state, location)


# --------------------------------------------------------------------------------------------- token endpoint

def client_auth(client):
    """(auth, body) for a client: Basic for confidential ones, client_id in the body for public ones."""
    if client.get("secret"):
        return (client["id"], client["secret"]), []
    return None, [("client_id", client["id"])]


def token_request(server, data, auth=None, headers=None, path="/oauth2/token"):
    return server.post(path, data=data, auth=auth, headers=headers or {})


def exchange(server, grant, client=None, verifier="same", redirect_uri="same", auth="default", extra=()):
    client = client or grant.client
    default_auth, body = client_auth(client)
    data = [("grant_type", "authorization_code"), ("code", grant.code)]
    redirect_uri = grant.redirect_uri if redirect_uri == "same" else redirect_uri
    if redirect_uri is not None:
        data.append(("redirect_uri", redirect_uri))
    verifier = grant.verifier if verifier == "same" else verifier
    if verifier is not None:
        data.append(("code_verifier", verifier))
    data += body + list(extra)
    return token_request(server, data, auth=default_auth if auth == "default" else auth)


def redeem(server, grant):
    response = exchange(server, grant)
    assert response.status_code == 200, response.text
    grant.tokens = response.json()
    return grant


def sign_in_and_redeem(server, browser, client, **kw):
    return redeem(server, get_code(browser, client, **kw))


def refresh(server, client, refresh_token, scope=None, auth="default", extra=()):
    default_auth, body = client_auth(client)
    data = [("grant_type", "refresh_token"), ("refresh_token", refresh_token)] + body + list(extra)
    if scope is not None:
        data.append(("scope", scope))
    return token_request(server, data, auth=default_auth if auth == "default" else auth)


def revoke(server, client, token, hint=None, auth="default"):
    default_auth, body = client_auth(client)
    data = [("token", token)] + body
    if hint:
        data.append(("token_type_hint", hint))
    return server.post("/oauth2/revoke", data=data, auth=default_auth if auth == "default" else auth)


def introspect(server, token, hint=None, as_client=None):
    client = as_client or server.clients["rs"]
    data = {"token": token}
    if hint:
        data["token_type_hint"] = hint
    return server.post("/oauth2/introspect", data=data, auth=(client["id"], client["secret"]))


def userinfo(server, access_token, scheme="Bearer"):
    return server.get("/userinfo", headers={"Authorization": f"{scheme} {access_token}"})


# --------------------------------------------------------------------------------------------- shorthands

def _no_token_material(*parts):
    for part in parts:
        for name in ("code", "access_token", "refresh_token", "id_token"):
            assert name not in part, f"{name} was issued: {part}"


def assert_redirect_err(response, redirect_uri, error, state, issuer, fragment=False):
    """REDIRECT-ERR(e): 302/303 to the validated redirect URI with error, the exact state, iss, and no
    code or token."""
    assert response.status_code in (302, 303), f"expected an error redirect, got {response.status_code}: {response.text[:400]}"
    location = response.headers.get("Location", "")
    assert location.startswith(redirect_uri), f"redirect to {location!r}, not to {redirect_uri!r}"
    _, query, frag = split_location(location)
    where = frag if fragment else query
    assert where.get("error") == [error], f"expected error={error} in the {'fragment' if fragment else 'query'}: {location}"
    if state is None:
        assert "state" not in where, location
    else:
        assert where.get("state") == [state], location
    assert where.get("iss") == [issuer], location
    _no_token_material(query, frag)
    return where


def assert_no_redirect(response, bad_uri=None):
    """NO-REDIRECT: an HTML error page (400), no Location, nothing issued, the bad URI never a link."""
    assert "Location" not in response.headers, f"redirected to {response.headers.get('Location')}"
    assert response.status_code == 400, f"expected a 400 error page, got {response.status_code}: {response.text[:300]}"
    assert response.headers.get("Content-Type", "").startswith("text/html")
    if bad_uri:
        assert f'href="{bad_uri}' not in response.text
        assert f"href='{bad_uri}" not in response.text
    assert "lk_ac_" not in response.text and "lk_at_" not in response.text


def assert_token_err(response, status, error, basic=False):
    """TOKEN-ERR(s, e): status, JSON {"error": e}, no-store, no tokens; Basic challenge after Basic."""
    assert response.status_code == status, f"expected {status} {error}, got {response.status_code}: {response.text[:300]}"
    assert response.headers.get("Content-Type", "").startswith("application/json"), response.headers
    assert "no-store" in response.headers.get("Cache-Control", "")
    body = response.json()
    assert body.get("error") == error, body
    _no_token_material(body)
    if basic and error == "invalid_client":
        assert response.headers.get("WWW-Authenticate", "").lower().startswith("basic"), response.headers
    return body


def assert_token_err_one_of(response, allowed):
    """TOKEN-ERR where the catalogue allows several (status, error) pairs."""
    assert (response.status_code, _error_of(response)) in allowed, \
        f"got {response.status_code} {response.text[:300]}, allowed {allowed}"
    assert_token_err(response, response.status_code, _error_of(response))


def _error_of(response):
    try:
        return response.json().get("error")
    except ValueError:
        return None


def assert_dead(server, access_token):
    """DEAD(tok): the resource API says 401 invalid_token and introspection says exactly {"active":false}."""
    response = userinfo(server, access_token)
    assert response.status_code == 401, f"token still accepted: {response.status_code} {response.text}"
    challenge = response.headers.get("WWW-Authenticate", "")
    assert challenge.startswith("Bearer") and 'error="invalid_token"' in challenge, challenge
    assert_inactive(server, access_token)


def assert_inactive(server, token):
    response = introspect(server, token)
    assert response.status_code == 200, response.text
    assert response.json() == {"active": False}, response.text
    assert "no-store" in response.headers.get("Cache-Control", "")


def assert_alive(server, access_token):
    """The token still works: introspection says active and the resource API does not say 401."""
    body = introspect(server, access_token).json()
    assert body.get("active") is True, body
    response = userinfo(server, access_token)
    assert response.status_code in (200, 403), f"token refused: {response.status_code} {response.text}"


def assert_rt_alive(server, client, refresh_token):
    """The refresh token still works for `client`. RV5: it is inactive to any other caller (the
    resource server here); a confidential client sees it active, without `token_type`; a public
    one, which cannot introspect, proves it by refreshing with it."""
    assert introspect(server, refresh_token).json() == {"active": False}
    if client.get("secret"):
        body = introspect(server, refresh_token, as_client=client).json()
        assert body.get("active") is True and "token_type" not in body, body
    else:
        answer = refresh(server, client, refresh_token)
        assert answer.status_code == 200, answer.text


def assert_rt_dead(server, client, refresh_token):
    assert_inactive(server, refresh_token)
    assert_token_err(refresh(server, client, refresh_token), 400, "invalid_grant")


# --------------------------------------------------------------------------------------------- statistics

def welch_t(a, b):
    """Welch's t statistic for two independent samples (no scipy)."""
    na, nb = len(a), len(b)
    ma, mb = sum(a) / na, sum(b) / nb
    va = sum((x - ma) ** 2 for x in a) / (na - 1)
    vb = sum((x - mb) ** 2 for x in b) / (nb - 1)
    denominator = math.sqrt(va / na + vb / nb)
    return 0.0 if denominator == 0 else (ma - mb) / denominator


def trimmed(samples, keep=0.9):
    """Drops the slowest tail (scheduler hiccups on a 2-core machine) before the t-test."""
    ordered = sorted(samples)
    return ordered[: max(3, int(len(ordered) * keep))]


def barrier_run(count, action):
    """Runs `action(i)` on `count` threads released together by a barrier; returns the results in order."""
    barrier = threading.Barrier(count)
    results = [None] * count

    def worker(i):
        try:
            barrier.wait(timeout=30)
            results[i] = action(i)
        except Exception as error:  # a transport error is a result too
            results[i] = error
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return results

