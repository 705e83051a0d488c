"""Passkeys over real HTTP, with authenticators Latchkey did not write: soft-webauthn (PyPI; ES256,
the user's presence only) and python-fido2's encoders (Tests/Support/authenticators.py: ES256,
EdDSA and RS256, with user verification). Each makes what a browser hands the page, for an origin
the test chooses; the test then posts it as the page's script would.

The server runs as http://localhost:PORT: browsers allow WebAuthn on plain http only there, and
the relying party id is the issuer's host.
"""
import base64
import json
import re
import time
from urllib.parse import urlencode

import pytest
import requests
from soft_webauthn import SoftWebauthnDevice

from authenticators import KeyAuthenticator, b64, decoded_options
from latchkey_process import LatchkeyServer, code_in, free_port, pkce

PASSWORD = "correct horse battery staple"
_HIDDEN = re.compile(r'<input type="hidden" name="([^"]+)" value="([^"]*)">')


@pytest.fixture
def server(tmp_path):
    with LatchkeyServer(["--data-dir", tmp_path / "data", "--host", "localhost"], workdir=tmp_path / "serve") as server:
        assert server.issuer.startswith("http://localhost:")
        yield server


def csrf(page):
    return dict(_HIDDEN.findall(page.text))["csrf_token"]


def sign_in_with_password(browser, server, username):
    page = browser.get(server.url("/login"), timeout=20)
    return browser.post(server.url("/login"), data={"csrf_token": csrf(page), "username": username, "password": PASSWORD},
                        allow_redirects=False, timeout=20)


def options(browser, server, token, purpose):
    answer = browser.post(server.url("/webauthn/options"), data={"csrf_token": token, "purpose": purpose}, timeout=20)
    assert answer.status_code == 200, answer.text
    return answer.json()


def soft_options(found):
    """soft-webauthn takes the options as python-fido2 would hand them over: bytes, not base64url."""
    return decoded_options(found)


def register(browser, server, device, name="Key", origin=None):
    page = browser.get(server.url("/account/security"), timeout=20)
    token = csrf(page)
    found = options(browser, server, token, "registration")
    if isinstance(device, SoftWebauthnDevice):
        made = device.create(soft_options(found), origin or server.issuer)
        made = {"client_data": made["response"]["clientDataJSON"],
                "attestation_object": made["response"]["attestationObject"]}
    else:
        made = device.create(found, origin or server.issuer)
    return browser.post(server.url("/account/security/passkeys"), allow_redirects=False, timeout=20, data={
        "csrf_token": token, "name": name, "current_password": PASSWORD, "challenge": found["publicKey"]["challenge"],
        "client_data": b64(made["client_data"]), "attestation_object": b64(made["attestation_object"])})


def assertion(browser, server, device, token, purpose, origin=None):
    """Asks for options with the page's CSRF token and answers them with `device`: the fields to post."""
    found = options(browser, server, token, purpose)
    if isinstance(device, SoftWebauthnDevice):
        got = device.get(soft_options(found), origin or server.issuer)
        got = {"credential_id": got["rawId"], "client_data": got["response"]["clientDataJSON"],
               "authenticator_data": got["response"]["authenticatorData"], "signature": got["response"]["signature"],
               "user_handle": got["response"]["userHandle"]}
    else:
        got = device.get(found, origin or server.issuer)
    fields = {"csrf_token": token, "challenge": found["publicKey"]["challenge"]}
    for name in ("credential_id", "client_data", "authenticator_data", "signature", "user_handle"):
        if got.get(name) is not None:
            fields[name] = b64(got[name])
    return fields


def claims(token):
    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


def test_a_soft_webauthn_key_is_registered_and_used_as_the_second_step(server):
    server.cli("users", "create", "ana", "--password-stdin", stdin=PASSWORD + "\n")
    redirect_uri = f"http://127.0.0.1:{free_port()}/callback"
    app = server.cli("clients", "create", "--type", "native", "--name", "Notes", "--redirect-uri", redirect_uri,
                     "--scope", "openid", "--first-party")
    browser = requests.Session()
    assert sign_in_with_password(browser, server, "ana").status_code == 303
    security = browser.get(server.url("/account/security"), timeout=20)
    assert ">Add a passkey</button>" in security.text and "script-src 'self'" in security.headers["Content-Security-Policy"]
    device = SoftWebauthnDevice()
    added = register(browser, server, device, name="Soft key")
    assert added.status_code == 200 and "Passkey added" in added.text, added.text[:400]
    assert "Soft key" in browser.get(server.url("/account/security"), timeout=20).text
    # The same authenticator again: its credential is listed as excluded, and refused if sent anyway.
    again = options(browser, server, csrf(security), "registration")
    assert [item["id"] for item in again["publicKey"]["excludeCredentials"]] == [b64(device.credential_id)]

    # An app's sign-in: the password, then the passkey as the second step.
    verifier, challenge = pkce()
    other = requests.Session()
    asked = other.get(server.url("/oauth2/authorize?" + urlencode({
        "response_type": "code", "client_id": app["client_id"], "redirect_uri": redirect_uri, "scope": "openid",
        "state": "s", "nonce": "n", "code_challenge": challenge, "code_challenge_method": "S256"})),
        allow_redirects=False, timeout=20)
    request = asked.headers["Location"].split("request=")[1]
    login = other.get(server.url(asked.headers["Location"]), timeout=20)
    step = other.post(server.url("/login"), allow_redirects=False, timeout=20,
                      data={"csrf_token": csrf(login), "request": request, "username": "ana", "password": PASSWORD})
    assert step.headers["Location"] == f"/login/second-factor?request={request}"
    page = other.get(server.url(step.headers["Location"]), timeout=20)
    assert ">Use a passkey</button>" in page.text and 'name="code"' not in page.text
    fields = assertion(other, server, device, csrf(page), "confirmation")
    done = other.post(server.url("/login/second-factor"), data={**fields, "request": request}, allow_redirects=False,
                      timeout=20)
    assert done.status_code == 303 and done.headers["Location"] == f"/consent?request={request}", done.text[:300]
    back = other.get(server.url(done.headers["Location"]), allow_redirects=False, timeout=20)
    tokens = requests.post(server.url("/oauth2/token"), timeout=20, data={
        "grant_type": "authorization_code", "code": code_in(back.headers["Location"]), "redirect_uri": redirect_uri,
        "client_id": app["client_id"], "code_verifier": verifier}).json()
    id_token = claims(tokens["id_token"])
    assert id_token["amr"] == ["pwd", "hwk", "mfa"] and id_token["acr"] == "urn:latchkey:acr:2"

    # A key that tests presence only does not sign in alone: a passkey used alone must verify the user.
    alone = requests.Session()
    login = alone.get(server.url("/login"), timeout=20)
    refused = alone.post(server.url("/login/passkey"), data=assertion(alone, server, device, csrf(login), "sign_in"),
                         allow_redirects=False, timeout=20)
    assert refused.status_code == 401 and "could not sign you in" in refused.text


@pytest.mark.parametrize("algorithm", ["ES256", "EdDSA", "RS256"])
def test_a_passkey_signs_in_without_a_username(server, algorithm):
    server.cli("users", "create", "bea", "--password-stdin", stdin=PASSWORD + "\n")
    browser = requests.Session()
    sign_in_with_password(browser, server, "bea")
    device = KeyAuthenticator(algorithm, synced=True)
    assert register(browser, server, device, name=f"{algorithm} key").status_code == 200

    fresh = requests.Session()
    login = fresh.get(server.url("/login"), timeout=20)
    assert ">Sign in with a passkey</button>" in login.text
    signed_in = fresh.post(server.url("/login/passkey"), data=assertion(fresh, server, device, csrf(login), "sign_in"),
                           allow_redirects=False, timeout=20)
    assert signed_in.status_code == 303 and signed_in.headers["Location"] == "/account", signed_in.text[:300]
    assert "bea" in fresh.get(server.url("/account"), timeout=20).text


def test_replayed_wrong_origin_cloned_and_removed_passkeys_are_refused(server):
    server.cli("users", "create", "cai", "--password-stdin", stdin=PASSWORD + "\n")
    browser = requests.Session()
    sign_in_with_password(browser, server, "cai")
    device = KeyAuthenticator("ES256")
    assert register(browser, server, device).status_code == 200

    def attempt(mutate=None, origin=None):
        session = requests.Session()
        login = session.get(server.url("/login"), timeout=20)
        fields = assertion(session, server, device, csrf(login), "sign_in", origin=origin)
        if mutate:
            fields = mutate(fields, session, login)
        return session, fields, session.post(server.url("/login/passkey"), data=fields, allow_redirects=False,
                                             timeout=20)

    # A page on another origin (a phishing site proxying the sign-in) gets an answer for its origin.
    assert attempt(origin=server.issuer.replace("localhost", "evil.localhost"))[2].status_code == 401
    # A replay: the same answer posted again, and the same answer posted with another, fresh challenge.
    session, fields, first = attempt()
    assert first.status_code == 303
    replay = session.post(server.url("/login/passkey"), data={**fields, "csrf_token": csrf(
        session.get(server.url("/login"), timeout=20))}, allow_redirects=False, timeout=20)
    assert replay.status_code in (401, 403)

    def fresh_challenge(fields, session, login):
        other = options(session, server, csrf(login), "sign_in")
        return {**fields, "challenge": other["publicKey"]["challenge"]}
    assert attempt(fresh_challenge)[2].status_code == 401
    # A cloned authenticator: its counter goes back (the store holds the last one used).
    device.sign_count += 20
    assert attempt()[2].status_code == 303
    device.sign_count -= 10
    assert attempt()[2].status_code == 401
    device.sign_count += 20
    # Removed (from a session that used a second factor), the passkey signs in no more.
    _, _, signed_in = attempt()
    assert signed_in.status_code == 303
    owner = requests.Session()
    login = owner.get(server.url("/login"), timeout=20)
    owner.post(server.url("/login/passkey"), data=assertion(owner, server, device, csrf(login), "sign_in"),
               allow_redirects=False, timeout=20)
    remove = owner.get(server.url(f"/account/security/passkeys/remove?credential={b64(device.credential_id)}"),
                       timeout=20)
    removed = owner.post(server.url("/account/security/passkeys/remove"), allow_redirects=False, timeout=20,
                         data={**dict(_HIDDEN.findall(remove.text)), "current_password": PASSWORD})
    assert removed.status_code == 200 and "Passkey removed" in removed.text, removed.text[:300]
    assert attempt()[2].status_code == 401


def test_a_password_session_cannot_add_a_passkey_beside_an_existing_factor(server):
    server.cli("users", "create", "dov", "--password-stdin", stdin=PASSWORD + "\n")
    first = requests.Session()
    sign_in_with_password(first, server, "dov")
    # A second browser signed in with the password before any factor existed.
    stale = requests.Session()
    sign_in_with_password(stale, server, "dov")
    assert register(first, server, KeyAuthenticator("ES256")).status_code == 200
    refused = register(stale, server, KeyAuthenticator("EdDSA"), name="Thief's key")
    assert refused.status_code == 400 and "second factor" in refused.text
    assert "Thief" not in first.get(server.url("/account/security"), timeout=20).text
    # Nor is it shown an authenticator app's key to set up (one the owner might confirm later).
    setup = stale.get(server.url("/account/security/totp"), allow_redirects=False, timeout=20)
    assert setup.status_code == 403 and 'id="totp-secret"' not in setup.text


def test_a_challenge_serves_its_own_ceremony_only_and_a_reset_removes_passkeys(server):
    server.cli("users", "create", "eli", "--password-stdin", stdin=PASSWORD + "\n")
    browser = requests.Session()
    sign_in_with_password(browser, server, "eli")
    device = KeyAuthenticator("ES256")
    assert register(browser, server, device).status_code == 200
    # The second step's challenge does not sign in alone, and a sign-in's does not serve as the second step.
    half = requests.Session()
    sign_in_with_password(half, server, "eli")
    page = half.get(server.url("/login/second-factor"), timeout=20)
    confirmation = assertion(half, server, device, csrf(page), "confirmation")
    assert half.post(server.url("/login/passkey"), data=confirmation, allow_redirects=False,
                     timeout=20).status_code == 401
    sign_in = assertion(half, server, device, csrf(page), "sign_in")
    assert half.post(server.url("/login/second-factor"), data=sign_in, allow_redirects=False,
                     timeout=20).status_code == 401
    # Another account's passkey is no second step for eli.
    server.cli("users", "create", "fay", "--password-stdin", stdin=PASSWORD + "\n")
    fay = requests.Session()
    sign_in_with_password(fay, server, "fay")
    other = KeyAuthenticator("ES256")
    assert register(fay, server, other).status_code == 200
    foreign = assertion(half, server, other, csrf(page), "confirmation")
    assert half.post(server.url("/login/second-factor"), data=foreign, allow_redirects=False,
                     timeout=20).status_code == 401
    # An administrator's reset removes passkeys too: the password alone signs eli in again.
    server.cli("users", "reset-second-factors", "eli")
    again = requests.Session()
    login = again.get(server.url("/login"), timeout=20)
    assert again.post(server.url("/login/passkey"), data=assertion(again, server, device, csrf(login), "sign_in"),
                      allow_redirects=False, timeout=20).status_code == 401
    assert sign_in_with_password(again, server, "eli").headers["Location"] == "/account"
