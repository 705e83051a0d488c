"""The OpenID Foundation's certification test plans that apply to Latchkey, as tests under the
plans' and modules' names: a class per plan, a test per module.

The Foundation's conformance suite is a Java service reached over the internet, neither on PyPI
nor in Debian, so these are our own readings of what each module checks of an OpenID Provider,
run against a real `latchkey serve` by a requests.Session playing the browser and a confidential
web app as the relying party (client_secret_basic). A module's name says which of the suite's
modules a test stands for; a failure here would be a failure there. Plans:

  - oidcc-config-certification-test-plan: the discovery document;
  - oidcc-formpost-basic-certification-test-plan: the basic code flow with response_mode=form_post
    (the modules whose outcome the response mode changes);
  - oidcc-rp-initiated-logout-certification-test-plan: OpenID Connect RP-Initiated Logout 1.0;
  - oidcc-backchannel-rp-initiated-logout-certification-test-plan: Back-Channel Logout 1.0, the
    relying party's back channel an HTTPS server on loopback (a throwaway certificate authority,
    and the guarded fetcher's test-only loopback allowance).
"""
import html
import re
import secrets
import time
from urllib.parse import parse_qs, urlencode, urlparse

import pytest
import requests
from joserfc import jwt as joserfc_jwt
from joserfc.jwk import KeySet

import https_documents
from latchkey_process import LatchkeyServer, pkce, sign_in_through_pages

PASSWORD = "correct horse battery staple"
REDIRECT = "https://rp.example/cb"
AFTER_LOGOUT = "https://rp.example/logged-out"
TIMEOUT = 20


@pytest.fixture(scope="module")
def authority(tmp_path_factory):
    return https_documents.TestAuthority(tmp_path_factory.mktemp("authority"))


@pytest.fixture(scope="module")
def back_channel(authority):
    with https_documents.DocumentServer(authority) as relying_party:
        relying_party.route("/backchannel-logout", body=b"")
        yield relying_party


@pytest.fixture(scope="module")
def server(tmp_path_factory, authority):
    server = LatchkeyServer(["--data-dir", tmp_path_factory.mktemp("latchkey-data"),
                             "--client-metadata-ca-file", authority.ca_file, "--client-metadata-allow-loopback"],
                            workdir=tmp_path_factory.mktemp("latchkey-serve"))
    yield server
    assert server.stop() == 0, server.output_tail()


@pytest.fixture(scope="module")
def rp(server, back_channel):
    server.cli("users", "create", "dana", "--password-stdin", stdin=PASSWORD + "\n")
    return server.cli("clients", "create", "--type", "web", "--name", "Certification RP", "--scope", "openid",
                      "--scope", "profile", "--redirect-uri", REDIRECT, "--post-logout-redirect-uri", AFTER_LOGOUT,
                      "--backchannel-logout-uri", back_channel.url("/backchannel-logout"))


@pytest.fixture(scope="module")
def metadata(server):
    return requests.get(server.issuer + "/.well-known/openid-configuration", timeout=TIMEOUT).json()


def authorization_url(server, rp, **extra):
    verifier, challenge = pkce()
    params = {"response_type": "code", "client_id": rp["client_id"], "redirect_uri": REDIRECT,
              "scope": "openid profile", "state": secrets.token_urlsafe(8), "nonce": secrets.token_urlsafe(8),
              "code_challenge": challenge, "code_challenge_method": "S256", **extra}
    params = {name: value for name, value in params.items() if value is not None}
    return server.issuer + "/oauth2/authorize?" + urlencode(params), params, verifier


def redeem(server, rp, code, verifier):
    return requests.post(server.issuer + "/oauth2/token", auth=(rp["client_id"], rp["client_secret"]), timeout=TIMEOUT,
                         data={"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT,
                               "code_verifier": verifier})


def id_token_claims(server, token):
    keys = KeySet.import_key_set(requests.get(server.issuer + "/oauth2/jwks", timeout=TIMEOUT).json())
    return joserfc_jwt.decode(token, keys, algorithms=["RS256", "ES256"]).claims


def signed_in(server, rp):
    """A browser signed in as dana through the pages, and the app's tokens from that sign-in."""
    url, params, verifier = authorization_url(server, rp)
    browser = requests.Session()
    location = sign_in_through_pages(browser, url, "dana", PASSWORD).location
    answer = parse_qs(urlparse(location).query)
    assert answer["state"] == [params["state"]], location
    tokens = redeem(server, rp, answer["code"][0], verifier)
    assert tokens.status_code == 200, tokens.text
    return browser, tokens.json()


def form_fields(page):
    return {html.unescape(name): html.unescape(value)
            for name, value in re.findall(r'<input type="hidden" name="([^"]*)" value="([^"]*)"', page)}


def logout(server, browser, **params):
    return browser.get(server.issuer + "/oauth2/logout", params=params, allow_redirects=False, timeout=TIMEOUT)


def still_signed_in(server, rp, browser):
    url, _, _ = authorization_url(server, rp, prompt="none")
    answer = browser.get(url, allow_redirects=False, timeout=TIMEOUT)
    assert answer.status_code == 303, answer.text[:300]
    return "code" in parse_qs(urlparse(answer.headers["Location"]).query)


class TestOidccConfigCertificationTestPlan:
    def test_oidcc_discovery_endpoint_verification(self, server, metadata):
        assert metadata["issuer"] == server.issuer
        for member in ("authorization_endpoint", "token_endpoint", "userinfo_endpoint", "jwks_uri",
                       "end_session_endpoint"):
            assert metadata[member].startswith(server.issuer + "/"), (member, metadata.get(member))
        assert "code" in metadata["response_types_supported"] and "openid" in metadata["scopes_supported"]
        assert "public" in metadata["subject_types_supported"]
        assert "RS256" in metadata["id_token_signing_alg_values_supported"]
        assert {"query", "fragment", "form_post"} <= set(metadata["response_modes_supported"])
        assert {"sub", "iss", "auth_time"} <= set(metadata["claims_supported"])
        keys = requests.get(metadata["jwks_uri"], timeout=TIMEOUT).json()["keys"]
        assert keys and all(key.get("kid") and "d" not in key for key in keys), keys
        assert metadata["backchannel_logout_supported"] is True and metadata["backchannel_logout_session_supported"]


class TestOidccFormpostBasicCertificationTestPlan:
    def form_post(self, server, rp, browser, **extra):
        url, params, verifier = authorization_url(server, rp, response_mode="form_post", **extra)
        page = browser.get(url, allow_redirects=False, timeout=TIMEOUT)
        assert page.status_code == 200 and "Location" not in page.headers, page.text[:300]
        assert f'action="{REDIRECT}"' in page.text, page.text[:300]
        return form_fields(page.text), params, verifier

    def test_oidcc_server(self, server, rp):
        browser, _ = signed_in(server, rp)
        fields, params, verifier = self.form_post(server, rp, browser)
        assert fields["state"] == params["state"] and fields["iss"] == server.issuer, fields
        tokens = redeem(server, rp, fields["code"], verifier).json()
        claims = id_token_claims(server, tokens["id_token"])
        assert claims["iss"] == server.issuer and claims["aud"] == rp["client_id"] and claims["nonce"] == params["nonce"]
        assert claims["exp"] > time.time() and claims["sub"] and claims["at_hash"], claims

    def test_oidcc_codereuse(self, server, rp):
        browser, _ = signed_in(server, rp)
        fields, _, verifier = self.form_post(server, rp, browser)
        assert redeem(server, rp, fields["code"], verifier).status_code == 200
        again = redeem(server, rp, fields["code"], verifier)
        assert again.status_code == 400 and again.json()["error"] == "invalid_grant", again.text

    def test_oidcc_ensure_registered_redirect_uri(self, server, rp):
        browser, _ = signed_in(server, rp)
        url, _, _ = authorization_url(server, rp, response_mode="form_post", redirect_uri="https://attacker.example/cb")
        page = browser.get(url, allow_redirects=False, timeout=TIMEOUT)
        assert page.status_code == 400 and "attacker.example" not in page.headers.get("Location", ""), page.text[:200]
        assert "<form method=\"post\" action=\"https://attacker" not in page.text

    def test_oidcc_response_type_missing(self, server, rp):
        browser, _ = signed_in(server, rp)
        fields, params, _ = self.form_post(server, rp, browser, response_type=None)
        assert fields["error"] in ("invalid_request", "unsupported_response_type") and fields["state"] == params["state"]

    def test_oidcc_prompt_none_not_logged_in(self, server, rp):
        fields, params, _ = self.form_post(server, rp, requests.Session(), prompt="none")
        assert fields["error"] == "login_required" and fields["state"] == params["state"], fields


class TestOidccRpInitiatedLogoutCertificationTestPlan:
    def test_oidcc_rp_initiated_logout(self, server, rp):
        browser, tokens = signed_in(server, rp)
        out = logout(server, browser, id_token_hint=tokens["id_token"], post_logout_redirect_uri=AFTER_LOGOUT,
                     state="xyz")
        assert out.status_code == 303 and out.headers["Location"] == AFTER_LOGOUT + "?state=xyz", out.headers
        assert not still_signed_in(server, rp, browser)

    def test_oidcc_rp_initiated_logout_bad_post_logout_redirect_uri(self, server, rp):
        browser, tokens = signed_in(server, rp)
        out = logout(server, browser, id_token_hint=tokens["id_token"],
                     post_logout_redirect_uri="https://rp.example/elsewhere", state="xyz")
        assert out.status_code == 400 and "Location" not in out.headers
        assert still_signed_in(server, rp, browser)

    def test_oidcc_rp_initiated_logout_query_added_to_post_logout_redirect_uri(self, server, rp):
        browser, tokens = signed_in(server, rp)
        out = logout(server, browser, id_token_hint=tokens["id_token"], post_logout_redirect_uri=AFTER_LOGOUT + "?x=1")
        assert out.status_code == 400 and "Location" not in out.headers

    def test_oidcc_rp_initiated_logout_modified_id_token_hint(self, server, rp):
        browser, tokens = signed_in(server, rp)
        header, body, signature = tokens["id_token"].split(".")
        forged = ".".join([header, body, ("A" if signature[0] != "A" else "B") + signature[1:]])
        out = logout(server, browser, id_token_hint=forged, post_logout_redirect_uri=AFTER_LOGOUT)
        assert out.status_code == 400 and "Location" not in out.headers
        assert still_signed_in(server, rp, browser)

    def test_oidcc_rp_initiated_logout_no_id_token_hint(self, server, rp):
        browser, _ = signed_in(server, rp)
        out = logout(server, browser, client_id=rp["client_id"], post_logout_redirect_uri=AFTER_LOGOUT, state="s")
        assert out.status_code == 200 and "Location" not in out.headers and 'name="decision"' in out.text
        assert still_signed_in(server, rp, browser), "no hint: the person is asked, not signed out"

    def test_oidcc_rp_initiated_logout_no_params(self, server, rp):
        browser, _ = signed_in(server, rp)
        out = logout(server, browser)
        assert out.status_code == 200 and "Location" not in out.headers and 'name="decision"' in out.text

    def test_oidcc_rp_initiated_logout_only_state(self, server, rp):
        browser, _ = signed_in(server, rp)
        out = logout(server, browser, state="only")
        assert out.status_code == 200 and "Location" not in out.headers and 'name="decision"' in out.text

    def test_oidcc_rp_initiated_logout_no_post_logout_redirect_uri(self, server, rp):
        browser, tokens = signed_in(server, rp)
        out = logout(server, browser, id_token_hint=tokens["id_token"])
        assert out.status_code == 200 and "Location" not in out.headers and "signed out" in out.text
        assert not still_signed_in(server, rp, browser)

    def test_oidcc_rp_initiated_logout_no_state(self, server, rp):
        browser, tokens = signed_in(server, rp)
        out = logout(server, browser, id_token_hint=tokens["id_token"], post_logout_redirect_uri=AFTER_LOGOUT)
        assert out.status_code == 303 and out.headers["Location"] == AFTER_LOGOUT, out.headers


class TestOidccBackchannelRpInitiatedLogoutCertificationTestPlan:
    def test_oidcc_backchannel_rp_initiated_logout(self, server, rp, back_channel):
        browser, tokens = signed_in(server, rp)
        sid = id_token_claims(server, tokens["id_token"])["sid"]
        out = logout(server, browser, id_token_hint=tokens["id_token"], post_logout_redirect_uri=AFTER_LOGOUT)
        assert out.status_code == 303
        # The other modules' sign-outs send their own logouts to the same back channel: this
        # module's is the one naming its session.
        mine = []
        deadline = time.monotonic() + 15
        while not mine and time.monotonic() < deadline:
            time.sleep(0.1)
            sent = [parse_qs(body.decode())["logout_token"][0] for _, _, body in list(back_channel.posts)]
            mine = [claims for claims in (id_token_claims(server, token) for token in sent) if claims.get("sid") == sid]
        assert len(mine) == 1, mine
        claims = mine[0]
        assert claims["iss"] == server.issuer and claims["aud"] == rp["client_id"] and claims["jti"] and claims["iat"]
        assert claims["events"] == {"http://schemas.openid.net/event/backchannel-logout": {}} and "nonce" not in claims
