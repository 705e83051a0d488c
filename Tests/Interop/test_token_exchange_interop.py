"""Token exchange (RFC 8693) driven by independent client libraries against `latchkey serve --dev`.

The scene: Authlib plays the demo native app, which gets demo's access token for the activity API
(an opaque resource) through the code flow with PKCE; a requests.Session plays demo's browser.
The coach backend, a service client an administrator registered with `--allow-token-exchange`
(neither personal nor self-registered, so it may take another app's token), plays the resource
server: with requests_oauth2client (its `token_exchange` and `client_credentials` calls,
configured from the server's metadata) it trades the app's token for a token of its own to call
the coach API, a second registered resource whose tokens are JWTs (RFC 9068):

  - as itself acting for demo (delegation: its own client-credentials token as the actor, the
    only kind of actor token it may present): a JWT verified with the keys at jwks_uri (joserfc),
    whose `sub` is demo, `client_id` the backend, `aud` the coach API, `scope` narrowed to what
    that API takes (plus the identity scopes, which every resource takes), and `act` naming the
    backend;
  - without a resource: a token for the app token's own resource, the activity API (opaque),
    whose introspection (requests_oauth2client's `introspect_token`) shows the activity API as
    `aud`, the same `act`, the backend as `client_id` and demo as `sub`;
  - refused, as the library reports it: a wider scope (InvalidScope), an unregistered resource
    (InvalidTarget), a service client without the grant (UnauthorizedClient), and the app's own
    token offered as the actor (InvalidRequest: it is not the backend's).

Authlib also plays a web app allowed to exchange: it trades its own ID token for a JWT to the
coach API with its generic `fetch_token(grant_type=...)`, and Authlib's JOSE verifies the result.
That takes demo's consent to the app for the coach API: before it, the exchange is invalid_scope.
"""
import secrets
import time
import warnings
from urllib.parse import parse_qs, urlparse

import pytest
import requests
from authlib.integrations.base_client.errors import OAuthError
from authlib.integrations.requests_client import OAuth2Session
from joserfc import jwt as joserfc_jwt
from joserfc.jwk import KeySet
from requests_oauth2client import (
    BearerToken, ClientSecretBasic, InvalidRequest, InvalidScope, InvalidTarget, OAuth2Client, UnauthorizedClient,
)

from latchkey_process import free_port, sign_in_through_pages

with warnings.catch_warnings():  # Authlib 1.x says to move to joserfc; its JOSE is still a second verifier
    warnings.simplefilter("ignore")
    from authlib.jose import JsonWebKey, JsonWebToken

TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"
ID_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:id_token"
ACTIVITY_API = "https://activity.example/api"  # the app's token is for this one (opaque)
COACH_API = "https://coach.example/api"        # the backend exchanges it for this one (JWT)
WEB_CB = "https://coach-web.example/cb"
TIMEOUT = 20


# --------------------------------------------------------------------------------------------- fixtures

@pytest.fixture(scope="module")
def metadata(server):
    return requests.get(server.issuer + "/.well-known/oauth-authorization-server", timeout=TIMEOUT).json()


@pytest.fixture(scope="module")
def world(server):
    """The two resources and the coach backend (a service client an administrator registered,
    allowed to exchange)."""
    server.cli("resources", "add", ACTIVITY_API, "--name", "Activity API", "--scope", "activity", "--scope", "sleep")
    server.cli("resources", "add", COACH_API, "--name", "Coach API", "--scope", "activity", "--token-format", "jwt")
    backend = server.cli("clients", "create", "--type", "service", "--name", "Coach backend",
                         "--scope", "activity", "--scope", "profile", "--scope", "sleep", "--scope", "email",
                         "--allow-token-exchange")
    assert TOKEN_EXCHANGE in backend["grant_types"], backend
    return {"backend": backend}


@pytest.fixture(scope="module")
def backend(server, world):
    """requests_oauth2client configured from the metadata document, authenticating with Basic."""
    info = world["backend"]
    return OAuth2Client.from_discovery_endpoint(
        url=server.issuer + "/.well-known/oauth-authorization-server", issuer=server.issuer, testing=True,
        auth=ClientSecretBasic(info["client_id"], info["client_secret"]))


@pytest.fixture(scope="module")
def app_token(server, metadata, world):
    """demo's access token for the activity API, obtained by Authlib as the native app."""
    redirect_uri = f"http://127.0.0.1:{free_port()}/callback"
    app = OAuth2Session(server.dev["client_id"], scope="profile activity sleep", redirect_uri=redirect_uri,
                        code_challenge_method="S256", token_endpoint_auth_method="none")
    verifier = secrets.token_urlsafe(48)
    url, state = app.create_authorization_url(metadata["authorization_endpoint"], code_verifier=verifier,
                                              resource=ACTIVITY_API)
    signed_in = sign_in_through_pages(requests.Session(), url, "demo", server.dev["password"])
    assert parse_qs(urlparse(signed_in.location).query)["state"] == [state]
    token = app.fetch_token(metadata["token_endpoint"], authorization_response=signed_in.location,
                            code_verifier=verifier)
    assert set(token["scope"].split()) == {"profile", "activity", "sleep"} and token["user_id"], token
    return token


def verified_jwt(server, metadata, value):
    """A JWT access token checked with joserfc against the keys published at jwks_uri."""
    assert metadata["jwks_uri"] == server.issuer + "/oauth2/jwks"
    keys = KeySet.import_key_set(requests.get(metadata["jwks_uri"], timeout=TIMEOUT).json())
    token = joserfc_jwt.decode(value, keys, algorithms=["RS256", "ES256"])
    assert token.header["typ"].lower() in ("at+jwt", "application/at+jwt"), token.header
    joserfc_jwt.JWTClaimsRegistry(
        iss={"essential": True, "value": server.issuer}, aud={"essential": True, "value": COACH_API},
        sub={"essential": True}, exp={"essential": True}, iat={"essential": True}, jti={"essential": True},
    ).validate(token.claims)
    return token.claims


# --------------------------------------------------------------------------------------------- tests

def test_metadata_lists_token_exchange(metadata):
    assert TOKEN_EXCHANGE in metadata["grant_types_supported"]


def test_resource_server_exchanges_app_token_for_a_jwt_acting_for_the_user(server, metadata, world, backend,
                                                                            app_token):
    """Delegation with requests_oauth2client: the subject token is the app's, the actor token the
    backend's own client-credentials token; the result is a JWT for the coach API, checked with
    joserfc against jwks_uri, naming demo as `sub`, the backend as `client_id` and as the actor."""
    backend_id = world["backend"]["client_id"]
    own = backend.client_credentials(scope="activity")
    assert isinstance(own, BearerToken) and own.refresh_token is None
    before = time.time()
    exchanged = backend.token_exchange(subject_token=BearerToken(app_token["access_token"]), actor_token=own,
                                       requested_token_type=ACCESS_TOKEN_TYPE, resource=COACH_API)
    assert exchanged.token_type.lower() == "bearer"
    assert exchanged.refresh_token is None
    assert exchanged.kwargs.get("issued_token_type") == ACCESS_TOKEN_TYPE, exchanged.as_dict()
    # The subject's scopes that the coach API takes (activity) and the identity scopes any resource
    # takes (profile); sleep, which the backend may ask for but the coach API does not take, drops out.
    assert set(exchanged.scope.split()) == {"profile", "activity"}, exchanged.scope
    assert exchanged.kwargs.get("user_id") == app_token["user_id"]

    claims = verified_jwt(server, metadata, exchanged.access_token)
    assert claims["sub"] == app_token["user_id"]
    assert claims["client_id"] == backend_id
    assert set(claims["scope"].split()) == {"profile", "activity"}
    assert claims["act"] == {"sub": backend_id, "client_id": backend_id}, claims
    # Never beyond the subject token's life (the app's token lives far longer than a JWT's 300 s).
    assert claims["exp"] <= before + app_token["expires_in"] + 2
    assert claims["exp"] - claims["iat"] <= exchanged.expires_in + 2

    # The app's token was not consumed by the exchange.
    subject = backend.introspect_token(app_token["access_token"], token_type_hint="access_token")
    assert subject["active"] is True and "act" not in subject, subject
    assert ACTIVITY_API in (subject["aud"] if isinstance(subject["aud"], list) else [subject["aud"]]), subject


def test_opaque_exchanged_token_shows_act_at_introspection(server, world, backend, app_token):
    """Without a resource the exchanged token is for the app token's own resource, the activity API
    (opaque); introspection by the backend shows the activity API as `aud`, `act`, the backend as
    `client_id` and demo as `sub`."""
    backend_id = world["backend"]["client_id"]
    own = backend.client_credentials(scope="profile")
    exchanged = backend.token_exchange(subject_token=app_token["access_token"], subject_token_type="access_token",
                                       actor_token=own.access_token, actor_token_type="access_token",
                                       scope="activity profile")
    assert set(exchanged.scope.split()) == {"activity", "profile"} and exchanged.refresh_token is None
    assert exchanged.access_token.count(".") != 2, "expected an opaque token"
    body = backend.introspect_token(exchanged.access_token)
    assert body["active"] is True, body
    assert body["sub"] == app_token["user_id"]
    assert body["client_id"] == backend_id
    assert set(body["scope"].split()) == {"activity", "profile"}
    assert body["aud"] in (ACTIVITY_API, [ACTIVITY_API]), body
    assert body["act"] == {"sub": backend_id, "client_id": backend_id}, body

    # Impersonation (no actor token): no `act`; the same resource.
    plain = backend.token_exchange(subject_token=BearerToken(app_token["access_token"]), scope="activity")
    body = backend.introspect_token(plain.access_token)
    assert body["active"] is True and body["client_id"] == backend_id and "act" not in body, body
    assert body["aud"] in (ACTIVITY_API, [ACTIVITY_API]), body


def test_refusals_arrive_as_the_library_expects(server, backend, app_token):
    """The library turns the server's errors into its exception classes: a scope the subject token
    lacks is invalid_scope, an unregistered resource or audience invalid_target, an actor token
    that is not the backend's own (the app's token) invalid_request, and a service client without
    the grant unauthorized_client."""
    subject = BearerToken(app_token["access_token"])
    with pytest.raises(InvalidRequest):
        backend.token_exchange(subject_token=subject, actor_token=subject, actor_token_type="access_token")
    with pytest.raises(InvalidScope):
        backend.token_exchange(subject_token=subject, scope="activity email")
    with pytest.raises(InvalidTarget):
        backend.token_exchange(subject_token=subject, resource="https://unknown.example/api")
    with pytest.raises(InvalidTarget):
        backend.token_exchange(subject_token=subject, audience="https://unknown.example/api")

    plain = server.cli("clients", "create", "--type", "service", "--name", "No exchange", "--scope", "activity")
    without_grant = OAuth2Client(server.issuer + "/oauth2/token",
                                 auth=ClientSecretBasic(plain["client_id"], plain["client_secret"]), testing=True)
    with pytest.raises(UnauthorizedClient):
        without_grant.token_exchange(subject_token=subject)


def test_authlib_web_app_exchanges_its_own_id_token(server, metadata, world):
    """Authlib as a web app allowed to exchange: its own ID token (from the code flow with openid)
    becomes a JWT for the coach API, verified with Authlib's JOSE; the scope is what demo consented
    to this app for the coach API that the API takes, and there is no `act`. While demo has
    consented to nothing for the coach API (a first authorization that named no resource), the
    exchange is invalid_scope; an authorization naming the coach API gives that consent."""
    web = server.cli("clients", "create", "--type", "web", "--name", "Coach web", "--redirect-uri", WEB_CB,
                     "--scope", "openid", "--scope", "activity", "--allow-token-exchange")

    def id_token(**authorization):
        app = OAuth2Session(web["client_id"], web["client_secret"], scope="openid activity", redirect_uri=WEB_CB,
                            token_endpoint_auth_method="client_secret_basic")
        url, _ = app.create_authorization_url(metadata["authorization_endpoint"], nonce=secrets.token_urlsafe(12),
                                              **authorization)
        signed_in = sign_in_through_pages(requests.Session(), url, "demo", server.dev["password"])
        token = app.fetch_token(metadata["token_endpoint"], authorization_response=signed_in.location)
        assert token.get("id_token"), token
        return app, token

    def exchange(app, token):
        return app.fetch_token(metadata["token_endpoint"], grant_type=TOKEN_EXCHANGE,
                               subject_token=token["id_token"], subject_token_type=ID_TOKEN_TYPE,
                               audience=COACH_API)

    app, token = id_token()
    with pytest.raises(OAuthError) as refused:
        exchange(app, token)
    assert refused.value.error == "invalid_scope", refused.value

    app, token = id_token(resource=COACH_API)
    exchanged = exchange(app, token)
    assert exchanged["issued_token_type"] == ACCESS_TOKEN_TYPE and "refresh_token" not in exchanged, exchanged
    assert set(exchanged["scope"].split()) == {"openid", "activity"}, exchanged  # openid: an identity scope
    keys = JsonWebKey.import_key_set(requests.get(metadata["jwks_uri"], timeout=TIMEOUT).json())
    claims = JsonWebToken(["RS256", "ES256"]).decode(
        exchanged["access_token"], keys,
        claims_options={"iss": {"essential": True, "value": server.issuer},
                        "aud": {"essential": True, "value": COACH_API}})
    claims.validate()
    assert claims["sub"] == token["user_id"] and claims["client_id"] == web["client_id"], dict(claims)
    assert set(claims["scope"].split()) == {"openid", "activity"} and "act" not in claims, dict(claims)
