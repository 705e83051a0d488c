"""Client ID Metadata Documents: an authorization request whose client_id is an https URL, and the
defences of the server that then fetches that URL.

With `serve --client-metadata-documents all|listed`, an app need not be registered: it names itself
by the URL of a JSON document describing it (its redirect URIs, name and scopes), and Latchkey
fetches that document while it answers the authorization request. Whoever sends the request
chooses the URL, so the fetch is a server-side request forgery waiting to happen: these tests try
to make Latchkey call loopback, private and link-local addresses (169.254.169.254 is where cloud
metadata services answer), follow a redirect, read a huge or never-ending answer, or accept a
document that claims a secret or another app's identity, and check that every attempt ends on
the authorization endpoint's error page (400, never a redirect to an address the attacker chose)
with the reason, quickly, and, where the target is our own server, without a single request
reaching it. One valid document goes the whole way: sign-in, the consent page's warning that the
app is not verified, the code, the token exchange with PKCE and no secret, and /userinfo.

The documents are served by a real HTTPS server on 127.0.0.1 (Tests/Support/https_documents.py)
with its own throwaway certificate authority, which Latchkey is told to trust with the test-only
--client-metadata-ca-file. Since that server is on loopback, the servers that must fetch from it
also get the test-only --client-metadata-allow-loopback; the forgery tests use a server without
it, so loopback is forbidden there as it is in production.

Four `latchkey serve` processes (SQLite in temporary folders) run for the module: one with
documents off (the default), one accepting all (with the loopback flag), one accepting all
without the loopback flag, and one accepting only hosts under example.org. Each test serves its
documents from its own DocumentServer, so the requests one server saw belong to one test.
"""
import base64
import html
import json
import secrets
import socket
import ssl
import threading
import time
from urllib.parse import parse_qs, urlencode, urlparse

import pytest
import requests

from https_documents import DocumentServer
from https_documents import TestAuthority as Authority  # (pytest would collect a Test* name)
from latchkey_process import LatchkeyServer, free_port, pkce, sign_in_through_pages

USERNAME = "alice"
PASSWORD = "correct horse battery staple"
REDIRECT_URI = "http://127.0.0.1/callback"  # a loopback redirect: any port matches
SCOPE = "openid profile"
TIMEOUT = 20
QUICK = 3.0     # seconds: a refusal made before any connection is attempted
DEADLINE = 8.0  # seconds: Latchkey gives a fetch 5 s in all; this leaves room for a slow machine


# --------------------------------------------------------------------------------------------- fixtures

@pytest.fixture(scope="module")
def authority(tmp_path_factory):
    """The test CA and the certificate (localhost, 127.0.0.1, ::1) the document servers present."""
    return Authority(tmp_path_factory.mktemp("test-ca"))


def start(tmp_path_factory, name, args=()):
    data = tmp_path_factory.mktemp(f"{name}-data")
    return LatchkeyServer(["--data-dir", data, *args], workdir=tmp_path_factory.mktemp(f"{name}-serve"))


@pytest.fixture(scope="module")
def off_server(tmp_path_factory):
    """Documents off: the default, no --client-metadata-* option at all."""
    server = start(tmp_path_factory, "off")
    yield server
    assert server.stop() == 0, server.output_tail()


@pytest.fixture(scope="module")
def server(tmp_path_factory, authority):
    """Documents from any host, loopback allowed (test flag) so that the local document server can
    be reached; the user who signs in."""
    server = start(tmp_path_factory, "all", ["--client-metadata-documents", "all",
                                             "--client-metadata-ca-file", authority.ca_file,
                                             "--client-metadata-allow-loopback"])
    try:
        server.cli("users", "create", USERNAME, "--password-stdin", "--name", "Alice Liddell",
                   stdin=PASSWORD + "\n")
    except BaseException:
        server.stop()
        raise
    yield server
    assert server.stop() == 0, server.output_tail()


@pytest.fixture(scope="module")
def guarded(tmp_path_factory, authority):
    """Documents from any host, loopback forbidden as in production (the CA is still trusted, so a
    refusal can only come from the address check)."""
    server = start(tmp_path_factory, "guarded", ["--client-metadata-documents", "all",
                                                 "--client-metadata-ca-file", authority.ca_file])
    yield server
    assert server.stop() == 0, server.output_tail()


@pytest.fixture(scope="module")
def listed(tmp_path_factory, authority):
    """Documents only from example.org and its subdomains (loopback allowed, so only the host
    policy can refuse the local document server)."""
    server = start(tmp_path_factory, "listed", ["--client-metadata-documents", "listed",
                                                "--client-metadata-domain", "example.org",
                                                "--client-metadata-ca-file", authority.ca_file,
                                                "--client-metadata-allow-loopback"])
    yield server
    assert server.stop() == 0, server.output_tail()


@pytest.fixture
def docs(authority):
    """This test's own HTTPS document server, whose `requests` only this test's fetches fill."""
    with DocumentServer(authority) as documents:
        yield documents


# --------------------------------------------------------------------------------------------- helpers

def document(url, **members):
    """A valid metadata document for `url`: a public native app with a loopback redirect URI.
    A member given as None is left out."""
    body = {"client_id": url, "client_name": "Document App", "redirect_uris": [REDIRECT_URI],
            "scope": "openid profile email", "token_endpoint_auth_method": "none", **members}
    return {name: value for name, value in body.items() if value is not None}


def served(docs, json_body=None, path=None, **route):
    """Serves a document at a fresh path; returns its URL (https://localhost:PORT/...). With no
    `json_body`, the valid document() for that URL."""
    path = path or f"/apps/{secrets.token_hex(4)}.json"
    url = docs.url(path)
    docs.route(path, json_body=document(url) if json_body is None and "body" not in route else json_body, **route)
    return url


def authorization_url(server, client_id, redirect_uri=None, scope=SCOPE, challenge=None, state=None):
    params = {"response_type": "code", "client_id": client_id,
              "redirect_uri": redirect_uri or f"http://127.0.0.1:{free_port()}/callback", "scope": scope,
              "state": state or secrets.token_urlsafe(12),
              "code_challenge": challenge or pkce()[1], "code_challenge_method": "S256"}
    return server.url("/oauth2/authorize?" + urlencode(params))


def authorize(server, client_id, **params):
    """GET /oauth2/authorize from a fresh browser; returns (response, seconds it took)."""
    started = time.monotonic()
    response = requests.get(authorization_url(server, client_id, **params), allow_redirects=False, timeout=TIMEOUT)
    return response, time.monotonic() - started


def error_page(response):
    """Asserts the authorization endpoint's error page (400, HTML, no redirect anywhere); returns
    its text with the HTML entities decoded."""
    assert response.status_code == 400, \
        f"expected the error page, got {response.status_code} {response.headers.get('Location')}: {response.text[:300]}"
    assert "Location" not in response.headers
    assert response.headers["Content-Type"].startswith("text/html"), response.headers["Content-Type"]
    return html.unescape(response.text)


FETCH_FAILED = "could not be fetched"


def refused(server, client_id, *reasons, within=QUICK, **params):
    """Asserts that an authorization request naming `client_id` ends on the error page within
    `within` seconds and that every one of `reasons` is given; returns the page text. Why a fetch
    failed is told to the operator's log only (RV22): the page says that it failed, and nothing a
    caller could use to probe hosts and ports."""
    response, seconds = authorize(server, client_id, **params)
    text = error_page(response)
    fetch_failed = FETCH_FAILED in text
    for reason in reasons:
        if fetch_failed and reason != FETCH_FAILED:
            assert reason not in text, f"the error page for {client_id} tells why the fetch failed: {text[:1500]}"
            assert reason in logged_refusal(server, client_id), f"the log should say {reason!r} for {client_id}"
        else:
            assert reason in text, f"the error page for {client_id} should say {reason!r}: {text[:1500]}"
    assert seconds < within, f"the refusal of {client_id} took {seconds:.1f} s"
    return text


def logged_refusal(server, client_id, wait=5):
    """The reason the server logged for its last refused fetch of `client_id`'s document."""
    deadline = time.monotonic() + wait
    while True:
        with open(server.stderr_path, encoding="utf-8", errors="replace") as log:
            lines = [line for line in log if "client_metadata.fetch_refused" in line and client_id in line]
        if lines or time.monotonic() > deadline:
            return lines[-1] if lines else ""
        time.sleep(0.05)


def metadata(server):
    response = requests.get(server.url("/.well-known/oauth-authorization-server"), timeout=TIMEOUT)
    assert response.status_code == 200, response.text
    return response.json()


def known_client_ids(server):
    """The client_ids in the store (`clients list --json`)."""
    listing = server.cli("clients", "list")
    rows = listing.get("clients", listing) if isinstance(listing, dict) else listing
    return {row["client_id"] for row in rows}


def query(location):
    return {name: values[0] for name, values in parse_qs(urlparse(location).query).items()}


class RawServer:
    """A listener on 127.0.0.1 for answers DocumentServer cannot give: it reads each request's head,
    then sends `chunks` one by one, `pause` seconds apart, and closes. With `chunks=None` it says
    nothing at all and holds the connection open; with `authority=None` it does not speak TLS.
    `requests` lists the request lines received."""

    def __init__(self, authority=None, chunks=None, pause=0.0):
        self.chunks, self.pause = chunks, pause
        self.requests, self.connections = [], 0
        self.context = None
        if authority is not None:
            self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            self.context.load_cert_chain(authority.cert_file, authority.key_file)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.closed = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def url(self, path, host="localhost"):
        return f"https://{host}:{self.port}{path}"

    def _accept(self):
        while not self.closed.is_set():
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._answer, args=(connection,), daemon=True).start()

    def _answer(self, connection):
        connection.settimeout(30)
        try:
            if self.chunks is None:
                while connection.recv(4096) and not self.closed.is_set():
                    pass  # silent: wait for the other side to give up
                return
            if self.context is not None:
                connection = self.context.wrap_socket(connection, server_side=True)
            head = b""
            while b"\r\n\r\n" not in head:
                data = connection.recv(4096)
                if not data:
                    return
                head += data
            self.requests.append(head.split(b"\r\n", 1)[0].decode())
            for chunk in self.chunks:
                connection.sendall(chunk)
                time.sleep(self.pause)
        except OSError:
            pass  # the client gave up, as it should
        finally:
            connection.close()

    def close(self):
        self.closed.set()
        self.listener.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# --------------------------------------------------------------------------------------------- off by default

def test_documents_are_off_by_default(off_server, docs):
    """Without --client-metadata-documents the metadata does not advertise the feature and a URL
    client_id is just an unknown client: the error page, and no fetch."""
    assert metadata(off_server).get("client_id_metadata_document_supported", False) is False
    url = served(docs)
    refused(off_server, url, "does not name a registered application")
    assert docs.requests == [], "a server with documents off fetched the client_id URL"


# --------------------------------------------------------------------------------------------- a valid document

def test_valid_document_goes_through_sign_in_consent_and_token(server, docs):
    """The whole code flow for an app known only by its document: the consent page warns that the
    server has not verified it and names the document's host and where the answer goes; the code is
    redeemed with the URL as client_id, PKCE and no secret; the access token works at /userinfo."""
    assert metadata(server)["client_id_metadata_document_supported"] is True
    url = served(docs)
    port = free_port()
    redirect_uri = f"http://127.0.0.1:{port}/callback"
    verifier, challenge = pkce()
    state = secrets.token_urlsafe(12)
    browser = requests.Session()
    sign_in = sign_in_through_pages(browser, authorization_url(server, url, redirect_uri, challenge=challenge,
                                                               state=state), USERNAME, PASSWORD)
    assert docs.count(urlparse(url).path) == 1, docs.requests

    consent = html.unescape(sign_in.consent.text)
    assert "Document App" in consent
    assert "Not verified by this server" in consent
    assert "<strong>localhost</strong>" in consent, "the consent page should name the document's host"
    assert "Your answer goes to <strong>127.0.0.1</strong> (an app on this device)" in consent

    assert sign_in.location.startswith(redirect_uri + "?"), sign_in.location
    answer = query(sign_in.location)
    assert answer["state"] == state and "code" in answer, answer

    token = requests.post(server.url("/oauth2/token"), timeout=TIMEOUT, data={
        "grant_type": "authorization_code", "code": answer["code"], "redirect_uri": redirect_uri,
        "client_id": url, "code_verifier": verifier})
    assert token.status_code == 200, token.text
    tokens = token.json()
    assert tokens["token_type"].lower() == "bearer"
    assert set(tokens["scope"].split()) == {"openid", "profile"}, tokens
    claims = json.loads(base64.urlsafe_b64decode(tokens["id_token"].split(".")[1] + "=="))
    assert claims["aud"] in (url, [url]), f"the ID token should be for the document's URL: {claims}"

    info = requests.get(server.url("/userinfo"), headers={"Authorization": f"Bearer {tokens['access_token']}"},
                        timeout=TIMEOUT)
    assert info.status_code == 200, info.text
    assert info.json()["name"] == "Alice Liddell", info.json()
    assert url in known_client_ids(server), "the document's app should be kept as a client"


def test_code_of_a_document_client_needs_the_verifier(server, docs):
    """The app is public: without the PKCE verifier its code is worth nothing, and no secret
    exists that could stand in for it."""
    url = served(docs)
    redirect_uri = f"http://127.0.0.1:{free_port()}/callback"
    sign_in = sign_in_through_pages(requests.Session(), authorization_url(server, url, redirect_uri),
                                    USERNAME, PASSWORD)
    token = requests.post(server.url("/oauth2/token"), timeout=TIMEOUT, data={
        "grant_type": "authorization_code", "code": query(sign_in.location)["code"], "redirect_uri": redirect_uri,
        "client_id": url, "code_verifier": pkce()[0]})
    assert token.status_code == 400, token.text
    assert token.json()["error"] == "invalid_grant", token.text


# --------------------------------------------------------------------------------------------- request forgery

FORBIDDEN_LITERALS = [
    "https://169.254.169.254/latest/meta-data/x.json",   # the cloud metadata service
    "https://[fd00:ec2::254]/latest/meta-data/x.json",   # the same, over IPv6 (unique local)
    "https://10.0.0.1/x.json",
    "https://172.16.0.1/x.json",
    "https://192.168.0.1/x.json",
    "https://100.64.0.1/x.json",                          # carrier-grade NAT
    "https://[fe80::1]/x.json",                           # IPv6 link-local
    "https://[::ffff:169.254.169.254]/x.json",            # IPv4-mapped IPv6
    "https://[64:ff9b::a9fe:a9fe]/x.json",                # NAT64 of 169.254.169.254
]


def test_loopback_forms_are_refused_before_connecting(guarded, docs):
    """Without the test flag every way of naming this machine is refused before a connection is
    made: a name that resolves to loopback, the IPv4 and IPv6 loopback literals, the IPv4 literal
    inside IPv6 (mapped and compatible), shortened and decimal IPv4 forms, and 0.0.0.0 (which
    Linux connects to loopback). The document server, listening on 127.0.0.1, hears nothing."""
    path = "/client.json"
    docs.route(path, json_body=document(docs.url(path)))
    hosts = ["localhost", "127.0.0.1", "127.0.0.2", "[::1]", "[::ffff:127.0.0.1]", "[::ffff:7f00:1]",
             "[::127.0.0.1]", "127.1", "2130706433", "0.0.0.0"]
    for host in hosts:
        url = f"https://{host}:{docs.port}{path}"
        refused(guarded, url, "could not be fetched", "resolves to an address this server does not connect to")
    assert docs.requests == [], f"a forbidden fetch reached the document server: {docs.requests}"


@pytest.mark.parametrize("url", FORBIDDEN_LITERALS)
def test_private_and_link_local_addresses_are_refused_before_connecting(guarded, url):
    """Private, link-local and cloud-metadata addresses: refused by the address check (the reason
    says so, where a connection attempt would have failed or timed out instead), quickly."""
    refused(guarded, url, "could not be fetched", "resolves to an address this server does not connect to")


def test_loopback_flag_opens_loopback_only(server):
    """--client-metadata-allow-loopback admits 127.0.0.0/8 and ::1 and nothing else: the private
    and link-local addresses stay forbidden on the server that has it."""
    for url in ("https://169.254.169.254/latest/meta-data/x.json", "https://10.0.0.1/x.json",
                "https://192.168.0.1/x.json", "https://[::ffff:10.0.0.1]/x.json"):
        refused(server, url, "could not be fetched", "resolves to an address this server does not connect to")


# --------------------------------------------------------------------------------------------- the fetch's limits

def test_redirect_is_not_followed(server, docs, authority):
    """A 302 to another server is refused as a redirect, and the other server hears nothing."""
    with DocumentServer(authority) as elsewhere:
        target = served(elsewhere)
        url = served(docs, status=302, headers={"Location": target}, body=b"")
        refused(server, url, "could not be fetched", "answered with a redirect, which is not followed")
        assert elsewhere.requests == [], "the redirect was followed"
    assert docs.requests == [urlparse(url).path]


def test_oversized_document_is_refused(server, docs):
    """A 100 KB document (5 KiB is the limit) is refused by its declared length."""
    url = served(docs, body=b'{"client_id": "x", "padding": "' + b"a" * 100_000 + b'"}')
    refused(server, url, "could not be fetched", "larger than 5120 bytes")


def test_oversized_document_without_declared_length_is_refused(server, authority):
    """A 100 KB body streamed with no Content-Length (read until the connection closes): the read
    stops at the limit whatever the headers leave unsaid."""
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"
    with RawServer(authority, chunks=[head, b'{"padding": "', *[b"a" * 1024] * 100, b'"}']) as raw:
        refused(server, raw.url("/big.json"), "could not be fetched", "larger than 5120 bytes")
        assert raw.requests == ["GET /big.json HTTP/1.1"]


def test_trickling_server_is_cut_off(server, docs):
    """A valid small document sent one byte every half second (some 50 s in all): the fetch is
    given up within the time limit instead of holding the authorization request."""
    path = "/slow.json"
    url = docs.url(path)
    body = {"client_id": url, "redirect_uris": [REDIRECT_URI]}
    docs.route(path, json_body=body, trickle=0.5)
    refused(server, url, "could not be fetched", "took too long", within=DEADLINE)
    assert docs.count(path) == 1, "the fetch should have reached the server before it was cut off"


def test_wrong_content_type_is_refused(server, docs):
    """A valid document served as text/html is not a metadata document."""
    url = served(docs, content_type="text/html")
    refused(server, url, "could not be fetched", "not application/json")


def test_vendor_json_content_type_is_accepted(server, docs):
    """application/*+json is JSON too: the fetch succeeds and the browser goes on to sign in."""
    url = served(docs, content_type="application/client-metadata+json")
    response, _ = authorize(server, url)
    assert response.status_code == 303, response.text[:500]
    assert urlparse(response.headers["Location"]).path == "/login"


def test_missing_document_is_refused(server, docs):
    """A 404 is refused with its status."""
    url = docs.url("/no/such/document.json")
    refused(server, url, "could not be fetched", "answered 404")


def test_silent_server_is_cut_off(server):
    """A server that accepts the connection and never answers (not even the TLS handshake): given
    up within the time limit."""
    with RawServer(None, chunks=None) as raw:
        refused(server, raw.url("/client.json"), "could not be fetched", "took too long", within=DEADLINE)
        assert raw.connections == 1


def test_certificate_must_chain_to_a_trusted_authority(server, tmp_path):
    """A document server whose certificate another CA signed (one Latchkey was not told to trust):
    the TLS handshake fails, and the document is never asked for."""
    with DocumentServer(Authority(tmp_path / "untrusted-ca")) as untrusted:
        url = served(untrusted)
        body = refused(server, url, "could not be fetched", "the TLS handshake failed")
        # The TLS library's own error text (build paths, internals) is not shown.
        assert "BoringSSL" not in body and ".build" not in body and "NIOSSL" not in body
        assert untrusted.requests == []


def test_certificate_must_name_the_address(server, authority):
    """For an IP literal the certificate must name that address: the test certificate names
    127.0.0.1 (accepted) but not 127.0.0.2, where the same server is refused."""
    for host in ("127.0.0.1", "127.0.0.2"):
        with DocumentServer(authority, host=host) as docs:
            path = "/client.json"
            url = docs.url(path, host=host)
            docs.route(path, json_body=document(url))
            if host == "127.0.0.1":
                response, _ = authorize(server, url)
                assert response.status_code == 303, response.text[:500]
            else:
                body = refused(server, url, "could not be fetched", "the TLS handshake failed")
                assert "NIOSSL" not in body and "<none>" not in body
                assert docs.requests == []


# --------------------------------------------------------------------------------------------- invalid documents

INVALID_DOCUMENTS = {
    "client_id of another URL": ({"client_id": "https://localhost/another.json"},
                                 "client_id is not the URL it was fetched from"),
    "client_secret": ({"client_secret": "hunter2"}, "must not hold client_secret"),
    "client_secret_expires_at": ({"client_secret_expires_at": 0}, "must not hold client_secret_expires_at"),
    "client_secret_basic": ({"token_endpoint_auth_method": "client_secret_basic"},
                            "token_endpoint_auth_method must be none"),
    "no redirect_uris": ({"redirect_uris": None}, "must list redirect_uris"),
    "scope not in the catalogue": ({"scope": "openid launch-missiles"}, "launch-missiles is not in the catalogue"),
}


@pytest.mark.parametrize("case", INVALID_DOCUMENTS, ids=lambda case: case.replace(" ", "-"))
def test_invalid_document_is_refused(server, docs, case):
    """A document that claims another app's identity, holds a secret, asks to authenticate with
    one, lists no redirect URI or names an unknown scope: refused, and no client is kept."""
    members, reason = INVALID_DOCUMENTS[case]
    path = f"/apps/{secrets.token_hex(4)}.json"
    url = docs.url(path)
    body = document(url, **members)
    if "client_id" in members:
        body["client_id"] = members["client_id"]
    docs.route(path, json_body=body)
    refused(server, url, "is not valid", reason)
    assert docs.count(path) == 1
    assert url not in known_client_ids(server), "a refused document was kept as a client"


def test_redirect_uri_must_be_one_the_document_lists(server, docs):
    """A valid document, but the request's redirect_uri is not among the document's: the error page
    (the code must not go to a redirect URI the attacker picked)."""
    url = served(docs)
    for redirect_uri in ("https://attacker.example/callback", "http://127.0.0.1:8080/other"):
        refused(server, url, "redirect_uri is not registered", redirect_uri=redirect_uri)


def test_scope_outside_the_document_is_refused(server, docs):
    """The document's scope bounds what the app may ask for: a request for more goes back to the
    (registered) redirect URI as invalid_scope."""
    path = f"/apps/{secrets.token_hex(4)}.json"
    url = docs.url(path)
    docs.route(path, json_body=document(url, scope="openid"))
    redirect_uri = f"http://127.0.0.1:{free_port()}/callback"
    response, _ = authorize(server, url, redirect_uri=redirect_uri, scope="openid email")
    assert response.status_code == 303, response.text[:500]
    assert response.headers["Location"].startswith(redirect_uri + "?")
    assert query(response.headers["Location"]).get("error") == "invalid_scope"


# --------------------------------------------------------------------------------------------- the URL's rules

def test_http_url_is_not_a_document(server, docs):
    """Only https URLs are document URLs: an http one is an unknown client_id, never fetched."""
    refused(server, f"http://localhost:{docs.port}/client.json", "does not name a registered application")
    assert docs.requests == []


@pytest.mark.parametrize("suffix, reason", [
    ("/client.json?tenant=1", "no query or fragment"),
    ("/client.json#top", "no query or fragment"),
    ("/apps/../client.json", ". or .. segments"),
    ("/apps/./client.json", ". or .. segments"),
    ("/apps/%2e%2e/client.json", ". or .. segments"),
    ("", "must have a path"),
    ("/", "must have a path"),
], ids=["query", "fragment", "dot-dot", "dot", "encoded-dot-dot", "no-path", "root-path"])
def test_url_rules(server, docs, suffix, reason):
    """A client_id URL with a query, a fragment, dot segments or no path cannot be used, and
    nothing is fetched."""
    docs.route("/client.json", json_body=document(docs.url("/client.json")))
    refused(server, f"https://localhost:{docs.port}{suffix}", "The client_id URL cannot be used", reason)
    assert docs.requests == []


def test_url_with_user_information_is_refused(server, docs):
    """https://example.org@localhost/... (a host hidden behind user information) cannot be used."""
    refused(server, f"https://example.org@localhost:{docs.port}/client.json", "The client_id URL cannot be used",
            "user or password")
    assert docs.requests == []


# --------------------------------------------------------------------------------------------- listed mode

def test_listed_mode_refuses_other_hosts(listed, docs):
    """With `listed` and example.org, a document on localhost (or on a host that merely ends in
    example.org's letters) is refused by policy, and nothing is fetched."""
    assert metadata(listed)["client_id_metadata_document_supported"] is True
    url = served(docs)
    for client_id in (url, f"https://notexample.org/{secrets.token_hex(4)}.json",
                      f"https://example.org.localhost:{docs.port}/client.json"):
        refused(listed, client_id, "does not accept client metadata documents from that host")
    refused(listed, f"https://example.org@localhost:{docs.port}/client.json", "The client_id URL cannot be used")
    assert docs.requests == [], "a host outside the list was fetched"


# --------------------------------------------------------------------------------------------- caching

@pytest.mark.parametrize("cache_control, fetches", [
    ("max-age=600", 1),
    (None, 1),             # the default lifetime, an hour
    ("max-age=0", 1),      # bounded below by 60 s
    ("no-store", 2),
    ("no-cache", 2),
], ids=["max-age-600", "default", "max-age-0", "no-store", "no-cache"])
def test_cache_control(server, docs, cache_control, fetches):
    """A document is kept for its max-age (at least 60 s; an hour when the answer says nothing) and
    not fetched again meanwhile; no-store and no-cache make the next request fetch it again."""
    headers = {"Cache-Control": cache_control} if cache_control else {}
    url = served(docs, headers=headers)
    for _ in range(2):
        response, _ = authorize(server, url)
        assert response.status_code == 303, response.text[:500]
        assert urlparse(response.headers["Location"]).path == "/login"
    assert docs.count(urlparse(url).path) == fetches, docs.requests


def test_turning_documents_off_ends_apps_already_known_by_them(tmp_path, authority, docs):
    """An app signs in while documents are accepted; the operator then restarts the server with
    documents off (the same store). The cached app is refused at once, not when its copy of the
    document expires: at the authorization endpoint, and its refresh token at the token endpoint."""
    data = tmp_path / "data"
    options = ["--client-metadata-ca-file", authority.ca_file, "--client-metadata-allow-loopback"]
    first = LatchkeyServer(["--data-dir", data, "--client-metadata-documents", "all", *options],
                           workdir=tmp_path / "serve-1")
    try:
        first.cli("users", "create", USERNAME, "--password-stdin", stdin=PASSWORD + "\n")
        url = served(docs, headers={"Cache-Control": "max-age=86400"})
        redirect_uri = f"http://127.0.0.1:{free_port()}/callback"
        verifier, challenge = pkce()
        sign_in = sign_in_through_pages(requests.Session(), authorization_url(
            first, url, redirect_uri, challenge=challenge, state="s"), USERNAME, PASSWORD)
        tokens = requests.post(first.url("/oauth2/token"), timeout=TIMEOUT, data={
            "grant_type": "authorization_code", "code": query(sign_in.location)["code"],
            "redirect_uri": redirect_uri, "client_id": url, "code_verifier": verifier}).json()
        assert "refresh_token" in tokens, tokens
    finally:
        assert first.stop() == 0, first.output_tail()
    second = LatchkeyServer(["--data-dir", data, *options], workdir=tmp_path / "serve-2")
    try:
        assert "does not name a registered application" in error_page(authorize(second, url)[0])
        refreshed = requests.post(second.url("/oauth2/token"), timeout=TIMEOUT, data={
            "grant_type": "refresh_token", "refresh_token": tokens["refresh_token"], "client_id": url})
        assert refreshed.status_code == 401 and refreshed.json()["error"] == "invalid_client", refreshed.text
    finally:
        assert second.stop() == 0, second.output_tail()
