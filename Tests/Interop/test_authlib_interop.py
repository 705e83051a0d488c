"""A standard third-party OAuth client (Authlib, on requests) against `latchkey serve --dev`: the native
PKCE flow, a web client without PKCE, and a service client with introspection and revocation.

Authlib plays the native app: PKCE S256, a loopback redirect, the code exchange, refresh.
A requests.Session plays the user's browser: it signs in and unticks a scope on the consent page.
"""
import secrets
from urllib.parse import parse_qs, urlparse

import pytest
import requests
from authlib.integrations.requests_client import OAuth2Session
from authlib.integrations.base_client.errors import OAuthError

from latchkey_process import free_port, sign_in_through_pages


def sign_in_and_consent(authorization_url, password, grant, expect_scope="activity"):
    """Follows the server's pages as a browser would; returns the redirect to the app."""
    signed_in = sign_in_through_pages(requests.Session(), authorization_url, "demo", password, grant=grant)
    assert signed_in.consent is not None, "the consent page should be shown"
    assert f'name="scope" value="{expect_scope}"' in signed_in.consent.text
    return signed_in.location


def test_authlib_completes_pkce_flow_with_partial_consent_and_refresh(server):
    issuer = server.issuer
    metadata = requests.get(issuer + "/.well-known/oauth-authorization-server").json()
    assert metadata["code_challenge_methods_supported"] == ["S256"]

    redirect_uri = f"http://127.0.0.1:{free_port()}/callback"
    app = OAuth2Session(server.dev["client_id"], scope="profile activity", redirect_uri=redirect_uri,
                        code_challenge_method="S256", token_endpoint_auth_method="none")
    verifier = secrets.token_urlsafe(48)  # 64 characters of the RFC 7636 alphabet
    authorization_url, state = app.create_authorization_url(metadata["authorization_endpoint"], code_verifier=verifier)

    callback = sign_in_and_consent(authorization_url, server.dev["password"], grant=["profile"])
    assert callback.startswith(redirect_uri + "?")
    query = parse_qs(urlparse(callback).query)
    assert query["state"] == [state]
    assert query["iss"] == [issuer]

    token = app.fetch_token(metadata["token_endpoint"], authorization_response=callback, code_verifier=verifier)
    assert token["token_type"] == "Bearer"
    assert token["scope"] == "profile"  # the user unticked activity
    assert token["user_id"]
    # RFC 6749 §6: a refresh may not ask for more than was granted, and Authlib resends the
    # session's scope, so the app narrows it to what the user granted, as it should.
    app.scope = token["scope"]

    me = app.get(metadata["userinfo_endpoint"])
    assert me.status_code == 200
    assert me.json()["username"] == "demo"

    old_refresh = token["refresh_token"]
    new = app.refresh_token(metadata["token_endpoint"], refresh_token=old_refresh)
    assert new["refresh_token"] != old_refresh
    assert app.get(metadata["userinfo_endpoint"]).status_code == 200

    # Using the new refresh token once makes the old one dead; presenting it revokes the grant.
    app.refresh_token(metadata["token_endpoint"], refresh_token=new["refresh_token"])
    with pytest.raises(OAuthError) as error:
        app.refresh_token(metadata["token_endpoint"], refresh_token=old_refresh)
    assert error.value.error == "invalid_grant"
    assert app.get(metadata["userinfo_endpoint"]).status_code == 401


def test_authlib_service_client_credentials_introspection_and_revocation(server):
    issuer = server.issuer
    metadata = requests.get(issuer + "/.well-known/oauth-authorization-server").json()
    service = server.cli("clients", "create", "--type", "service", "--name", "Reports", "--scope", "activity")
    client = OAuth2Session(service["client_id"], service["client_secret"], scope="activity",
                           token_endpoint_auth_method="client_secret_basic")
    token = client.fetch_token(metadata["token_endpoint"], grant_type="client_credentials")
    assert token["scope"] == "activity"
    assert "refresh_token" not in token

    auth = (service["client_id"], service["client_secret"])
    active = requests.post(metadata["introspection_endpoint"], data={"token": token["access_token"]}, auth=auth).json()
    assert active["active"] is True and active["client_id"] == service["client_id"]

    response = client.revoke_token(metadata["revocation_endpoint"], token=token["access_token"],
                                   token_type_hint="access_token")
    assert response.status_code == 200
    inactive = requests.post(metadata["introspection_endpoint"], data={"token": token["access_token"]}, auth=auth)
    assert inactive.json() == {"active": False}


def test_authlib_web_client_code_flow_without_pkce(server):
    issuer = server.issuer
    metadata = requests.get(issuer + "/.well-known/oauth-authorization-server").json()
    redirect_uri = "https://web.example/cb"
    web = server.cli("clients", "create", "--type", "web", "--name", "Web", "--redirect-uri", redirect_uri,
                     "--scope", "profile")
    app = OAuth2Session(web["client_id"], web["client_secret"], scope="profile", redirect_uri=redirect_uri,
                        token_endpoint_auth_method="client_secret_basic")
    authorization_url, state = app.create_authorization_url(metadata["authorization_endpoint"])
    callback = sign_in_and_consent(authorization_url, server.dev["password"], grant=["profile"],
                                   expect_scope="profile")
    token = app.fetch_token(metadata["token_endpoint"], authorization_response=callback)
    assert token["scope"] == "profile" and token["refresh_token"]
    assert app.get(metadata["userinfo_endpoint"]).json()["username"] == "demo"
