"""OpenID Connect Back-Channel Logout 1.0 end to end: `latchkey serve` telling a relying party the
test runs that a session ended, across a restart, and Authlib as the relying party's OpenID client.

The relying party is a web app (Authlib's OAuth2Session signs the person in with the code flow and
PKCE, and reads the ID token's `sid`) whose `backchannel_logout_uri` is an HTTPS address on
loopback (a throwaway certificate authority, and the test-only loopback allowance of the guarded
fetcher, which sends logout tokens as it fetches documents). At first nothing listens there:

  - the person signs out through RP-initiated logout (`id_token_hint`); the logout is queued with
    the sign-out and its first delivery fails;
  - the server is stopped and started again on the same data folder, and only then does the
    relying party come up: the logout queued before the restart arrives, a `logout+jwt` signed
    with a key of the published set, naming the session of the ID token (`sid`), the person
    (`sub`), the app (`aud`) and the back-channel logout event, with no `nonce`;
  - disabling the person (`latchkey users disable`) sends one more for the session her grant came
    from.

The metadata says `backchannel_logout_supported` and `backchannel_logout_session_supported`.
"""
import time
from urllib.parse import parse_qs, urlparse

import pytest
import requests
from authlib.integrations.requests_client import OAuth2Session
from joserfc import jwt as joserfc_jwt
from joserfc.jwk import KeySet

import https_documents
from latchkey_process import LatchkeyServer, free_port, pkce, sign_in_through_pages

PASSWORD = "correct horse battery staple"
REDIRECT = "https://rp.example/cb"
EVENT = "http://schemas.openid.net/event/backchannel-logout"
TIMEOUT = 20


@pytest.fixture(scope="module")
def authority(tmp_path_factory):
    return https_documents.TestAuthority(tmp_path_factory.mktemp("authority"))


def start(data, authority, workdir):
    return LatchkeyServer(["--data-dir", data, "--client-metadata-ca-file", authority.ca_file,
                           "--client-metadata-allow-loopback"], workdir=workdir)


def wait_for_posts(rp, count, seconds=40):
    deadline = time.monotonic() + seconds
    while len(rp.posts) < count and time.monotonic() < deadline:
        time.sleep(0.2)
    assert len(rp.posts) >= count, f"expected {count} logout tokens at the relying party, got {len(rp.posts)}"
    return rp.posts[count - 1]


def verified_logout_token(server, post, client_id):
    path, headers, body = post
    assert path == "/backchannel-logout" and headers["Content-Type"] == "application/x-www-form-urlencoded", post
    token = parse_qs(body.decode())["logout_token"][0]
    keys = KeySet.import_key_set(requests.get(server.issuer + "/oauth2/jwks", timeout=TIMEOUT).json())
    decoded = joserfc_jwt.decode(token, keys, algorithms=["RS256", "ES256"])
    assert decoded.header["typ"] == "logout+jwt", decoded.header
    claims = decoded.claims
    assert claims["aud"] == client_id and claims["events"] == {EVENT: {}}, claims
    assert "nonce" not in claims and claims["exp"] - claims["iat"] == 120 and claims["jti"], claims
    return claims


def test_logout_reaches_the_relying_party_after_a_restart_with_it_down_at_first(tmp_path_factory, authority):
    data = tmp_path_factory.mktemp("latchkey-data")
    workdir = tmp_path_factory.mktemp("latchkey-serve")
    rp_port = free_port()
    server = start(data, authority, workdir)
    try:
        metadata = requests.get(server.issuer + "/.well-known/openid-configuration", timeout=TIMEOUT).json()
        assert metadata["backchannel_logout_supported"] is True
        assert metadata["backchannel_logout_session_supported"] is True
        carol = server.cli("users", "create", "carol", "--password-stdin", stdin=PASSWORD + "\n")
        rp = server.cli("clients", "create", "--type", "web", "--name", "Relying party", "--scope", "openid",
                        "--scope", "profile", "--redirect-uri", REDIRECT,
                        "--backchannel-logout-uri", f"https://localhost:{rp_port}/backchannel-logout")
        assert rp["backchannel_logout_uri"] == f"https://localhost:{rp_port}/backchannel-logout", rp

        # Authlib signs carol in, the browser being a requests.Session through the pages.
        verifier, _ = pkce()
        oauth = OAuth2Session(rp["client_id"], rp["client_secret"], scope="openid profile", redirect_uri=REDIRECT,
                              code_challenge_method="S256")
        url, _ = oauth.create_authorization_url(metadata["authorization_endpoint"], code_verifier=verifier)
        browser = requests.Session()
        signed_in = sign_in_through_pages(browser, url, "carol", PASSWORD)
        tokens = oauth.fetch_token(metadata["token_endpoint"], authorization_response=signed_in.location,
                                   code_verifier=verifier)
        keys = KeySet.import_key_set(requests.get(metadata["jwks_uri"], timeout=TIMEOUT).json())
        id_claims = joserfc_jwt.decode(tokens["id_token"], keys, algorithms=["RS256", "ES256"]).claims
        assert id_claims["sub"] == carol["user_id"] and len(id_claims["sid"]) == 32, id_claims

        # RP-initiated logout with the ID token as hint: the session ends, a logout is queued.
        out = browser.get(server.issuer + "/oauth2/logout", params={"id_token_hint": tokens["id_token"]},
                          allow_redirects=False, timeout=TIMEOUT)
        assert out.status_code in (200, 303), out.text[:300]
        time.sleep(1.5)  # its first delivery fails: nothing listens on the relying party's port
    finally:
        assert server.stop() == 0, server.output_tail()

    with https_documents.DocumentServer(authority, port=rp_port) as relying_party:
        relying_party.route("/backchannel-logout", body=b"")
        server = start(data, authority, workdir)
        try:
            claims = verified_logout_token(server, wait_for_posts(relying_party, 1), rp["client_id"])
            assert claims["sub"] == carol["user_id"] and claims["sid"] == id_claims["sid"], claims
            assert claims["iss"] == server.issuer, claims
            # Disabling carol ends every session of hers: one more for each session her grants came from.
            server.cli("users", "disable", "carol")
            claims = verified_logout_token(server, wait_for_posts(relying_party, 2), rp["client_id"])
            assert claims["sub"] == carol["user_id"] and claims["sid"] == id_claims["sid"], claims
            assert len(relying_party.posts) == 2, relying_party.posts
        finally:
            assert server.stop() == 0, server.output_tail()


def test_a_back_channel_uri_is_only_for_web_apps_and_https(tmp_path_factory, authority):
    data = tmp_path_factory.mktemp("latchkey-data")
    server = start(data, authority, tmp_path_factory.mktemp("latchkey-serve"))
    try:
        for args in (["--type", "native", "--redirect-uri", "com.example.app:/cb",
                      "--backchannel-logout-uri", "https://rp.example/logout"],
                     ["--type", "web", "--redirect-uri", REDIRECT, "--backchannel-logout-uri", "http://rp.example/out"]):
            refused = server.cli("clients", "create", "--name", "Bad", "--scope", "openid", *args, check=False)
            assert refused.returncode != 0, refused
    finally:
        assert server.stop() == 0, server.output_tail()
