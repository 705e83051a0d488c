"""Client assertions (`private_key_jwt`, RFC 7523 §2.2, §3), the attack catalogue's CA cases: each
attack on a client that proves itself with a signed JWT instead of a secret, sent over real HTTP
to a real `latchkey serve`, and refused with 401 invalid_client (400 invalid_request for a request
that mixes or garbles the methods), next to a control, the same client's good assertion, accepted.

- CA01 replay: a `jti` is used once per client, across endpoints and under a burst of parallel
  requests; an assertion refused for its DPoP proof (checked first) is not spent.
- CA02 audience: `aud` must be this server's issuer (at every endpoint), or the token endpoint's
  URL (at the token endpoint and PAR), or PAR's own URL (at PAR); an endpoint's URL anywhere else
  (revocation, introspection, device authorization) is refused.
- CA03 lifetime: `exp` present, in the future, at most an hour ahead; `nbf`, `iat` not in the future; a `jti`.
- CA04 algorithm confusion: `none`, HMAC keyed with the public key, a key the token brings along,
  a signature by another key under the registered `kid`, an algorithm the key is pinned against.
- CA05 the wrong client: `iss` ≠ `sub`, another client's `sub`, a secret client sending an assertion,
  a key client sending a secret, two methods at once, a `client_id` that is not the `sub`.
- CA06 key set hygiene: a set with any private member (an encryption key's too), symmetric, short
  or encryption-only keys and plain-http key URLs are refused at registration; a `jwks_uri` on
  loopback or a private address is never fetched.
- CA07 throttle: failed assertions count against the client as wrong secrets do (T41); one naming
  an unknown client counts too (in buckets shared by hash), one naming no client at all does not.

Until the signature has verified, whatever went wrong (no such client, no key for the kid or alg,
a bad signature, alg none or HMAC, a key in the header, an unreadable assertion, a key set that
cannot be read or used), the answer is the same 401 invalid_client "Client authentication
failed.", so that it tells a stranger nothing of which clients have keys or what their kids are;
the reason goes to the server's log only (`client_authentication.failed` or `client_keys.refused`,
with a `reason`). Once the signature has verified, the sender holds the key and is told what is
wrong (aud, exp, nbf, iat, jti, iss, a replay).

The key clients are registered through the real CLI on the catalogue's servers (`srv`, `throttle`
from conftest.py), with `--token-endpoint-auth-method private_key_jwt --jwks-file`. Assertions are
made here with `cryptography` alone (ES256 as raw r||s, RS256, PS256 with a 32-byte salt, EdDSA),
so that any header or claim can be bent. scripts/test runs the replay cases (`CA01`) again with the
servers on PostgreSQL, where the one-use `jti` must hold across the database as well; every test is
named CA0N so that `-k CA0` runs the whole catalogue there by hand.
"""
import base64
import hashlib
import hmac
import json
import os
import secrets
import socket
import time

import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

from latchkey_process import log_records
from security_harness import assert_token_err, barrier_run, pkce

ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
CLIENT_CREDENTIALS = {"grant_type": "client_credentials", "scope": "svc.read"}
KEY_WEB_CB = "https://keyweb.example/cb"
OMIT = object()  # a claim or header member to leave out


# --------------------------------------------------------------------------------------------- keys and JWS

def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _int_bytes(value, length=None):
    return value.to_bytes(length or (value.bit_length() + 7) // 8, "big")


class SigningKey:
    """A private key of one kind (EC P-256, RSA, Ed25519) with its kid, its public JWK, and a
    signer for each JWS algorithm it (or a confused verifier) might use."""

    def __init__(self, kind="EC", kid=None, bits=2048):
        self.kind, self.kid = kind, kid
        if kind == "EC":
            self.private, self.alg = ec.generate_private_key(ec.SECP256R1()), "ES256"
        elif kind == "RSA":
            self.private, self.alg = rsa.generate_private_key(public_exponent=65537, key_size=bits), "RS256"
        elif kind == "Ed25519":
            self.private, self.alg = ed25519.Ed25519PrivateKey.generate(), "EdDSA"
        else:
            raise ValueError(kind)

    def public_jwk(self, private=False, **members):
        public = self.private.public_key()
        if self.kind == "EC":
            numbers = public.public_numbers()
            jwk = {"kty": "EC", "crv": "P-256", "x": b64url(_int_bytes(numbers.x, 32)), "y": b64url(_int_bytes(numbers.y, 32))}
            if private:
                jwk["d"] = b64url(_int_bytes(self.private.private_numbers().private_value, 32))
        elif self.kind == "RSA":
            numbers = public.public_numbers()
            jwk = {"kty": "RSA", "n": b64url(_int_bytes(numbers.n)), "e": b64url(_int_bytes(numbers.e))}
            if private:
                jwk["d"] = b64url(_int_bytes(self.private.private_numbers().d))
        else:
            raw = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
            jwk = {"kty": "OKP", "crv": "Ed25519", "x": b64url(raw)}
        if self.kid:
            jwk["kid"] = self.kid
        jwk.update(members)
        return jwk

    def public_pem(self):
        return self.private.public_key().public_bytes(serialization.Encoding.PEM,
                                                      serialization.PublicFormat.SubjectPublicKeyInfo)

    def sign(self, data, alg):
        if alg == "ES256":
            r, s = decode_dss_signature(self.private.sign(data, ec.ECDSA(hashes.SHA256())))
            return _int_bytes(r, 32) + _int_bytes(s, 32)
        if alg == "RS256":
            return self.private.sign(data, padding.PKCS1v15(), hashes.SHA256())
        if alg == "PS256":
            return self.private.sign(data, padding.PSS(mgf=padding.MGF1(hashes.SHA256()), salt_length=32), hashes.SHA256())
        if alg == "EdDSA":
            return self.private.sign(data)
        raise ValueError(alg)


def jws(header, claims, signer):
    """A compact JWS: `signer(signing input)` gives the signature bytes (None: an empty signature)."""
    encode = lambda obj: b64url(json.dumps(obj, separators=(",", ":")).encode())  # noqa: E731
    signing_input = f"{encode(header)}.{encode(claims)}"
    signature = signer(signing_input.encode()) if signer else b""
    return f"{signing_input}.{b64url(signature)}"


def make_assertion(client_id, key, audience, alg=None, header=None, signer=None, **claims):
    """A client assertion for `client_id`, signed by `key` (or by `signer`), with `iss` = `sub` =
    the client id, `aud`, a fresh `jti`, `iat` now and `exp` a minute ahead; `claims` and `header`
    replace or (with OMIT) remove members."""
    now = int(time.time())
    body = {"iss": client_id, "sub": client_id, "aud": audience, "jti": secrets.token_urlsafe(16),
            "iat": now, "exp": now + 60}
    body.update(claims)
    alg = alg or key.alg
    head = {"alg": alg, "typ": "JWT", **({"kid": key.kid} if key.kid else {})}
    head.update(header or {})
    body = {k: v for k, v in body.items() if v is not OMIT}
    head = {k: v for k, v in head.items() if v is not OMIT}
    return jws(head, body, signer or (lambda data: key.sign(data, alg)))


class KeyClient:
    """A service client registered with keys on one server; `assertion(...)` makes one for it."""

    def __init__(self, server, info, key):
        self.server, self.id, self.key, self.info = server, info["client_id"], key, info

    def assertion(self, **kw):
        kw.setdefault("audience", self.server.issuer)
        return make_assertion(self.id, self.key, **kw)


def register_key_client(server, folder, name, key, jwks=None, scope="svc.read", client_type="service", extra=()):
    """`latchkey clients create --type service ... --token-endpoint-auth-method private_key_jwt
    --jwks-file F`, F holding `jwks` (default: the key's public JWK)."""
    path = folder / f"{name}-{secrets.token_hex(3)}.json"
    path.write_text(json.dumps(jwks or {"keys": [key.public_jwk()]}))
    info = server.cli("clients", "create", "--type", client_type, "--name", name, "--scope", scope, *extra,
                      "--token-endpoint-auth-method", "private_key_jwt", "--jwks-file", str(path))
    assert info["token_endpoint_auth_method"] == "private_key_jwt" and info["client_secret"] is None, info
    return KeyClient(server, info, key)


def try_register(server, folder, jwks=None, jwks_uri=None):
    """The CompletedProcess of a `clients create` with keys, whatever its exit status."""
    args = ["clients", "create", "--type", "service", "--name", "ca-refused", "--scope", "svc.read",
            "--token-endpoint-auth-method", "private_key_jwt"]
    if jwks is not None:
        path = folder / f"refused-{secrets.token_hex(3)}.json"
        path.write_text(json.dumps(jwks))
        args += ["--jwks-file", str(path)]
    if jwks_uri is not None:
        args += ["--jwks-uri", jwks_uri]
    return server.cli(*args, check=False)


# --------------------------------------------------------------------------------------------- requests

def send(server, assertion, path="/oauth2/token", data=None, assertion_type=ASSERTION_TYPE, **kw):
    """POSTs `data` (default: client credentials for svc.read) with the assertion; `client_id` and
    the like go in `data`, Basic in `auth`."""
    body = dict(CLIENT_CREDENTIALS if data is None else data)
    if assertion_type is not None:
        body["client_assertion_type"] = assertion_type
    if assertion is not None:
        body["client_assertion"] = assertion
    return server.post(path, data=body, **kw)


def accepted(response):
    assert response.status_code == 200, f"the good assertion was refused: {response.status_code} {response.text}"
    body = response.json()
    assert body.get("access_token"), body
    return body


def invalid_client(response, *words):
    """TOKEN-ERR(401, invalid_client) with an error_description; returns the description."""
    body = assert_token_err(response, 401, "invalid_client")
    description = body.get("error_description") or ""
    assert description, body
    for word in words:
        assert word in description, f"{word!r} not in {description!r}"
    return description


def invalid_request(response):
    return assert_token_err(response, 400, "invalid_request")


def logged(server, event, client_id, wait=5):
    """The server's log lines (stderr) for `event` naming `client_id`, waiting for one to appear."""
    deadline = time.monotonic() + wait
    while True:
        with open(server.stderr_path, encoding="utf-8", errors="replace") as log:
            lines = [line for line in log if event in line and client_id in line]
        if lines or time.monotonic() > deadline:
            return lines
        time.sleep(0.05)


GENERIC = "Client authentication failed."


def log_mark(server):
    """Where the server's log (stderr) ends now; `log_records` reads what is written after it."""
    return os.path.getsize(server.stderr_path)



def refused_unverified(server, client_id, request, *reason_words, event="client_authentication.failed"):
    """`request()` (a request with an assertion whose signature never verified) is 401
    invalid_client saying only GENERIC, whatever went wrong; why is in the server's log: an
    `event` record naming `client_id`, its `reason` holding each of `reason_words`. Returns the
    records."""
    mark = log_mark(server)
    description = invalid_client(request())
    assert description == GENERIC, f"the answer says why before the signature verified: {description!r}"
    records = log_records(server, mark, event, client_id)
    assert records, f"no {event} naming {client_id} in the log"
    reasons = " | ".join(str(record.get("reason", "")) for record in records)
    for word in reason_words:
        assert word.lower() in reasons.lower(), f"{word!r} not in the logged reason {reasons!r}"
    return records


def dpop_proof(key, url, method="POST"):
    """A DPoP proof (RFC 9449 §4.2) by `key` (a SigningKey without kid) for `method` `url`."""
    claims = {"jti": secrets.token_urlsafe(16), "htm": method, "htu": url, "iat": int(time.time())}
    header = {"typ": "dpop+jwt", "alg": key.alg, "jwk": key.public_jwk()}
    return jws(header, claims, lambda data: key.sign(data, key.alg))


# --------------------------------------------------------------------------------------------- fixtures

@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("client-keys")


@pytest.fixture(scope="module")
def keyed(srv, folder):
    """Key clients on `srv`: es (EC, kid es-1), es2 (EC, kid es2-1), rsa (RSA 2048, kid rsa-1),
    pinned (RSA with alg RS256 in its JWK), ed (Ed25519, no kid); and web (EC, kid web-1), a web
    client that may push authorization requests and use the device flow."""
    clients = {
        "es": register_key_client(srv, folder, "ca-es", SigningKey("EC", "es-1")),
        "es2": register_key_client(srv, folder, "ca-es2", SigningKey("EC", "es2-1")),
        "rsa": register_key_client(srv, folder, "ca-rsa", SigningKey("RSA", "rsa-1")),
        "ed": register_key_client(srv, folder, "ca-ed", SigningKey("Ed25519")),
    }
    clients["web"] = register_key_client(srv, folder, "ca-web", SigningKey("EC", "web-1"), scope="read",
                                         client_type="web", extra=["--redirect-uri", KEY_WEB_CB, "--allow-device-code"])
    pinned = SigningKey("RSA", "pinned-1")
    clients["pinned"] = register_key_client(srv, folder, "ca-pinned", pinned,
                                            jwks={"keys": [pinned.public_jwk(alg="RS256", use="sig")]})
    return clients


# ============================================================================================ CA01 replay

def test_CA01_replayed_assertion_is_refused(srv, keyed):
    """CA01: an assertion is good for one request. Sent again (to the same endpoint or another), or
    re-signed with the same jti and a new exp, it is 401 invalid_client saying it was used before,
    and the replay is logged. The jti is the client's own: another client may use the same one."""
    es = keyed["es"]
    jti = secrets.token_urlsafe(16)
    assertion = es.assertion(jti=jti)
    accepted(send(srv, assertion))
    invalid_client(send(srv, assertion), "used before")
    invalid_client(send(srv, assertion, path="/oauth2/introspect", data={"token": "x"}), "used before")
    invalid_client(send(srv, es.assertion(jti=jti, exp=int(time.time()) + 120)), "used before")
    assert logged(srv, "client_assertion.replayed", es.id), "the replay should be logged"
    # The same jti from another client is that client's first use.
    accepted(send(srv, keyed["es2"].assertion(jti=jti)))
    accepted(send(srv, es.assertion()))  # control: a new assertion


def test_CA01_parallel_replay_only_one_wins(srv, keyed):
    """CA01: sixteen requests carrying one assertion, released together: exactly one gets a token,
    the fifteen others 401 invalid_client (the jti is recorded atomically in the store)."""
    es = keyed["es"]
    assertion = es.assertion()
    results = barrier_run(16, lambda i: send(srv, assertion))
    statuses = sorted(getattr(r, "status_code", repr(r)) for r in results)
    assert statuses == [200] + [401] * 15, statuses
    for response in results:
        if response.status_code == 401:
            assert response.json()["error"] == "invalid_client", response.text
    accepted(send(srv, es.assertion()))


def test_CA01_assertion_refused_for_its_dpop_proof_is_not_spent(srv, keyed):
    """CA01: at the token endpoint the DPoP proof is checked before the client is: a request whose
    proof is refused (made out to another URL, or signed by another key than the one it names)
    leaves its assertion unspent, so the client may send the same body again with a good proof, as
    it must after use_dpop_nonce; the assertion is spent by that request, and only by it."""
    es = keyed["es"]
    key = SigningKey("EC")
    token_url = srv.issuer + "/oauth2/token"
    assertion = es.assertion()
    wrong_url = send(srv, assertion, headers={"DPoP": dpop_proof(key, srv.issuer + "/oauth2/revoke")})
    assert_token_err(wrong_url, 400, "invalid_dpop_proof")
    header, payload, _ = dpop_proof(key, token_url).split(".")
    forged = f"{header}.{payload}.{b64url(SigningKey('EC').sign(f'{header}.{payload}'.encode(), 'ES256'))}"
    assert_token_err(send(srv, assertion, headers={"DPoP": forged}), 400, "invalid_dpop_proof")
    body = accepted(send(srv, assertion, headers={"DPoP": dpop_proof(key, token_url)}))
    assert body["token_type"] == "DPoP", body
    invalid_client(send(srv, assertion, headers={"DPoP": dpop_proof(key, token_url)}), "used before")


# ============================================================================================ CA02 audience

@pytest.mark.parametrize("case", ["another_server", "made_up_path", "missing", "array_without_us", "number",
                                  "issuer_prefix"])
def test_CA02_assertion_for_another_audience_is_refused(srv, keyed, case):
    """CA02: an assertion made for another server (or for no one) cannot be spent here; the
    signature has verified, so the answer says it is the aud."""
    audience = {
        "another_server": "https://as.other.example",
        "made_up_path": srv.issuer + "/oauth2/made-up",
        "missing": OMIT,
        "array_without_us": ["https://as.other.example", srv.issuer + "/login"],
        "number": 42,
        "issuer_prefix": srv.issuer.rsplit(":", 1)[0],  # the host without the port
    }[case]
    es = keyed["es"]
    invalid_client(send(srv, es.assertion(audience=audience)), "aud")
    accepted(send(srv, es.assertion()))


def _par_request(web):
    return {"response_type": "code", "client_id": web.id, "redirect_uri": KEY_WEB_CB, "scope": "read",
            "state": "ca02", "code_challenge": pkce()[1], "code_challenge_method": "S256"}


def _at_endpoint(srv, keyed, path, audience):
    """An assertion with `audience` sent to `path` with what that endpoint needs: es at the token,
    revocation and introspection endpoints, the web client at PAR and device authorization."""
    client = keyed["web"] if path in ("/oauth2/par", "/oauth2/device_authorization") else keyed["es"]
    data = {"/oauth2/token": None, "/oauth2/revoke": {"token": "lk_at_unknown"},
            "/oauth2/introspect": {"token": "lk_at_unknown"}, "/oauth2/device_authorization": {"scope": "read"},
            "/oauth2/par": _par_request(keyed["web"])}[path]
    return send(srv, client.assertion(audience=audience), path=path, data=data)


def _answered(response, path):
    """The endpoint's own success: a token, 200 at revocation and introspection, 201 at PAR, a
    device code at device authorization."""
    if path == "/oauth2/token":
        return accepted(response)
    if path == "/oauth2/par":
        assert response.status_code == 201 and response.json()["request_uri"], response.text
    elif path == "/oauth2/device_authorization":
        assert response.status_code == 200 and response.json()["device_code"], response.text
    else:
        assert response.status_code == 200, response.text
    return response


def test_CA02_issuer_and_endpoint_audiences_are_accepted(srv, keyed):
    """CA02 control: the issuer identifier is a good aud at every endpoint that authenticates
    clients (token, revocation, introspection, PAR, device authorization), alone or in an array;
    the token endpoint's URL is good at the token endpoint (RFC 7523 §3) and at PAR (RFC 9126 §2),
    and PAR's own URL at PAR."""
    issuer = srv.issuer
    for path in ("/oauth2/token", "/oauth2/revoke", "/oauth2/introspect", "/oauth2/par",
                 "/oauth2/device_authorization"):
        _answered(_at_endpoint(srv, keyed, path, issuer), path)
        _answered(_at_endpoint(srv, keyed, path, ["https://as.other.example", issuer]), path)
    _answered(_at_endpoint(srv, keyed, "/oauth2/token", issuer + "/oauth2/token"), "/oauth2/token")
    _answered(_at_endpoint(srv, keyed, "/oauth2/par", issuer + "/oauth2/token"), "/oauth2/par")
    _answered(_at_endpoint(srv, keyed, "/oauth2/par", issuer + "/oauth2/par"), "/oauth2/par")


@pytest.mark.parametrize("path, audience_path", [
    ("/oauth2/revoke", "/oauth2/revoke"), ("/oauth2/revoke", "/oauth2/token"),
    ("/oauth2/introspect", "/oauth2/introspect"), ("/oauth2/introspect", "/oauth2/token"),
    ("/oauth2/device_authorization", "/oauth2/device_authorization"),
    ("/oauth2/device_authorization", "/oauth2/token"),
    ("/oauth2/token", "/oauth2/par"), ("/oauth2/token", "/oauth2/revoke"), ("/oauth2/par", "/oauth2/revoke"),
])
def test_CA02_endpoint_url_audience_is_refused_elsewhere(srv, keyed, path, audience_path):
    """CA02: an endpoint's URL is a good aud only where the rules above say (the token endpoint's
    at the token endpoint and PAR, PAR's at PAR): at revocation, introspection and device
    authorization only the issuer is, so neither their own URL nor the token endpoint's is taken
    there, and the URL of another endpoint is not taken at the token endpoint or PAR. An
    assertion another server's endpoint was given, claiming one of these URLs, is then good at
    no more than one endpoint here. 401 invalid_client naming aud; the issuer, at the same
    endpoint, is accepted."""
    response = _at_endpoint(srv, keyed, path, srv.issuer + audience_path)
    invalid_client(response, "aud")
    _answered(_at_endpoint(srv, keyed, path, srv.issuer), path)


# ============================================================================================ CA03 lifetime

@pytest.mark.parametrize("case", ["expired", "two_hours_ahead", "no_exp", "exp_as_text", "nbf_future",
                                  "iat_future", "no_jti", "empty_jti", "jti_257", "jti_number"])
def test_CA03_lifetime_and_jti_rules(srv, keyed, case):
    """CA03: an assertion must have expired less than a minute ago at most, live at most an hour
    (so its jti need only be kept that long), not be dated in the future, and carry a jti. The
    signature has verified, so the answer names the claim."""
    now = int(time.time())
    claims, claim = {
        "expired": ({"exp": now - 120, "iat": now - 180}, "exp"),
        "two_hours_ahead": ({"exp": now + 7200}, "exp"),
        "no_exp": ({"exp": OMIT}, "exp"),
        "exp_as_text": ({"exp": str(now + 60)}, "exp"),
        "nbf_future": ({"nbf": now + 300}, "nbf"),
        "iat_future": ({"iat": now + 300}, "iat"),
        "no_jti": ({"jti": OMIT}, "jti"),
        "empty_jti": ({"jti": ""}, "jti"),
        "jti_257": ({"jti": "j" * 257}, "jti"),
        "jti_number": ({"jti": 12345}, "jti"),
    }[case]
    es = keyed["es"]
    invalid_client(send(srv, es.assertion(**claims)), claim)
    accepted(send(srv, es.assertion()))


def test_CA03_limits_themselves_are_accepted(srv, keyed):
    """CA03 control: an hour's lifetime, a 256-character jti, nbf and iat now, no iat at all."""
    es = keyed["es"]
    now = int(time.time())
    accepted(send(srv, es.assertion(exp=now + 3600)))
    accepted(send(srv, es.assertion(jti=secrets.token_urlsafe(192))))  # 256 characters
    accepted(send(srv, es.assertion(nbf=now, iat=now)))
    accepted(send(srv, es.assertion(iat=OMIT)))


# ============================================================================================ CA04 algorithms

def _hs256(secret):
    return lambda data: hmac.new(secret, data, hashlib.sha256).digest()


def test_CA04_unsigned_and_hmac_assertions_are_refused(srv, keyed):
    """CA04: alg none (with or without a signature part), and HS256 keyed with the client's public
    key as its JSON, its JWK Set text or its PEM (the classic confusion of a verifier that feeds
    whatever key it holds to whatever alg the token names) are refused, saying only that client
    authentication failed; the log says it was the alg."""
    for name in ("es", "rsa"):
        client = keyed[name]
        jwk = client.key.public_jwk()
        for alg in ("none", "None", "NONE"):
            refused_unverified(srv, client.id,
                               lambda: send(srv, client.assertion(alg=alg, signer=lambda data: b"")), "alg")
        refused_unverified(srv, client.id, lambda: send(srv, client.assertion(
            alg="none", signer=lambda data: client.key.sign(data, client.key.alg))), "alg")
        secrets_tried = [json.dumps(jwk).encode(), json.dumps(jwk, separators=(",", ":"), sort_keys=True).encode(),
                         json.dumps({"keys": [jwk]}).encode(), client.key.public_pem()]
        for secret in secrets_tried:
            for alg in ("HS256", "HS384", "HS512"):
                refused_unverified(srv, client.id, lambda: send(srv, client.assertion(alg=alg, signer=_hs256(secret))),
                                   "alg")
        accepted(send(srv, client.assertion()))


@pytest.mark.parametrize("member", ["jwk", "jku", "x5u", "x5c", "crit"])
def test_CA04_key_brought_by_the_token_is_refused(srv, keyed, member):
    """CA04: the attacker signs with a key of its own and puts it in the header (jwk), points at it
    (jku, x5u), embeds a certificate (x5c) or marks the header critical (crit): the key is always
    the registered one, so each is refused before any fetch, the answer saying only that client
    authentication failed and the log naming the member."""
    es = keyed["es"]
    attacker = SigningKey("EC", kid=es.key.kid)
    header = {
        "jwk": attacker.public_jwk(),
        "jku": "https://attacker.example/jwks.json",
        "x5u": "https://attacker.example/cert.pem",
        "x5c": [base64.b64encode(attacker.public_pem()).decode()],
        "crit": ["exp"],
    }
    header = {member: header[member]}
    refused_unverified(srv, es.id, lambda: send(srv, make_assertion(es.id, attacker, srv.issuer, header=header)),
                       member)
    # Even signed by the rightful key, a header asking for more than a plain JWS is refused.
    refused_unverified(srv, es.id, lambda: send(srv, es.assertion(header=header)), member)
    accepted(send(srv, es.assertion()))


def test_CA04_wrong_key_wrong_alg_and_tampering_are_refused(srv, keyed):
    """CA04: a signature by another key under the registered kid (and with no kid); an alg the key
    cannot sign with (ES256 on an RSA key, RS256 on an EC key); PS256 on an RSA key pinned to
    RS256; a DER-encoded ES256 signature; a claim changed after signing; a signature that is not
    base64url. Each answer says only that client authentication failed, never which kids or
    algorithms the client has; the log has the reason."""
    es, rsa_client, pinned, ed = keyed["es"], keyed["rsa"], keyed["pinned"], keyed["ed"]
    stranger = SigningKey("EC", kid="es-1")
    refused_unverified(srv, es.id, lambda: send(srv, make_assertion(es.id, stranger, srv.issuer)), "signature")
    refused_unverified(srv, es.id, lambda: send(srv, make_assertion(es.id, stranger, srv.issuer, header={"kid": OMIT})),
                       "signature")
    refused_unverified(srv, es.id, lambda: send(srv, make_assertion(es.id, SigningKey("EC", "es-9"), srv.issuer)),
                       "kid")
    refused_unverified(srv, ed.id, lambda: send(srv, make_assertion(ed.id, SigningKey("Ed25519"), srv.issuer)),
                       "signature")
    refused_unverified(srv, rsa_client.id, lambda: send(srv, rsa_client.assertion(
        alg="ES256", signer=lambda data: SigningKey("EC").sign(data, "ES256"))), "ES256")
    refused_unverified(srv, es.id, lambda: send(srv, es.assertion(
        alg="RS256", signer=lambda data: SigningKey("RSA").sign(data, "RS256"))), "RS256")
    refused_unverified(srv, pinned.id, lambda: send(srv, pinned.assertion(alg="PS256")), "PS256")
    accepted(send(srv, pinned.assertion(alg="RS256")))
    accepted(send(srv, rsa_client.assertion(alg="PS256")))  # an unpinned RSA key signs PS256 as well
    accepted(send(srv, ed.assertion()))
    der = lambda data: es.key.private.sign(data, ec.ECDSA(hashes.SHA256()))  # noqa: E731
    refused_unverified(srv, es.id, lambda: send(srv, es.assertion(signer=der)), "signature")
    header, payload, signature = es.assertion().split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    claims["exp"] += 600
    tampered = ".".join([header, b64url(json.dumps(claims).encode()), signature])
    refused_unverified(srv, es.id, lambda: send(srv, tampered), "signature")
    refused_unverified(srv, es.id, lambda: send(srv, f"{header}.{payload}.!!!"))  # names es, but is no JWS
    accepted(send(srv, es.assertion()))


def test_CA04_unreadable_assertion_says_only_that_authentication_failed(srv, keyed):
    """CA04: garbage, a JWS cut short, or one naming no client (no sub) is 401 invalid_client
    saying only that client authentication failed, like every assertion whose signature never
    verified."""
    es = keyed["es"]
    header, payload, _ = es.assertion().split(".")
    for garbage in ("not-a-jwt", "a.b.c", "a.b", header + "." + payload, es.assertion(sub=OMIT),
                    es.assertion(sub="")):
        assert invalid_client(send(srv, garbage)) == GENERIC, garbage
    accepted(send(srv, es.assertion()))


# ============================================================================================ CA05 the wrong client

def test_CA05_assertion_naming_another_client_is_refused(srv, keyed):
    """CA05: iss must equal sub (the signature verified: the answer says so); an assertion whose
    sub is another key client, signed with this client's key (with or without this client's kid),
    does not authenticate that client; nor does one for a public client, which has no keys, or for
    no client at all. Those three answers are one and the same, so they tell a stranger nothing of
    which ids exist or have keys; the log tells them apart."""
    es, es2 = keyed["es"], keyed["es2"]
    invalid_client(send(srv, es.assertion(iss="someone-else")), "iss")
    invalid_client(send(srv, es.assertion(iss=es2.id)), "iss")
    refused_unverified(srv, es2.id, lambda: send(srv, make_assertion(es2.id, es.key, srv.issuer)), "kid")
    refused_unverified(srv, es2.id, lambda: send(srv, make_assertion(es2.id, es.key, srv.issuer, header={"kid": OMIT})),
                       "signature")
    native = srv.clients["native"]
    record, = refused_unverified(srv, native["id"], lambda: send(srv, make_assertion(native["id"], es.key, srv.issuer)))
    assert record["client_known"] == "true", record
    nobody = "no-such-client-" + secrets.token_hex(4)
    record, = refused_unverified(srv, nobody, lambda: send(srv, make_assertion(nobody, es.key, srv.issuer)))
    assert record["client_known"] == "false", record
    accepted(send(srv, es2.assertion()))
    accepted(send(srv, es.assertion()))


def test_CA05_secret_client_cannot_use_an_assertion(srv):
    """CA05: a client registered with a secret cannot switch to assertions, whatever key signs
    them: 401 invalid_client, saying only that client authentication failed; its secret still works."""
    svc = srv.clients["svc"]
    for key in (SigningKey("EC"), SigningKey("RSA")):
        refused_unverified(srv, svc["id"], lambda: send(srv, make_assertion(svc["id"], key, srv.issuer)))
    response = srv.post("/oauth2/token", data=CLIENT_CREDENTIALS, auth=(svc["id"], svc["secret"]))
    assert response.status_code == 200, response.text


def test_CA05_key_client_cannot_use_a_secret(srv, keyed):
    """CA05: a key client has no secret: Basic or client_secret with anything is 401
    invalid_client (Basic with its challenge), client_id alone is too."""
    es = keyed["es"]
    response = srv.post("/oauth2/token", data=CLIENT_CREDENTIALS, auth=(es.id, "lk_cs_" + secrets.token_urlsafe(32)))
    assert_token_err(response, 401, "invalid_client", basic=True)
    for secret in ("lk_cs_" + secrets.token_urlsafe(32), ""):
        response = srv.post("/oauth2/token", data={**CLIENT_CREDENTIALS, "client_id": es.id, "client_secret": secret})
        invalid_client(response)
    invalid_client(srv.post("/oauth2/token", data={**CLIENT_CREDENTIALS, "client_id": es.id}), "private_key_jwt")
    accepted(send(srv, es.assertion()))


def test_CA05_two_methods_or_a_garbled_request_is_invalid_request(srv, keyed):
    """CA05: an assertion with Basic or with client_secret is two methods (400 invalid_request,
    whatever the credentials); a wrong or missing client_assertion_type, or a type without an
    assertion, is 400; a client_id other than the assertion's sub is 400, the sub itself is fine."""
    es, svc = keyed["es"], srv.clients["svc"]
    invalid_request(send(srv, es.assertion(), auth=(svc["id"], svc["secret"])))
    invalid_request(send(srv, es.assertion(), auth=(es.id, "anything")))
    invalid_request(send(srv, es.assertion(), data={**CLIENT_CREDENTIALS, "client_secret": svc["secret"]}))
    invalid_request(send(srv, es.assertion(), assertion_type="urn:ietf:params:oauth:client-assertion-type:saml2-bearer"))
    invalid_request(send(srv, es.assertion(), assertion_type=None))
    invalid_request(send(srv, None))
    invalid_request(send(srv, es.assertion(), data={**CLIENT_CREDENTIALS, "client_id": keyed["es2"].id}))
    invalid_request(send(srv, es.assertion(), data={**CLIENT_CREDENTIALS, "client_id": svc["id"]}))
    accepted(send(srv, es.assertion(), data={**CLIENT_CREDENTIALS, "client_id": es.id}))


# ============================================================================================ CA06 key sets

def test_CA06_registration_refuses_unusable_key_sets(srv, folder):
    """CA06: a JWKS holding a private key (its holder leaked it) is refused whole, whatever the
    key's use, even an encryption key next to a good signing key, and whichever private member
    it holds (d, p, q, dp, dq, qi, or k of a symmetric key); so is a set with only a symmetric
    key, only an RSA key under 2048 bits, only an encryption key, or no keys; so are a plain-http
    jwks_uri, one with credentials in it, and --jwks-file and --jwks-uri together."""
    ec_key, rsa_key = SigningKey("EC", "leak"), SigningKey("RSA", "leak")
    good = SigningKey("EC", "good").public_jwk()
    leaked = [{"keys": [ec_key.public_jwk(private=True)]},
              {"keys": [SigningKey("EC").public_jwk(), rsa_key.public_jwk(private=True)]},
              {"keys": [good, ec_key.public_jwk(private=True, use="enc")]},
              {"keys": [good, {"kty": "oct", "k": b64url(secrets.token_bytes(32)), "kid": "wrap", "use": "enc"}]}]
    for member in ("p", "q", "dp", "dq", "qi"):
        leaked.append({"keys": [good, rsa_key.public_jwk(use="enc", **{member: b64url(secrets.token_bytes(128))})]})
    for jwks in leaked:
        result = try_register(srv, folder, jwks=jwks)
        assert result.returncode != 0, f"registered with {jwks}: {result.stdout}"
        assert "private" in (result.stdout + result.stderr).lower(), result.stdout + result.stderr
    for jwks in ({"keys": [{"kty": "oct", "k": b64url(secrets.token_bytes(32)), "kid": "mac"}]},
                 {"keys": [SigningKey("RSA", bits=1024).public_jwk()]},
                 {"keys": [ec_key.public_jwk(use="enc")]},
                 {"keys": []}, {"not": "a key set"}):
        result = try_register(srv, folder, jwks=jwks)
        assert result.returncode != 0, f"registered with {jwks}: {result.stdout}"
    for uri in ("http://keys.example/jwks.json", "https://user:pass@keys.example/jwks.json", "ftp://keys.example/j",
                "keys.example/jwks.json"):
        result = try_register(srv, folder, jwks_uri=uri)
        assert result.returncode != 0, f"registered with {uri}: {result.stdout}"
    result = try_register(srv, folder, jwks={"keys": [ec_key.public_jwk()]}, jwks_uri="https://keys.example/j.json")
    assert result.returncode != 0, result.stdout
    # Controls: the public half alone registers, and so does a public encryption key beside it
    # (left out of the set, which signs with the other).
    assert try_register(srv, folder, jwks={"keys": [ec_key.public_jwk()]}).returncode == 0
    assert try_register(srv, folder, jwks={"keys": [good, rsa_key.public_jwk(use="enc")]}).returncode == 0


def test_CA06_jwks_uri_on_loopback_or_private_address_is_never_fetched(srv, folder):
    """CA06: a jwks_uri may name any https host at registration, but the server fetches key sets
    only from public addresses: one on loopback (a listening socket here, which must see no
    connection) or a private address is refused quickly, 401 invalid_client saying only that
    client authentication failed; why (the address) is in the log, `client_keys.refused`."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        listener.setblocking(False)
        port = listener.getsockname()[1]
        key = SigningKey("EC", "loop-1")
        info = srv.cli("clients", "create", "--type", "service", "--name", "ca-loopback", "--scope", "svc.read",
                       "--token-endpoint-auth-method", "private_key_jwt",
                       "--jwks-uri", f"https://127.0.0.1:{port}/jwks.json")
        client = KeyClient(srv, info, key)
        started = time.monotonic()
        refused_unverified(srv, client.id, lambda: send(srv, client.assertion()), "jwks_uri", "does not connect",
                           event="client_keys.refused")
        assert time.monotonic() - started < 3
        time.sleep(0.2)
        try:
            connection, _ = listener.accept()
            connection.close()
            pytest.fail("the server connected to a loopback jwks_uri")
        except BlockingIOError:
            pass  # no connection was made
    # Only once loopback is known to be refused before connecting: a private address.
    info = srv.cli("clients", "create", "--type", "service", "--name", "ca-private", "--scope", "svc.read",
                   "--token-endpoint-auth-method", "private_key_jwt", "--jwks-uri", "https://10.0.0.1/jwks.json")
    client = KeyClient(srv, info, SigningKey("EC", "private-1"))
    started = time.monotonic()
    # Why the fetch failed goes to the log only: the answer must not make the server a probe of
    # other hosts for whoever registered the URL (as for metadata documents, RV22).
    refused_unverified(srv, client.id, lambda: send(srv, client.assertion()), "10.0.0.1", "does not connect",
                       event="client_keys.refused")
    assert time.monotonic() - started < 3, "a refusal by address needs no connection attempt"


# ============================================================================================ CA07 throttle

def test_CA07_failed_assertions_are_throttled(throttle, folder):
    """CA07: failed assertions count against the client like wrong secrets (T41): after five (a
    bad signature, an expired one, a wrong aud, alg none, a replay) even a good assertion gets 429
    with Retry-After; another key client is unaffected."""
    victim = register_key_client(throttle, folder, "ca-throttled", SigningKey("EC", "t-1"))
    bystander = register_key_client(throttle, folder, "ca-bystander", SigningKey("EC", "t-2"))
    spent = victim.assertion()
    accepted(send(throttle, spent))
    now = int(time.time())
    failures = [
        make_assertion(victim.id, SigningKey("EC", "t-1"), throttle.issuer),
        victim.assertion(exp=now - 300, iat=now - 360),
        victim.assertion(audience="https://as.other.example"),
        victim.assertion(alg="none", signer=lambda data: b""),
        spent,
    ]
    statuses = [send(throttle, assertion).status_code for assertion in failures]
    assert statuses == [401] * 5, statuses
    throttled = send(throttle, victim.assertion())
    assert throttled.status_code == 429 and throttled.headers.get("Retry-After"), throttled.text
    body = throttled.json()
    assert body["error"] == "temporarily_unavailable" and "access_token" not in body, body
    assert logged(throttle, "client_authentication.failed", victim.id)
    accepted(send(throttle, bystander.assertion()))


def test_CA07_assertions_for_unknown_clients_count_and_ones_naming_none_do_not(throttle, folder):
    """CA07: an assertion whose sub names no registered client is counted like any failure (in
    buckets shared by the hash of the id, so made-up ids cannot grow the table), or a 429 would
    tell which ids exist: after five, the sixth for that id is 429 too. An assertion with no sub
    at all names no client, so there is nothing to count it against: many of them, even with a
    real client's id as iss, throttle nobody, and that client's good assertion still passes."""
    key = SigningKey("EC", "u-1")
    nobody = "ca07-nobody-" + secrets.token_hex(6)
    statuses = [send(throttle, make_assertion(nobody, key, throttle.issuer)).status_code for _ in range(5)]
    assert statuses == [401] * 5, statuses
    throttled = send(throttle, make_assertion(nobody, key, throttle.issuer))
    assert throttled.status_code == 429 and throttled.headers.get("Retry-After"), throttled.text
    assert throttled.json()["error"] == "temporarily_unavailable", throttled.text

    client = register_key_client(throttle, folder, "ca-no-sub", SigningKey("EC", "n-1"))
    for _ in range(8):
        response = send(throttle, client.assertion(sub=OMIT))
        assert response.status_code == 401 and response.json()["error"] == "invalid_client", response.text
    accepted(send(throttle, client.assertion()))
