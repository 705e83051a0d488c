"""RFC 9470 step-up over real HTTP: the example MCP server (`latchkey-example-mcp`, LatchkeyResource)
asks more of the user's sign-in than a valid token, and Latchkey gives what it asks for.

  - `--acr-values urn:latchkey:acr:2`: a token from a password sign-in (acr 1) gets 401 with
    `error="insufficient_user_authentication"` and `acr_values` in the challenge; a new
    authorization request with those `acr_values` sends the user (who has no authenticator yet) to
    set one up, and the token it ends with (acr 2) gets 200;
  - `--max-age 1`: a token whose sign-in is two seconds old gets the challenge with `max_age="1"`,
    and an authorization request with that `max_age` asks for the password again;
  - `latchkey login --step-up-from URL`: the stored token is tried at the MCP server, its challenge
    read, and the sign-in asks for what it names (a stand-in browser sets up the authenticator).

One `latchkey serve` (no demo data) and two example MCP servers run for the module; a
requests.Session plays the browser, and pyotp the authenticator app.
"""
import base64
import json
import re
import signal
import socket
import subprocess
import sys
import time
from collections import namedtuple
from pathlib import Path
from urllib.parse import urlencode

import pyotp
import pytest
import requests

from latchkey_process import code_in, free_port, latchkey_binary, pkce, sign_in_through_pages

SERVE_ARGS = []  # the conftest's `server`, without --dev: the module registers its own app and users
PASSWORD = "correct horse battery staple"
SCOPE = "mcp:tools"
ONE = "urn:latchkey:acr:1"
MFA = "urn:latchkey:acr:2"
TIMEOUT = 20          # seconds for one HTTP request
START_TIMEOUT = 30    # seconds for an example MCP server to listen
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                         "clientInfo": {"name": "latchkey-test", "version": "1.0"}}}
_SECRET = re.compile(r'id="totp-secret"[^>]*>([^<]+)<')
_HIDDEN = re.compile(r'<input type="hidden" name="([^"]+)" value="([^"]*)">')
_ONWARD = re.compile(r'href="(/consent\?request=[^"]+)"')

MCP = namedtuple("MCP", "url log")


# --------------------------------------------------------------------------------------------- fixtures

@pytest.fixture(scope="module")
def app(server):
    """The tools scope, and a first-party native app (no consent page) with a loopback redirect."""
    server.cli("scopes", "add", SCOPE, "--description", "Use the example MCP server's tools")
    return server.cli("clients", "create", "--type", "native", "--name", "Step-up agent", "--redirect-uri",
                      "http://127.0.0.1/callback", "--scope", SCOPE, "--first-party")


def example_mcp(server, tmp_path_factory, *requirement):
    """Registers http://127.0.0.1:PORT/mcp as a JWT resource and runs `latchkey-example-mcp` there with
    `requirement` (its --acr-values / --max-age). Yields an MCP; stops the server afterwards."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    server.cli("resources", "add", url, "--name", f"Example MCP {port}", "--scope", SCOPE, "--token-format", "jwt")
    log = tmp_path_factory.mktemp("example-mcp") / "example-mcp.log"
    binary = Path(latchkey_binary()).parent / "latchkey-example-mcp"
    with open(log, "ab") as out:
        process = subprocess.Popen([str(binary), "--port", str(port), "--issuer", server.issuer, "--scope", SCOPE,
                                    *requirement], stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                pass
            assert process.poll() is None, f"latchkey-example-mcp exited early:\n{log.read_text(errors='replace')}"
            assert time.monotonic() < deadline, f"latchkey-example-mcp is not listening:\n{log.read_text()}"
            time.sleep(0.05)
        yield MCP(url, log)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@pytest.fixture(scope="module")
def two_factor_mcp(server, app, tmp_path_factory):
    yield from example_mcp(server, tmp_path_factory, "--acr-values", MFA)


@pytest.fixture(scope="module")
def recent_mcp(server, app, tmp_path_factory):
    yield from example_mcp(server, tmp_path_factory, "--max-age", "1")


# --------------------------------------------------------------------------------------------- helpers

def create_user(server, username):
    return server.cli("users", "create", username, "--password-stdin", stdin=PASSWORD + "\n")


class Request:
    """One authorization request of the app for `resource`, with its own PKCE verifier."""

    def __init__(self, server, app, resource, **extra):
        self.server, self.app = server, app
        self.redirect_uri = f"http://127.0.0.1:{free_port()}/callback"
        self.verifier, challenge = pkce()
        self.url = server.url("/oauth2/authorize?" + urlencode({
            "response_type": "code", "client_id": app["client_id"], "redirect_uri": self.redirect_uri,
            "scope": SCOPE, "state": "s", "code_challenge": challenge, "code_challenge_method": "S256",
            "resource": resource, **extra}))

    def tokens(self, location):
        """Redeems the code in the redirect to the app."""
        assert location.startswith(self.redirect_uri + "?"), location
        response = requests.post(self.server.url("/oauth2/token"), timeout=TIMEOUT, data={
            "grant_type": "authorization_code", "code": code_in(location), "redirect_uri": self.redirect_uri,
            "client_id": self.app["client_id"], "code_verifier": self.verifier})
        assert response.status_code == 200, response.text
        return response.json()


def claims(token):
    """The claims of a JWT access token, unchecked (the example server checks it)."""
    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


def post_initialize(mcp, access_token):
    return requests.post(mcp.url, json=INITIALIZE, timeout=TIMEOUT,
                         headers={"Authorization": f"Bearer {access_token}",
                                  "Accept": "application/json, text/event-stream"})


def challenge_of(response):
    """The parameters of a refusal's Bearer challenge (quoted values, without escapes: enough here)."""
    assert response.status_code == 401, f"{response.status_code} {response.text[:300]}"
    header = response.headers.get("WWW-Authenticate", "")
    assert header.startswith("Bearer "), header
    return dict(re.findall(r'([a-z_]+)="([^"]*)"', header))


def post(browser, server, path, page, **fields):
    """POSTs the first form of `page` (its hidden fields) with `fields`, not following redirects."""
    hidden = dict(_HIDDEN.findall(page.text.split("</form>")[0]))
    return browser.post(server.url(path), data={**hidden, **fields}, allow_redirects=False, timeout=TIMEOUT)


# --------------------------------------------------------------------------------------------- tests

def test_a_password_token_is_challenged_and_the_stepped_up_one_passes(server, app, two_factor_mcp):
    """acr: the password's token gets the RFC 9470 challenge; the authorization request that asks
    for its acr_values has the user set up an authenticator, and the new token gets 200."""
    create_user(server, "ada")
    browser = requests.Session()
    first = Request(server, app, two_factor_mcp.url)
    token = first.tokens(sign_in_through_pages(browser, first.url, "ada", PASSWORD).location)["access_token"]
    assert claims(token)["acr"] == ONE

    refused = post_initialize(two_factor_mcp, token)
    challenge = challenge_of(refused)
    assert challenge["error"] == "insufficient_user_authentication", challenge
    assert challenge["acr_values"] == MFA, challenge
    assert "max_age" not in challenge and challenge["error_description"], challenge
    assert challenge["resource_metadata"].endswith("/.well-known/oauth-protected-resource/mcp"), challenge
    assert refused.json()["error"] == "insufficient_user_authentication"

    # A new authorization request with the challenge's acr_values: ada has no authenticator yet.
    stepped = Request(server, app, two_factor_mcp.url, acr_values=challenge["acr_values"])
    asked = browser.get(stepped.url, allow_redirects=False, timeout=TIMEOUT)
    assert asked.status_code == 303 and asked.headers["Location"].startswith("/account/security/totp?request="), \
        asked.headers.get("Location")
    page = browser.get(server.url(asked.headers["Location"]), timeout=TIMEOUT)
    assert page.status_code == 200, page.text[:300]
    totp = pyotp.TOTP(_SECRET.search(page.text).group(1).replace(" ", ""))
    done = post(browser, server, "/account/security/totp", page, code=totp.now())
    assert done.status_code == 200, done.text[:300]
    back = browser.get(server.url(_ONWARD.search(done.text).group(1)), allow_redirects=False, timeout=TIMEOUT)
    assert back.status_code == 303, back.text[:300]
    new_token = stepped.tokens(back.headers["Location"])["access_token"]
    assert claims(new_token)["acr"] == MFA and "otp" in claims(new_token)["amr"]

    accepted = post_initialize(two_factor_mcp, new_token)
    assert accepted.status_code == 200, f"{accepted.status_code} {accepted.text[:300]}"
    assert accepted.json()["result"]["serverInfo"]["name"] == "latchkey-example-mcp", accepted.text


def test_a_sign_in_older_than_max_age_is_challenged(server, app, recent_mcp):
    """max_age: two seconds after the sign-in, a server that wants one second answers with the
    challenge and max_age="1"; asking for that max_age has Latchkey ask for the password again."""
    create_user(server, "ben")
    browser = requests.Session()
    first = Request(server, app, recent_mcp.url)
    token = first.tokens(sign_in_through_pages(browser, first.url, "ben", PASSWORD).location)["access_token"]
    assert claims(token)["auth_time"] <= time.time()
    time.sleep(2)

    challenge = challenge_of(post_initialize(recent_mcp, token))
    assert challenge["error"] == "insufficient_user_authentication", challenge
    assert challenge["max_age"] == "1" and "acr_values" not in challenge, challenge

    again = Request(server, app, recent_mcp.url, max_age=challenge["max_age"])
    asked = browser.get(again.url, allow_redirects=False, timeout=TIMEOUT)
    assert asked.status_code == 303, asked.text[:300]
    assert asked.headers["Location"].startswith("/login?") and "again=1" in asked.headers["Location"], \
        asked.headers["Location"]


# The browser `latchkey login` opens ($BROWSER): signs in with the password, sets up an
# authenticator when sent to (keeping its key in $LK_TOTP_FILE) or enters its code (the next
# step's, since the one that confirmed it is used up), and follows the first-party app's redirect
# to the loopback receiver. What goes wrong is written to $LK_BROWSER_LOG.
BROWSER_SCRIPT = r'''
import os, re, sys, time, traceback
import pyotp, requests

HIDDEN = re.compile(r'<input type="hidden" name="([^"]+)" value="([^"]*)">')
url = sys.argv[1]
base = url.split("/oauth2/")[0]
browser = requests.Session()


def post(page, path, **fields):
    """POSTs the page's first form: its hidden fields and `fields`."""
    hidden = dict(HIDDEN.findall(page.text.split("</form>")[0]))
    return browser.post(base + path, data={**hidden, **fields}, allow_redirects=False, timeout=20)


try:
    location = browser.get(url, allow_redirects=False, timeout=20).headers["Location"]
    for _ in range(8):
        if not location.startswith("/"):
            break  # the redirect to the app
        page = browser.get(base + location, allow_redirects=False, timeout=20)
        path = location.split("?")[0]
        if page.status_code in (302, 303):
            location = page.headers["Location"]
        elif path == "/login":
            location = post(page, "/login", username=os.environ["LK_USERNAME"],
                            password=os.environ["LK_PASSWORD"]).headers["Location"]
        elif path == "/account/security/totp":
            secret = re.search(r'id="totp-secret"[^>]*>([^<]+)<', page.text).group(1).replace(" ", "")
            with open(os.environ["LK_TOTP_FILE"], "w") as kept:
                kept.write(secret)
            done = post(page, path, code=pyotp.TOTP(secret).now())
            location = re.search(r'href="(/consent\?request=[^"]+)"', done.text).group(1)
        elif path == "/login/second-factor":
            with open(os.environ["LK_TOTP_FILE"]) as kept:
                code = pyotp.TOTP(kept.read()).at(time.time() + 30)
            location = post(page, path, code=code).headers["Location"]
        else:
            raise RuntimeError(f"unexpected page {location}: {page.status_code}")
    browser.get(location, timeout=20)
except Exception:
    with open(os.environ["LK_BROWSER_LOG"], "a") as log:
        traceback.print_exc(file=log)
'''


def test_latchkey_login_steps_up_from_the_challenge(server, app, two_factor_mcp, tmp_path):
    """`latchkey login --step-up-from URL`: the stored password token is refused at the MCP server,
    the command says it is stepping up, the sign-in asks for acr 2, and the new token passes."""
    create_user(server, "cy")
    script = tmp_path / "browser.py"
    script.write_text(BROWSER_SCRIPT)
    browser_log = tmp_path / "browser.log"
    environment = {"XDG_CONFIG_HOME": str(tmp_path / "config"), "PATH": "/usr/bin:/bin",
                   "BROWSER": f"{sys.executable} {script}", "LK_USERNAME": "cy", "LK_PASSWORD": PASSWORD,
                   "LK_BROWSER_LOG": str(browser_log), "LK_TOTP_FILE": str(tmp_path / "totp-key")}
    login = [latchkey_binary(), "login", "--issuer", server.issuer, "--client-id", app["client_id"], "--scope", SCOPE,
             "--resource", two_factor_mcp.url, "--timeout", "60"]

    def run(*args):
        done = subprocess.run([*args], env=environment, capture_output=True, text=True, timeout=120)
        log = browser_log.read_text() if browser_log.exists() else ""
        assert done.returncode == 0, done.stderr + done.stdout + log
        return done.stdout

    def stored_token():
        return run(latchkey_binary(), "token").strip()

    output = run(*login)
    assert "Stepping up" not in output
    password_token = stored_token()
    assert claims(password_token)["acr"] == ONE
    assert challenge_of(post_initialize(two_factor_mcp, password_token))["acr_values"] == MFA

    output = run(*login, "--step-up-from", two_factor_mcp.url)
    assert f"Stepping up: {two_factor_mcp.url} asks for acr_values {MFA}." in output, output
    stepped_token = stored_token()
    assert claims(stepped_token)["acr"] == MFA
    accepted = post_initialize(two_factor_mcp, stepped_token)
    assert accepted.status_code == 200, f"{accepted.status_code} {accepted.text[:300]}"

    # With nothing to step up from (the new token passes), login goes on as asked (cy's sign-in now
    # takes the code anyway).
    output = run(*login, "--step-up-from", two_factor_mcp.url)
    assert "Stepping up" not in output and "without a step-up challenge" in output, output
    assert claims(stored_token())["acr"] == MFA
