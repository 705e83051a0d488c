"""DPoP (RFC 9449) against `latchkey serve --dev`, with requests-oauth2client as the app.

requests-oauth2client makes its own proofs (jwskate underneath), binds tokens, answers
use_dpop_nonce challenges and sends bound tokens to resources. The attacks are made by hand with
its DPoPKey: a replayed proof, wrong htm or htu, a stale iat, a proof by another key, a bound
token sent as a bearer token. `latchkey login --dpop` and `latchkey proof` run as processes.
"""
import base64
import hashlib
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlparse

import pytest
import requests
from requests_oauth2client import DPoPKey, DPoPToken, OAuth2Client

from latchkey_process import free_port, latchkey_binary, pkce, serving, sign_in_through_pages


@pytest.fixture(scope="module")
def nonce_server(tmp_path_factory):
    with serving(tmp_path_factory, "--dev", "--dpop-nonce") as server:
        yield server


def metadata(server):
    return requests.get(server.issuer + "/.well-known/oauth-authorization-server", timeout=10).json()


def app(server):
    document = metadata(server)
    return OAuth2Client(token_endpoint=document["token_endpoint"], client_id=server.dev["client_id"],
                        userinfo_endpoint=document["userinfo_endpoint"], dpop_bound_access_tokens=True,
                        testing=True)  # testing: plain http on loopback is allowed


def user_token(server, client, dpop_key=None):
    """The demo user's tokens for the --dev app, the code exchanged by requests-oauth2client with a proof."""
    verifier, challenge = pkce()
    redirect_uri = f"http://127.0.0.1:{free_port()}/callback"
    url = server.issuer + "/oauth2/authorize?" + urlencode({
        "response_type": "code", "client_id": server.dev["client_id"], "redirect_uri": redirect_uri,
        "scope": "openid profile", "state": "s", "code_challenge": challenge, "code_challenge_method": "S256"})
    location = sign_in_through_pages(requests.Session(), url, "demo", server.dev["password"]).location
    code = parse_qs(urlparse(location).query)["code"][0]
    return client.authorization_code(code, validate=False, dpop=True, dpop_key=dpop_key, code_verifier=verifier,
                                     redirect_uri=redirect_uri)


def ath(token):
    return base64.urlsafe_b64encode(hashlib.sha256(token.encode()).digest()).rstrip(b"=").decode()


def userinfo(server, token, proof, scheme="DPoP"):
    headers = {"Authorization": f"{scheme} {token}"}
    if proof is not None:
        headers["DPoP"] = str(proof)
    return requests.get(server.issuer + "/userinfo", headers=headers, timeout=10)


def test_metadata_lists_the_algorithms(server):
    assert metadata(server)["dpop_signing_alg_values_supported"] == ["ES256", "RS256", "EdDSA"]


def test_third_party_client_gets_bound_tokens_and_uses_them(server):
    client = app(server)
    token = user_token(server, client)
    assert isinstance(token, DPoPToken) and token.token_type == "DPoP"
    # requests-oauth2client sends the token with a fresh proof (ath included) on every request.
    answer = requests.get(server.issuer + "/userinfo", auth=token, timeout=10)
    assert answer.status_code == 200, answer.text
    assert answer.json()["username"] == "demo"
    # Refreshed with a proof by the same key: still bound, still usable.
    renewed = client.refresh_token(token)
    assert renewed.token_type == "DPoP"
    assert requests.get(server.issuer + "/userinfo", auth=renewed, timeout=10).status_code == 200


def test_bound_token_as_bearer_or_with_another_key_is_refused(server):
    client = app(server)
    token = user_token(server, client)
    as_bearer = userinfo(server, token.access_token, None, scheme="Bearer")
    assert as_bearer.status_code == 401
    assert 'error="invalid_token"' in as_bearer.headers["WWW-Authenticate"]
    thief = DPoPKey.generate()
    stolen = userinfo(server, token.access_token,
                      thief.proof("GET", server.issuer + "/userinfo", ath=ath(token.access_token)))
    assert stolen.status_code == 401
    assert stolen.headers["WWW-Authenticate"].startswith("DPoP ")
    assert 'error="invalid_dpop_proof"' in stolen.headers["WWW-Authenticate"]
    # A refresh by the thief's key fails as well (a public client's refresh token is bound, §5).
    refresh = requests.post(metadata(server)["token_endpoint"], timeout=10,
                            data={"grant_type": "refresh_token", "refresh_token": token.refresh_token,
                                  "client_id": server.dev["client_id"]},
                            headers={"DPoP": str(thief.proof("POST", metadata(server)["token_endpoint"]))})
    assert refresh.status_code == 400 and refresh.json()["error"] == "invalid_dpop_proof"


def test_replayed_wrong_method_wrong_url_and_stale_proofs_are_refused(server):
    client = app(server)
    token = user_token(server, client)
    key = token.dpop_key
    url = server.issuer + "/userinfo"
    proof = key.proof("GET", url, ath=ath(token.access_token))
    assert userinfo(server, token.access_token, proof).status_code == 200
    replay = userinfo(server, token.access_token, proof)
    assert replay.status_code == 401 and replay.json()["error"] == "invalid_dpop_proof"
    wrong_method = userinfo(server, token.access_token, key.proof("POST", url, ath=ath(token.access_token)))
    assert wrong_method.status_code == 401 and wrong_method.json()["error"] == "invalid_dpop_proof"
    wrong_url = userinfo(server, token.access_token,
                         key.proof("GET", server.issuer + "/oauth2/token", ath=ath(token.access_token)))
    assert wrong_url.status_code == 401 and wrong_url.json()["error"] == "invalid_dpop_proof"
    no_ath = userinfo(server, token.access_token, key.proof("GET", url))
    assert no_ath.status_code == 401 and no_ath.json()["error"] == "invalid_dpop_proof"
    stale_key = DPoPKey(private_key=key.private_key, iat_generator=lambda: int(time.time()) - 600)
    stale = userinfo(server, token.access_token, stale_key.proof("GET", url, ath=ath(token.access_token)))
    assert stale.status_code == 401 and stale.json()["error"] == "invalid_dpop_proof"


def test_introspection_names_the_key(server):
    created = server.cli("clients", "create", "--type", "service", "--name", "Reports", "--scope", "activity")
    service = OAuth2Client(token_endpoint=metadata(server)["token_endpoint"],
                           auth=(created["client_id"], created["client_secret"]), dpop_bound_access_tokens=True,
                           testing=True)
    token = service.client_credentials(scope="activity", dpop=True)
    assert token.token_type == "DPoP"
    answer = requests.post(metadata(server)["introspection_endpoint"], data={"token": token.access_token},
                           auth=(created["client_id"], created["client_secret"]), timeout=10).json()
    assert answer["active"] is True and answer["token_type"] == "DPoP"
    assert answer["cnf"] == {"jkt": token.dpop_key.dpop_jkt}


def test_nonces_are_asked_for_and_the_client_follows(nonce_server):
    # Without a nonce: use_dpop_nonce and a DPoP-Nonce header.
    key = DPoPKey.generate()
    endpoint = metadata(nonce_server)["token_endpoint"]
    bare = requests.post(endpoint, data={"grant_type": "refresh_token", "refresh_token": "x",
                                         "client_id": nonce_server.dev["client_id"]},
                         headers={"DPoP": str(key.proof("POST", endpoint))}, timeout=10)
    assert bare.status_code == 400 and bare.json()["error"] == "use_dpop_nonce"
    assert bare.headers["DPoP-Nonce"]
    # requests-oauth2client retries with it by itself, here and at the resource.
    client = app(nonce_server)
    token = user_token(nonce_server, client)
    assert token.token_type == "DPoP"
    assert requests.get(nonce_server.issuer + "/userinfo", auth=token, timeout=10).status_code == 200
    # At the resource, a proof without a nonce: 401, use_dpop_nonce in the DPoP challenge, a nonce to use.
    bare = userinfo(nonce_server, token.access_token,
                    DPoPKey(private_key=token.dpop_key.private_key).proof(
                        "GET", nonce_server.issuer + "/userinfo", ath=ath(token.access_token)))
    assert bare.status_code == 401
    assert 'error="use_dpop_nonce"' in bare.headers["WWW-Authenticate"] and bare.headers["DPoP-Nonce"]


def test_latchkey_login_dpop_and_latchkey_proof(server, tmp_path):
    environment = {"XDG_CONFIG_HOME": str(tmp_path / "config"), "PATH": "/usr/bin:/bin",
                   "BROWSER": f"{sys.executable} {Path(__file__).resolve().parents[1] / 'Support' / 'browser_sign_in.py'}",
                   "LK_PASSWORD": server.dev["password"]}
    login = subprocess.run([latchkey_binary(), "login", "--dpop", "--issuer", server.issuer, "--client-id",
                            server.dev["client_id"], "--scope", "profile", "--timeout", "60"],
                           env=environment, capture_output=True, text=True, timeout=120)
    assert login.returncode == 0, login.stderr + login.stdout
    assert "bound to the DPoP key" in login.stdout
    key_file = tmp_path / "config" / "latchkey" / "dpop-key.pem"
    assert oct(key_file.stat().st_mode & 0o777) == "0o600"
    token = subprocess.run([latchkey_binary(), "token"], env=environment, capture_output=True, text=True,
                           timeout=60).stdout.strip()
    # The token alone is not enough; with a proof from `latchkey proof` it is.
    assert userinfo(server, token, None, scheme="Bearer").status_code == 401
    proof = subprocess.run([latchkey_binary(), "proof", "--method", "GET", "--url", server.issuer + "/userinfo",
                            "--access-token", token], env=environment, capture_output=True, text=True,
                           timeout=60).stdout.strip()
    assert userinfo(server, token, proof).status_code == 200
    # And `latchkey token --refresh` refreshes with a proof by the same key.
    refreshed = subprocess.run([latchkey_binary(), "token", "--refresh", "--json"], env=environment,
                               capture_output=True, text=True, timeout=60)
    assert refreshed.returncode == 0, refreshed.stderr
    assert '"token_type":"DPoP"' in refreshed.stdout


def test_a_code_bound_with_dpop_jkt_needs_that_key(server):
    """RFC 9449 §10: the authorization request names the key (`dpop_jkt`, as requests-oauth2client
    computes it); the code is redeemed only with a proof by that key, so a stolen code is useless."""
    client = app(server)
    key, other = DPoPKey.generate(), DPoPKey.generate()
    verifier, challenge = pkce()
    redirect_uri = f"http://127.0.0.1:{free_port()}/callback"
    url = server.issuer + "/oauth2/authorize?" + urlencode({
        "response_type": "code", "client_id": server.dev["client_id"], "redirect_uri": redirect_uri,
        "scope": "openid profile", "state": "s", "code_challenge": challenge, "code_challenge_method": "S256",
        "dpop_jkt": key.dpop_jkt})
    location = sign_in_through_pages(requests.Session(), url, "demo", server.dev["password"]).location
    code = parse_qs(urlparse(location).query)["code"][0]
    form = {"grant_type": "authorization_code", "code": code, "redirect_uri": redirect_uri,
            "client_id": server.dev["client_id"], "code_verifier": verifier}
    token_url = metadata(server)["token_endpoint"]
    bare = requests.post(token_url, data=form, timeout=10)
    assert bare.status_code == 400 and bare.json()["error"] == "invalid_dpop_proof", bare.text
    stolen = requests.post(token_url, data=form, timeout=10,
                           headers={"DPoP": str(other.proof(htm="POST", htu=token_url))})
    assert stolen.status_code == 400 and stolen.json()["error"] == "invalid_dpop_proof", stolen.text
    token = client.authorization_code(code, validate=False, dpop=True, dpop_key=key, code_verifier=verifier,
                                      redirect_uri=redirect_uri)
    assert isinstance(token, DPoPToken)
