"""An AI agent's MCP client, the official MCP Python SDK (`mcp` on PyPI), signing in with Latchkey
to use the tools of the example MCP server (`latchkey-example-mcp`).

This is the path the MCP authorization specification lays down, and no step of it is told to the
client beforehand: the MCP server answers 401 with a `resource_metadata` challenge; the SDK reads
the protected-resource metadata (RFC 9728), which names Latchkey; it reads Latchkey's metadata
(RFC 8414); it gets a client id, either by dynamic registration (RFC 7591) or by presenting a
Client ID Metadata Document URL as its client id; it sends the user through the sign-in and
consent pages with PKCE S256 and a `resource` indicator (RFC 8707), checks the `iss` of the
answer (RFC 9207), redeems the code and calls the tools with the access token. Latchkey must give
the SDK everything it looks for, and the token must be one the MCP server accepts: a JWT access
token (RFC 9068) checked with Latchkey's keys, or an opaque one checked by introspection
(RFC 7662). Finally, a token issued for one MCP server is offered to another, which must refuse
it: the audience binding is what keeps one server from replaying a user's token at another.

The tests and why:
  - metadata: the challenge and the two metadata documents hold what the SDK looks for (the
    issuer string exactly, a registration endpoint, S256, iss in responses, client metadata
    documents), read directly so that a failure of the later tests is easier to place;
  - dynamic registration: the SDK registers itself (exactly one new client) and `whoami` names
    the user and that client;
  - Client ID Metadata Document: with `client_metadata_url`, the SDK registers nothing, Latchkey
    fetches the document from a local HTTPS server (a throwaway certificate authority, and the
    test-only loopback allowance) and `whoami` names the document's URL as the app;
  - opaque tokens: a resource registered with --token-format opaque, checked by the example server
    through introspection with a service client's credentials;
  - audience: the SDK's tokens for servers A and B each get 200 at their own server and 401
    invalid_token at the other.

The SDK's OAuthClientProvider runs unchanged; only its token storage and its two hooks are ours,
and a response hook on its HTTP client records each request it makes, so the tests can check the
order of the steps. The token storage is kept in memory (and read by the tests), and the "open the
browser" hook is a requests.Session that signs in on Latchkey's pages, allows the consent page and
hands the redirect's code, state and iss back to the SDK, as the loopback listener of a desktop
agent would. Nothing listens on the redirect URI.

One `latchkey serve` (SQLite in a temporary folder, dynamic registration open, client metadata
documents on), one HTTPS document server and three example MCP servers (two taking JWTs, one
introspecting opaque tokens) run for the module.
"""
import asyncio
import base64
import json
import os
import re
import signal
import socket
import subprocess
import time
from collections import namedtuple
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import httpx2
import pytest
import requests
from mcp import Client
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider, TokenStorage
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientMetadata

import https_documents  # noqa: E402  (not its TestAuthority by name: pytest would try to collect it)
from latchkey_process import LatchkeyServer, free_port, latchkey_binary, sign_in_through_pages

USERNAME = "alice"
PASSWORD = "correct horse battery staple"
SCOPE = "mcp:tools"
DOCUMENT_PATH = "/mcp-client.json"
TIMEOUT = 20          # seconds for one HTTP request
FLOW_TIMEOUT = 60     # seconds for one agent run: discovery, sign-in, tool calls
START_TIMEOUT = 30    # seconds for an example MCP server to listen
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                         "clientInfo": {"name": "latchkey-test", "version": "1.0"}}}


# --------------------------------------------------------------------------------------------- the example MCP server

class ExampleMCPServer:
    """One `latchkey-example-mcp --port PORT --issuer ISSUER` (the binary next to latchkey's), up once
    constructed: its port accepts connections. `url` is its resource, http://127.0.0.1:PORT/mcp.
    Its output goes to `log_path`; stop() ends it (SIGTERM, then SIGKILL)."""

    def __init__(self, issuer, port, workdir, extra_args=(), env=None):
        self.port = port
        self.url = f"http://127.0.0.1:{port}/mcp"
        self.log_path = Path(workdir) / f"example-mcp-{port}.log"
        binary = Path(latchkey_binary()).parent / "latchkey-example-mcp"
        command = [str(binary), "--port", str(port), "--issuer", issuer, "--scope", SCOPE, *extra_args]
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                            env={**os.environ, **(env or {})})
        try:
            self._wait_until_listening()
        except BaseException:
            self.stop()
            raise

    def _wait_until_listening(self):
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return
            except OSError:
                pass
            if self.process.poll() is not None:
                raise AssertionError(f"latchkey-example-mcp exited with status {self.process.returncode} "
                                     f"before it listened:\n{self.output()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"latchkey-example-mcp did not listen on {self.port} "
                                     f"within {START_TIMEOUT} s:\n{self.output()}")
            time.sleep(0.05)

    def output(self):
        try:
            return self.log_path.read_text(errors="replace")[-3000:]
        except OSError as error:
            return str(error)

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode


# --------------------------------------------------------------------------------------------- fixtures

@pytest.fixture(scope="module")
def authority(tmp_path_factory):
    """The certificate authority of the document server, which Latchkey is told to trust."""
    return https_documents.TestAuthority(tmp_path_factory.mktemp("authority"))


@pytest.fixture(scope="module")
def documents(authority):
    """The HTTPS server of the client metadata document (on loopback, as `localhost`)."""
    with https_documents.DocumentServer(authority) as server:
        yield server


@pytest.fixture(scope="module")
def server(tmp_path_factory, authority):
    data = tmp_path_factory.mktemp("latchkey-data")
    server = LatchkeyServer(["--data-dir", data, "--dynamic-registration", "open",
                             "--client-metadata-documents", "all", "--client-metadata-ca-file", authority.ca_file,
                             "--client-metadata-allow-loopback"],
                            workdir=tmp_path_factory.mktemp("latchkey-serve"))
    yield server
    assert server.stop() == 0, server.output_tail()


@pytest.fixture(scope="module")
def user(server):
    """The person who signs in: `users create --json`, whose user_id every token's sub must be."""
    return server.cli("users", "create", USERNAME, "--password-stdin", stdin=PASSWORD + "\n")


@pytest.fixture(scope="module")
def tools_scope(server):
    return server.cli("scopes", "add", SCOPE, "--description", "Use the example MCP server's tools")


def example_mcp(server, tools_scope, tmp_path_factory, token_format, name, extra_args=(), env=None,
                signing_alg="RS256"):
    """Registers http://127.0.0.1:PORT/mcp as a resource with `token_format` (JWTs signed with
    `signing_alg`), then starts the example MCP server on PORT. Yields the server; stops it afterwards."""
    port = free_port()
    server.cli("resources", "add", f"http://127.0.0.1:{port}/mcp", "--name", name, "--scope", SCOPE,
               "--token-format", token_format, "--token-signing-alg", signing_alg)
    mcp = ExampleMCPServer(server.issuer, port, tmp_path_factory.mktemp("example-mcp"), extra_args, env)
    try:
        yield mcp
    finally:
        mcp.stop()


@pytest.fixture(scope="module")
def mcp_a(server, tools_scope, tmp_path_factory):
    """JWTs signed ES256 (cheap to sign), which LatchkeyResource checks with the published P-256 key."""
    yield from example_mcp(server, tools_scope, tmp_path_factory, "jwt", "Example MCP A", signing_alg="ES256")


@pytest.fixture(scope="module")
def mcp_b(server, tools_scope, tmp_path_factory):
    yield from example_mcp(server, tools_scope, tmp_path_factory, "jwt", "Example MCP B")


@pytest.fixture(scope="module")
def mcp_opaque(server, tools_scope, tmp_path_factory):
    """An example MCP server for opaque tokens, introspecting them with a service client's credentials."""
    introspector = server.cli("clients", "create", "--type", "service", "--name", "Example MCP (introspection)")
    yield from example_mcp(server, tools_scope, tmp_path_factory, "opaque", "Example MCP (opaque)",
                           ["--introspection-client-id", introspector["client_id"]],
                           {"LATCHKEY_INTROSPECTION_SECRET": introspector["client_secret"]})


# --------------------------------------------------------------------------------------------- the agent

class MemoryStorage(TokenStorage):
    """The SDK's token storage, kept in memory so that the tests can read what the SDK obtained."""

    def __init__(self):
        self.tokens = None
        self.client_info = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens

    async def get_client_info(self):
        return self.client_info

    async def set_client_info(self, client_info):
        self.client_info = client_info


class BrowserStandIn:
    """The SDK's redirect and callback hooks: the user's browser signs in on Latchkey's pages and
    allows every scope offered; the redirect's code, state and iss go back to the SDK.
    `authorization_urls` and `consent_pages` keep what was seen, for the tests."""

    def __init__(self, redirect_uri):
        self.redirect_uri = redirect_uri
        self.authorization_urls = []
        self.consent_pages = []
        self.result = None

    async def redirect_handler(self, authorization_url):
        self.authorization_urls.append(authorization_url)
        signed_in = await asyncio.to_thread(sign_in_through_pages, requests.Session(), authorization_url,
                                            USERNAME, PASSWORD, None, TIMEOUT)
        self.consent_pages.append(signed_in.consent)
        assert signed_in.location.startswith(self.redirect_uri + "?"), \
            f"Latchkey should send the browser back to {self.redirect_uri}: {signed_in.location}"
        answer = {name: values[0] for name, values in parse_qs(urlparse(signed_in.location).query).items()}
        assert "error" not in answer, f"Latchkey answered with an error: {answer}"
        self.result = AuthorizationCodeResult(code=answer["code"], state=answer.get("state"), iss=answer.get("iss"))

    async def callback_handler(self):
        assert self.result is not None, "the callback came before the redirect"
        return self.result


Exchange = namedtuple("Exchange", "method url status body")
Exchange.__doc__ = """One HTTP request the SDK made (the MCP server's and Latchkey's alike) and its answer;
body: the answer's JSON for a registration request, else None."""

Run = namedtuple("Run", "whoami echo storage browser exchanges")
Run.__doc__ = """whoami, echo: the tools' text answers; storage: the SDK's tokens and client information;
browser: the BrowserStandIn, with the authorization URLs and consent pages it saw; exchanges: every
request the SDK made, in order (Exchange)."""


def run_agent(mcp_url, client_metadata_url=None, redirect_uri=None, text="hello from the agent"):
    """The MCP SDK's client, with OAuth, against `mcp_url`, from scratch (no tokens, no client id):
    calls whoami and echo(text). Returns a Run."""
    redirect_uri = redirect_uri or f"http://127.0.0.1:{free_port()}/callback"
    storage = MemoryStorage()
    browser = BrowserStandIn(redirect_uri)
    oauth = OAuthClientProvider(
        server_url=mcp_url,
        client_metadata=OAuthClientMetadata(client_name="Latchkey test agent", redirect_uris=[redirect_uri],
                                            token_endpoint_auth_method="none"),
        storage=storage, redirect_handler=browser.redirect_handler, callback_handler=browser.callback_handler,
        client_metadata_url=client_metadata_url)

    exchanges = []

    async def record(response):
        body = None
        if response.request.method == "POST" and response.request.url.path == "/oauth2/register":
            await response.aread()
            body = response.json()
        exchanges.append(Exchange(response.request.method, str(response.request.url), response.status_code, body))

    async def use_tools():
        async with httpx2.AsyncClient(auth=oauth, timeout=httpx2.Timeout(TIMEOUT),
                                      event_hooks={"response": [record]}) as http:
            async with Client(streamable_http_client(mcp_url, http_client=http)) as client:
                whoami = await client.call_tool("whoami", {})
                echo = await client.call_tool("echo", {"text": text})
        return whoami, echo

    async def bounded():
        return await asyncio.wait_for(use_tools(), FLOW_TIMEOUT)

    whoami, echo = asyncio.run(bounded())
    for name, result in (("whoami", whoami), ("echo", echo)):
        assert not result.is_error, f"the {name} tool failed: {result}"
    return Run(whoami.content[0].text, echo.content[0].text, storage, browser, exchanges)


# --------------------------------------------------------------------------------------------- helpers

def client_ids(server):
    return {client["client_id"] for client in server.cli("clients", "list")["clients"]}


def authorization_parameters(url):
    return {name: values[0] for name, values in parse_qs(urlparse(url).query).items()}


def jwt_claims(token):
    """The claims of a JWT access token, unchecked (the example server checked it)."""
    parts = token.split(".")
    assert len(parts) == 3, f"expected a JWT access token: {token[:40]}..."
    return json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))


def whoami_says(run, user_id, client_id):
    assert re.fullmatch(rf"user {re.escape(user_id)} via app {re.escape(client_id)}, scopes: .*", run.whoami), \
        f"whoami should name user {user_id} and app {client_id}: {run.whoami!r}"
    assert SCOPE in run.whoami.split("scopes: ", 1)[1].split(), run.whoami


def common_checks(run, server, mcp):
    """What every run shows: PKCE S256 and the resource on the authorization request, the consent
    page naming the resource, the echo, and a bearer token for the requested scope."""
    params = authorization_parameters(run.browser.authorization_urls[0])
    assert len(run.browser.authorization_urls) == 1, "the user should be sent to sign in once"
    assert params["code_challenge_method"] == "S256" and params["code_challenge"], params
    assert params["resource"] == mcp.url, params
    assert SCOPE in params["scope"].split(), params
    assert run.browser.result.iss == server.issuer
    consent = run.browser.consent_pages[0]
    assert consent is not None and mcp.url in consent.text, "the consent page should name the resource"
    assert run.echo == "hello from the agent"
    assert run.storage.tokens.token_type.lower() == "bearer"
    assert run.storage.tokens.access_token


def the_way_to_the_tools(run, server, mcp, registration):
    """Checks the SDK's requests in order: the challenge, the resource's metadata, Latchkey's metadata,
    the registration (when `registration`), the code redeemed, then only successful MCP calls. Returns
    the registration's answer (or None)."""
    steps = [(e.method, e.url, e.status) for e in run.exchanges]
    expected = [("POST", mcp.url, 401),
                ("GET", mcp.url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp"), 200),
                ("GET", server.issuer + "/.well-known/oauth-authorization-server", 200),
                *([("POST", server.issuer + "/oauth2/register", 201)] if registration else []),
                ("POST", server.issuer + "/oauth2/token", 200)]
    listing = "\n".join(map(str, steps))
    assert steps[:len(expected)] == expected, f"the SDK's requests:\n{listing}"
    rest = steps[len(expected):]
    assert rest and all(url == mcp.url and status in (200, 202) for _, url, status in rest), \
        f"after the token, only successful MCP calls were expected:\n{listing}"
    return run.exchanges[3].body if registration else None


def post_initialize(mcp, access_token):
    return requests.post(mcp.url, json=INITIALIZE, timeout=TIMEOUT,
                         headers={"Authorization": f"Bearer {access_token}",
                                  "Accept": "application/json, text/event-stream"})


# --------------------------------------------------------------------------------------------- tests

def test_metadata_leads_the_agent_to_latchkey(server, mcp_a):
    """What the SDK relies on, read directly: the 401 challenge, the resource's metadata naming
    Latchkey by its exact issuer, and Latchkey's metadata with a registration endpoint, S256 only,
    iss in authorization responses and client metadata documents."""
    challenge = requests.post(mcp_a.url, json=INITIALIZE, timeout=TIMEOUT,
                              headers={"Accept": "application/json, text/event-stream"})
    assert challenge.status_code == 401, challenge.text
    header = challenge.headers.get("WWW-Authenticate", "")
    found = re.search(r'resource_metadata="([^"]+)"', header)
    assert header.startswith("Bearer ") and found, header
    resource = requests.get(found.group(1), timeout=TIMEOUT).json()
    assert resource["resource"] == mcp_a.url
    assert resource["authorization_servers"] == [server.issuer]
    metadata = requests.get(server.issuer + "/.well-known/oauth-authorization-server", timeout=TIMEOUT).json()
    assert metadata["issuer"] == server.issuer
    assert metadata["registration_endpoint"] == server.issuer + "/oauth2/register"
    assert metadata["code_challenge_methods_supported"] == ["S256"]
    assert metadata["authorization_response_iss_parameter_supported"] is True
    assert metadata["client_id_metadata_document_supported"] is True


def test_agent_registers_dynamically_and_uses_tools(server, user, mcp_a):
    """The whole path with dynamic registration and a JWT access token: exactly one client is
    registered, and whoami names the user and that client; the token's audience is the resource."""
    before = client_ids(server)
    run = run_agent(mcp_a.url)
    added = client_ids(server) - before
    client_id = run.storage.client_info.client_id
    assert added == {client_id}, f"exactly one client should be registered dynamically: {added}"
    registered = the_way_to_the_tools(run, server, mcp_a, registration=True)
    assert registered["client_id"] == client_id and registered["token_endpoint_auth_method"] == "none", registered
    assert registered["registration_access_token"], "RFC 7592 management credentials should be returned"
    assert registered["redirect_uris"] == [run.browser.redirect_uri], registered
    assert run.storage.client_info.token_endpoint_auth_method == "none"
    common_checks(run, server, mcp_a)
    assert authorization_parameters(run.browser.authorization_urls[0])["client_id"] == client_id
    whoami_says(run, user["user_id"], client_id)
    claims = jwt_claims(run.storage.tokens.access_token)
    audience = claims["aud"] if isinstance(claims["aud"], list) else [claims["aud"]]
    assert audience == [mcp_a.url], claims
    assert claims["iss"] == server.issuer and claims["sub"] == user["user_id"], claims
    assert claims["client_id"] == client_id, claims


def test_agent_with_client_id_metadata_document(server, user, mcp_a, documents):
    """With client_metadata_url, the SDK skips registration and sends the URL as client_id;
    Latchkey fetches the document from the HTTPS server and the token names the URL as the app."""
    redirect_uri = f"http://127.0.0.1:{free_port()}/callback"
    url = documents.url(DOCUMENT_PATH)
    documents.route(DOCUMENT_PATH, json_body={
        "client_id": url, "client_name": "Latchkey test agent (metadata document)", "redirect_uris": [redirect_uri],
        "token_endpoint_auth_method": "none", "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"], "scope": SCOPE})
    fetched_before = documents.count(DOCUMENT_PATH)
    before = client_ids(server)
    run = run_agent(mcp_a.url, client_metadata_url=url, redirect_uri=redirect_uri)
    added = client_ids(server) - before
    assert not added - {url}, f"no client should be registered dynamically: {added}"
    assert run.storage.client_info.client_id == url
    the_way_to_the_tools(run, server, mcp_a, registration=False)
    assert documents.count(DOCUMENT_PATH) > fetched_before, "Latchkey should fetch the client metadata document"
    common_checks(run, server, mcp_a)
    consent = run.browser.consent_pages[0].text
    assert "Latchkey test agent (metadata document)" in consent, "the consent page should show the document's name"
    assert "localhost" in consent, "the consent page should show the document's host"
    assert authorization_parameters(run.browser.authorization_urls[0])["client_id"] == url
    whoami_says(run, user["user_id"], url)
    assert jwt_claims(run.storage.tokens.access_token)["client_id"] == url


def test_agent_with_a_metadata_document_that_registers_localhost(server, user, mcp_a, documents):
    """What several published MCP clients do: the document registers http://localhost with one
    port, and the agent listens on another. A native app's localhost redirect matches on any port,
    as a loopback IP literal does (RFC 8252 §7.3; `localhost-redirect-uris accept`, the default)."""
    path = "/agents/localhost.json"
    url = documents.url(path)
    documents.route(path, json_body={
        "client_id": url, "client_name": "Latchkey test agent (localhost)",
        "redirect_uris": ["http://localhost:3334/callback"], "token_endpoint_auth_method": "none",
        "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"], "scope": SCOPE})
    redirect_uri = f"http://localhost:{free_port()}/callback"
    run = run_agent(mcp_a.url, client_metadata_url=url, redirect_uri=redirect_uri)
    assert authorization_parameters(run.browser.authorization_urls[0])["redirect_uri"] == redirect_uri
    whoami_says(run, user["user_id"], url)
    # Resource A's tokens are signed ES256, and the example server (LatchkeyResource) took this one.
    header = run.storage.tokens.access_token.split(".")[0]
    assert json.loads(base64.urlsafe_b64decode(header + "=" * (-len(header) % 4)))["alg"] == "ES256"


def test_agent_with_opaque_tokens_checked_by_introspection(server, user, mcp_opaque):
    """A resource registered with --token-format opaque: the agent's token is no JWT, and the example
    server learns whose it is by introspecting it at Latchkey."""
    run = run_agent(mcp_opaque.url)
    the_way_to_the_tools(run, server, mcp_opaque, registration=True)
    common_checks(run, server, mcp_opaque)
    assert run.storage.tokens.access_token.count(".") != 2, "an opaque token, not a JWT, was expected"
    whoami_says(run, user["user_id"], run.storage.client_info.client_id)


def test_token_for_one_mcp_server_is_refused_by_another(server, user, mcp_a, mcp_b):
    """The SDK's tokens for servers A and B (two registered resources of the same Latchkey, taking the
    same scope), replayed by hand: each works at its own server (200) and gets 401 invalid_token at
    the other."""
    tokens = {mcp: run_agent(mcp.url).storage.tokens.access_token for mcp in (mcp_a, mcp_b)}
    for mcp, other in ((mcp_a, mcp_b), (mcp_b, mcp_a)):
        elsewhere = post_initialize(other, tokens[mcp])
        assert elsewhere.status_code == 401, \
            f"{other.url} accepted a token for {mcp.url}: {elsewhere.status_code} {elsewhere.text[:300]}"
        challenge = elsewhere.headers.get("WWW-Authenticate", "")
        assert challenge.startswith("Bearer ") and 'error="invalid_token"' in challenge, challenge
        at_home = post_initialize(mcp, tokens[mcp])
        assert at_home.status_code == 200, f"{mcp.url}: {at_home.status_code} {at_home.text[:300]}"
        assert at_home.json()["result"]["serverInfo"]["name"] == "latchkey-example-mcp", at_home.text
