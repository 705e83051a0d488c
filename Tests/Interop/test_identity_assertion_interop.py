"""Identity assertion grants (ID-JAG, the MCP enterprise-managed authorization extension) end to
end: an enterprise IdP the test runs, the official MCP Python SDK's IdentityAssertionOAuthProvider
as the agent, `latchkey serve` as the MCP server's authorization server, and the example MCP
server taking Latchkey's JWTs.

The IdP is small and ours: an OpenID discovery document and a P-256 key set on a loopback port,
and a function that signs ID-JAGs (`typ` oauth-id-jag+jwt) with joserfc, as an IdP's token
exchange would after the person signed in there. An administrator adds it to Latchkey as a
provider with `--accept-assertions` (and `--link-verified-email`, so that the first assertion
about carol links her account by the address the IdP verified), and registers the agent as a web
client with the jwt-bearer grant. The SDK reads Latchkey's metadata from the issuer it is given,
asks the IdP's stand-in for an assertion for (issuer, MCP server), presents it with its secret,
and calls the tools with the token.

Refused, each `invalid_grant`: a wrong audience, an expired assertion, a replayed one, one from an
issuer Latchkey does not trust (signed with that issuer's own key), one for a resource not
registered here, and one bound to another client.
"""
import asyncio
import json
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx2
import pytest
import requests
from joserfc import jwt as joserfc_jwt
from joserfc.jwk import ECKey
from mcp import Client
from mcp.client.auth.extensions.identity_assertion import IdentityAssertionOAuthProvider
from mcp.client.streamable_http import streamable_http_client

from latchkey_process import LatchkeyServer
from test_mcp_agent import SCOPE, ExampleMCPServer, MemoryStorage, free_port

JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
ID_JAG_PROFILE = "urn:ietf:params:oauth:grant-profile:id-jag"
EMAIL = "carol@corp.example"
TIMEOUT = 20


class EnterpriseIdP:
    """An OpenID provider's discovery document and keys on loopback, and the ID-JAGs it signs."""

    def __init__(self):
        self.key = ECKey.generate_key("P-256", parameters={"kid": "idp-1", "use": "sig", "alg": "ES256"}, private=True)
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.issuer = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def _handler(self):
        idp = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                documents = {
                    "/.well-known/openid-configuration": {
                        "issuer": idp.issuer, "authorization_endpoint": idp.issuer + "/authorize",
                        "token_endpoint": idp.issuer + "/token", "jwks_uri": idp.issuer + "/jwks",
                        "response_types_supported": ["code"], "subject_types_supported": ["public"],
                        "id_token_signing_alg_values_supported": ["ES256"],
                    },
                    "/jwks": {"keys": [idp.key.as_dict(private=False)]},
                }
                document = documents.get(self.path)
                body = json.dumps(document or {}).encode()
                self.send_response(200 if document else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        return Handler

    def id_jag(self, audience, client_id, resource, subject="u-carol", key=None, issuer=None, **claims):
        now = int(time.time())
        body = {"iss": issuer or self.issuer, "sub": subject, "aud": audience, "client_id": client_id,
                "jti": str(uuid.uuid4()), "iat": now, "exp": now + 300, "resource": resource, "scope": SCOPE,
                "email": EMAIL, "email_verified": True, **claims}
        header = {"alg": "ES256", "typ": "oauth-id-jag+jwt", "kid": "idp-1"}
        return joserfc_jwt.encode(header, body, key or self.key)

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture(scope="module")
def idp():
    provider = EnterpriseIdP()
    yield provider
    provider.stop()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    server = LatchkeyServer(["--data-dir", tmp_path_factory.mktemp("latchkey-data")],
                            workdir=tmp_path_factory.mktemp("latchkey-serve"))
    yield server
    assert server.stop() == 0, server.output_tail()


@pytest.fixture(scope="module")
def world(server, idp, tmp_path_factory):
    """carol (her address verified), the IdP as a provider whose assertions are accepted, the
    example MCP server's resource, and the agent, a web client allowed the jwt-bearer grant."""
    carol = server.cli("users", "create", "carol", "--email", EMAIL, "--email-verified", "--password-stdin",
                       stdin="correct horse battery staple\n")
    provider = server.cli("providers", "add", "corp", "--issuer", idp.issuer, "--client-id", "latchkey",
                          "--accept-assertions", "--link-verified-email", "--no-create-accounts")
    assert provider["accepts_assertions"] is True, provider
    server.cli("scopes", "add", SCOPE, "--description", "Use the example MCP server's tools")
    port = free_port()
    mcp_url = f"http://127.0.0.1:{port}/mcp"
    server.cli("resources", "add", mcp_url, "--name", "Example MCP", "--scope", SCOPE, "--token-format", "jwt",
               "--token-signing-alg", "ES256")
    agent = server.cli("clients", "create", "--type", "web", "--name", "Enterprise agent", "--scope", SCOPE,
                       "--redirect-uri", "https://agent.example/cb", "--grant-type", JWT_BEARER)
    assert JWT_BEARER in agent["grant_types"], agent
    mcp = ExampleMCPServer(server.issuer, port, tmp_path_factory.mktemp("example-mcp"))
    yield {"carol": carol, "agent": agent, "mcp": mcp}
    mcp.stop()


def present(server, world, assertion, **extra):
    agent = world["agent"]
    return requests.post(server.issuer + "/oauth2/token", timeout=TIMEOUT,
                         auth=(agent["client_id"], agent["client_secret"]),
                         data={"grant_type": JWT_BEARER, "assertion": assertion, **extra})


def test_metadata_names_the_grant_and_the_profile(server):
    metadata = requests.get(server.issuer + "/.well-known/oauth-authorization-server", timeout=TIMEOUT).json()
    assert JWT_BEARER in metadata["grant_types_supported"], metadata
    assert metadata["authorization_grant_profiles_supported"] == [ID_JAG_PROFILE], metadata


def test_mcp_sdk_agent_uses_the_tools_with_an_id_jag(server, idp, world):
    agent, mcp = world["agent"], world["mcp"]
    asked = []

    async def assertion_provider(audience, resource):
        asked.append((audience, resource))
        return idp.id_jag(audience, agent["client_id"], resource)

    oauth = IdentityAssertionOAuthProvider(
        server_url=mcp.url, storage=MemoryStorage(), client_id=agent["client_id"],
        client_secret=agent["client_secret"], issuer=server.issuer, assertion_provider=assertion_provider,
        scope=SCOPE)

    async def use_tools():
        async with httpx2.AsyncClient(auth=oauth, timeout=httpx2.Timeout(TIMEOUT)) as http:
            async with Client(streamable_http_client(mcp.url, http_client=http)) as client:
                return await client.call_tool("whoami", {})

    whoami = asyncio.run(asyncio.wait_for(use_tools(), 60))
    assert not whoami.is_error, whoami
    assert asked == [(server.issuer, mcp.url)], asked
    text = whoami.content[0].text
    assert text.startswith(f"user {world['carol']['user_id']} via app {agent['client_id']}"), text
    # The first assertion linked carol by her verified address: the next one finds her by sub.
    again = present(server, world, idp.id_jag(server.issuer, agent["client_id"], mcp.url, email="other@corp.example"))
    assert again.status_code == 200, again.text
    assert "refresh_token" not in again.json(), again.json()


@pytest.mark.parametrize("case", ["wrong audience", "expired", "unknown issuer", "resource not registered",
                                  "another client"])
def test_refused_assertions(server, idp, world, case):
    agent, resource = world["agent"], world["mcp"].url
    stranger = ECKey.generate_key("P-256", parameters={"kid": "idp-1"}, private=True)
    assertion = {
        "wrong audience": lambda: idp.id_jag("https://other-as.example", agent["client_id"], resource),
        "expired": lambda: idp.id_jag(server.issuer, agent["client_id"], resource, exp=int(time.time()) - 600),
        "unknown issuer": lambda: idp.id_jag(server.issuer, agent["client_id"], resource, key=stranger,
                                             issuer="https://idp.stranger.example"),
        "resource not registered": lambda: idp.id_jag(server.issuer, agent["client_id"], "https://nowhere.example/mcp"),
        "another client": lambda: idp.id_jag(server.issuer, "someone-else", resource),
    }[case]()
    answer = present(server, world, assertion)
    assert answer.status_code == 400 and answer.json()["error"] == "invalid_grant", (case, answer.text)
    assert answer.headers["Cache-Control"] == "no-store"


def test_replayed_assertion_is_refused(server, idp, world):
    once = idp.id_jag(server.issuer, world["agent"]["client_id"], world["mcp"].url)
    assert present(server, world, once).status_code == 200
    replay = present(server, world, once)
    assert replay.status_code == 400 and replay.json()["error"] == "invalid_grant", replay.text
    assert "used before" in replay.json()["error_description"]
