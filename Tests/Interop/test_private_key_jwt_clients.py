"""Client assertions (`private_key_jwt`, RFC 7523 §2.2) with third-party clients: confidential
clients registered with public keys instead of a secret, proving themselves at the token,
introspection and revocation endpoints with JWTs signed by their private keys.

- Authlib (`authlib.oauth2.rfc7523.PrivateKeyJWT`) plays service clients registered through the CLI
  with `--jwks-file`: client credentials with an EC P-256 key (ES256), then introspection and
  revocation; and RSA (RS256, PS256) and Ed25519 (EdDSA) keys. The assertions' `aud` is this
  server's issuer identifier (PrivateKeyJWT's `token_endpoint`, which Authlib puts in `aud`), good
  at every endpoint: Authlib's default, the URL of the endpoint the request goes to, is taken at
  the token endpoint only, and refused (401 invalid_client) at introspection and revocation.
- A web client registered with `--jwks-uri`, its key set served by a real HTTPS server on loopback
  (Tests/Support/https_documents.py, trusted through the test-only --client-metadata-ca-file and
  --client-metadata-allow-loopback): the authorization-code flow through the server's pages, the
  code exchanged with an assertion, then a key rotation (the server keeps the set it read, so a new
  `kid` is refused until its copy is a minute old; the minute itself is waited for only with
  LATCHKEY_SLOW_TESTS=1), a jwks_uri that cannot be read, eight assertions at once reading the set
  once, and key-set fetches that have slots of their own beside client metadata documents'. A set
  that could not be read again keeps serving, and one never read is tried again, after a minute
  (LATCHKEY_SLOW_TESTS=1 only).
- Refusals before the signature verified (an unknown kid, an unreadable key set) say only "Client
  authentication failed."; the reason is in the server's log.
- RFC 7591 registration with `jwks` under an initial access token, its refusals, and the refusal
  of private_key_jwt by open registration (native public apps only).
- requests-oauth2client (`PrivateKeyJwt`), an independent second library, as an admin-API client
  that itself authenticates with a key and registers another key client through the admin API, and
  introspects with `aud` set to the issuer; and its DPoP proofs, with a hand-made assertion sent
  twice, before and after a `use_dpop_nonce` answer (the proof is checked before the assertion is
  spent).

One `latchkey serve` (SQLite in a temporary folder) and one HTTPS key server run for the module;
the open-registration, fetch-slot and DPoP-nonce tests start a server of their own for a moment.
"""
import json
import os
import secrets
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlencode

import pytest
import requests
from authlib.integrations.base_client.errors import OAuthError
from authlib.integrations.requests_client import OAuth2Session
from authlib.oauth2.rfc7523 import PrivateKeyJWT
from joserfc.jwk import ECKey, OKPKey, RSAKey

from https_documents import DocumentServer
from https_documents import TestAuthority as Authority  # (pytest would collect a Test* name)
from latchkey_process import log_records, pkce, serving, sign_in_through_pages

USERNAME = "alice"
PASSWORD = "correct horse battery staple"
SCOPE = "reports"
WEB_REDIRECT = "https://web.example/cb"
TIMEOUT = 20
ALGORITHMS = ["ES256", "RS256", "PS256", "EdDSA"]
ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
GENERIC = "Client authentication failed."


# --------------------------------------------------------------------------------------------- fixtures

@pytest.fixture(scope="module")
def authority(tmp_path_factory):
    """The test CA and the certificate (localhost, 127.0.0.1, ::1) the key server presents."""
    return Authority(tmp_path_factory.mktemp("test-ca"))


@pytest.fixture(scope="module")
def keys_server(authority):
    """The HTTPS server where web clients publish their key sets (jwks_uri)."""
    with DocumentServer(authority) as documents:
        yield documents


@pytest.fixture(scope="module")
def server(tmp_path_factory, authority):
    """Key sets may be fetched from loopback (test flags), registration takes initial access tokens;
    the user who signs in, and a scope for the service clients."""
    with serving(tmp_path_factory, "--client-metadata-allow-loopback", "--client-metadata-ca-file", authority.ca_file,
                 "--dynamic-registration", "initial-access-token") as started:
        started.cli("users", "create", USERNAME, "--password-stdin", stdin=PASSWORD + "\n")
        started.cli("scopes", "add", SCOPE, "--description", "Read the reports")
        yield started


@pytest.fixture(scope="module")
def metadata(server):
    response = requests.get(server.url("/.well-known/oauth-authorization-server"), timeout=TIMEOUT)
    assert response.status_code == 200, response.text
    return response.json()


# --------------------------------------------------------------------------------------------- helpers

def new_key(alg, kid=None):
    """A fresh private key (joserfc, which Authlib signs with) for `alg`, with a kid."""
    parameters = {"kid": kid or f"{alg.lower()}-{secrets.token_hex(4)}"}
    if alg == "ES256":
        return ECKey.generate_key("P-256", parameters=parameters)
    if alg in ("RS256", "PS256"):
        return RSAKey.generate_key(2048, parameters=parameters)
    if alg == "EdDSA":
        return OKPKey.generate_key("Ed25519", parameters=parameters)
    raise ValueError(alg)


def jwk_set(*keys):
    """A JWK Set of the public halves of `keys` (no `alg`: an RSA key then serves RS256 and PS256)."""
    return {"keys": [key.as_dict(private=False) for key in keys]}


def register_key_client(server, tmp_path, *keys, client_type="service", scope=SCOPE, redirect=None, jwks_uri=None):
    """`latchkey clients create ... --token-endpoint-auth-method private_key_jwt` with `--jwks-file`
    (the public halves of `keys`) or `--jwks-uri`; returns the --json answer."""
    args = ["clients", "create", "--type", client_type, "--name", f"Key client {secrets.token_hex(3)}",
            "--scope", scope, "--token-endpoint-auth-method", "private_key_jwt"]
    if redirect:
        args += ["--redirect-uri", redirect]
    if jwks_uri:
        args += ["--jwks-uri", jwks_uri]
    else:
        path = tmp_path / f"jwks-{secrets.token_hex(4)}.json"
        path.write_text(json.dumps(jwk_set(*keys)))
        args += ["--jwks-file", str(path)]
    return server.cli(*args)


def authlib_app(client_id, key, alg, kid=None, audience=None, **session_args):
    """An Authlib session whose token, introspection and revocation requests carry a fresh assertion
    each, signed with `key`. With `audience` (PrivateKeyJWT's `token_endpoint`), every assertion's
    `aud` is that: the issuer identifier is good at every endpoint here. Without, PrivateKeyJWT puts
    the URL of the endpoint each request goes to, which this server takes at the token endpoint
    only. With `kid`, the header names the key."""
    app = OAuth2Session(client_id, key, token_endpoint_auth_method="private_key_jwt",
                        revocation_endpoint_auth_method="private_key_jwt", **session_args)
    app.register_client_auth_method(PrivateKeyJWT(token_endpoint=audience, alg=alg,
                                                  headers={"kid": kid} if kid else None))
    return app


def refused_with_aud(response):
    """401 invalid_client for an assertion whose aud is not taken at this endpoint (its signature
    verified, so the answer names aud)."""
    assert response.status_code == 401, response.text
    body = response.json()
    assert body["error"] == "invalid_client" and "aud" in body.get("error_description", ""), body



def logged_reason(server, mark, event, client_id):
    """The `reason`s the log gives for `event` naming `client_id` since `mark`, joined."""
    records = log_records(server, mark, event, client_id)
    assert records, f"no {event} for {client_id} in the log"
    return " | ".join(str(record.get("reason", "")) for record in records)


def introspect_with_assertion(metadata, app, token):
    response = app.introspect_token(metadata["introspection_endpoint"], token=token)
    assert response.status_code == 200, response.text
    return response.json()


# --------------------------------------------------------------------------------------------- metadata

def test_metadata_advertises_private_key_jwt(metadata):
    """RFC 8414: private_key_jwt is offered at the token endpoint with the four signing algorithms,
    and the revocation and introspection endpoints take the same methods and algorithms."""
    methods = metadata["token_endpoint_auth_methods_supported"]
    assert "private_key_jwt" in methods and "client_secret_basic" in methods, methods
    assert metadata["token_endpoint_auth_signing_alg_values_supported"] == ALGORITHMS
    assert metadata["revocation_endpoint_auth_methods_supported"] == methods
    assert metadata["introspection_endpoint_auth_methods_supported"] == methods
    assert metadata["revocation_endpoint_auth_signing_alg_values_supported"] == ALGORITHMS
    assert metadata["introspection_endpoint_auth_signing_alg_values_supported"] == ALGORITHMS


# --------------------------------------------------------------------------------------------- Authlib, --jwks-file

def test_authlib_es256_client_credentials_introspection_and_revocation(server, metadata, tmp_path):
    """A service client registered with an EC P-256 key has no secret; Authlib's PrivateKeyJWT gets a
    token with client credentials, introspects it and revokes it, each request with a new assertion
    whose aud is the issuer. Left to its default (aud: the URL of each endpoint), Authlib still
    gets tokens, but its introspection and revocation requests are refused: there only the issuer
    is a good aud, so an assertion made out to another endpoint, or to another server's
    introspection URL, is not spent here."""
    key = new_key("ES256")
    service = register_key_client(server, tmp_path, key)
    assert service["token_endpoint_auth_method"] == "private_key_jwt"
    assert service["client_secret"] is None
    assert [k["x"] for k in service["jwks"]["keys"]] == [key.as_dict()["x"]], service["jwks"]
    assert service.get("jwks_uri") is None

    app = authlib_app(service["client_id"], key, "ES256", audience=server.issuer, scope=SCOPE)
    token = app.fetch_token(metadata["token_endpoint"], grant_type="client_credentials")
    assert token["token_type"] == "Bearer" and token["scope"] == SCOPE
    assert "refresh_token" not in token

    active = introspect_with_assertion(metadata, app, token["access_token"])
    assert active["active"] is True and active["client_id"] == service["client_id"], active

    revoked = app.revoke_token(metadata["revocation_endpoint"], token=token["access_token"], token_type_hint="access_token")
    assert revoked.status_code == 200, revoked.text
    assert introspect_with_assertion(metadata, app, token["access_token"]) == {"active": False}

    # Authlib's default audience: the token endpoint's URL at the token endpoint (taken), the
    # introspection and revocation endpoints' URLs there (refused; nothing is revoked).
    default = authlib_app(service["client_id"], key, "ES256", scope=SCOPE)
    other = default.fetch_token(metadata["token_endpoint"], grant_type="client_credentials")
    refused_with_aud(default.introspect_token(metadata["introspection_endpoint"], token=other["access_token"]))
    refused_with_aud(default.revoke_token(metadata["revocation_endpoint"], token=other["access_token"]))
    assert introspect_with_assertion(metadata, app, other["access_token"])["active"] is True

    # The client has no secret to fall back on: Basic with anything is refused.
    basic = requests.post(metadata["token_endpoint"], data={"grant_type": "client_credentials"},
                          auth=(service["client_id"], "not-a-secret"), timeout=TIMEOUT)
    assert basic.status_code == 401 and basic.json()["error"] == "invalid_client", basic.text


@pytest.mark.filterwarnings("ignore:EdDSA is deprecated")
@pytest.mark.parametrize("alg", ["RS256", "PS256", "EdDSA"])
def test_authlib_other_algorithms(server, metadata, tmp_path, alg):
    """RSA keys (2048 bits) sign RS256 or PS256, Ed25519 keys EdDSA; a key's assertions verify
    only under the algorithm its kind allows (an RSA key's under RS256 and PS256 alike)."""
    key = new_key(alg)
    service = register_key_client(server, tmp_path, key)
    token = authlib_app(service["client_id"], key, alg, scope=SCOPE).fetch_token(
        metadata["token_endpoint"], grant_type="client_credentials")
    assert token["scope"] == SCOPE
    if alg == "EdDSA":
        return
    other = "PS256" if alg == "RS256" else "RS256"
    again = authlib_app(service["client_id"], key, other, scope=SCOPE).fetch_token(
        metadata["token_endpoint"], grant_type="client_credentials")
    assert again["access_token"] != token["access_token"]


# --------------------------------------------------------------------------------------------- a web client, --jwks-uri

def test_web_client_with_jwks_uri_code_flow_and_key_rotation(server, metadata, keys_server):
    """A web client publishes its keys at an https jwks_uri. The code flow goes through the server's
    pages, and Authlib redeems the code (and refreshes) with assertions; the key set is read once and
    kept. The client then rotates: its set now holds a new key, kid web-2. An assertion under web-2
    is refused while the server's copy is younger than a minute (a made-up kid cannot make it fetch
    in a loop), without a fetch, and the old key still works. The refusal says only that client
    authentication failed (which kids a client has is no stranger's business); the log names the
    kid."""
    old = new_key("ES256", kid="web-1")
    path = f"/web/{secrets.token_hex(4)}/jwks.json"
    keys_server.route(path, json_body=jwk_set(old), headers={"Cache-Control": "max-age=300"})
    web = server.cli("clients", "create", "--type", "web", "--name", "Key Web", "--redirect-uri", WEB_REDIRECT,
                     "--scope", "profile", "--token-endpoint-auth-method", "private_key_jwt",
                     "--jwks-uri", keys_server.url(path))
    assert web["token_endpoint_auth_method"] == "private_key_jwt"
    assert web["jwks_uri"] == keys_server.url(path)
    assert web["client_secret"] is None
    assert keys_server.count(path) == 0, "registration should not fetch the key set"

    app = authlib_app(web["client_id"], old, "ES256", kid="web-1", scope="profile", redirect_uri=WEB_REDIRECT,
                      code_challenge_method="S256")
    verifier = secrets.token_urlsafe(48)
    authorization_url, _ = app.create_authorization_url(metadata["authorization_endpoint"], code_verifier=verifier)
    signed_in = sign_in_through_pages(requests.Session(), authorization_url, USERNAME, PASSWORD)
    assert signed_in.location.startswith(WEB_REDIRECT + "?"), signed_in.location
    token = app.fetch_token(metadata["token_endpoint"], authorization_response=signed_in.location,
                            code_verifier=verifier)
    assert token["scope"] == "profile" and token["refresh_token"]
    me = app.get(metadata["userinfo_endpoint"])
    assert me.status_code == 200 and me.json()["username"] == USERNAME, me.text
    assert keys_server.count(path) == 1

    token = app.refresh_token(metadata["token_endpoint"], refresh_token=token["refresh_token"])
    assert keys_server.count(path) == 1, "the key set should be kept, not read for every assertion"

    # Rotation: the set now holds the new key too.
    new = new_key("ES256", kid="web-2")
    keys_server.route(path, json_body=jwk_set(new, old), headers={"Cache-Control": "max-age=300"})
    rotated = authlib_app(web["client_id"], new, "ES256", kid="web-2", scope="profile")
    mark = os.path.getsize(server.stderr_path)
    with pytest.raises(OAuthError) as refused:
        rotated.refresh_token(metadata["token_endpoint"], refresh_token=token["refresh_token"])
    assert refused.value.error == "invalid_client"
    assert refused.value.description == GENERIC, refused.value.description
    assert "web-2" in logged_reason(server, mark, "client_authentication.failed", web["client_id"])
    assert keys_server.count(path) == 1, "a kid missing from a copy younger than 60 s must not fetch again"
    # The refused request burnt nothing: the old key refreshes with the same refresh token.
    token = app.refresh_token(metadata["token_endpoint"], refresh_token=token["refresh_token"])

    if not os.environ.get("LATCHKEY_SLOW_TESTS"):
        return  # the minute after which the new kid is fetched (checked with LATCHKEY_SLOW_TESTS=1)
    time.sleep(61)
    token = rotated.refresh_token(metadata["token_endpoint"], refresh_token=token["refresh_token"])
    assert token["access_token"]
    assert keys_server.count(path) == 2, "the missing kid should have made the server read the set once more"


def test_unreadable_jwks_uri_is_invalid_client(server, metadata, keys_server):
    """A jwks_uri that answers 404 (or is down) cannot authenticate anyone: 401 invalid_client
    saying only that client authentication failed, not a server error; the log has
    `client_keys.refused` with the reason (the jwks_uri answered 404)."""
    key = new_key("ES256", kid="gone")
    path = f"/gone/{secrets.token_hex(4)}.json"
    service = server.cli("clients", "create", "--type", "service", "--name", "Gone keys", "--scope", SCOPE,
                         "--token-endpoint-auth-method", "private_key_jwt", "--jwks-uri", keys_server.url(path))
    app = authlib_app(service["client_id"], key, "ES256", kid="gone", scope=SCOPE)
    mark = os.path.getsize(server.stderr_path)
    with pytest.raises(OAuthError) as refused:
        app.fetch_token(metadata["token_endpoint"], grant_type="client_credentials")
    assert refused.value.error == "invalid_client"
    assert refused.value.description == GENERIC, refused.value.description
    reason = logged_reason(server, mark, "client_keys.refused", service["client_id"])
    assert "jwks_uri" in reason and "404" in reason, reason
    assert keys_server.count(path) == 1
    # The failure is remembered for a minute: more assertions do not make the server fetch again.
    with pytest.raises(OAuthError) as again:
        app.fetch_token(metadata["token_endpoint"], grant_type="client_credentials")
    assert again.value.description == GENERIC, again.value.description
    assert keys_server.count(path) == 1


def test_key_set_is_kept_at_least_a_minute(server, metadata, keys_server):
    """A key set served with max-age=0 is still kept for a minute (the floor): three assertions,
    one fetch, so a client cannot make the server fetch for every request."""
    key = new_key("ES256", kid="floor")
    path = f"/floor/{secrets.token_hex(4)}.json"
    keys_server.route(path, json_body=jwk_set(key), headers={"Cache-Control": "max-age=0"})
    service = server.cli("clients", "create", "--type", "service", "--name", "Short-lived keys", "--scope", SCOPE,
                         "--token-endpoint-auth-method", "private_key_jwt", "--jwks-uri", keys_server.url(path))
    app = authlib_app(service["client_id"], key, "ES256", kid="floor", scope=SCOPE)
    for _ in range(3):
        assert app.fetch_token(metadata["token_endpoint"], grant_type="client_credentials")["access_token"]
    assert keys_server.count(path) == 1


def test_many_assertions_at_once_read_the_key_set_once(server, metadata, keys_server):
    """Eight clients' worth of assertions for one jwks_uri arrive together while the server has no
    copy of the set, which its server sends slowly (about a second): one fetch serves them all (a
    burst of assertions, forged or not, cannot multiply the fetches), and all eight get a token."""
    key = new_key("ES256", kid="burst")
    path = f"/burst/{secrets.token_hex(4)}.json"
    keys_server.route(path, json_body=jwk_set(key), trickle=0.005)
    service = server.cli("clients", "create", "--type", "service", "--name", "Burst keys", "--scope", SCOPE,
                         "--token-endpoint-auth-method", "private_key_jwt", "--jwks-uri", keys_server.url(path))
    apps = [authlib_app(service["client_id"], key, "ES256", kid="burst", scope=SCOPE) for _ in range(8)]
    barrier = threading.Barrier(len(apps))

    def fetch(app):
        barrier.wait(timeout=TIMEOUT)
        return app.fetch_token(metadata["token_endpoint"], grant_type="client_credentials")

    with ThreadPoolExecutor(len(apps)) as pool:
        tokens = list(pool.map(fetch, apps))
    assert len({token["access_token"] for token in tokens}) == len(apps)
    assert keys_server.count(path) == 1, f"the key set was read {keys_server.count(path)} times"


def test_key_sets_have_fetch_slots_of_their_own(tmp_path_factory, authority, keys_server):
    """Client metadata documents, which anyone may name in an authorization request, are fetched
    eight at a time at most. Eight slow ones hold every slot (a ninth is refused: too many
    documents at once), and meanwhile a key client's jwks_uri is read all the same: key sets have
    eight slots of their own, so documents cannot keep clients with keys from authenticating."""
    with serving(tmp_path_factory, "--client-metadata-documents", "all", "--client-metadata-allow-loopback",
                 "--client-metadata-ca-file", authority.ca_file) as busy:
        busy.cli("scopes", "add", SCOPE, "--description", "Read the reports")
        redirect = "http://127.0.0.1/callback"

        def document_url(tag):
            path = f"/apps/{tag}-{secrets.token_hex(4)}.json"
            url = keys_server.url(path)
            keys_server.route(path, json_body={"client_id": url, "client_name": "Slow app", "redirect_uris": [redirect],
                                               "token_endpoint_auth_method": "none"}, trickle=0.5)
            return path, url

        def authorize(url):
            query = urlencode({"response_type": "code", "client_id": url, "redirect_uri": redirect, "scope": "profile",
                               "state": "s", "code_challenge": pkce()[1], "code_challenge_method": "S256"})
            return requests.get(busy.url("/oauth2/authorize?" + query), allow_redirects=False, timeout=TIMEOUT)

        slow = [document_url("slow") for _ in range(8)]
        holders = [threading.Thread(target=authorize, args=(url,), daemon=True) for _, url in slow]
        for holder in holders:
            holder.start()
        deadline = time.monotonic() + 4
        while not all(keys_server.count(path) for path, _ in slow):
            assert time.monotonic() < deadline, "the eight slow documents were not all asked for"
            time.sleep(0.02)

        ninth_path, ninth = document_url("ninth")
        mark = os.path.getsize(busy.stderr_path)
        refused = authorize(ninth)
        assert refused.status_code == 400 and "Location" not in refused.headers, refused.text[:300]
        assert keys_server.count(ninth_path) == 0
        deadline = time.monotonic() + 5
        while True:
            with open(busy.stderr_path, "rb") as log:
                log.seek(mark)
                text = log.read().decode("utf-8", errors="replace")
            if "too many documents" in text or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert "too many documents" in text, "the ninth document should have been refused for want of a slot"

        key = new_key("ES256", kid="own-slot")
        path = f"/own-slot/{secrets.token_hex(4)}.json"
        keys_server.route(path, json_body=jwk_set(key))
        service = busy.cli("clients", "create", "--type", "service", "--name", "Keys meanwhile", "--scope", SCOPE,
                           "--token-endpoint-auth-method", "private_key_jwt", "--jwks-uri", keys_server.url(path))
        app = authlib_app(service["client_id"], key, "ES256", kid="own-slot", scope=SCOPE)
        token = app.fetch_token(busy.url("/oauth2/token"), grant_type="client_credentials")
        assert token["access_token"] and keys_server.count(path) == 1
        assert all(holder.is_alive() for holder in holders), \
            "the slow documents let go of their slots before the key set was read: the test proved nothing"
        for holder in holders:
            holder.join(TIMEOUT)


@pytest.mark.skipif(not os.environ.get("LATCHKEY_SLOW_TESTS"), reason="waits a minute (LATCHKEY_SLOW_TESTS=1)")
def test_failed_reads_keep_the_last_good_set_and_are_retried_a_minute_later(server, metadata, keys_server):
    """Two key sets, both kept for the shortest time (a minute): one read once and then gone (its
    server answers 503), one never readable (404, then fixed). A minute later the first is read
    again and fails, yet its last good set keeps serving (a client's server down for a while, or
    made to fail, does not take its keys away) and is not read again at once; the second is tried
    again, once, and its fixed set now works."""
    steady_key, late_key = new_key("ES256", kid="steady"), new_key("ES256", kid="late")
    steady_path, late_path = f"/steady/{secrets.token_hex(4)}.json", f"/late/{secrets.token_hex(4)}.json"
    keys_server.route(steady_path, json_body=jwk_set(steady_key), headers={"Cache-Control": "max-age=0"})
    clients = {}
    for name, path in (("steady", steady_path), ("late", late_path)):
        clients[name] = server.cli("clients", "create", "--type", "service", "--name", f"Keys {name}", "--scope", SCOPE,
                                   "--token-endpoint-auth-method", "private_key_jwt",
                                   "--jwks-uri", keys_server.url(path))["client_id"]
    steady = authlib_app(clients["steady"], steady_key, "ES256", kid="steady", scope=SCOPE)
    late = authlib_app(clients["late"], late_key, "ES256", kid="late", scope=SCOPE)
    assert steady.fetch_token(metadata["token_endpoint"], grant_type="client_credentials")["access_token"]
    with pytest.raises(OAuthError):
        late.fetch_token(metadata["token_endpoint"], grant_type="client_credentials")
    assert (keys_server.count(steady_path), keys_server.count(late_path)) == (1, 1)

    keys_server.route(steady_path, body=b'{"error": "down"}', status=503)
    keys_server.route(late_path, json_body=jwk_set(late_key))
    time.sleep(61)
    for _ in range(2):
        assert steady.fetch_token(metadata["token_endpoint"], grant_type="client_credentials")["access_token"]
    assert keys_server.count(steady_path) == 2, "the expired set should have been read again, once"
    assert late.fetch_token(metadata["token_endpoint"], grant_type="client_credentials")["access_token"]
    assert keys_server.count(late_path) == 2


# --------------------------------------------------------------------------------------------- RFC 7591

def registration(metadata, token, body):
    return requests.post(metadata["registration_endpoint"], json=body, timeout=TIMEOUT,
                         headers={"Authorization": f"Bearer {token}"} if token else {})


def test_rfc7591_registration_with_jwks(server, metadata):
    """With an initial access token a web app registers with token_endpoint_auth_method
    private_key_jwt and its jwks: the answer echoes them and holds no secret, and the app's
    assertions (aud: the issuer) work at the revocation endpoint (an unknown token: 200), while
    one made out to the revocation endpoint's URL is refused. jwks with jwks_uri, private_key_jwt
    without keys, keys without private_key_jwt, and a set holding a private key (an encryption
    key's, next to a good signing key, too) are refused."""
    initial = server.cli("registration-tokens", "create")["initial_access_token"]
    key = new_key("ES256")
    body = {"application_type": "web", "token_endpoint_auth_method": "private_key_jwt", "jwks": jwk_set(key),
            "redirect_uris": ["https://registered.example/cb"], "client_name": "Registered key app"}
    response = registration(metadata, initial, body)
    assert response.status_code == 201, response.text
    registered = response.json()
    assert registered["token_endpoint_auth_method"] == "private_key_jwt", registered
    assert "client_secret" not in registered, registered
    assert [k["x"] for k in registered["jwks"]["keys"]] == [key.as_dict()["x"]], registered["jwks"]
    assert "jwks_uri" not in registered

    app = authlib_app(registered["client_id"], key, "ES256", audience=server.issuer)
    revoked = app.revoke_token(metadata["revocation_endpoint"], token="lk_at_" + secrets.token_urlsafe(32))
    assert revoked.status_code == 200, revoked.text
    refused_with_aud(authlib_app(registered["client_id"], key, "ES256").revoke_token(
        metadata["revocation_endpoint"], token="lk_at_" + secrets.token_urlsafe(32)))
    stranger = authlib_app(registered["client_id"], new_key("ES256"), "ES256", audience=server.issuer)
    refused = stranger.revoke_token(metadata["revocation_endpoint"], token="lk_at_" + secrets.token_urlsafe(32))
    assert refused.status_code == 401 and refused.json()["error"] == "invalid_client", refused.text
    assert refused.json().get("error_description") == GENERIC, refused.text

    leaked_enc = {**new_key("ES256", kid="enc-1").as_dict(private=True), "use": "enc"}
    for bad in ({**body, "jwks_uri": "https://keys.example/jwks.json"},
                {k: v for k, v in body.items() if k != "jwks"},
                {**body, "token_endpoint_auth_method": "client_secret_basic"},
                {**body, "jwks": {"keys": [key.as_dict(private=True)]}},
                {**body, "jwks": {"keys": [key.as_dict(private=False), leaked_enc]}}):
        answer = registration(metadata, initial, bad)
        assert answer.status_code == 400, answer.text
        assert answer.json()["error"] == "invalid_client_metadata", answer.text


def test_open_registration_refuses_private_key_jwt(tmp_path_factory):
    """Open registration takes only native public apps: a web app with keys is refused."""
    with serving(tmp_path_factory, "--dynamic-registration", "open") as open_server:
        endpoint = open_server.url("/oauth2/register")
        body = {"application_type": "web", "token_endpoint_auth_method": "private_key_jwt",
                "jwks": jwk_set(new_key("ES256")), "redirect_uris": ["http://127.0.0.1/callback"]}
        answer = requests.post(endpoint, json=body, timeout=TIMEOUT)
        assert answer.status_code == 400, answer.text
        assert answer.json()["error"] == "invalid_client_metadata", answer.text


# --------------------------------------------------------------------------------------------- requests-oauth2client, admin API

def test_requests_oauth2client_admin_api_registers_a_key_client(server, metadata, tmp_path):
    """requests-oauth2client's PrivateKeyJwt: an admin-API service client, itself registered with a
    key, gets its latchkey:admin token with an assertion and registers another key client through
    POST /admin/api/clients (no secret in the answer), which Authlib then uses. Configured with
    `aud` = the issuer, the library introspects as well; left to its default (aud: the endpoint's
    URL), its introspection is refused."""
    from requests_oauth2client import InvalidClient, OAuth2Client, PrivateKeyJwt

    admin_key = new_key("ES256")
    admin = register_key_client(server, tmp_path, admin_key, scope="latchkey:admin")
    client = OAuth2Client(metadata["token_endpoint"], testing=True,
                          introspection_endpoint=metadata["introspection_endpoint"],
                          auth=PrivateKeyJwt(admin["client_id"], admin_key.as_dict(private=True), alg="ES256",
                                             aud=server.issuer))
    bearer = client.client_credentials(scope="latchkey:admin")
    assert bearer.access_token and "latchkey:admin" in (bearer.scope or "latchkey:admin")
    # A second request: the library's fresh jti is accepted again.
    assert client.client_credentials(scope="latchkey:admin").access_token != bearer.access_token
    seen = client.introspect_token(bearer.access_token)
    assert seen["active"] is True and seen["client_id"] == admin["client_id"], seen
    by_default = OAuth2Client(metadata["token_endpoint"], testing=True,
                              introspection_endpoint=metadata["introspection_endpoint"],
                              auth=PrivateKeyJwt(admin["client_id"], admin_key.as_dict(private=True), alg="ES256"))
    assert by_default.client_credentials(scope="latchkey:admin").access_token  # aud: the token endpoint's URL
    with pytest.raises(InvalidClient):
        by_default.introspect_token(bearer.access_token)

    key = new_key("ES256")
    headers = {"Authorization": f"Bearer {bearer.access_token}"}
    body = {"application_type": "service", "client_name": "Made by the admin API", "scope": SCOPE,
            "token_endpoint_auth_method": "private_key_jwt", "jwks": jwk_set(key)}
    response = requests.post(server.url("/admin/api/clients"), json=body, headers=headers, timeout=TIMEOUT)
    assert response.status_code == 201, response.text
    made = response.json()
    assert made["token_endpoint_auth_method"] == "private_key_jwt", made
    assert "client_secret" not in made and made["jwks"]["keys"][0]["x"] == key.as_dict()["x"], made

    both = requests.post(server.url("/admin/api/clients"), json={**body, "jwks_uri": "https://keys.example/j.json"},
                         headers=headers, timeout=TIMEOUT)
    assert both.status_code == 400, both.text

    token = authlib_app(made["client_id"], key, "ES256", scope=SCOPE).fetch_token(
        metadata["token_endpoint"], grant_type="client_credentials")
    assert token["scope"] == SCOPE


# --------------------------------------------------------------------------------------------- the CLI's refusals

def test_cli_refuses_private_keys_and_mismatched_options(server, tmp_path):
    """`clients create` refuses a JWKS holding a private key (a signing key's, or an encryption
    key's next to a good public signing key: the set is refused whole), and --jwks-file without
    private_key_jwt."""
    key = new_key("ES256")
    encryption = {**new_key("RS256", kid="enc").as_dict(private=True), "use": "enc"}
    base = ["clients", "create", "--type", "service", "--name", "Refused", "--scope", SCOPE]
    for keys in ([key.as_dict(private=True)], [key.as_dict(private=False), encryption]):
        leaked = tmp_path / f"leaked-{secrets.token_hex(3)}.json"
        leaked.write_text(json.dumps({"keys": keys}))
        result = server.cli(*base, "--token-endpoint-auth-method", "private_key_jwt", "--jwks-file", str(leaked),
                            check=False)
        assert result.returncode != 0, result.stdout
        assert "private" in (result.stderr + result.stdout).lower()

    public = tmp_path / "public.json"
    public.write_text(json.dumps(jwk_set(key)))
    result = server.cli(*base, "--token-endpoint-auth-method", "client_secret_basic", "--jwks-file", str(public),
                        check=False)
    assert result.returncode != 0, result.stdout


# --------------------------------------------------------------------------------------------- DPoP nonces

def test_use_dpop_nonce_retry_sends_the_same_assertion_again(tmp_path_factory, tmp_path):
    """With `--dpop-nonce`, the token endpoint answers a proof without a nonce with use_dpop_nonce.
    The client sends the same body again, its assertion included, with a proof holding the nonce:
    the proof is checked before the client is authenticated, so the first try did not spend the
    assertion, and the retry gets a DPoP-bound token; a third try with that assertion is a replay.
    requests-oauth2client's own flow (a new assertion each try) gets a bound token as well."""
    from requests_oauth2client import DPoPKey, OAuth2Client, PrivateKeyJwt

    with serving(tmp_path_factory, "--dpop-nonce") as nonce_server:
        nonce_server.cli("scopes", "add", SCOPE, "--description", "Read the reports")
        key = new_key("ES256")
        service = register_key_client(nonce_server, tmp_path, key)
        endpoint = nonce_server.issuer + "/oauth2/token"
        auth = PrivateKeyJwt(service["client_id"], key.as_dict(private=True), alg="ES256")
        body = {"grant_type": "client_credentials", "scope": SCOPE, "client_assertion_type": ASSERTION_TYPE,
                "client_assertion": auth.client_assertion(endpoint)}
        proofs = DPoPKey.generate(alg="ES256")

        first = requests.post(endpoint, data=body, headers={"DPoP": str(proofs.proof("POST", endpoint))},
                              timeout=TIMEOUT)
        assert first.status_code == 400 and first.json()["error"] == "use_dpop_nonce", first.text
        nonce = first.headers["DPoP-Nonce"]
        retry = requests.post(endpoint, data=body, headers={"DPoP": str(proofs.proof("POST", endpoint, nonce=nonce))},
                              timeout=TIMEOUT)
        assert retry.status_code == 200, retry.text
        assert retry.json()["token_type"] == "DPoP", retry.text
        replay = requests.post(endpoint, data=body, headers={"DPoP": str(proofs.proof("POST", endpoint, nonce=nonce))},
                               timeout=TIMEOUT)
        assert replay.status_code == 401 and replay.json()["error"] == "invalid_client", replay.text
        assert "used before" in replay.json().get("error_description", ""), replay.text

        client = OAuth2Client(endpoint, auth=auth, dpop_bound_access_tokens=True, testing=True)
        token = client.client_credentials(scope=SCOPE)
        assert token.token_type == "DPoP" and token.access_token
