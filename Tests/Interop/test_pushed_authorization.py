"""Pushed authorization requests (RFC 9126) against `latchkey serve --dev`, with Authlib as the app.

PyPI's OAuth clients do not push requests themselves, so the push is one requests POST made as
RFC 9126 §2.1 describes it, with the client's own authentication; Authlib builds the request
(PKCE, state) beforehand and exchanges the code afterwards. A requests.Session plays the browser.
"""
import secrets
from urllib.parse import parse_qs, urlencode, urlparse

import pytest
import requests
from authlib.integrations.requests_client import OAuth2Session

from latchkey_process import free_port, sign_in_through_pages


@pytest.fixture(scope="module")
def metadata(server):
    document = requests.get(server.issuer + "/.well-known/oauth-authorization-server", timeout=10).json()
    assert document["pushed_authorization_request_endpoint"] == server.issuer + "/oauth2/par"
    assert document["require_pushed_authorization_requests"] is False
    return document


def web_app(server, *extra):
    redirect_uri = "https://web.example/cb"
    created = server.cli("clients", "create", "--type", "web", "--name", f"Pushing app {secrets.token_hex(3)}",
                         "--redirect-uri", redirect_uri, "--scope", "profile", *extra)
    return created["client_id"], created["client_secret"], redirect_uri


def authorization_request(app, metadata):
    """Authlib's authorization request (PKCE S256, state), as a list of parameters to push."""
    verifier = secrets.token_urlsafe(48)
    url, state = app.create_authorization_url(metadata["authorization_endpoint"], code_verifier=verifier)
    return parse_qs(urlparse(url).query), state, verifier


def browser_url(metadata, client_id, request_uri):
    return metadata["authorization_endpoint"] + "?" + urlencode({"client_id": client_id, "request_uri": request_uri})


def test_confidential_app_pushes_with_basic_and_authlib_exchanges_the_code(server, metadata):
    client_id, secret, redirect_uri = web_app(server)
    app = OAuth2Session(client_id, secret, scope="profile", redirect_uri=redirect_uri,
                        code_challenge_method="S256", token_endpoint_auth_method="client_secret_basic")
    parameters, state, verifier = authorization_request(app, metadata)
    pushed = requests.post(metadata["pushed_authorization_request_endpoint"], data=parameters,
                           auth=(client_id, secret), timeout=10)
    assert pushed.status_code == 201, pushed.text
    assert pushed.headers["Cache-Control"] == "no-store"
    body = pushed.json()
    assert body["request_uri"].startswith("urn:ietf:params:oauth:request_uri:")
    assert body["expires_in"] == 60

    url = browser_url(metadata, client_id, body["request_uri"])
    assert "code_challenge" not in url and "state" not in url and "redirect_uri" not in url
    callback = sign_in_through_pages(requests.Session(), url, "demo", server.dev["password"]).location
    assert callback.startswith(redirect_uri + "?")
    assert parse_qs(urlparse(callback).query)["state"] == [state]
    token = app.fetch_token(metadata["token_endpoint"], authorization_response=callback, code_verifier=verifier)
    assert token["scope"] == "profile"

    # The request_uri was used once; the same URL again is an error page, not a redirect.
    again = requests.get(url, allow_redirects=False, timeout=10)
    assert again.status_code == 400
    assert "Location" not in again.headers


def test_wrong_secret_and_request_uri_of_another_client_are_refused(server, metadata):
    client_id, secret, redirect_uri = web_app(server)
    app = OAuth2Session(client_id, secret, scope="profile", redirect_uri=redirect_uri, code_challenge_method="S256")
    parameters, _, _ = authorization_request(app, metadata)
    endpoint = metadata["pushed_authorization_request_endpoint"]
    wrong = requests.post(endpoint, data=parameters, auth=(client_id, "lk_cs_wrong"), timeout=10)
    assert wrong.status_code == 401
    assert wrong.json()["error"] == "invalid_client"

    pushed = requests.post(endpoint, data=parameters, auth=(client_id, secret), timeout=10).json()
    stolen = requests.get(browser_url(metadata, server.dev["client_id"], pushed["request_uri"]),
                          allow_redirects=False, timeout=10)
    assert stolen.status_code == 400
    assert "invalid_request_uri" in stolen.text
    # The owner's own visit still works: another client's attempt did not spend it.
    mine = requests.get(browser_url(metadata, client_id, pushed["request_uri"]), allow_redirects=False, timeout=10)
    assert mine.status_code == 303


def test_public_native_app_pushes_with_client_id_alone(server, metadata):
    redirect_uri = f"http://127.0.0.1:{free_port()}/callback"
    app = OAuth2Session(server.dev["client_id"], scope="profile", redirect_uri=redirect_uri,
                        code_challenge_method="S256", token_endpoint_auth_method="none")
    parameters, state, verifier = authorization_request(app, metadata)
    pushed = requests.post(metadata["pushed_authorization_request_endpoint"], data=parameters, timeout=10)
    assert pushed.status_code == 201, pushed.text
    url = browser_url(metadata, server.dev["client_id"], pushed.json()["request_uri"])
    callback = sign_in_through_pages(requests.Session(), url, "demo", server.dev["password"]).location
    token = app.fetch_token(metadata["token_endpoint"], authorization_response=callback, code_verifier=verifier)
    assert token["token_type"] == "Bearer"


def test_app_registered_to_push_is_refused_a_request_in_the_url(server, metadata):
    client_id, secret, redirect_uri = web_app(server, "--require-pushed-authorization-requests")
    shown = server.cli("clients", "show", client_id)
    assert shown["require_pushed_authorization_requests"] is True
    app = OAuth2Session(client_id, secret, scope="profile", redirect_uri=redirect_uri, code_challenge_method="S256")
    url, _ = app.create_authorization_url(metadata["authorization_endpoint"], code_verifier=secrets.token_urlsafe(48))
    direct = requests.get(url, allow_redirects=False, timeout=10)
    assert direct.status_code == 303
    assert direct.headers["Location"].startswith(redirect_uri + "?")
    assert parse_qs(urlparse(direct.headers["Location"]).query)["error"] == ["invalid_request"]


def test_pushed_request_is_checked_before_any_browser_sees_it(server, metadata):
    endpoint = metadata["pushed_authorization_request_endpoint"]
    base = {"response_type": "code", "client_id": server.dev["client_id"], "scope": "profile",
            "redirect_uri": "http://127.0.0.1/callback", "state": "s"}
    no_pkce = requests.post(endpoint, data=base, timeout=10)
    assert no_pkce.status_code == 400
    assert no_pkce.json()["error"] == "invalid_request"
    foreign = requests.post(endpoint, data={**base, "redirect_uri": "https://attacker.example/cb",
                                            "code_challenge": "x" * 43, "code_challenge_method": "S256"}, timeout=10)
    assert foreign.status_code == 400
    nested = requests.post(endpoint, data={**base, "request_uri": "urn:ietf:params:oauth:request_uri:x"}, timeout=10)
    assert nested.status_code == 400
