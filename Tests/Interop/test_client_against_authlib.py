"""`latchkey login` and `latchkey token`, Latchkey's client, against an OpenID provider that Latchkey did
not write: Tests/Interop/authlib_provider.py, built from Authlib's server parts.

The provider publishes only /.well-known/openid-configuration (the RFC 8414 address answers 404),
leaves out the OPTIONAL metadata members (code_challenge_methods_supported,
authorization_response_iss_parameter_supported, revocation_endpoint, scopes_supported), sends no
`iss` in the authorization response and accepts any port on its registered loopback redirect URI.
$BROWSER is a small script that fetches the authorization URL with requests and follows the redirects,
the last to the loopback receiver that `latchkey login` runs; the provider signs Ada in without a page.

Then the provider's misbehaving modes: a sign-in whose ID token fails a check must fail, and keep nothing.
"""
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from latchkey_process import latchkey_binary
from upstream_provider import AuthlibUpstream

CLIENT_ID = "latchkey-cli"
SCOPE = "openid profile email"
LOGIN_TIMEOUT = 20   # seconds `latchkey login` waits for the redirect (--timeout)

# Stands in for the user's browser: GET the authorization URL and follow every redirect, the last one
# to `latchkey login`'s loopback receiver. Writes where it went to browser.log, for failure messages.
BROWSER_SCRIPT = """\
import sys, requests
log = open(sys.argv[0] + ".log", "a")
try:
    response = requests.get(sys.argv[1], timeout=15)
    for hop in [*response.history, response]:
        print(hop.status_code, hop.url, file=log)
except Exception as error:
    print("failed:", repr(error), file=log)
    raise
"""


@pytest.fixture
def start_provider(tmp_path):
    """start_provider(mode) -> a running AuthlibUpstream (Tests/Support/upstream_provider.py); every
    one is stopped after the test."""
    started = []

    def start(mode="good"):
        provider = AuthlibUpstream(tmp_path, "--mode", mode)
        started.append(provider)
        return provider

    yield start
    for provider in started:
        provider.stop()


class Cli:
    """`latchkey` with a throwaway HOME and XDG_CONFIG_HOME, and $BROWSER the script above."""

    def __init__(self, tmp_path):
        self.dir = tmp_path
        self.home = tmp_path / "home"
        self.config = tmp_path / "config"
        self.home.mkdir()
        self.browser = tmp_path / "browser.py"
        self.browser.write_text(BROWSER_SCRIPT)
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("XDG_")}
        # XDG_CONFIG_HOME as well as HOME: Foundation on Linux takes the home directory from the
        # password database, not $HOME, so HOME alone would put the tokens in the real ~/.config.
        self.env.update({"HOME": str(self.home), "XDG_CONFIG_HOME": str(self.config),
                         "BROWSER": f"{sys.executable} {self.browser}"})
        self.credentials = self.config / "latchkey" / "credentials.json"

    def run(self, *args, timeout=LOGIN_TIMEOUT + 20):
        return subprocess.run([latchkey_binary(), *args], env=self.env, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=timeout)

    def login(self, provider):
        return self.run("login", "--issuer", provider.issuer, "--client-id", CLIENT_ID, "--scope", SCOPE,
                        "--timeout", str(LOGIN_TIMEOUT))

    def browser_log(self):
        path = Path(str(self.browser) + ".log")
        return path.read_text() if path.exists() else "(the browser script did not run)"


def explain(result, provider, cli):
    return (f"latchkey exited {result.returncode}\n--- stdout:\n{result.stdout}\n--- stderr:\n{result.stderr}"
            f"\n--- browser:\n{cli.browser_log()}\n--- provider ({' '.join(provider.args)}):\n{provider.log()}")


def test_login_against_authlib_provider_then_token_and_refresh(start_provider, tmp_path):
    provider = start_provider("good")
    cli = Cli(tmp_path)
    login = cli.login(provider)
    assert login.returncode == 0, explain(login, provider, cli)
    out = login.stdout + login.stderr

    # Who signed in: the username from /userinfo, the subject from the verified ID token.
    assert f"Signed in to {provider.issuer} as ada " in out, explain(login, provider, cli)
    assert "sub user-42" in out and "verified ID token" in out, explain(login, provider, cli)
    assert "Granted scopes: openid profile email" in out
    assert "not granted" not in out

    # What the client asked, as the provider saw it: RFC 8414 first (404), then OpenID discovery; a
    # PKCE S256 authorization request with a nonce and a loopback redirect; one code exchange.
    log = provider.log()
    assert "GET /.well-known/oauth-authorization-server -> 404" in log
    assert "GET /.well-known/openid-configuration -> 200" in log
    authorize = next(line for line in log.splitlines() if line.startswith("GET /authorize?"))
    assert authorize.endswith("-> 302")
    for parameter in ("response_type=code", f"client_id={CLIENT_ID}", "code_challenge_method=S256", "nonce=",
                      "state=", "redirect_uri=http%3A%2F%2F127.0.0.1%3A"):
        assert parameter in authorize, authorize
    assert "POST /token -> 200" in log
    stats = provider.stats()
    assert stats["token_requests"] == 1 and stats["jwks_requests"] == 1

    # The tokens are kept, readable by the user only.
    assert cli.credentials.exists(), explain(login, provider, cli)
    assert stat.S_IMODE(cli.credentials.stat().st_mode) == 0o600

    token = cli.run("token")
    assert token.returncode == 0, token.stderr
    access_token = token.stdout.strip()
    me = provider.userinfo(access_token)
    assert me.status_code == 200, me.text
    assert me.json()["sub"] == "user-42" and me.json()["preferred_username"] == "ada"

    # A refresh with Authlib's RefreshTokenGrant (which sends no new ID token, and revokes the old token).
    refreshed = cli.run("token", "--refresh", "--json")
    assert refreshed.returncode == 0, refreshed.stderr
    fresh = json.loads(refreshed.stdout)
    assert fresh["access_token"] != access_token
    assert fresh["issuer"] == provider.issuer and fresh["scope"] == SCOPE
    assert provider.userinfo(fresh["access_token"]).status_code == 200
    assert provider.userinfo(access_token).status_code == 401
    again = cli.run("token")
    assert again.returncode == 0 and again.stdout.strip() == fresh["access_token"]


def test_login_sees_a_rotated_signing_key(start_provider, tmp_path):
    """The ID token names a kid that the first /jwks answer lacks: the client fetches the set again."""
    provider = start_provider("unknown-kid-then-rotate")
    cli = Cli(tmp_path)
    login = cli.login(provider)
    assert login.returncode == 0, explain(login, provider, cli)
    assert "sub user-42" in login.stdout + login.stderr
    assert provider.stats()["jwks_requests"] == 2


@pytest.mark.parametrize("mode, reason", [
    ("tampered-id-token", "its signature does not verify"),
    ("wrong-nonce", "its nonce is not the one this sign-in sent"),
    ("unknown-kid", "it names a key the provider does not publish (key-2)"),
])
def test_login_refuses_a_bad_id_token(start_provider, tmp_path, mode, reason):
    provider = start_provider(mode)
    cli = Cli(tmp_path)
    login = cli.login(provider)
    assert login.returncode != 0, explain(login, provider, cli)
    assert "ID token was refused" in login.stderr, explain(login, provider, cli)
    assert reason in login.stderr, explain(login, provider, cli)
    assert "Signed in" not in login.stdout
    assert "POST /token -> 200" in provider.log()  # it got that far: the refusal is the client's
    # Nothing is kept from a sign-in that was not trusted.
    assert not cli.credentials.exists()
    token = cli.run("token")
    assert token.returncode != 0 and "Not signed in" in token.stderr
