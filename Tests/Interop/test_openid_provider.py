"""Latchkey's OpenID Connect provider as a third-party relying party sees it.

The tests named test_oidcc_* follow the test modules of the OpenID Foundation's conformance suite
(the Basic OP and Config OP certification plans) that apply to a provider of the authorization
code flow: Latchkey has response_type=code only, no request objects and no dynamic registration,
so the implicit, hybrid, request-object and registration modules are left out, and the two
request-object modules check that such requests are refused as unsupported. The other tests feed
the provider bad input: forged id_token_hint values and RP-initiated logout requests.

Authlib's OAuth2Session plays the relying party. ID tokens are checked as Authlib's own OpenID
clients check them (joserfc, with the keys fetched from jwks_uri, then authlib.oidc.core.CodeIDToken
for iss, aud, exp, nonce and at_hash), and once more, independently, with `cryptography`.
A requests.Session plays the user's browser: it signs in and answers the consent page.

One `latchkey serve` (SQLite in a temporary folder) runs for the module. Each test registers its
own client with the CLI, so consent remembered in one test never changes what another sees.
"""
import base64
import hashlib
import hmac
import json
import re
import secrets
import time
from collections import namedtuple
from urllib.parse import parse_qs, urlencode, urljoin, urlparse

import pytest
import requests
from authlib.integrations.requests_client import OAuth2Session
from authlib.oidc.core import CodeIDToken
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
from joserfc import jwt
from joserfc.jwk import KeySet, RSAKey

from latchkey_process import free_port, hidden_fields

USERNAME = "alice"
PASSWORD = "correct horse battery staple"
REDIRECT_URI = "https://rp.example/callback"
POST_LOGOUT_REDIRECT_URI = "https://rp.example/signed-out"
NATIVE_REDIRECT_URI = "http://127.0.0.1/callback"  # a loopback redirect: any port matches
ALL_SCOPES = "openid profile email"
TIMEOUT = 20


# --------------------------------------------------------------------------------------------- fixtures

# The `server` fixture's (Tests/conftest.py): no --dev, the tests make their own users and apps.
SERVE_ARGS = []


@pytest.fixture(scope="module")
def user(server):
    """The person who signs in: `users create --json`, whose user_id every ID token's sub must be."""
    return server.cli("users", "create", USERNAME, "--password-stdin", "--name", "Alice Liddell",
                      "--email", "alice@example.com", "--email-verified", stdin=PASSWORD + "\n")


@pytest.fixture(scope="module")
def metadata(server):
    response = requests.get(server.url("/.well-known/openid-configuration"), timeout=TIMEOUT)
    assert response.status_code == 200, response.text
    return response.json()


@pytest.fixture(scope="module")
def jwks(metadata):
    response = requests.get(metadata["jwks_uri"], timeout=TIMEOUT)
    assert response.status_code == 200, response.text
    return response.json()


# --------------------------------------------------------------------------------------------- helpers

def register(server, kind="web", alg=None, scopes=("openid", "profile", "email")):
    """A new client, registered with the CLI; returns `clients create --json`."""
    args = ["clients", "create", "--type", kind, "--name", f"Relying party {secrets.token_hex(3)}",
            "--redirect-uri", REDIRECT_URI if kind == "web" else NATIVE_REDIRECT_URI,
            "--post-logout-redirect-uri", POST_LOGOUT_REDIRECT_URI]
    for scope in scopes:
        args += ["--scope", scope]
    if alg:
        args += ["--id-token-signing-alg", alg]
    return server.cli(*args)


def relying_party(client, scope=ALL_SCOPES, auth="client_secret_basic"):
    """Authlib as the client's back end: a web client with its secret, a native one with PKCE."""
    if client["confidential"]:
        return OAuth2Session(client["client_id"], client["client_secret"], scope=scope,
                             redirect_uri=REDIRECT_URI, token_endpoint_auth_method=auth)
    return OAuth2Session(client["client_id"], scope=scope, code_challenge_method="S256",
                         redirect_uri=f"http://127.0.0.1:{free_port()}/callback", token_endpoint_auth_method="none")


def query(location):
    """The query parameters of a redirect, one value each."""
    return {name: values[0] for name, values in parse_qs(urlparse(location).query).items()}


def b64decode(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def b64encode(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def b64json(value):
    return b64encode(json.dumps(value, separators=(",", ":")).encode())


def unverified(id_token):
    """The (header, claims) of a JWS, unchecked, for tests that look before they verify."""
    header, claims, _ = id_token.split(".")
    return json.loads(b64decode(header)), json.loads(b64decode(claims))


def validated_id_token(token, client, metadata, jwks, nonce=None):
    """Verifies token["id_token"] the way Authlib's OpenID clients do (parse_id_token): joserfc with
    the keys from jwks_uri, only the client's registered alg, then CodeIDToken's checks of iss, aud,
    exp, iat, nonce and at_hash against token["access_token"]. Returns the claims."""
    assert "id_token" in token, f"the token response has no id_token: {token}"
    decoded = jwt.decode(token["id_token"], KeySet.import_key_set(jwks),
                         algorithms=[client["id_token_signed_response_alg"]])
    options = {"iss": {"essential": True, "value": metadata["issuer"]},
               "aud": {"essential": True, "value": client["client_id"]}}
    params = {"nonce": nonce, "client_id": client["client_id"], "access_token": token["access_token"]}
    claims = CodeIDToken(decoded.claims, decoded.header, options, params)
    claims.validate(leeway=5)
    assert claims.header["alg"] == client["id_token_signed_response_alg"]
    assert "at_hash" in claims, "the ID token should carry at_hash (checked against the access token)"
    assert isinstance(claims.get("auth_time"), int), f"auth_time should always be present: {dict(claims)}"
    assert abs(claims["iat"] - time.time()) < 60, f"iat is not now: {claims['iat']}"
    assert claims["exp"] > claims["iat"]
    return claims


def verify_with_cryptography(id_token, jwks):
    """Checks an ID token's signature with `cryptography` alone, with the published key its kid names."""
    header_b64, claims_b64, signature_b64 = id_token.split(".")
    header = json.loads(b64decode(header_b64))
    matching = [key for key in jwks["keys"] if key["kid"] == header["kid"]]
    assert len(matching) == 1, f"kid {header['kid']} should name exactly one key in {jwks}"
    key = matching[0]
    assert key["alg"] == header["alg"] and key["use"] == "sig"
    signed = f"{header_b64}.{claims_b64}".encode()
    signature = b64decode(signature_b64)
    number = lambda text: int.from_bytes(b64decode(text), "big")  # noqa: E731
    if header["alg"] == "RS256":
        public = rsa.RSAPublicNumbers(number(key["e"]), number(key["n"])).public_key()
        public.verify(signature, signed, padding.PKCS1v15(), hashes.SHA256())
    elif header["alg"] == "ES256":
        assert key["crv"] == "P-256" and len(signature) == 64, "ES256 signatures are R || S, 32 bytes each"
        public = ec.EllipticCurvePublicNumbers(number(key["x"]), number(key["y"]), ec.SECP256R1()).public_key()
        der = encode_dss_signature(int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:], "big"))
        public.verify(der, signed, ec.ECDSA(hashes.SHA256()))
    else:
        raise AssertionError(f"unexpected alg {header['alg']}")


Visit = namedtuple("Visit", "location login consent")
Visit.__doc__ = """location: the redirect to the app; login, consent: the sign-in and consent pages shown
(requests responses), None when a page was not shown."""


class Browser:
    """The user's browser: a cookie jar that signs in on the sign-in page and answers the consent page.
    Unlike latchkey_process.sign_in_through_pages, which expects a first sign-in, it also follows a
    signed-in session straight to the consent page or back to the app."""

    def __init__(self, server, username=USERNAME, password=PASSWORD):
        self.base = server.base
        self.http = requests.Session()
        self.username, self.password = username, password

    def get(self, url):
        return self.http.get(urljoin(self.base, url), allow_redirects=False, timeout=TIMEOUT)

    def post(self, url, data):
        return self.http.post(urljoin(self.base, url), data=data, allow_redirects=False, timeout=TIMEOUT)

    def authorize(self, url, form=None, decision="allow"):
        """GETs an authorization URL (or POSTs `form` to it) and goes through whatever pages the
        server shows until it sends the browser back to the app."""
        return self.follow(self.post(url, form) if form is not None else self.get(url), decision)

    def follow(self, response, decision="allow"):
        login = consent = None
        for _ in range(8):
            if response.status_code == 200 and 'action="/oauth2/authorize"' in response.text:
                consent = response  # the consent page: allow (or deny) every scope it offers
                scopes = re.findall(r'name="scope" value="([^"]*)"', response.text)
                response = self.post("/oauth2/authorize", [*hidden_fields(response.text).items(),
                                                           ("decision", decision),
                                                           *[("scope", scope) for scope in scopes]])
                continue
            assert response.status_code == 303, \
                f"{response.request.method} {response.url} answered {response.status_code}: {response.text[:500]}"
            location = urljoin(self.base, response.headers["Location"])
            if not location.startswith(self.base + "/"):
                return Visit(location, login, consent)
            if urlparse(location).path == "/login":
                login = self.get(location)
                assert login.status_code == 200, f"the sign-in page answered {login.status_code}"
                response = self.post("/login", {**hidden_fields(login.text),
                                                "username": self.username, "password": self.password})
            else:  # the consent page, or straight back to the app when consent is remembered
                response = self.get(location)
        raise AssertionError(f"too many pages; the last was {response.url}")


Flow = namedtuple("Flow", "token claims visit state nonce rp")


def code_flow(browser, client, metadata, jwks, scope=ALL_SCOPES, nonce=True, auth="client_secret_basic",
              **params):
    """One authorization code flow: Authlib makes the authorization URL (with a fresh state, a
    fresh nonce unless nonce=False, and PKCE for a native client), the browser goes through the pages, Authlib redeems the
    code, and the ID token is validated. Extra authorization parameters go in `params`."""
    rp = relying_party(client, scope, auth)
    nonce = secrets.token_urlsafe(16) if nonce else None
    verifier = secrets.token_urlsafe(48) if not client["confidential"] else None
    extra = {**params, **({"nonce": nonce} if nonce else {}), **({"code_verifier": verifier} if verifier else {})}
    url, state = rp.create_authorization_url(metadata["authorization_endpoint"], **extra)
    visit = browser.authorize(url)
    callback = query(visit.location)
    assert visit.location.startswith(rp.redirect_uri + "?"), visit.location
    assert "error" not in callback, f"the provider answered with an error: {callback}"
    assert callback["state"] == state and callback["iss"] == metadata["issuer"]
    token = rp.fetch_token(metadata["token_endpoint"], authorization_response=visit.location, state=state,
                           **({"code_verifier": verifier} if verifier else {}))
    claims = validated_id_token(token, client, metadata, jwks, nonce)
    return Flow(token, claims, visit, state, nonce, rp)


def authorization_url(metadata, client, **params):
    """An authorization request URL for a web client, built by hand (for requests Authlib would not
    make); a parameter given as None is left out."""
    params = {"response_type": "code", "client_id": client["client_id"], "redirect_uri": REDIRECT_URI,
              "scope": ALL_SCOPES, "state": secrets.token_urlsafe(12), **params}
    return metadata["authorization_endpoint"] + "?" + urlencode({k: v for k, v in params.items() if v is not None})


def error_redirect(response, expected_error):
    """Asserts an authorization error sent back to the app by redirect; returns its parameters."""
    assert response.status_code == 303, f"expected an error redirect, got {response.status_code}: {response.text[:300]}"
    location = response.headers["Location"]
    assert location.startswith(REDIRECT_URI + "?"), f"the error should go to the app: {location}"
    answer = query(location)
    assert answer.get("error") == expected_error, f"expected error={expected_error}: {answer}"
    assert "code" not in answer
    return answer


def userinfo(metadata, access_token):
    return requests.get(metadata["userinfo_endpoint"], headers={"Authorization": f"Bearer {access_token}"},
                        timeout=TIMEOUT)


def still_signed_in(browser, metadata, client):
    """Whether the browser still has a session: prompt=none for a client it has consented to
    answers with a code (else login_required)."""
    response = browser.get(authorization_url(metadata, client, prompt="none"))
    assert response.status_code == 303, response.text[:300]
    answer = query(response.headers["Location"])
    assert "code" in answer or answer.get("error") == "login_required", answer
    return "code" in answer


# --------------------------------------------------------------------------------------------- discovery

REQUIRED_METADATA = ["issuer", "authorization_endpoint", "token_endpoint", "jwks_uri", "response_types_supported",
                     "subject_types_supported", "id_token_signing_alg_values_supported"]
RECOMMENDED_METADATA = ["userinfo_endpoint", "scopes_supported", "claims_supported"]


def test_oidcc_config_discovery(server):
    """OpenID Connect Discovery 1.0 §3 and §4: the required members, the issuer the document was
    fetched under, and the OAuth (RFC 8414) document the same."""
    response = requests.get(server.issuer + "/.well-known/openid-configuration", timeout=TIMEOUT)
    assert response.status_code == 200
    assert response.headers["Content-Type"].startswith("application/json")
    document = response.json()
    missing = [name for name in REQUIRED_METADATA + RECOMMENDED_METADATA if name not in document]
    assert not missing, f"discovery lacks {missing}"
    assert document["issuer"] == server.issuer, "the issuer must be the URL the document was fetched under"
    oauth = requests.get(server.issuer + "/.well-known/oauth-authorization-server", timeout=TIMEOUT).json()
    assert oauth == document, "the two metadata documents should be the same"

    issuer = document["issuer"]
    assert document["authorization_endpoint"] == issuer + "/oauth2/authorize"
    assert document["token_endpoint"] == issuer + "/oauth2/token"
    assert document["userinfo_endpoint"] == issuer + "/userinfo"
    assert document["jwks_uri"] == issuer + "/oauth2/jwks"
    assert document["end_session_endpoint"] == issuer + "/oauth2/logout"
    assert {"openid", "profile", "email"} <= set(document["scopes_supported"])
    assert "code" in document["response_types_supported"]
    assert document["subject_types_supported"] == ["public"]
    assert document["id_token_signing_alg_values_supported"] == ["RS256", "ES256"]
    assert "none" not in document["id_token_signing_alg_values_supported"]
    assert {"sub", "iss", "aud", "exp", "iat", "auth_time", "nonce", "name", "email"} \
        <= set(document["claims_supported"])
    assert document["code_challenge_methods_supported"] == ["S256"]
    assert {"none", "login", "consent"} <= set(document["prompt_values_supported"])
    assert document["request_parameter_supported"] is False
    assert document["request_uri_parameter_supported"] is False
    assert document["claims_parameter_supported"] is False
    assert {"client_secret_basic", "client_secret_post"} <= set(document["token_endpoint_auth_methods_supported"])


def test_jwks_publishes_public_signing_keys_only(jwks, metadata):
    """The JWKS at jwks_uri: an RSA and a P-256 key, each with kid, alg and use=sig, and no private part."""
    keys = jwks["keys"]
    assert {key["alg"] for key in keys} >= set(metadata["id_token_signing_alg_values_supported"])
    assert len({key["kid"] for key in keys}) == len(keys), "kids should be unique"
    for key in keys:
        assert key["use"] == "sig" and key["kid"], key
        private = {"d", "p", "q", "dp", "dq", "qi", "k"} & set(key)
        assert not private, f"the JWKS publishes private key members {private}: {key['kid']}"
        if key["kty"] == "RSA":
            assert key["alg"] == "RS256" and key["n"] and key["e"]
            assert len(b64decode(key["n"])) >= 256, "RSA keys should be at least 2048 bits"
        else:
            assert key["kty"] == "EC" and key["alg"] == "ES256" and key["crv"] == "P-256" and key["x"] and key["y"]
    KeySet.import_key_set(jwks)  # joserfc accepts every key


# --------------------------------------------------------------------------------------------- the code flow

def test_oidcc_server(server, user, metadata, jwks):
    """The whole flow for an RS256 web client: sign-in, consent, code, tokens, a valid ID token."""
    client = register(server)
    flow = code_flow(Browser(server), client, metadata, jwks)
    assert flow.visit.login is not None and flow.visit.consent is not None
    assert flow.token["token_type"] == "Bearer" and flow.token["expires_in"] > 0
    claims = flow.claims
    assert claims["sub"] == user["user_id"]
    assert claims["aud"] == client["client_id"] or claims["aud"] == [client["client_id"]]
    assert claims["nonce"] == flow.nonce
    assert claims["amr"] == ["pwd"]
    assert claims.header["alg"] == "RS256"
    assert abs(claims["auth_time"] - time.time()) < 60
    me = flow.rp.get(metadata["userinfo_endpoint"])
    assert me.status_code == 200 and me.json()["sub"] == claims["sub"]


def test_oidcc_server_es256(server, user, metadata, jwks):
    """The same for a client registered with --id-token-signing-alg ES256."""
    client = register(server, alg="ES256")
    assert client["id_token_signed_response_alg"] == "ES256"
    flow = code_flow(Browser(server), client, metadata, jwks)
    es256 = [key["kid"] for key in jwks["keys"] if key["alg"] == "ES256"]
    assert flow.claims.header["alg"] == "ES256" and flow.claims.header["kid"] in es256
    assert flow.claims["sub"] == user["user_id"]
    verify_with_cryptography(flow.token["id_token"], jwks)


def test_oidcc_server_client_secret_post(server, user, metadata, jwks):
    """The code redeemed with the client's secret in the form body (client_secret_post)."""
    client = register(server)
    flow = code_flow(Browser(server), client, metadata, jwks, auth="client_secret_post")
    assert flow.claims["sub"] == user["user_id"]


def test_oidcc_idtoken_signature(server, user, metadata, jwks):
    """RS256 and ES256 ID tokens verify with `cryptography` and the key from jwks_uri that the
    header's kid names; a changed claim does not."""
    for alg in ("RS256", "ES256"):
        client = register(server, alg=alg)
        id_token = code_flow(Browser(server), client, metadata, jwks).token["id_token"]
        verify_with_cryptography(id_token, jwks)
        header, _, signature = id_token.split(".")
        forged = b64json({**unverified(id_token)[1], "sub": "someone-else"})
        with pytest.raises(InvalidSignature):
            verify_with_cryptography(f"{header}.{forged}.{signature}", jwks)


def test_oidcc_response_type_missing(server, user, metadata):
    """No response_type: an invalid_request error, sent back to the app (the client and its
    redirect_uri are valid, so the error may be redirected)."""
    client = register(server)
    url = authorization_url(metadata, client, response_type=None)
    answer = error_redirect(Browser(server).get(url), "invalid_request")
    assert answer["state"] == query(url)["state"]
    assert answer["iss"] == metadata["issuer"]


def test_oidcc_ensure_request_without_nonce_succeeds_for_code_flow(server, user, metadata, jwks):
    """nonce is optional in the code flow; the ID token then carries none."""
    flow = code_flow(Browser(server), register(server), metadata, jwks, nonce=False)
    assert "nonce" not in flow.claims


def test_oidcc_ensure_post_request_succeeds(server, user, metadata, jwks):
    """The authorization request sent as a form POST (OpenID Connect Core §3.1.2.1)."""
    client = register(server)
    rp = relying_party(client)
    nonce = secrets.token_urlsafe(16)
    url, state = rp.create_authorization_url(metadata["authorization_endpoint"], nonce=nonce)
    form = query(url)
    visit = Browser(server).authorize(metadata["authorization_endpoint"], form=form)
    assert query(visit.location)["state"] == state
    token = rp.fetch_token(metadata["token_endpoint"], authorization_response=visit.location, state=state)
    assert validated_id_token(token, client, metadata, jwks, nonce)["nonce"] == nonce


def test_oidcc_ensure_request_with_valid_pkce_succeeds(server, user, metadata, jwks):
    """A native client: PKCE S256, a loopback redirect on any port, no secret; a wrong verifier fails."""
    client = register(server, kind="native")
    assert client["confidential"] is False
    flow = code_flow(Browser(server), client, metadata, jwks)
    assert flow.claims["sub"] == user["user_id"]

    rp = relying_party(client)
    verifier = secrets.token_urlsafe(48)
    url, state = rp.create_authorization_url(metadata["authorization_endpoint"], code_verifier=verifier)
    visit = Browser(server).authorize(url)
    wrong = requests.post(metadata["token_endpoint"], timeout=TIMEOUT, data={
        "grant_type": "authorization_code", "code": query(visit.location)["code"], "client_id": client["client_id"],
        "redirect_uri": rp.redirect_uri, "code_verifier": secrets.token_urlsafe(48)})
    assert wrong.status_code == 400 and wrong.json()["error"] == "invalid_grant", wrong.text


def test_oidcc_refresh_token(server, user, metadata, jwks):
    """Refreshing an openid grant: a new ID token for the same user and sign-in, without nonce
    (OpenID Connect Core §12.2), whose at_hash matches the new access token."""
    client = register(server)
    flow = code_flow(Browser(server), client, metadata, jwks)
    time.sleep(1.1)  # so that the new iat is later
    refreshed = flow.rp.refresh_token(metadata["token_endpoint"], refresh_token=flow.token["refresh_token"])
    assert refreshed["access_token"] != flow.token["access_token"]
    claims = validated_id_token(refreshed, client, metadata, jwks)
    assert claims["sub"] == flow.claims["sub"] and claims["iss"] == flow.claims["iss"]
    assert claims["aud"] == flow.claims["aud"]
    assert claims["auth_time"] == flow.claims["auth_time"], "auth_time is the original sign-in's"
    assert claims["iat"] > flow.claims["iat"]
    assert "nonce" not in claims, "a refreshed ID token should not repeat the nonce"
    assert userinfo(metadata, refreshed["access_token"]).json()["sub"] == user["user_id"]


# --------------------------------------------------------------------------------------------- userinfo and scopes

def test_oidcc_userinfo_get(server, user, metadata, jwks):
    token = code_flow(Browser(server), register(server), metadata, jwks).token
    response = userinfo(metadata, token["access_token"])
    assert response.status_code == 200 and response.headers["Content-Type"].startswith("application/json")
    assert response.json()["sub"] == user["user_id"]


def test_oidcc_userinfo_post_header(server, user, metadata, jwks):
    token = code_flow(Browser(server), register(server), metadata, jwks).token
    response = requests.post(metadata["userinfo_endpoint"], timeout=TIMEOUT,
                             headers={"Authorization": f"Bearer {token['access_token']}"})
    assert response.status_code == 200, response.text
    assert response.json()["sub"] == user["user_id"]


def test_oidcc_userinfo_post_body(server, user, metadata, jwks):
    """The access token as the form body's access_token (RFC 6750 §2.2)."""
    token = code_flow(Browser(server), register(server), metadata, jwks).token
    response = requests.post(metadata["userinfo_endpoint"], data={"access_token": token["access_token"]},
                             timeout=TIMEOUT)
    assert response.status_code == 200, response.text
    assert response.json()["sub"] == user["user_id"]


def test_userinfo_rejects_an_unknown_token(metadata):
    response = userinfo(metadata, "lk_at_" + secrets.token_urlsafe(32))
    assert response.status_code == 401
    challenge = response.headers.get("WWW-Authenticate", "")
    assert challenge.startswith("Bearer ") and 'realm="latchkey"' in challenge and 'error="invalid_token"' in challenge


PROFILE_CLAIMS = {"name", "preferred_username", "updated_at"}
EMAIL_CLAIMS = {"email", "email_verified"}


def claims_for_scope(server, metadata, jwks, scope):
    flow = code_flow(Browser(server), register(server), metadata, jwks, scope=scope)
    assert set(flow.token["scope"].split()) == set(scope.split()), flow.token
    response = userinfo(metadata, flow.token["access_token"])
    assert response.status_code == 200, response.text
    return response.json()


def test_oidcc_scope_profile(server, user, metadata, jwks):
    info = claims_for_scope(server, metadata, jwks, "openid profile")
    assert PROFILE_CLAIMS <= set(info) and not EMAIL_CLAIMS & set(info), info
    assert info["name"] == "Alice Liddell" and info["preferred_username"] == USERNAME
    assert isinstance(info["updated_at"], int)


def test_oidcc_scope_email(server, user, metadata, jwks):
    info = claims_for_scope(server, metadata, jwks, "openid email")
    assert info["email"] == "alice@example.com" and info["email_verified"] is True
    assert not PROFILE_CLAIMS & set(info), info


def test_oidcc_scope_all(server, user, metadata, jwks):
    info = claims_for_scope(server, metadata, jwks, ALL_SCOPES)
    assert PROFILE_CLAIMS | EMAIL_CLAIMS | {"sub"} <= set(info), info
    assert info["sub"] == user["user_id"]


def test_oidcc_ensure_other_scope_order_succeeds(server, user, metadata, jwks):
    info = claims_for_scope(server, metadata, jwks, "email openid")
    assert info["sub"] == user["user_id"] and info["email"] == "alice@example.com"


def test_userinfo_omits_claims_the_user_lacks(server, metadata, jwks):
    """OpenID Connect Core §5.3.2: a claim with no value is left out, not sent as null; an
    address not known to be the user's is email_verified false."""
    username, password = "carol-" + secrets.token_hex(3), secrets.token_urlsafe(16)
    server.cli("users", "create", username, "--password-stdin", "--email", "carol@example.com", stdin=password + "\n")
    flow = code_flow(Browser(server, username, password), register(server), metadata, jwks)
    info = userinfo(metadata, flow.token["access_token"]).json()
    assert "name" not in info and None not in info.values(), info
    assert info["preferred_username"] == username
    assert info["email"] == "carol@example.com" and info["email_verified"] is False


# --------------------------------------------------------------------------------------------- ignored, unsupported
# display, ui_locales, claims_locales, acr_values and unknown parameters do not stop the flow;
# request objects (request, request_uri) are refused as unsupported.

def assert_accepted_and_ignored(server, user, metadata, jwks, **params):
    flow = code_flow(Browser(server), register(server), metadata, jwks, **params)
    assert flow.claims["sub"] == user["user_id"]


def test_oidcc_display_page(server, user, metadata, jwks):
    assert_accepted_and_ignored(server, user, metadata, jwks, display="page")


def test_oidcc_display_popup(server, user, metadata, jwks):
    assert_accepted_and_ignored(server, user, metadata, jwks, display="popup")


def test_oidcc_ui_locales(server, user, metadata, jwks):
    assert_accepted_and_ignored(server, user, metadata, jwks, ui_locales="se")


def test_oidcc_claims_locales(server, user, metadata, jwks):
    assert_accepted_and_ignored(server, user, metadata, jwks, claims_locales="se")


def test_oidcc_ensure_request_with_acr_values_succeeds(server, user, metadata, jwks):
    assert_accepted_and_ignored(server, user, metadata, jwks, acr_values="1 2")


def test_oidcc_ensure_request_with_unknown_parameter_succeeds(server, user, metadata, jwks):
    assert_accepted_and_ignored(server, user, metadata, jwks, extra="foobar")


def test_oidcc_request_uri_unsigned(server, user, metadata):
    """request_uri is not supported (request_uri_parameter_supported false): refused by redirect."""
    client = register(server)
    response = Browser(server).get(authorization_url(metadata, client, request_uri="https://rp.example/request.jwt"))
    error_redirect(response, "request_uri_not_supported")


def test_oidcc_unsigned_request_object(server, user, metadata):
    """A request object (here unsigned, alg none) is not supported: refused by redirect."""
    client = register(server)
    request_object = b64json({"alg": "none"}) + "." + b64json({
        "iss": client["client_id"], "aud": metadata["issuer"], "response_type": "code",
        "client_id": client["client_id"], "redirect_uri": REDIRECT_URI, "scope": "openid"}) + "."
    response = Browser(server).get(authorization_url(metadata, client, request=request_object))
    error_redirect(response, "request_not_supported")


# --------------------------------------------------------------------------------------------- prompt, max_age, hints

def test_oidcc_prompt_none_not_logged_in(server, user, metadata):
    client = register(server)
    url = authorization_url(metadata, client, prompt="none", nonce="n")
    answer = error_redirect(Browser(server).get(url), "login_required")
    assert answer["state"] == query(url)["state"]
    assert answer["iss"] == metadata["issuer"]


def test_oidcc_prompt_none_logged_in(server, user, metadata, jwks):
    """Signed in and consent remembered: prompt=none goes straight back with a code, no page."""
    client = register(server)
    browser = Browser(server)
    first = code_flow(browser, client, metadata, jwks)
    again = code_flow(browser, client, metadata, jwks, prompt="none")
    assert again.visit.login is None and again.visit.consent is None
    assert again.claims["sub"] == first.claims["sub"]
    assert again.claims["auth_time"] == first.claims["auth_time"]


def test_prompt_none_without_remembered_consent(server, user, metadata, jwks):
    """Signed in, but never consented for this client: consent_required, by redirect."""
    browser = Browser(server)
    code_flow(browser, register(server), metadata, jwks)
    error_redirect(browser.get(authorization_url(metadata, register(server), prompt="none")), "consent_required")


def test_prompt_none_with_another_value_refused(server, user, metadata, jwks):
    """OpenID Connect Core §3.1.2.1: prompt=none with any other value is an error."""
    client = register(server)
    browser = Browser(server)
    code_flow(browser, client, metadata, jwks)
    error_redirect(browser.get(authorization_url(metadata, client, prompt="none login")), "invalid_request")


def test_consent_denied_returns_access_denied(server, user, metadata):
    """The user presses Deny on the consent page: access_denied, with state and iss, and no code."""
    client = register(server)
    url = authorization_url(metadata, client)
    visit = Browser(server).authorize(url, decision="deny")
    assert visit.consent is not None and visit.location.startswith(REDIRECT_URI + "?")
    answer = query(visit.location)
    assert answer.get("error") == "access_denied" and "code" not in answer, answer
    assert answer["state"] == query(url)["state"] and answer["iss"] == metadata["issuer"]


def test_prompt_consent_asks_again(server, user, metadata, jwks):
    """prompt=consent shows the consent page though consent is remembered (and the session kept)."""
    client = register(server)
    browser = Browser(server)
    code_flow(browser, client, metadata, jwks)
    again = code_flow(browser, client, metadata, jwks, prompt="consent")
    assert again.visit.consent is not None and again.visit.login is None


def test_oidcc_prompt_login(server, user, metadata, jwks):
    """prompt=login: the sign-in page again despite the session, and a later auth_time."""
    client = register(server)
    browser = Browser(server)
    first = code_flow(browser, client, metadata, jwks)
    time.sleep(1.1)
    again = code_flow(browser, client, metadata, jwks, prompt="login")
    assert again.visit.login is not None, "prompt=login should show the sign-in page"
    assert query(again.visit.login.url).get("again") == "1"
    assert again.claims["auth_time"] > first.claims["auth_time"]
    assert again.claims["sub"] == first.claims["sub"]


def test_oidcc_max_age_1(server, user, metadata, jwks):
    """max_age=1, two seconds after signing in: sign in again, and a later auth_time."""
    client = register(server)
    browser = Browser(server)
    first = code_flow(browser, client, metadata, jwks)
    time.sleep(2)
    again = code_flow(browser, client, metadata, jwks, max_age="1")
    assert again.visit.login is not None, "a sign-in older than max_age should be repeated"
    assert again.claims["auth_time"] > first.claims["auth_time"]


def test_oidcc_max_age_10000(server, user, metadata, jwks):
    """max_age=10000 with a fresh session: no sign-in page, the first sign-in's auth_time."""
    client = register(server)
    browser = Browser(server)
    first = code_flow(browser, client, metadata, jwks)
    again = code_flow(browser, client, metadata, jwks, max_age="10000")
    assert again.visit.login is None
    assert again.claims["auth_time"] == first.claims["auth_time"]


def test_oidcc_id_token_hint(server, user, metadata, jwks):
    """prompt=none with an ID token from this client as id_token_hint: a code, for the same user."""
    client = register(server)
    browser = Browser(server)
    first = code_flow(browser, client, metadata, jwks)
    again = code_flow(browser, client, metadata, jwks, prompt="none", id_token_hint=first.token["id_token"])
    assert again.visit.login is None and again.visit.consent is None
    assert again.claims["sub"] == first.claims["sub"]


def test_oidcc_login_hint(server, user, metadata):
    """login_hint prefills the username field, HTML-escaped."""
    client = register(server)
    browser = Browser(server)
    for hint, shown in ((USERNAME, USERNAME), ('"><script>x()</script>', "&quot;&gt;&lt;script&gt;")):
        response = browser.get(authorization_url(metadata, client, login_hint=hint))
        assert response.status_code == 303
        page = browser.get(response.headers["Location"])
        assert page.status_code == 200
        field = re.search(r'<input[^>]*name="username"[^>]*>', page.text)
        assert field, "the sign-in page has no username field"
        assert f'value="{shown}' in field.group(0), f"login_hint {hint!r} should prefill the field: {field.group(0)}"
        assert "<script>x()" not in page.text


# --------------------------------------------------------------------------------------------- forged id_token_hint

def forge_refused(server, metadata, jwks, forge):
    """Signs in for a client, forges an id_token_hint from its genuine ID token with `forge(id_token)`,
    and asserts the authorization request carrying it gets invalid_request by redirect, not a code."""
    client = register(server)
    browser = Browser(server)
    genuine = code_flow(browser, client, metadata, jwks).token["id_token"]
    url = authorization_url(metadata, client, id_token_hint=forge(genuine))
    answer = error_redirect(browser.get(url), "invalid_request")
    assert answer["state"] == query(url)["state"]
    # The same request with the genuine hint goes through (the refusal is the forgery's).
    assert "code" in query(browser.get(authorization_url(metadata, client, id_token_hint=genuine)).headers["Location"])


def test_id_token_hint_alg_none_refused(server, user, metadata, jwks):
    def unsigned(id_token):
        header, _ = unverified(id_token)
        return b64json({**header, "alg": "none"}) + "." + id_token.split(".")[1] + "."
    forge_refused(server, metadata, jwks, unsigned)


def test_id_token_hint_hs256_with_public_key_refused(server, user, metadata, jwks):
    """The algorithm-confusion attack: HS256, keyed with the RSA public key's PEM."""
    def hs256(id_token):
        header, _ = unverified(id_token)
        published = next(key for key in jwks["keys"] if key["kid"] == header["kid"])
        pem = RSAKey.import_key(published).as_pem(private=False)
        signing_input = b64json({**header, "alg": "HS256"}) + "." + id_token.split(".")[1]
        return signing_input + "." + b64encode(hmac.new(pem, signing_input.encode(), hashlib.sha256).digest())
    forge_refused(server, metadata, jwks, hs256)


def test_id_token_hint_unknown_kid_refused(server, user, metadata, jwks):
    """Signed RS256 with a key of the attacker's, under a kid the JWKS does not have."""
    def own_key(id_token):
        key = RSAKey.generate_key(2048, parameters={"kid": "attacker-" + secrets.token_hex(4)})
        return jwt.encode({"alg": "RS256", "kid": key.kid, "typ": "JWT"}, unverified(id_token)[1], key)
    forge_refused(server, metadata, jwks, own_key)


def test_id_token_hint_for_another_client_refused(server, user, metadata, jwks):
    """A genuine ID token, but issued to another client."""
    other = code_flow(Browser(server), register(server), metadata, jwks).token["id_token"]
    forge_refused(server, metadata, jwks, lambda _: other)


# --------------------------------------------------------------------------------------------- codes and redirect URIs

def redeem_again(metadata, client, code):
    return requests.post(metadata["token_endpoint"], auth=(client["client_id"], client["client_secret"]),
                         data={"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT_URI},
                         timeout=TIMEOUT)


def assert_code_reuse_revokes(metadata, client, flow):
    code = query(flow.visit.location)["code"]
    second = redeem_again(metadata, client, code)
    assert second.status_code == 400 and second.json()["error"] == "invalid_grant", second.text
    assert "access_token" not in second.json()
    revoked = userinfo(metadata, flow.token["access_token"])
    assert revoked.status_code == 401, "the tokens of the first redemption should be revoked"
    assert 'error="invalid_token"' in revoked.headers.get("WWW-Authenticate", "")
    refresh = requests.post(metadata["token_endpoint"], auth=(client["client_id"], client["client_secret"]),
                            data={"grant_type": "refresh_token", "refresh_token": flow.token["refresh_token"]},
                            timeout=TIMEOUT)
    assert refresh.status_code == 400 and refresh.json()["error"] == "invalid_grant", refresh.text


def test_oidcc_codereuse(server, user, metadata, jwks):
    """A code redeemed twice: invalid_grant, and the first redemption's tokens are revoked (RFC 6749 §4.1.2)."""
    client = register(server)
    flow = code_flow(Browser(server), client, metadata, jwks)
    assert userinfo(metadata, flow.token["access_token"]).status_code == 200
    assert_code_reuse_revokes(metadata, client, flow)


def test_oidcc_codereuse_30seconds(server, user, metadata, jwks):
    """The conformance suite waits 30 s before the second redemption, to catch a provider that only
    remembers used codes briefly. Latchkey's codes live 60 s (serve --code-lifetime), so a used code
    must stay refused for its whole life; waiting a few seconds rather than 30 keeps this file fast
    and still redeems after a pause (past any retry window), not back to back."""
    client = register(server)
    flow = code_flow(Browser(server), client, metadata, jwks)
    time.sleep(3)
    assert_code_reuse_revokes(metadata, client, flow)


def test_oidcc_ensure_registered_redirect_uri(server, user, metadata):
    """Exact matching: an unregistered redirect_uri gets an error page, never a redirect."""
    client = register(server)
    browser = Browser(server)
    for redirect_uri in ("https://attacker.example/callback", REDIRECT_URI + "/more", REDIRECT_URI + "?x=1",
                         REDIRECT_URI.replace("https:", "http:"), "https://rp.example/callbac",
                         "https://rp.example.attacker.example/callback"):
        response = browser.get(authorization_url(metadata, client, redirect_uri=redirect_uri))
        assert response.status_code == 400, f"{redirect_uri}: {response.status_code}"
        assert "Location" not in response.headers, f"{redirect_uri} was redirected to"
        assert response.headers["Content-Type"].startswith("text/html")


# --------------------------------------------------------------------------------------------- RP-initiated logout

def logout_url(metadata, **params):
    return metadata["end_session_endpoint"] + "?" + urlencode(params)


def test_logout_with_hint_redirects_and_ends_session(server, user, metadata, jwks):
    """OpenID Connect RP-Initiated Logout 1.0: a valid id_token_hint and a registered
    post_logout_redirect_uri end the session and send the browser back with state."""
    client = register(server)
    browser = Browser(server)
    flow = code_flow(browser, client, metadata, jwks)
    assert still_signed_in(browser, metadata, client)
    state = secrets.token_urlsafe(12)
    response = browser.get(logout_url(metadata, id_token_hint=flow.token["id_token"], client_id=client["client_id"],
                                      post_logout_redirect_uri=POST_LOGOUT_REDIRECT_URI, state=state))
    assert response.status_code == 303, response.text[:300]
    location = response.headers["Location"]
    assert location.startswith(POST_LOGOUT_REDIRECT_URI + "?") and query(location)["state"] == state, location
    assert not still_signed_in(browser, metadata, client), "the session should have ended"


def test_logout_with_hint_by_post(server, user, metadata, jwks):
    """The same logout request as a form POST."""
    client = register(server)
    browser = Browser(server)
    flow = code_flow(browser, client, metadata, jwks)
    response = browser.post(metadata["end_session_endpoint"], {
        "id_token_hint": flow.token["id_token"], "post_logout_redirect_uri": POST_LOGOUT_REDIRECT_URI,
        "state": "s1"})
    assert response.status_code == 303 and response.headers["Location"] == POST_LOGOUT_REDIRECT_URI + "?state=s1"
    assert not still_signed_in(browser, metadata, client)


def test_logout_unregistered_post_logout_redirect_uri_refused(server, user, metadata, jwks):
    """An unregistered post_logout_redirect_uri: an error page, no redirect, and the session kept."""
    client = register(server)
    browser = Browser(server)
    flow = code_flow(browser, client, metadata, jwks)
    for target in ("https://attacker.example/signed-out", POST_LOGOUT_REDIRECT_URI + "/more", REDIRECT_URI):
        response = browser.get(logout_url(metadata, id_token_hint=flow.token["id_token"],
                                          post_logout_redirect_uri=target, state="s"))
        assert response.status_code == 400, f"{target}: {response.status_code}"
        assert "Location" not in response.headers, f"{target} was redirected to"
        assert response.headers["Content-Type"].startswith("text/html")
    assert still_signed_in(browser, metadata, client), "a refused logout should keep the session"


def test_logout_forged_id_token_hint_refused(server, user, metadata, jwks):
    """A logout request whose id_token_hint is unsigned (alg none): an error page, no redirect to
    the (registered) post_logout_redirect_uri, and the session kept."""
    client = register(server)
    browser = Browser(server)
    genuine = code_flow(browser, client, metadata, jwks).token["id_token"]
    header, _ = unverified(genuine)
    unsigned = b64json({**header, "alg": "none"}) + "." + genuine.split(".")[1] + "."
    response = browser.get(logout_url(metadata, id_token_hint=unsigned, state="s",
                                      post_logout_redirect_uri=POST_LOGOUT_REDIRECT_URI))
    assert response.status_code == 400 and "Location" not in response.headers, response.status_code
    assert still_signed_in(browser, metadata, client), "a refused logout should keep the session"


def test_logout_without_hint_asks_first(server, user, metadata, jwks):
    """No id_token_hint: a confirmation page; "stay" keeps the session, a forged CSRF token is
    refused, "logout" ends it."""
    client = register(server)
    browser = Browser(server)
    code_flow(browser, client, metadata, jwks)
    page = browser.get(metadata["end_session_endpoint"])
    assert page.status_code == 200 and page.headers["Content-Type"].startswith("text/html")
    assert '<form method="post" action="/oauth2/logout">' in page.text
    assert 'name="decision" value="logout"' in page.text and 'name="decision" value="stay"' in page.text
    assert still_signed_in(browser, metadata, client), "showing the page should not sign out"

    csrf = hidden_fields(page.text)["csrf_token"]
    stay = browser.post("/oauth2/logout", {"csrf_token": csrf, "decision": "stay"})
    assert stay.status_code == 200, stay.text[:300]
    assert still_signed_in(browser, metadata, client), "stay should keep the session"

    forged = browser.post("/oauth2/logout", {"csrf_token": "lk_xs_" + secrets.token_urlsafe(32), "decision": "logout"})
    assert forged.status_code == 403, f"a forged CSRF token answered {forged.status_code}"
    assert still_signed_in(browser, metadata, client), "a forged CSRF token should not sign out"

    csrf = hidden_fields(browser.get(metadata["end_session_endpoint"]).text)["csrf_token"]
    done = browser.post("/oauth2/logout", {"csrf_token": csrf, "decision": "logout"})
    assert done.status_code == 200, done.text[:300]
    assert not still_signed_in(browser, metadata, client), "logout should end the session"


def test_logout_without_hint_with_client_id_redirects_once_confirmed(server, user, metadata, jwks):
    """client_id in place of the hint names whose post_logout_redirect_uri it is; the user is asked
    first, and once they confirm the browser goes back there with state."""
    client = register(server)
    browser = Browser(server)
    code_flow(browser, client, metadata, jwks)
    page = browser.get(logout_url(metadata, client_id=client["client_id"], state="s2",
                                  post_logout_redirect_uri=POST_LOGOUT_REDIRECT_URI))
    assert page.status_code == 200 and client["name"] in page.text, page.text[:300]
    assert still_signed_in(browser, metadata, client)
    form = dict(re.findall(r'<input type="hidden" name="([^"]*)" value="([^"]*)"', page.text))
    done = browser.post("/oauth2/logout", {**form, "decision": "logout"})
    assert done.status_code == 303 and done.headers["Location"] == POST_LOGOUT_REDIRECT_URI + "?state=s2"
    assert not still_signed_in(browser, metadata, client)
