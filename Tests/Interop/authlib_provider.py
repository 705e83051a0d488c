"""An OpenID provider that Latchkey did not write, built from Authlib's server parts: for testing
`latchkey login` (the client) against it (Tests/Interop/test_client_against_authlib.py), and as an
upstream identity provider that `latchkey serve` signs people in through (Tests/Interop/test_federation.py,
Tests/Browser/test_pages.py).

    python3 authlib_provider.py --port P [--mode MODE]     # prints "READY http://127.0.0.1:P"
    python3 authlib_provider.py --port 0 --client-id ID --client-secret SECRET \
        --redirect-uri http://127.0.0.1:8080/federation/NAME/callback [--email ADDRESS --email-verified false ...]

A plain Flask app with Authlib's AuthorizationServer, AuthorizationCodeGrant with the OpenIDCode
extension and CodeChallenge (PKCE), RefreshTokenGrant and UserInfoEndpoint, everything kept in
memory. --port 0 picks a free port; the READY line (the first line on stdout) names it. The issuer
is http://127.0.0.1:PORT.

- One client, `--client-id` (default `latchkey-cli`). Without `--client-secret` it is public
  (token_endpoint_auth_method none) and must use PKCE; with it, it is confidential and
  authenticates at the token endpoint with client_secret_basic or client_secret_post (PKCE is then
  checked when the authorization request sent a challenge). Its redirect URIs: each `--redirect-uri`
  (repeatable), compared exactly, and http://127.0.0.1/callback with any port (RFC 8252 §7.3: a
  loopback redirect's port varies).
- One user, signed in and consenting without a page: /authorize answers the redirect with the code
  at once. By default sub user-42, "Ada Lovelace", ada, ada@example.com with email_verified true;
  `--sub`, `--name`, `--preferred-username`, `--email` and `--email-verified true|false` change them.
  The ID token and /userinfo carry the claims of the scopes granted (email and email_verified with
  `email`; name and preferred_username with `profile`).
- Scopes openid profile email; ID tokens signed with RS256 and a `kid`; keys at /jwks; /userinfo.
- Discovery only at /.well-known/openid-configuration (/.well-known/oauth-authorization-server
  answers 404), with just the REQUIRED members and a few RECOMMENDED ones: no
  code_challenge_methods_supported, authorization_response_iss_parameter_supported,
  revocation_endpoint or scopes_supported. The authorization response carries no `iss`.

Modes (--mode), each a way a provider (or someone between it and the client) can go wrong:
  good                     follows the specifications.
  tampered-id-token        the ID token's payload is changed after signing (sub swapped), signature kept.
  wrong-nonce              the ID token's nonce is not the one the authorization request sent.
  wrong-audience           the ID token's aud is another client's id (`some-other-client`); signed as usual.
  unknown-kid-then-rotate  ID tokens are signed with a new key (kid key-2) that the first /jwks answer
                           lacks; later answers have it too, as after a key rotation.
  unknown-kid              ID tokens are signed with a key /jwks never publishes.
  stale-sign-in            auth_time is an hour ago whatever prompt=login or max_age asked: a
                           provider that answers from its own session without asking again.

GET /_fixture/stats answers {"jwks_requests": N, "token_requests": N, ...} for the test to check.
Every request is logged on stderr (method, path, status), for failure messages.
"""
import argparse
import base64
import hmac
import json
import logging
import sys
import threading
import time
from urllib.parse import urlsplit

from authlib.integrations.flask_oauth2 import AuthorizationServer, ResourceProtector
from authlib.oauth2 import OAuth2Error
from authlib.oauth2.rfc6749 import grants, scope_to_list
from authlib.oauth2.rfc6750 import BearerTokenValidator
from authlib.oauth2.rfc7636 import CodeChallenge
from authlib.oidc.core import UserInfo, UserInfoEndpoint
from authlib.oidc.core.grants import OpenIDCode
from authlib.oidc.discovery import OpenIDProviderMetadata
from flask import Flask, jsonify, request
from joserfc.jwk import RSAKey
from werkzeug.serving import make_server

MODES = ("good", "tampered-id-token", "wrong-nonce", "wrong-audience", "unknown-kid-then-rotate", "unknown-kid",
         "stale-sign-in")
CLIENT_ID = "latchkey-cli"           # the default --client-id
OTHER_AUDIENCE = "some-other-client"  # the ID token's aud in mode wrong-audience
SCOPES = ("openid", "profile", "email")
CODE_LIFETIME = 600
TOKEN_LIFETIME = 3600


class User:
    def __init__(self, sub, name, preferred_username, email, email_verified=True):
        self.sub, self.name, self.preferred_username, self.email = sub, name, preferred_username, email
        self.email_verified = email_verified

    def get_user_id(self):
        return self.sub

    def claims(self, scope):
        """The claims of `scope`'s scopes: for /userinfo, and merged into the ID token."""
        return UserInfo(sub=self.sub, name=self.name, preferred_username=self.preferred_username,
                        email=self.email, email_verified=self.email_verified).filter(scope)


ADA = User("user-42", "Ada Lovelace", "ada", "ada@example.com")  # the user unless options say otherwise


class Client:
    """Authlib's ClientMixin for the one client: public (a native app with a loopback redirect) unless
    it has a secret; its redirect URIs are the loopback one (any port) and those given exactly."""

    def __init__(self, client_id=CLIENT_ID, client_secret=None, redirect_uris=()):
        self.client_id = client_id
        self.client_secret = client_secret
        self.redirect_uris = list(redirect_uris)
        self.auth_methods = ["client_secret_basic", "client_secret_post"] if client_secret else ["none"]
        self.client_metadata = {"token_endpoint_auth_method": self.auth_methods[0],
                                "redirect_uris": ["http://127.0.0.1/callback", *self.redirect_uris],
                                "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"]}

    def get_client_id(self):
        return self.client_id

    def get_default_redirect_uri(self):
        return None  # the port varies, so the request must name it

    def get_allowed_scope(self, scope):
        return " ".join(s for s in scope_to_list(scope or "") if s in SCOPES)

    def check_redirect_uri(self, redirect_uri):
        if redirect_uri in self.redirect_uris:  # registered with --redirect-uri: exactly
            return True
        # RFC 8252 §7.3: for a loopback IP redirect URI the server allows any port; everything
        # else must be as registered (http://127.0.0.1/callback).
        try:
            parts = urlsplit(redirect_uri)
            port = parts.port  # raises ValueError when it is not a number
        except ValueError:
            return False
        return (parts.scheme == "http" and parts.hostname == "127.0.0.1" and parts.username is None
                and parts.path == "/callback" and not parts.query and not parts.fragment
                and parts.netloc in ("127.0.0.1", f"127.0.0.1:{port}"))

    def check_client_secret(self, client_secret):
        if self.client_secret is None or client_secret is None:
            return False
        return hmac.compare_digest(client_secret.encode(), self.client_secret.encode())

    def check_endpoint_auth_method(self, method, endpoint):
        return method in self.auth_methods

    def check_response_type(self, response_type):
        return response_type == "code"

    def check_grant_type(self, grant_type):
        return grant_type in ("authorization_code", "refresh_token")


class AuthorizationCode:
    def __init__(self, **fields):
        self.__dict__.update(fields)

    def get_redirect_uri(self):
        return self.redirect_uri

    def get_scope(self):
        return self.scope

    def get_nonce(self):
        return self.nonce

    def get_auth_time(self):
        return self.auth_time

    def get_acr(self):
        return None

    def get_amr(self):
        return None

    def is_expired(self):
        return time.time() > self.issued_at + CODE_LIFETIME


class Token:
    def __init__(self, token, user, client):
        self.access_token = token["access_token"]
        self.refresh_token = token.get("refresh_token")
        self.scope = token.get("scope", "")
        self.expires_in = int(token.get("expires_in", TOKEN_LIFETIME))
        self.issued_at = time.time()
        self.user, self.client = user, client
        self.revoked = False

    def check_client(self, client):
        return client.get_client_id() == self.client.get_client_id()

    def get_scope(self):
        return self.scope

    def get_expires_in(self):
        return self.expires_in

    def is_expired(self):
        return time.time() > self.issued_at + self.expires_in

    def is_revoked(self):
        return self.revoked

    def get_user(self):
        return self.user

    def get_client(self):
        return self.client


class Provider:
    """The provider's state: keys, codes, tokens and counters, all in memory."""

    def __init__(self, mode, client=None, user=ADA):
        self.mode = mode
        self.client = client or Client()
        self.user = user
        self.issuer = None  # set once the port is known
        self.lock = threading.Lock()
        self.codes = {}
        self.tokens = {}
        self.refresh_tokens = {}
        self.stats = {"jwks_requests": 0, "token_requests": 0, "authorize_requests": 0, "userinfo_requests": 0}
        self.published_key = RSAKey.generate_key(2048, {"kid": "key-1", "use": "sig", "alg": "RS256"})
        if mode in ("unknown-kid-then-rotate", "unknown-kid"):
            self.signing_key = RSAKey.generate_key(2048, {"kid": "key-2", "use": "sig", "alg": "RS256"})
        else:
            self.signing_key = self.published_key

    def count(self, name):
        with self.lock:
            self.stats[name] += 1
            return self.stats[name]

    def jwks(self, request_number):
        keys = [self.published_key]
        if self.mode == "unknown-kid-then-rotate" and request_number > 1:
            keys.append(self.signing_key)  # the rotation has reached the key set
        return {"keys": [key.as_dict(private=False) for key in keys]}

    def metadata(self):
        issuer = self.issuer
        return {
            "issuer": issuer,
            "authorization_endpoint": issuer + "/authorize",
            "token_endpoint": issuer + "/token",
            "userinfo_endpoint": issuer + "/userinfo",
            "jwks_uri": issuer + "/jwks",
            "response_types_supported": ["code"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "token_endpoint_auth_methods_supported": list(self.client.auth_methods),
            "claims_supported": ["sub", "iss", "aud", "exp", "iat", "auth_time", "nonce", "name",
                                 "preferred_username", "email", "email_verified"],
        }


def tamper(id_token):
    """The same token with `sub` changed in its payload and the original signature kept."""
    header, payload, signature = id_token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    claims["sub"] = "user-666"
    changed = base64.urlsafe_b64encode(json.dumps(claims, separators=(",", ":")).encode()).rstrip(b"=").decode()
    return ".".join([header, changed, signature])


def create_app(provider):
    app = Flask(__name__)
    app.config["OAUTH2_REFRESH_TOKEN_GENERATOR"] = True
    app.config["OAUTH2_TOKEN_EXPIRES_IN"] = {"authorization_code": TOKEN_LIFETIME, "refresh_token": TOKEN_LIFETIME}

    def query_client(client_id):
        return provider.client if client_id == provider.client.client_id else None

    def save_token(token, oauth_request):
        item = Token(token, oauth_request.user, oauth_request.client)
        with provider.lock:
            provider.tokens[item.access_token] = item
            if item.refresh_token:
                provider.refresh_tokens[item.refresh_token] = item

    class CodeGrant(grants.AuthorizationCodeGrant):
        TOKEN_ENDPOINT_AUTH_METHODS = list(provider.client.auth_methods)

        def save_authorization_code(self, code, oauth_request):
            data = oauth_request.payload.data
            item = AuthorizationCode(
                code=code, client_id=oauth_request.client.get_client_id(), user=oauth_request.user,
                redirect_uri=oauth_request.payload.redirect_uri, scope=oauth_request.scope,
                nonce=data.get("nonce"),
                auth_time=int(time.time()) - (3600 if provider.mode == "stale-sign-in" else 0), issued_at=time.time(),
                code_challenge=data.get("code_challenge"), code_challenge_method=data.get("code_challenge_method"))
            with provider.lock:
                provider.codes[code] = item

        def query_authorization_code(self, code, client):
            item = provider.codes.get(code)
            if item and item.client_id == client.get_client_id() and not item.is_expired():
                return item
            return None

        def delete_authorization_code(self, authorization_code):
            with provider.lock:
                provider.codes.pop(authorization_code.code, None)

        def authenticate_user(self, authorization_code):
            return authorization_code.user

    class RefreshGrant(grants.RefreshTokenGrant):
        TOKEN_ENDPOINT_AUTH_METHODS = list(provider.client.auth_methods)
        INCLUDE_NEW_REFRESH_TOKEN = True

        def authenticate_refresh_token(self, refresh_token):
            item = provider.refresh_tokens.get(refresh_token)
            if item and not item.revoked:
                return item
            return None

        def authenticate_user(self, refresh_token):
            return refresh_token.get_user()

        def revoke_old_credential(self, refresh_token):
            refresh_token.revoked = True

    class OpenID(OpenIDCode):
        def exists_nonce(self, nonce, oauth_request):
            return any(item.nonce == nonce for item in list(provider.codes.values()))

        def resolve_client_private_key(self, client):
            return provider.signing_key

        def get_client_algorithm(self, client):
            return "RS256"

        def get_encode_header(self, client):
            return {"alg": "RS256", "kid": provider.signing_key.kid}

        def get_client_claims(self, client):
            audience = OTHER_AUDIENCE if provider.mode == "wrong-audience" else client.get_client_id()
            return {"iss": provider.issuer, "aud": [audience]}

        def get_authorization_code_claims(self, authorization_code):
            claims = super().get_authorization_code_claims(authorization_code)
            if provider.mode == "wrong-nonce":
                claims["nonce"] = "not-" + (authorization_code.get_nonce() or "the-nonce")
            return claims

        def generate_user_info(self, user, scope):
            return user.claims(scope)

        def process_token(self, grant, response):
            token = super().process_token(grant, response)
            if provider.mode == "tampered-id-token" and "id_token" in token:
                token["id_token"] = tamper(token["id_token"])
            return token

    class Validator(BearerTokenValidator):
        def authenticate_token(self, token_string):
            return provider.tokens.get(token_string)

    class UserInfoAnswer(UserInfoEndpoint):
        def get_issuer(self):
            return provider.issuer

        def generate_user_info(self, user, scope):
            return user.claims(scope)

    require_oauth = ResourceProtector()
    require_oauth.register_token_validator(Validator())
    server = AuthorizationServer(app, query_client=query_client, save_token=save_token)
    server.register_grant(CodeGrant, [OpenID(require_nonce=False), CodeChallenge(required=True)])
    server.register_grant(RefreshGrant)
    server.register_endpoint(UserInfoAnswer(resource_protector=require_oauth))

    @app.get("/.well-known/openid-configuration")
    def openid_configuration():
        return jsonify(provider.metadata())

    @app.get("/jwks")
    def jwks():
        return jsonify(provider.jwks(provider.count("jwks_requests")))

    @app.get("/authorize")
    def authorize():
        provider.count("authorize_requests")
        # The user is signed in and consents to everything: no page, straight back to the app.
        try:
            grant = server.get_consent_grant(end_user=provider.user)
        except OAuth2Error as error:
            return server.handle_error_response(None, error)
        return server.create_authorization_response(grant_user=provider.user, grant=grant)

    @app.post("/token")
    def token():
        provider.count("token_requests")
        return server.create_token_response()

    @app.route("/userinfo", methods=["GET", "POST"])
    def userinfo():
        provider.count("userinfo_requests")
        try:
            return server.create_endpoint_response("userinfo")
        except OAuth2Error as error:
            require_oauth.raise_error_response(error)

    @app.get("/_fixture/stats")
    def stats():
        with provider.lock:
            return jsonify(dict(provider.stats, mode=provider.mode))

    @app.after_request
    def log_request(response):
        print(f"{request.method} {request.full_path.rstrip('?')} -> {response.status_code}", file=sys.stderr, flush=True)
        return response

    return app


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: any free port)")
    parser.add_argument("--mode", choices=MODES, default="good")
    parser.add_argument("--client-id", default=CLIENT_ID, help=f"the one client's id (default {CLIENT_ID})")
    parser.add_argument("--client-secret", help="makes the client confidential (client_secret_basic or _post)")
    parser.add_argument("--redirect-uri", action="append", default=[],
                        help="a redirect URI allowed exactly (repeatable), besides the loopback one on any port")
    parser.add_argument("--sub", default=ADA.sub)
    parser.add_argument("--name", default=ADA.name)
    parser.add_argument("--preferred-username", default=ADA.preferred_username)
    parser.add_argument("--email", default=ADA.email)
    parser.add_argument("--email-verified", choices=("true", "false"), default="true")
    args = parser.parse_args(argv)
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # our own one-line log instead

    client = Client(args.client_id, args.client_secret, args.redirect_uri)
    user = User(args.sub, args.name, args.preferred_username, args.email, args.email_verified == "true")
    provider = Provider(args.mode, client, user)
    app = create_app(provider)
    http = make_server("127.0.0.1", args.port, app, threaded=True)
    provider.issuer = f"http://127.0.0.1:{http.server_port}"
    OpenIDProviderMetadata(provider.metadata()).validate()  # what OpenID Connect Discovery requires
    print(f"READY {provider.issuer}", flush=True)
    try:
        http.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
