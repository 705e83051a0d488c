"""A standard third-party OAuth client (Authlib, on requests) against `latchkey serve --dev`: the native
PKCE flow, a web client without PKCE, and a service client with introspection and revocation.

Authlib plays the native app: PKCE S256, a loopback redirect, the code exchange, refresh.
A requests.Session plays the user's browser: it signs in and unticks a scope on the consent page.
"""
import json
import os
import re
import secrets
import socket
import subprocess
import time
from urllib.parse import parse_qs, urlparse

import pytest
import requests
from authlib.integrations.requests_client import OAuth2Session
from authlib.integrations.base_client.errors import OAuthError


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    binary = os.environ.get("LATCHKEY_BIN", ".build/debug/latchkey")
    port = free_port()
    data = tmp_path_factory.mktemp("latchkey-data")
    process = subprocess.Popen(
        [binary, "serve", "--dev", "--port", str(port), "--data-dir", str(data)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    lines = []
    deadline = time.time() + 30
    while time.time() < deadline:
        line = process.stdout.readline()
        lines.append(line)
        if "Latchkey is serving" in line:
            break
    output = "".join(lines)
    password = re.search(r"password:\s+(\S+)", output).group(1)
    client_id = re.search(r"client_id:\s+(\S+)", output).group(1)
    yield {"issuer": f"http://127.0.0.1:{port}", "password": password, "client_id": client_id, "data": str(data)}
    process.terminate()
    assert process.wait(timeout=20) == 0


def sign_in_and_consent(browser, authorization_url, password, grant, expect_scope="activity"):
    """Follows the server's pages as a browser would; returns the redirect to the app."""
    page = browser.get(authorization_url, allow_redirects=False)
    assert page.status_code == 303
    login = browser.get(page.headers["Location"] if page.headers["Location"].startswith("http")
                        else authorization_url.split("/oauth2")[0] + page.headers["Location"])
    fields = dict(re.findall(r'name="(csrf_token|request)" value="([^"]*)"', login.text))
    base = authorization_url.split("/oauth2")[0]
    after_login = browser.post(base + "/login", data={**fields, "username": "demo", "password": password},
                               allow_redirects=False)
    assert after_login.status_code == 303
    consent = browser.get(base + after_login.headers["Location"])
    assert f'name="scope" value="{expect_scope}"' in consent.text
    fields = dict(re.findall(r'name="(csrf_token|request)" value="([^"]*)"', consent.text))
    decision = browser.post(base + "/oauth2/authorize",
                            data=[*fields.items(), ("decision", "allow"), *[("scope", s) for s in grant]],
                            allow_redirects=False)
    assert decision.status_code == 303
    return decision.headers["Location"]


def test_authlib_completes_pkce_flow_with_partial_consent_and_refresh(server):
    issuer = server["issuer"]
    metadata = requests.get(issuer + "/.well-known/oauth-authorization-server").json()
    assert metadata["code_challenge_methods_supported"] == ["S256"]

    redirect_uri = f"http://127.0.0.1:{free_port()}/callback"
    app = OAuth2Session(server["client_id"], scope="profile activity", redirect_uri=redirect_uri,
                        code_challenge_method="S256", token_endpoint_auth_method="none")
    verifier = secrets.token_urlsafe(48)  # 64 characters of the RFC 7636 alphabet
    authorization_url, state = app.create_authorization_url(metadata["authorization_endpoint"], code_verifier=verifier)

    callback = sign_in_and_consent(requests.Session(), authorization_url, server["password"], grant=["profile"])
    assert callback.startswith(redirect_uri + "?")
    query = parse_qs(urlparse(callback).query)
    assert query["state"] == [state]
    assert query["iss"] == [issuer]

    token = app.fetch_token(metadata["token_endpoint"], authorization_response=callback, code_verifier=verifier)
    assert token["token_type"] == "Bearer"
    assert token["scope"] == "profile"  # the user unticked activity
    assert token["user_id"]
    # RFC 6749 §6: a refresh may not ask for more than was granted, and Authlib resends the
    # session's scope, so the app narrows it to what the user granted, as it should.
    app.scope = token["scope"]

    me = app.get(metadata["userinfo_endpoint"])
    assert me.status_code == 200
    assert me.json()["username"] == "demo"

    old_refresh = token["refresh_token"]
    new = app.refresh_token(metadata["token_endpoint"], refresh_token=old_refresh)
    assert new["refresh_token"] != old_refresh
    assert app.get(metadata["userinfo_endpoint"]).status_code == 200

    # Using the new refresh token once makes the old one dead; presenting it revokes the grant.
    app.refresh_token(metadata["token_endpoint"], refresh_token=new["refresh_token"])
    with pytest.raises(OAuthError) as error:
        app.refresh_token(metadata["token_endpoint"], refresh_token=old_refresh)
    assert error.value.error == "invalid_grant"
    assert app.get(metadata["userinfo_endpoint"]).status_code == 401


def latchkey(server, *arguments):
    """Runs an admin command on the running server's data."""
    binary = os.environ.get("LATCHKEY_BIN", ".build/debug/latchkey")
    result = subprocess.run([binary, *arguments, "--data-dir", server["data"], "--json"],
                            capture_output=True, text=True, check=True)
    return json.loads(result.stdout)


def test_authlib_service_client_credentials_introspection_and_revocation(server):
    issuer = server["issuer"]
    metadata = requests.get(issuer + "/.well-known/oauth-authorization-server").json()
    service = latchkey(server, "clients", "create", "--type", "service", "--name", "Reports", "--scope", "activity")
    client = OAuth2Session(service["client_id"], service["client_secret"], scope="activity",
                           token_endpoint_auth_method="client_secret_basic")
    token = client.fetch_token(metadata["token_endpoint"], grant_type="client_credentials")
    assert token["scope"] == "activity"
    assert "refresh_token" not in token

    auth = (service["client_id"], service["client_secret"])
    active = requests.post(metadata["introspection_endpoint"], data={"token": token["access_token"]}, auth=auth).json()
    assert active["active"] is True and active["client_id"] == service["client_id"]

    response = client.revoke_token(metadata["revocation_endpoint"], token=token["access_token"],
                                   token_type_hint="access_token")
    assert response.status_code == 200
    inactive = requests.post(metadata["introspection_endpoint"], data={"token": token["access_token"]}, auth=auth)
    assert inactive.json() == {"active": False}


def test_authlib_web_client_code_flow_without_pkce(server):
    issuer = server["issuer"]
    metadata = requests.get(issuer + "/.well-known/oauth-authorization-server").json()
    redirect_uri = "https://web.example/cb"
    web = latchkey(server, "clients", "create", "--type", "web", "--name", "Web", "--redirect-uri", redirect_uri,
                   "--scope", "profile")
    app = OAuth2Session(web["client_id"], web["client_secret"], scope="profile", redirect_uri=redirect_uri,
                        token_endpoint_auth_method="client_secret_basic")
    authorization_url, state = app.create_authorization_url(metadata["authorization_endpoint"])
    callback = sign_in_and_consent(requests.Session(), authorization_url, server["password"], grant=["profile"],
                                   expect_scope="profile")
    token = app.fetch_token(metadata["token_endpoint"], authorization_response=callback)
    assert token["scope"] == "profile" and token["refresh_token"]
    assert app.get(metadata["userinfo_endpoint"]).json()["username"] == "demo"
