"""Token exchange (RFC 8693), the attack catalogue's TX cases: each sent over real HTTP to a real
`latchkey serve` and refused as §2.2.2 says (invalid_request, invalid_target, invalid_scope,
unauthorized_client), next to a control, the rightful exchange, accepted.

- TX01 who: only a confidential client whose grant list holds the grant may exchange; a public
  client may not even be given it; a personal app may exchange its own tokens, never another's.
  Another app's access token is taken only by a client an administrator registered that is
  neither personal nor self-registered.
- TX02 subject and actor tokens: a made-up, revoked, expired or refresh token, a token of the wrong
  type, an ID token of another client are all the same refusal, with one description (no oracle);
  a DPoP-bound subject or actor token needs a proof made with its key.
- TX03 narrowing: the scope only narrows, resources must be registered (with none named, the new
  token is for the subject token's own resources), the new token never outlives its subject, and
  it comes without a refresh token.
- TX04 delegation: `act` names the actor above the subject's own chain, at most four deep; the
  actor token must be the exchanging client's own (its client-credentials token, or a user's
  token issued to it); the new token is the exchanging client's, for the subject's user.
- TX05 the exchanged token dies with its user (disabled), even when the exchange races the
  disabling, and a disabled user's ID token mints nothing.
- TX06 exchange does not consume the subject token: eight at once give eight independent tokens.

The exchanging clients and resources are registered through the real CLI on the catalogue's
servers (`srv`, and `short` for expiry), and a server of this module's own takes RFC 7591
registrations. scripts/test runs the races (`TX05`, `TX06`) again with the servers on PostgreSQL;
every test is named TX0N so that `-k TX0` runs the whole catalogue there by hand.
"""
import base64
import hashlib
import json
import secrets
import threading
import time

import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

from security_harness import (
    Browser, Server, assert_alive, assert_dead, assert_inactive, assert_token_err, barrier_run, client_auth, get_code,
    introspect, redeem, refresh, revoke, sign_in_and_redeem, token_request,
)

TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
AT = "urn:ietf:params:oauth:token-type:access_token"
RT = "urn:ietf:params:oauth:token-type:refresh_token"
ID = "urn:ietf:params:oauth:token-type:id_token"
NATIVE_REDIRECT = "com.example.app:/oauth2redirect"
API = "https://tx-api.example/"      # opaque tokens; read and write
JWT_API = "https://tx-jwt.example/"  # JWT access tokens; read
UNKNOWN_API = "https://tx-unknown.example/"
MAX_ACTORS = 4


# --------------------------------------------------------------------------------------------- helpers

def register(server, type_, name, scopes, *extra, redirects=()):
    """`latchkey clients create` with any options; the harness's client dict."""
    args = ["clients", "create", "--type", type_, "--name", name]
    for uri in redirects:
        args += ["--redirect-uri", uri]
    for scope in scopes:
        args += ["--scope", scope]
    info = server.cli(*args, *extra)
    return {"id": info["client_id"], "secret": info.get("client_secret"), "type": type_, "redirects": list(redirects),
            "scopes": list(scopes), "key": name, "info": info}


def token_exchange(server, client, subject, subject_type=AT, actor=None, actor_type=None, scope=None, extra=(),
                   dpop=None):
    """POST /oauth2/token with the token-exchange grant as `client` (Basic for a confidential one),
    with a DPoP proof by `dpop` (a DPoPKey) when given."""
    auth, body = client_auth(client)
    data = [("grant_type", TOKEN_EXCHANGE)]
    if subject is not None:
        data.append(("subject_token", subject))
    if subject_type is not None:
        data.append(("subject_token_type", subject_type))
    if actor is not None:
        data.append(("actor_token", actor))
    if actor_type is not None:
        data.append(("actor_token_type", actor_type))
    if scope is not None:
        data.append(("scope", scope))
    headers = {"DPoP": dpop.proof(server.url("/oauth2/token"))} if dpop else None
    return token_request(server, data + body + list(extra), auth=auth, headers=headers)


def issued(response, token_type="Bearer"):
    """The exchange succeeded: an access token of the issued_token_type, Bearer (or `token_type`),
    no refresh token."""
    assert response.status_code == 200, f"the exchange was refused: {response.status_code} {response.text}"
    assert "no-store" in response.headers.get("Cache-Control", "")
    body = response.json()
    assert body.get("access_token") and body.get("token_type") == token_type, body
    assert body.get("issued_token_type") == AT, body
    assert "refresh_token" not in body and "id_token" not in body, body
    assert isinstance(body.get("expires_in"), int) and body["expires_in"] > 0, body
    return body


def refused(response, error="invalid_request", status=400):
    """TOKEN-ERR(status, error); returns the error_description."""
    return assert_token_err(response, status, error).get("error_description")


def client_credentials(server, client, scope="svc.read", dpop=None):
    auth, body = client_auth(client)
    headers = {"DPoP": dpop.proof(server.url("/oauth2/token"))} if dpop else None
    response = token_request(server, [("grant_type", "client_credentials"), ("scope", scope)] + body, auth=auth,
                             headers=headers)
    assert response.status_code == 200, response.text
    return response.json()["access_token"]


def _b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class DPoPKey:
    """An EC P-256 key that makes DPoP proofs (RFC 9449 §4.2), ES256 by hand."""

    def __init__(self):
        self.private = ec.generate_private_key(ec.SECP256R1())
        numbers = self.private.public_key().public_numbers()
        self.jwk = {"kty": "EC", "crv": "P-256", "x": _b64url(numbers.x.to_bytes(32, "big")),
                    "y": _b64url(numbers.y.to_bytes(32, "big"))}

    def proof(self, url, method="POST"):
        encode = lambda obj: _b64url(json.dumps(obj, separators=(",", ":")).encode())  # noqa: E731
        header = {"typ": "dpop+jwt", "alg": "ES256", "jwk": self.jwk}
        claims = {"jti": secrets.token_urlsafe(16), "htm": method, "htu": url, "iat": int(time.time())}
        signing_input = f"{encode(header)}.{encode(claims)}"
        r, s = decode_dss_signature(self.private.sign(signing_input.encode(), ec.ECDSA(hashes.SHA256())))
        return f"{signing_input}.{_b64url(r.to_bytes(32, 'big') + s.to_bytes(32, 'big'))}"

    def thumbprint(self):
        """The key's JWK SHA-256 thumbprint (RFC 7638), as in `cnf.jkt`."""
        canonical = json.dumps({k: self.jwk[k] for k in ("crv", "kty", "x", "y")}, separators=(",", ":"))
        return _b64url(hashlib.sha256(canonical.encode()).digest())


def audiences(seen):
    """The `aud` of an introspection answer (or JWT claims) as a list."""
    audience = seen.get("aud")
    return audience if isinstance(audience, list) else [] if audience is None else [audience]


def jwt_claims(token):
    """The payload of a JWT (the signature is checked in Tests/Interop/test_token_exchange.py)."""
    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


def depth(act):
    """How many actors an `act` chain holds."""
    count = 0
    while act:
        count, act = count + 1, act.get("act")
    return count


def user_token(server, browser, client=None, scope="read write profile", **kw):
    """A user's grant (access and refresh token) through the code flow, default the native app."""
    client = client or server.clients["native"]
    return sign_in_and_redeem(server, browser, client, scope=scope, **kw)


# --------------------------------------------------------------------------------------------- fixtures

@pytest.fixture(scope="module")
def tx(srv):
    """On `srv`: the resources API (opaque; read, write) and JWT_API (jwt; read), and
    rs_a (service, --allow-token-exchange), rs_b (service, --grant-type with the grant's URI),
    narrow (service allowed only `read`), web_x (web app with openid, allowed to exchange),
    personal (alice's own web app, allowed to exchange) and short_native (access tokens of 60 s)."""
    srv.cli("resources", "add", API, "--name", "TX API", "--scope", "read", "--scope", "write")
    srv.cli("resources", "add", JWT_API, "--name", "TX JWT API", "--scope", "read", "--token-format", "jwt")
    scopes = ["read", "write", "profile", "svc.read"]
    clients = {
        "rs_a": register(srv, "service", "tx-rs-a", scopes, "--allow-token-exchange"),
        "rs_b": register(srv, "service", "tx-rs-b", scopes, "--grant-type", TOKEN_EXCHANGE),
        "narrow": register(srv, "service", "tx-narrow", ["read", "svc.read"], "--allow-token-exchange"),
        "web_x": register(srv, "web", "tx-web", ["openid", "read", "write", "profile"], "--allow-token-exchange",
                          redirects=["https://tx-web.example/cb"]),
        "personal": register(srv, "web", "tx-personal", ["openid", "read", "profile"], "--allow-token-exchange",
                             "--owner", "alice", redirects=["https://tx-personal.example/cb"]),
        "short_native": register(srv, "native", "tx-short-native", ["read", "write", "profile"],
                                 "--access-token-lifetime", "60", redirects=[NATIVE_REDIRECT]),
    }
    for key in ("rs_a", "rs_b", "narrow", "web_x", "personal"):
        assert TOKEN_EXCHANGE in clients[key]["info"]["grant_types"], clients[key]["info"]
    return clients


@pytest.fixture(scope="module")
def short_tx(short):
    """On `short` (access tokens of 2 s): an exchanging service client an administrator registered."""
    return {"rs": register(short, "service", "tx-short-rs", ["read", "write", "profile", "svc.read"],
                           "--allow-token-exchange")}


@pytest.fixture(scope="module")
def registering(tmp_path_factory):
    """A server with `--dynamic-registration initial-access-token`, alice and a native app."""
    server = Server(tmp_path_factory.mktemp("tx-registration"),
                    extra_args=["--dynamic-registration", "initial-access-token"])
    try:
        server.add_user("alice", "correct-horse")
        server.add_client("native", "native", [NATIVE_REDIRECT], ["activity", "profile"])
        server.add_client("rs", "service", [], ["profile"])
        yield server
    finally:
        server.stop()


# ============================================================================================ TX01 who

def test_TX01_clients_without_the_grant_are_unauthorized(srv, alice, tx):
    """TX01: a confidential client whose grant list lacks token exchange (the catalogue's `svc` and
    `web`) and a public one (`native`, even exchanging its own token) get 400 unauthorized_client;
    the CLI refuses to give the grant to a native or browser client; a wrong secret is 401."""
    grant = user_token(srv, alice)
    for key in ("svc", "web", "native"):
        refused(token_exchange(srv, srv.clients[key], grant.at), "unauthorized_client")
    for type_, redirect in (("native", "http://127.0.0.1/callback"), ("browser", "https://tx-spa.example/cb")):
        result = srv.cli("clients", "create", "--type", type_, "--name", "tx-public", "--redirect-uri", redirect,
                         "--allow-token-exchange", check=False)
        assert result.returncode != 0, f"a {type_} client was given the grant: {result.stdout}"
        result = srv.cli("clients", "create", "--type", type_, "--name", "tx-public", "--redirect-uri", redirect,
                         "--grant-type", TOKEN_EXCHANGE, check=False)
        assert result.returncode != 0, f"a {type_} client was given the grant: {result.stdout}"
    wrong = dict(tx["rs_a"], secret="lk_cs_" + secrets.token_urlsafe(32))
    assert_token_err(token_exchange(srv, wrong, grant.at), 401, "invalid_client")
    # Control: a service client an administrator registered, with the grant (either CLI spelling),
    # exchanges the same token.
    issued(token_exchange(srv, tx["rs_a"], grant.at))
    issued(token_exchange(srv, tx["rs_b"], grant.at))


def test_TX01_personal_app_exchanges_only_its_own_tokens(srv, alice, tx):
    """TX01: a personal app (`--owner alice`) takes only its own tokens (only a client an
    administrator registered that is neither personal nor self-registered takes another app's):
    another client's token, as subject or as actor, is 400 invalid_request (the refusal an unknown
    token gets); its own token for alice is exchanged, for alice, as the personal app's token."""
    personal = tx["personal"]
    native_grant = user_token(srv, alice)
    own = redeem(srv, get_code(alice, personal, scope="read profile"))
    other = refused(token_exchange(srv, personal, native_grant.at))
    assert other == refused(token_exchange(srv, personal, "lk_at_" + secrets.token_urlsafe(40)))
    refused(token_exchange(srv, personal, own.at, actor=client_credentials(srv, tx["rs_a"]), actor_type=AT))
    refused(token_exchange(srv, personal, own.at, actor=native_grant.at, actor_type=AT))
    body = issued(token_exchange(srv, personal, own.at))
    assert body["user_id"] == own.tokens["user_id"]
    seen = introspect(srv, body["access_token"]).json()
    assert seen["active"] is True and seen["client_id"] == personal["id"], seen
    assert seen["sub"] == own.tokens["user_id"], seen
    # Its own token may also be the actor.
    issued(token_exchange(srv, personal, own.at, actor=own.at, actor_type=AT))


def test_TX01_self_registered_app_takes_only_its_own_tokens(registering):
    """TX01: a web app registered through RFC 7591 (with an initial access token) may list the grant,
    but, self-registered, it takes no other app's token: another client's token is 400
    invalid_request, its own is exchanged. A native app may not list the grant there either."""
    server = registering
    initial = server.cli("registration-tokens", "create")["initial_access_token"]
    headers = {"Authorization": "Bearer " + initial}
    response = server.post("/oauth2/register", headers=headers, json={
        "client_name": "TX self-registered", "application_type": "web", "redirect_uris": ["https://tx-self.example/cb"],
        "grant_types": ["authorization_code", "refresh_token", TOKEN_EXCHANGE], "scope": "activity profile",
        "token_endpoint_auth_method": "client_secret_basic"})
    assert response.status_code == 201, response.text
    registered = response.json()
    assert TOKEN_EXCHANGE in registered["grant_types"], registered
    self_registered = {"id": registered["client_id"], "secret": registered["client_secret"],
                       "redirects": ["https://tx-self.example/cb"]}
    alice = Browser(server, "alice")
    other = user_token(server, alice, scope="activity profile")
    made_up = refused(token_exchange(server, self_registered, "lk_at_" + secrets.token_urlsafe(40)))
    assert refused(token_exchange(server, self_registered, other.at)) == made_up
    own = redeem(server, get_code(alice, self_registered, scope="activity profile"))
    body = issued(token_exchange(server, self_registered, own.at))
    assert introspect(server, body["access_token"]).json()["client_id"] == self_registered["id"]

    native = server.post("/oauth2/register", headers=headers, json={
        "client_name": "TX native", "application_type": "native", "redirect_uris": [NATIVE_REDIRECT],
        "grant_types": ["authorization_code", TOKEN_EXCHANGE], "token_endpoint_auth_method": "none"})
    assert native.status_code == 400 and native.json()["error"] == "invalid_client_metadata", native.text
    assert TOKEN_EXCHANGE in native.json().get("error_description", ""), native.text


# ============================================================================================ TX02 subject and actor

def test_TX02_dead_or_foreign_subject_tokens_are_one_refusal(srv, alice, tx):
    """TX02: a made-up token, a revoked one, a refresh token (as an access token or a refresh
    token), an access token presented as an ID token, a JWT access token presented as an ID token,
    and an ID token issued to another client are all 400 invalid_request; the made-up and revoked
    tokens get the same description, so the answer does not tell whether a token exists."""
    rs, web_x = tx["rs_a"], tx["web_x"]
    made_up = refused(token_exchange(srv, rs, "lk_at_" + secrets.token_urlsafe(40)))
    assert made_up
    grant = user_token(srv, alice)
    assert revoke(srv, srv.clients["native"], grant.at).status_code == 200
    assert_inactive(srv, grant.at)
    assert refused(token_exchange(srv, rs, grant.at)) == made_up, "a revoked token is told apart from an unknown one"
    refused(token_exchange(srv, rs, ""))

    live = user_token(srv, alice)
    assert refused(token_exchange(srv, rs, live.rt)) == made_up
    refused(token_exchange(srv, rs, live.rt, subject_type=RT))
    refused(token_exchange(srv, rs, live.at, subject_type=ID))
    jwt_at = issued(token_exchange(srv, rs, live.at, extra=[("resource", JWT_API)]))["access_token"]
    assert jwt_at.count(".") == 2, "expected a JWT access token"
    refused(token_exchange(srv, rs, jwt_at, subject_type=ID))

    # ID tokens: issued to the personal app, presented by web_x and by a resource server.
    personal_id = redeem(srv, get_code(alice, tx["personal"], scope="openid read")).tokens["id_token"]
    refused(token_exchange(srv, web_x, personal_id, subject_type=ID))
    refused(token_exchange(srv, rs, personal_id, subject_type=ID))
    refused(token_exchange(srv, rs, personal_id, subject_type=AT))

    # Controls: the live access token, opaque or JWT, is exchanged, and refreshing still works.
    issued(token_exchange(srv, rs, live.at))
    body = issued(token_exchange(srv, rs, jwt_at))
    assert body["user_id"] == live.tokens["user_id"]
    assert refresh(srv, srv.clients["native"], live.rt).status_code == 200


def test_TX02_own_id_token_is_bounded_by_consent(srv, alice, tx):
    """TX02 control: web_x's own ID token for alice is a subject; the exchange reaches no further
    than what alice consented to web_x (openid read profile here): `write`, which web_x may ask for
    but was not given, is 400 invalid_scope. A tampered ID token is invalid_request. For a named
    resource, the scope must be within what she consented to web_x for that resource: nothing at
    first (invalid_scope, even for `read`), then, once an authorization naming the resource was
    consented to, `read` there."""
    web_x = tx["web_x"]
    grant = redeem(srv, get_code(alice, web_x, scope="openid read profile"))
    id_token = grant.tokens["id_token"]
    body = issued(token_exchange(srv, web_x, id_token, subject_type=ID))
    assert set(body["scope"].split()) <= {"openid", "read", "profile"} and "read" in body["scope"].split(), body
    assert body["user_id"] == grant.tokens["user_id"]
    seen = introspect(srv, body["access_token"]).json()
    assert seen["client_id"] == web_x["id"] and seen["sub"] == grant.tokens["user_id"] and "act" not in seen, seen
    refused(token_exchange(srv, web_x, id_token, subject_type=ID, scope="read write"), "invalid_scope")
    assert issued(token_exchange(srv, web_x, id_token, subject_type=ID, scope="read"))["scope"] == "read"
    header, payload, signature = id_token.split(".")
    claims = jwt_claims(id_token)
    claims["sub"] = srv.users["bob"]["user_id"]
    forged = ".".join([header, base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode(), signature])
    refused(token_exchange(srv, web_x, forged, subject_type=ID))
    # The access token of the same grant is also a subject for web_x (issued to it).
    issued(token_exchange(srv, web_x, grant.at))

    # A named resource: alice has consented to nothing at API for web_x yet.
    refused(token_exchange(srv, web_x, id_token, subject_type=ID, extra=[("resource", API)]), "invalid_scope")
    refused(token_exchange(srv, web_x, id_token, subject_type=ID, scope="read", extra=[("audience", API)]),
            "invalid_scope")
    with_api = redeem(srv, get_code(alice, web_x, scope="openid read profile", extra=[("resource", API)]))
    for subject in (with_api.tokens["id_token"], id_token):
        body = issued(token_exchange(srv, web_x, subject, subject_type=ID, scope="read", extra=[("resource", API)]))
        seen = introspect(srv, body["access_token"]).json()
        assert body["scope"] == "read" and API in audiences(seen), (body, seen)
    refused(token_exchange(srv, web_x, with_api.tokens["id_token"], subject_type=ID, scope="write",
                           extra=[("resource", API)]), "invalid_scope")


def test_TX02_dpop_bound_tokens_need_a_proof_by_their_key(srv, alice, tx):
    """TX02: a token bound to a DPoP key (RFC 9449) is no bearer token, at the exchange either: as
    subject or as actor it is 400 invalid_request naming DPoP without a proof, or with a proof by
    another key; with a proof by its key it is exchanged, and the new token is bound to that key."""
    rs, native = tx["rs_a"], srv.clients["native"]
    key = DPoPKey()
    grant = get_code(alice, native, scope="read profile")
    response = token_request(srv, [("grant_type", "authorization_code"), ("code", grant.code),
                                   ("redirect_uri", grant.redirect_uri), ("code_verifier", grant.verifier),
                                   ("client_id", native["id"])],
                             headers={"DPoP": key.proof(srv.url("/oauth2/token"))})
    assert response.status_code == 200 and response.json()["token_type"] == "DPoP", response.text
    bound = response.json()["access_token"]
    for proof in (None, DPoPKey()):
        description = refused(token_exchange(srv, rs, bound, dpop=proof))
        assert "DPoP" in (description or ""), description
    body = issued(token_exchange(srv, rs, bound, dpop=key), token_type="DPoP")
    seen = introspect(srv, body["access_token"]).json()
    assert seen["active"] is True and seen.get("cnf") == {"jkt": key.thumbprint()}, seen

    # The client's own client-credentials token, bound to its key, as the actor.
    own_key = DPoPKey()
    actor = client_credentials(srv, rs, dpop=own_key)
    subject = user_token(srv, alice, scope="read").at
    for proof in (None, DPoPKey()):
        description = refused(token_exchange(srv, rs, subject, actor=actor, actor_type=AT, dpop=proof))
        assert "DPoP" in (description or ""), description
    body = issued(token_exchange(srv, rs, subject, actor=actor, actor_type=AT, dpop=own_key), token_type="DPoP")
    assert introspect(srv, body["access_token"]).json()["act"] == {"sub": rs["id"], "client_id": rs["id"]}


def test_TX02_malformed_requests_are_invalid_request(srv, alice, tx):
    """TX02: no subject_token or no subject_token_type, a token type Latchkey does not read, an
    actor_token without its type or a type without the token, a made-up actor token, and a
    requested_token_type other than an access token are 400 invalid_request."""
    rs = tx["rs_a"]
    at = user_token(srv, alice, scope="read").at
    refused(token_exchange(srv, rs, None))
    refused(token_exchange(srv, rs, at, subject_type=None))
    for other in ("urn:ietf:params:oauth:token-type:jwt", "urn:ietf:params:oauth:token-type:saml2", "access_token"):
        refused(token_exchange(srv, rs, at, subject_type=other))
    actor = client_credentials(srv, rs)
    refused(token_exchange(srv, rs, at, actor=actor))
    refused(token_exchange(srv, rs, at, actor_type=AT))
    refused(token_exchange(srv, rs, at, actor="lk_at_" + secrets.token_urlsafe(40), actor_type=AT))
    refused(token_exchange(srv, rs, at, actor=actor, actor_type=RT))
    for requested in (RT, ID, "urn:ietf:params:oauth:token-type:jwt"):
        refused(token_exchange(srv, rs, at, extra=[("requested_token_type", requested)]))
    refused(token_exchange(srv, rs, at, extra=[("subject_token", at)]))  # a parameter twice
    # Controls: requested_token_type access_token, and a good actor.
    issued(token_exchange(srv, rs, at, extra=[("requested_token_type", AT)]))
    issued(token_exchange(srv, rs, at, actor=actor, actor_type=AT))


def test_TX02_expired_subject_token_is_refused(short, short_tx):
    """TX02 (on `short`, access tokens of 2 s): the exchange before expiry gives a token that
    expires with its subject (expires_in ≤ 2); once the subject has expired, exchanging it is 400
    invalid_request with the description a made-up token gets, and the exchanged token is dead too."""
    rs = short_tx["rs"]
    grant = user_token(short, Browser(short, "alice"))
    body = issued(token_exchange(short, rs, grant.at))
    assert body["expires_in"] <= 2, body
    time.sleep(2.5)
    made_up = refused(token_exchange(short, rs, "lk_at_" + secrets.token_urlsafe(40)))
    assert refused(token_exchange(short, rs, grant.at)) == made_up
    assert_inactive(short, body["access_token"])


# ============================================================================================ TX03 narrowing

def test_TX03_scope_only_narrows(srv, alice, tx):
    """TX03: from a `read profile` token, `read write` is 400 invalid_scope (write is not in the
    subject token) and so is a malformed scope; `read` gives exactly `read`; with no scope, a
    client allowed only `read` gets `read` out of `read write profile`, and asking it for `write`
    (in the subject, not its own) is invalid_scope."""
    rs, narrow = tx["rs_a"], tx["narrow"]
    small = user_token(srv, alice, scope="read profile")
    refused(token_exchange(srv, rs, small.at, scope="read write"), "invalid_scope")
    refused(token_exchange(srv, rs, small.at, scope="admin"), "invalid_scope")
    refused(token_exchange(srv, rs, small.at, scope="read  profile"), "invalid_scope")
    assert issued(token_exchange(srv, rs, small.at, scope="read"))["scope"] == "read"
    assert set(issued(token_exchange(srv, rs, small.at))["scope"].split()) == {"read", "profile"}

    full = user_token(srv, alice, scope="read write profile")
    body = issued(token_exchange(srv, narrow, full.at))
    assert body["scope"] == "read", body
    seen = introspect(srv, body["access_token"]).json()
    assert seen["scope"] == "read" and seen["client_id"] == narrow["id"], seen
    refused(token_exchange(srv, narrow, full.at, scope="write"), "invalid_scope")


def test_TX03_resources_must_be_registered(srv, alice, tx):
    """TX03: an unregistered `resource` or `audience` (alone or next to a registered one) is 400
    invalid_target; a registered one, named either way, is the new token's audience, and the scope
    with no scope asked is what that resource accepts (with the identity scope profile)."""
    rs = tx["rs_a"]
    at = user_token(srv, alice, scope="read write profile").at
    for extra in ([("resource", UNKNOWN_API)], [("audience", UNKNOWN_API)], [("audience", "tx-api")],
                  [("resource", API), ("resource", UNKNOWN_API)], [("resource", API), ("audience", UNKNOWN_API)]):
        refused(token_exchange(srv, rs, at, extra=extra), "invalid_target")
    for name in ("resource", "audience"):
        body = issued(token_exchange(srv, rs, at, extra=[(name, API)]))
        seen = introspect(srv, body["access_token"]).json()
        audience = seen.get("aud")
        assert seen["active"] is True and API in (audience if isinstance(audience, list) else [audience]), seen
        assert set(body["scope"].split()) == {"read", "write", "profile"}, body
    body = issued(token_exchange(srv, rs, at, extra=[("audience", JWT_API)]))
    claims = jwt_claims(body["access_token"])
    assert claims["aud"] in (JWT_API, [JWT_API]), claims
    assert set(body["scope"].split()) == {"read", "profile"} == set(claims["scope"].split()), (body, claims)
    # A scope the named resource does not take is refused.
    refused(token_exchange(srv, rs, at, scope="write", extra=[("resource", JWT_API)]), "invalid_scope")


def test_TX03_without_a_resource_the_subject_tokens_own_resources_are_kept(srv, alice, tx):
    """TX03: with neither resource nor audience, the new token is for what the subject token was
    for, not for no resource in particular (which would widen it to any resource server that takes
    tokens for none): an opaque token for API gives one for API, within what API takes; a JWT for
    JWT_API gives a JWT for JWT_API; a token for no resource gives one for none."""
    rs = tx["rs_a"]
    for_api = user_token(srv, alice, scope="read write profile", extra=[("resource", API)])
    subject_seen = introspect(srv, for_api.at).json()
    assert audiences(subject_seen) == [API], subject_seen
    body = issued(token_exchange(srv, rs, for_api.at))
    seen = introspect(srv, body["access_token"]).json()
    assert seen["active"] is True and audiences(seen) == [API], seen
    assert set(body["scope"].split()) == {"read", "write", "profile"} == set(seen["scope"].split()), (body, seen)
    narrowed = issued(token_exchange(srv, rs, for_api.at, scope="write"))
    assert narrowed["scope"] == "write" and audiences(introspect(srv, narrowed["access_token"]).json()) == [API]

    for_jwt = user_token(srv, alice, scope="read profile", extra=[("resource", JWT_API)])
    body = issued(token_exchange(srv, rs, for_jwt.at))
    claims = jwt_claims(body["access_token"])
    assert body["access_token"].count(".") == 2 and claims["aud"] in (JWT_API, [JWT_API]), claims
    assert claims["client_id"] == rs["id"], claims

    plain = user_token(srv, alice, scope="read profile")
    body = issued(token_exchange(srv, rs, plain.at))
    assert audiences(introspect(srv, body["access_token"]).json()) == []


def test_TX03_exchanged_token_never_outlives_its_subject_and_cannot_be_refreshed(srv, alice, tx):
    """TX03: from a subject token that lives 60 s, the exchanged token (opaque, or a JWT whose
    resource would give 300 s) expires no later than the subject; no refresh token is issued, and
    the exchanged access token presented as a refresh token is 400 invalid_grant."""
    rs, web_x = tx["rs_a"], tx["web_x"]
    subject = user_token(srv, alice, client=tx["short_native"], scope="read profile", redirect_uri=NATIVE_REDIRECT)
    assert subject.tokens["expires_in"] <= 60
    subject_exp = introspect(srv, subject.at).json()["exp"]
    body = issued(token_exchange(srv, rs, subject.at))
    assert body["expires_in"] <= 60, body
    assert introspect(srv, body["access_token"]).json()["exp"] <= subject_exp
    body = issued(token_exchange(srv, rs, subject.at, extra=[("resource", JWT_API)]))
    assert body["expires_in"] <= 60, body
    assert jwt_claims(body["access_token"])["exp"] <= subject_exp

    # web_x, a web app with the refresh grant, gets no refresh token either, and cannot refresh.
    exchanged = issued(token_exchange(srv, web_x, subject.at))
    assert_token_err(refresh(srv, web_x, exchanged["access_token"]), 400, "invalid_grant")
    assert_token_err(refresh(srv, web_x, subject.rt), 400, "invalid_grant")  # the subject's is not web_x's
    assert introspect(srv, exchanged["access_token"]).json()["active"] is True


# ============================================================================================ TX04 delegation

def test_TX04_act_nests_over_two_hops(srv, alice, bob, tx):
    """TX04: rs_a exchanges alice's token with its own client-credentials token as actor, then rs_b
    exchanges the result with its own: `act` is {sub: rs_b, client_id: rs_b, act: {sub: rs_a,
    client_id: rs_a}}, in introspection and in a JWT; each token is the exchanging client's and
    alice's. Without an actor the subject's chain is kept; a user's token issued to the exchanging
    client (bob's, to web_x) as actor names the user and that client."""
    rs_a, rs_b = tx["rs_a"], tx["rs_b"]
    grant = user_token(srv, alice)
    alice_id = grant.tokens["user_id"]
    hop1 = issued(token_exchange(srv, rs_a, grant.at, actor=client_credentials(srv, rs_a), actor_type=AT))
    first = {"sub": rs_a["id"], "client_id": rs_a["id"]}
    seen = introspect(srv, hop1["access_token"]).json()
    assert seen["act"] == first and seen["client_id"] == rs_a["id"] and seen["sub"] == alice_id, seen
    assert hop1["user_id"] == alice_id

    hop2 = issued(token_exchange(srv, rs_b, hop1["access_token"], actor=client_credentials(srv, rs_b), actor_type=AT))
    second = {"sub": rs_b["id"], "client_id": rs_b["id"], "act": first}
    seen = introspect(srv, hop2["access_token"]).json()
    assert seen["act"] == second and seen["client_id"] == rs_b["id"] and seen["sub"] == alice_id, seen
    as_jwt = issued(token_exchange(srv, rs_b, hop1["access_token"], actor=client_credentials(srv, rs_b),
                                   actor_type=AT, extra=[("resource", JWT_API)]))
    claims = jwt_claims(as_jwt["access_token"])
    assert claims["act"] == second and claims["client_id"] == rs_b["id"] and claims["sub"] == alice_id, claims

    kept = issued(token_exchange(srv, rs_a, hop2["access_token"]))
    seen = introspect(srv, kept["access_token"]).json()
    assert seen["act"] == second and seen["client_id"] == rs_a["id"], seen
    assert "act" not in introspect(srv, grant.at).json()  # the subject token is unchanged

    web_x = tx["web_x"]
    bob_grant = redeem(srv, get_code(bob, web_x, scope="read"))
    by_bob = issued(token_exchange(srv, web_x, grant.at, actor=bob_grant.at, actor_type=AT))
    seen = introspect(srv, by_bob["access_token"]).json()
    assert seen["act"] == {"sub": bob_grant.tokens["user_id"], "client_id": web_x["id"]}, seen
    assert seen["sub"] == alice_id and seen["client_id"] == web_x["id"] and bob_grant.tokens["user_id"] != alice_id


def test_TX04_actor_token_must_be_the_exchanging_clients_own(srv, alice, bob, tx):
    """TX04: the actor is who acts, so its token must be the exchanging client's own: another
    client's client-credentials token (rs_b's, presented by rs_a) or another app's user token
    (bob's, issued to the native app) is 400 invalid_request with the description a made-up actor
    token gets, even for a client that may exchange any app's token as subject; so is an actor
    token that is only the subject token again, issued to another app. The client's own token is
    the control."""
    rs_a, rs_b, web_x = tx["rs_a"], tx["rs_b"], tx["web_x"]
    subject = user_token(srv, alice, scope="read").at
    made_up = refused(token_exchange(srv, rs_a, subject, actor="lk_at_" + secrets.token_urlsafe(40), actor_type=AT))
    bob_native = user_token(srv, bob, scope="read").at
    for exchanger, actor in ((rs_a, client_credentials(srv, rs_b)), (rs_b, client_credentials(srv, rs_a)),
                             (rs_a, bob_native), (web_x, bob_native), (web_x, client_credentials(srv, rs_a)),
                             (rs_a, subject)):
        assert refused(token_exchange(srv, exchanger, subject, actor=actor, actor_type=AT)) == made_up
    # The same tokens are good subjects for these clients, and their own tokens good actors.
    issued(token_exchange(srv, rs_a, bob_native, actor=client_credentials(srv, rs_a), actor_type=AT))
    issued(token_exchange(srv, rs_b, subject, actor=client_credentials(srv, rs_b), actor_type=AT))


def test_TX04_actor_chain_is_at_most_four_deep(srv, alice, tx):
    """TX04: four delegated exchanges, by rs_a and rs_b in turn, each with its own
    client-credentials token as the actor (each hop adds one level), build a chain of four
    actors; a fifth actor is 400 invalid_request saying the chain is full, while exchanging the
    four-deep token without an actor keeps its chain."""
    rs_a, rs_b = tx["rs_a"], tx["rs_b"]
    token = user_token(srv, alice, scope="read").at
    actors = [client_credentials(srv, rs_a), client_credentials(srv, rs_b)]
    for hop in range(MAX_ACTORS):
        exchanger = (rs_a, rs_b)[hop % 2]
        token = issued(token_exchange(srv, exchanger, token, actor=actors[hop % 2], actor_type=AT))["access_token"]
        assert depth(introspect(srv, token).json().get("act")) == hop + 1
    assert str(MAX_ACTORS) in refused(token_exchange(srv, rs_a, token, actor=actors[0], actor_type=AT))
    assert str(MAX_ACTORS) in refused(token_exchange(srv, rs_b, token, actor=actors[1], actor_type=AT,
                                                     extra=[("resource", JWT_API)]))
    kept = issued(token_exchange(srv, rs_a, token))["access_token"]
    assert depth(introspect(srv, kept).json()["act"]) == MAX_ACTORS


# ============================================================================================ TX05 user

def test_TX05_exchanged_token_dies_with_its_user(srv, tx):
    """TX05: a fresh user's token, exchanged plainly and with an actor; once `latchkey users
    disable` runs, the subject and both exchanged tokens are DEAD, and the subject can no longer be
    exchanged (invalid_request)."""
    name = "tx-carol-" + secrets.token_hex(3)
    srv.add_user(name, "tx-carol-password-1")
    grant = user_token(srv, Browser(srv, name), scope="read profile")
    rs = tx["rs_a"]
    plain = issued(token_exchange(srv, rs, grant.at))["access_token"]
    actor = client_credentials(srv, rs)
    delegated = issued(token_exchange(srv, rs, grant.at, actor=actor, actor_type=AT))["access_token"]
    assert_alive(srv, plain)
    assert_alive(srv, delegated)
    srv.cli("users", "disable", name)
    for token in (grant.at, plain, delegated):
        assert_dead(srv, token)
    refused(token_exchange(srv, rs, grant.at))
    srv.cli("users", "enable", name)  # enabling again brings none of them back
    for token in (grant.at, plain, delegated):
        assert_inactive(srv, token)
    refused(token_exchange(srv, rs, grant.at))


def test_TX05_exchange_racing_disable_leaves_no_live_token(srv, tx):
    """TX05: exchanges of a user's token run on four threads, one after another, while `latchkey
    users disable` runs: an exchange that read the subject token before the disabling and would
    store its token after it must store nothing (the grant is stored only while the user's access
    is as it was when the subject was read). Once the command is done, no token any exchange gave
    is alive, and every later exchange is refused."""
    name = "tx-race-" + secrets.token_hex(3)
    srv.add_user(name, "tx-race-password-1")
    grant = user_token(srv, Browser(srv, name), scope="read profile")
    rs = tx["rs_a"]
    tokens, answers, stop = [], [], threading.Event()

    def exchanging():
        while not stop.is_set():
            response = token_exchange(srv, rs, grant.at)
            answers.append((response.status_code, response.json().get("error")))
            if response.status_code == 200:
                tokens.append(response.json()["access_token"])

    workers = [threading.Thread(target=exchanging) for _ in range(4)]
    for worker in workers:
        worker.start()
    try:
        deadline = time.monotonic() + 20
        while len(tokens) < 4 and time.monotonic() < deadline:
            time.sleep(0.02)
        srv.cli("users", "disable", name)
        disabled = len(answers)
        time.sleep(0.5)
    finally:
        stop.set()
        for worker in workers:
            worker.join(30)
    assert tokens, "no exchange succeeded before the user was disabled"
    assert set(answers) <= {(200, None), (400, "invalid_request")}, set(answers)
    assert len(answers) > disabled, "no exchange was tried after the user was disabled"
    for token in tokens:
        assert_inactive(srv, token)
    assert_dead(srv, grant.at)
    refused(token_exchange(srv, rs, grant.at))


def _id_token_of_fresh_user(srv, tx):
    """A fresh user's ID token (and grant) from web_x, and the user's name."""
    name = "tx-id-" + secrets.token_hex(3)
    srv.add_user(name, "tx-id-password-1")
    grant = redeem(srv, get_code(Browser(srv, name), tx["web_x"], scope="openid read profile"))
    issued(token_exchange(srv, tx["web_x"], grant.tokens["id_token"], subject_type=ID))  # control: good now
    return name, grant


def test_TX05_disabled_users_id_token_is_refused(srv, tx):
    """TX05: while its user is disabled, an ID token issued before is no subject: 400
    invalid_request, as for a disabled user's access token (not a token for a disabled user)."""
    name, grant = _id_token_of_fresh_user(srv, tx)
    srv.cli("users", "disable", name)
    refused(token_exchange(srv, tx["web_x"], grant.tokens["id_token"], subject_type=ID))


def test_TX05_id_token_from_before_disable_stays_dead_after_enable(srv, tx):
    """TX05: `users enable` says the apps the user used must be authorized again; an ID token issued
    before the account was disabled must not mint an access token once it is enabled again (its
    grant's tokens all stay dead)."""
    name, grant = _id_token_of_fresh_user(srv, tx)
    srv.cli("users", "disable", name)
    srv.cli("users", "enable", name)
    assert_inactive(srv, grant.at)
    assert_token_err(refresh(srv, tx["web_x"], grant.rt), 400, "invalid_grant")
    response = token_exchange(srv, tx["web_x"], grant.tokens["id_token"], subject_type=ID)
    if response.status_code == 200:
        seen = introspect(srv, response.json()["access_token"]).json()
        pytest.fail(f"an ID token from before `users disable` was exchanged after `users enable`: "
                    f"{response.text}; introspection: {seen}")
    refused(response)


# ============================================================================================ TX06 many at once

def test_TX06_parallel_exchanges_give_independent_tokens(srv, alice, tx):
    """TX06: eight exchanges of one subject token released together all succeed with eight
    different tokens, each active; the subject token is not consumed; revoking one exchanged token
    leaves the other seven and the subject alive."""
    rs = tx["rs_a"]
    grant = user_token(srv, alice, scope="read profile")
    results = barrier_run(8, lambda i: token_exchange(srv, rs, grant.at))
    bodies = [issued(result) if hasattr(result, "status_code") else pytest.fail(repr(result)) for result in results]
    tokens = [body["access_token"] for body in bodies]
    assert len(set(tokens)) == 8, "the same token was issued twice"
    for token in tokens:
        seen = introspect(srv, token).json()
        assert seen["active"] is True and seen["client_id"] == rs["id"] and seen["sub"] == grant.tokens["user_id"], seen
    assert_alive(srv, grant.at)
    assert revoke(srv, rs, tokens[0]).status_code == 200
    assert_dead(srv, tokens[0])
    for token in tokens[1:]:
        assert introspect(srv, token).json()["active"] is True
    assert_alive(srv, grant.at)
    issued(token_exchange(srv, rs, grant.at))  # and it can be exchanged again
