"""What an operator relies on when running `latchkey serve`: request ids, the log's formats and
level, the access log, TLS, and graceful shutdown on SIGTERM.

Each test starts its own `latchkey serve` (SQLite in a temporary folder) with LatchkeyServer and
reads what the server wrote to stderr (WORKDIR/serve.stderr). The log is parsed as a log shipper
would parse it: JSON lines with the standard library, logfmt with the strict parser below (bare
values may not hold a space, `=` or `"`; quoted values use backslash escapes). The sign-in form
is used as a browser uses it (a requests.Session); the shutdown tests use raw sockets, so that a
request can be left half sent while the server is told to stop.
"""
import http.client
import json
import re
import secrets
import signal
import socket
import subprocess
import time

import pytest
import requests

from https_documents import TestAuthority
from latchkey_process import LatchkeyServer, hidden_fields, run_latchkey

USERNAME = "alice"
PASSWORD = "correct horse battery staple"
TIMEOUT = 20
LOG_TIMEOUT = 5       # seconds for a log line to reach serve.stderr after its response was read
HEAD_KEYS = ["time", "level", "label", "message"]
# A generated id: 32 hex digits (a random per-process half, then a counter).
FRESH_ID = re.compile(r"[0-9a-f]{32}")


# --------------------------------------------------------------------------------------------- servers

def serve(tmp_path, *args):
    """A `latchkey serve` on a fresh SQLite store in tmp_path, with `args`."""
    return LatchkeyServer(["--data-dir", tmp_path / "data", *args], workdir=tmp_path / "serve")


def stderr_text(server):
    with open(server.stderr_path, errors="replace") as f:
        return f.read()


def log_lines(server):
    """The non-empty lines of the server's stderr (split on \\n only, as a log shipper does)."""
    return [line for line in stderr_text(server).split("\n") if line]


def json_log(server):
    """Every stderr line as a JSON object; fails on a line that is not one."""
    entries = []
    for line in log_lines(server):
        try:
            entry = json.loads(line)
        except ValueError:
            raise AssertionError(f"a stderr line is not JSON: {line!r}") from None
        assert isinstance(entry, dict), f"a stderr line is not a JSON object: {line!r}"
        entries.append(entry)
    return entries


_LOGFMT_PAIR = re.compile(r'([^\s="]+)=("(?:[^"\\]|\\.)*"|[^\s="]+)(?: +|$)')
_LOGFMT_ESCAPES = {'"': '"', "\\": "\\", "n": "\n", "r": "\r", "t": "\t"}


def _logfmt_unquote(quoted):
    body, out, i = quoted[1:-1], [], 0
    while i < len(body):
        if body[i] != "\\":
            out.append(body[i])
            i += 1
        elif body[i + 1] == "u":
            out.append(chr(int(body[i + 2:i + 6], 16)))
            i += 6
        else:
            assert body[i + 1] in _LOGFMT_ESCAPES, f"unknown escape \\{body[i + 1]} in {quoted!r}"
            out.append(_LOGFMT_ESCAPES[body[i + 1]])
            i += 2
    return "".join(out)


def parse_logfmt(line):
    """One logfmt line as an (ordered) dict. Strict: the whole line must be `key=value` pairs
    separated by spaces, each key once; a bare value has no space, `=` or `"`."""
    fields, position = {}, 0
    while position < len(line):
        match = _LOGFMT_PAIR.match(line, position)
        assert match, f"not logfmt at character {position}: {line!r}"
        key, value = match.groups()
        assert key not in fields, f"{key} twice in {line!r}"
        fields[key] = _logfmt_unquote(value) if value.startswith('"') else value
        position = match.end()
    return fields


def logfmt_log(server):
    return [parse_logfmt(line) for line in log_lines(server)]


def wait_for_entries(server, read, predicate, what, count=1):
    """The log entries (read by `read`: json_log or logfmt_log) that satisfy `predicate`, once at
    least `count` are there; fails after LOG_TIMEOUT seconds."""
    deadline = time.monotonic() + LOG_TIMEOUT
    while True:
        found = [entry for entry in read(server) if predicate(entry)]
        if len(found) >= count or time.monotonic() > deadline:
            assert len(found) >= count, f"expected {count} log line(s) {what}, found {found}\n{server.output_tail()}"
            return found
        time.sleep(0.05)


def event(name):
    return lambda entry: entry.get("event") == name


# --------------------------------------------------------------------------------------------- requests

def create_user(server):
    server.cli("users", "create", USERNAME, "--password-stdin", stdin=PASSWORD + "\n")


def fail_sign_in(base, browser, verify=True):
    """Gets the sign-in form, then POSTs it with a wrong password. Returns the POST's response."""
    page = browser.get(base + "/login", allow_redirects=False, timeout=TIMEOUT, verify=verify)
    assert page.status_code == 200, page.text[:300]
    answer = browser.post(base + "/login", allow_redirects=False, timeout=TIMEOUT, verify=verify,
                          data={**hidden_fields(page.text), "username": USERNAME, "password": "not " + PASSWORD})
    assert answer.status_code == 401, f"a wrong password answered {answer.status_code}: {answer.text[:300]}"
    return answer


def fail_client_authentication(base, client_id="no-such-client", headers=None):
    """A client_credentials request with a wrong secret: 401 invalid_client. Returns the response."""
    answer = requests.post(base + "/oauth2/token", timeout=TIMEOUT, headers=headers or {},
                           data={"grant_type": "client_credentials", "client_id": client_id,
                                 "client_secret": "wrong-secret"})
    assert answer.status_code == 401, answer.text[:300]
    assert answer.json()["error"] == "invalid_client", answer.text
    return answer


def raw_exchange(port, request, timeout=TIMEOUT):
    """Sends raw bytes on a new connection and returns everything the server sends until it closes."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as connection:
        connection.sendall(request)
        received = b""
        while chunk := connection.recv(65536):
            received += chunk
        return received


def read_response(connection):
    """Reads one HTTP response from a socket: (status, headers as a dict, body bytes)."""
    response = http.client.HTTPResponse(connection)
    response.begin()
    return response.status, dict(response.getheaders()), response.read()


def request_head(method, path, extra=b""):
    return f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n".encode() + extra


def wait_until_refused(port, seconds=5):
    """Whether a new connection to `port` is refused within `seconds` (the listener closed)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
        except ConnectionRefusedError:
            return True
        time.sleep(0.1)
    return False


# --------------------------------------------------------------------------------------------- request ids

def test_every_response_carries_a_fresh_request_id(tmp_path):
    """Every response, 200, 404 and 405 (and HEAD) alike, carries X-Request-Id: a generated id,
    different for each request. Without --trusted-proxy, an X-Request-Id sent by the client is
    never kept, however well-formed, and never reaches the log."""
    incoming = "client-chosen-id-" + secrets.token_hex(4)
    with serve(tmp_path) as server:
        ids = []
        for method, path, status in [("GET", "/healthz", 200), ("GET", "/healthz", 200), ("HEAD", "/healthz", 200),
                                     ("GET", "/no/such/path", 404), ("GET", "/oauth2/token", 405),
                                     ("POST", "/oauth2/token", 400)]:
            response = requests.request(method, server.url(path), headers={"X-Request-Id": incoming},
                                        timeout=TIMEOUT, allow_redirects=False)
            assert response.status_code == status, f"{method} {path}: {response.status_code} {response.text[:200]}"
            request_id = response.headers.get("X-Request-Id")
            assert request_id and FRESH_ID.fullmatch(request_id), f"{method} {path}: X-Request-Id {request_id!r}"
            ids.append(request_id)
        assert len(set(ids)) == len(ids), f"request ids repeat: {ids}"
        assert incoming not in stderr_text(server)


@pytest.mark.parametrize("trusted", ["127.0.0.1", "127.0.0.0/8"])
def test_a_trusted_proxy_passes_its_request_id_on(tmp_path, trusted):
    """From a trusted proxy (--trusted-proxy, an address or a CIDR range holding the peer) an
    X-Request-Id of 1 to 128 characters of [A-Za-z0-9._:-] is kept: echoed on 200, 404 and 405
    responses alike, and written as request_id on the audit lines of that request. Any other value
    (a space, 129 or 200 characters, other punctuation, non-ASCII, empty) is replaced by a fresh id;
    a CR or LF can only arrive as a broken header, which is refused or replaced, never echoed."""
    good = ["proxy-trace.42:a_B", "a", "x" * 128]
    bad = ["a b", "x" * 129, "x" * 200, "a/b", "a;b", "<id>", "a,b"]
    with serve(tmp_path, "--trusted-proxy", trusted) as server:
        for value in good:
            for path, status in [("/healthz", 200), ("/no/such/path", 404), ("/oauth2/token", 405)]:
                response = requests.get(server.url(path), headers={"X-Request-Id": value}, timeout=TIMEOUT)
                assert response.status_code == status
                assert response.headers.get("X-Request-Id") == value, f"{value!r} on {path} was not kept"
        for value in bad:
            response = requests.get(server.url("/healthz"), headers={"X-Request-Id": value}, timeout=TIMEOUT)
            kept = response.headers.get("X-Request-Id")
            assert kept and kept != value and FRESH_ID.fullmatch(kept), f"{value!r} answered with {kept!r}"

        # Values that requests will not send: raw bytes on a socket.
        for raw in [b"\xc3\xa9t\xc3\xa9", b"", b"x\r\ny", b"x\r\n y", b"x\ry"]:
            answer = raw_exchange(server.port, request_head("GET", "/healthz",
                                                            b"X-Request-Id: " + raw + b"\r\nConnection: close\r\n\r\n"))
            head = answer.split(b"\r\n\r\n", 1)[0].decode("latin-1")
            status = int(head.split(" ", 2)[1])
            echoed = [line.split(":", 1)[1].strip() for line in head.split("\r\n")[1:]
                      if line.lower().startswith("x-request-id:")]
            if status == 400 and b"\r" in raw:
                # The HTTP parser refuses the request before any route: nothing is echoed.
                assert not any(value.startswith("x") for value in echoed), head
                continue
            assert status == 200, head
            assert len(echoed) == 1 and FRESH_ID.fullmatch(echoed[0]), f"{raw!r} answered with {head!r}"

        # The proxy's id names the request's audit line too.
        proxy_id = "proxy-" + secrets.token_hex(8)
        fail_client_authentication(server.base, headers={"X-Request-Id": proxy_id})
        [line] = wait_for_entries(server, json_log, event("client_authentication.failed"), "for the failed client")
        assert line["request_id"] == proxy_id, line


def test_an_untrusted_peer_cannot_set_the_request_id(tmp_path):
    """A --trusted-proxy range that does not hold the peer (127.0.0.1) does not make its
    X-Request-Id trusted: a well-formed id is still replaced."""
    with serve(tmp_path, "--trusted-proxy", "10.0.0.0/8", "--trusted-proxy", "::1") as server:
        response = requests.get(server.url("/healthz"), headers={"X-Request-Id": "proxy-trace-1"}, timeout=TIMEOUT)
        assert response.headers["X-Request-Id"] != "proxy-trace-1"
        assert FRESH_ID.fullmatch(response.headers["X-Request-Id"])


# --------------------------------------------------------------------------------------------- the log

def test_json_log_lines_carry_the_request_id_of_their_response(tmp_path):
    """By default every stderr line is one JSON object whose first keys are time, level, label and
    message. A wrong password on the sign-in form logs a `login.failed` event (level notice) whose
    request_id is the X-Request-Id of that POST /login response; a failed client authentication
    at /oauth2/token logs `client_authentication.failed` with the token response's request id. A
    client_id holding a newline stays inside its one line. Without --access-log no access lines."""
    with serve(tmp_path) as server:
        create_user(server)
        browser = requests.Session()
        signed_in = fail_sign_in(server.base, browser)
        [failed] = wait_for_entries(server, json_log, event("login.failed"), "for the wrong password")
        assert failed["request_id"] == signed_in.headers["X-Request-Id"], failed
        assert failed["level"] == "notice" and failed["label"] == "latchkey" and failed["message"] == "login.failed"
        assert failed["username_known"] == "true" and failed["client_address"] == "127.0.0.1", failed

        forged = 'evil\n{"level":"critical","message":"forged"}'
        token = fail_client_authentication(server.base, client_id=forged)
        [client] = wait_for_entries(server, json_log, event("client_authentication.failed"), "for the bad secret")
        assert client["request_id"] == token.headers["X-Request-Id"], client
        assert client["client_id"] == forged, client
        assert client["request_id"] != failed["request_id"]

        entries = json_log(server)
        for entry in entries:
            assert list(entry)[:4] == HEAD_KEYS, entry
            assert all(isinstance(value, str) for value in entry.values()), entry
            assert entry["level"] in {"trace", "debug", "info", "notice", "warning", "error", "critical"}, entry
            assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", entry["time"]), entry
        assert not any(entry.get("message") == "forged" for entry in entries)
        assert not any(entry["label"] == "latchkey.access" for entry in entries), "access lines without --access-log"


def test_logfmt_lines(tmp_path):
    """--log-format logfmt writes `key=value` lines, the same fields as JSON: time, level, label
    and message first, then the metadata. Values with a space, `=` or `"` are quoted with `\\"`
    and `\\\\` escaped (a newline too), so a client_id made to look like more fields or another
    line reads back exactly as sent. The `login.failed` event carries its response's request id."""
    with serve(tmp_path, "--log-format", "logfmt") as server:
        create_user(server)
        signed_in = fail_sign_in(server.base, requests.Session())
        [failed] = wait_for_entries(server, logfmt_log, event("login.failed"), "for the wrong password")
        assert failed["request_id"] == signed_in.headers["X-Request-Id"], failed
        assert failed["level"] == "notice" and failed["message"] == "login.failed", failed

        forged = 'a "quoted" back\\slash key=value\nlevel=critical message=forged'
        token = fail_client_authentication(server.base, client_id=forged)
        [client] = wait_for_entries(server, logfmt_log, event("client_authentication.failed"), "for the bad secret")
        assert client["client_id"] == forged, client
        assert client["request_id"] == token.headers["X-Request-Id"], client

        lines = log_lines(server)
        assert not any(line.startswith("{") for line in lines), lines
        assert any(line.startswith("time=") and ' message="Server started' in line for line in lines), \
            f"the start-up message (with spaces) should be quoted: {lines}"
        entries = [parse_logfmt(line) for line in lines]
        for entry in entries:
            assert list(entry)[:4] == HEAD_KEYS, entry
        assert not any(entry.get("message") == "forged" for entry in entries)


def test_log_level_warning_silences_the_audit_notices(tmp_path):
    """With --log-level warning the notice-level audit events (login.failed,
    client_authentication.failed) and the info lines are not written, and the server works as
    before: the wrong password is still refused, /healthz still answers."""
    with serve(tmp_path, "--log-level", "warning") as server:
        create_user(server)
        fail_sign_in(server.base, requests.Session())
        fail_client_authentication(server.base)
        assert requests.get(server.url("/healthz"), timeout=TIMEOUT).status_code == 200
        time.sleep(0.5)  # time for a line that should not be there to arrive anyway
        entries = json_log(server)
        assert not any(entry.get("event") for entry in entries), entries
        assert all(entry["level"] in {"warning", "error", "critical"} for entry in entries), entries
        assert server.alive()


@pytest.mark.parametrize("args", [
    ["--log-level", "verbose"],
    ["--log-format", "xml"],
], ids=["log-level", "log-format"])
def test_unknown_log_settings_exit_2(tmp_path, args):
    """An unknown --log-level or --log-format is a configuration mistake: exit status 2 and one
    line on stderr naming the setting, before anything listens."""
    result = run_latchkey(["serve", "--port", "0", "--data-dir", str(tmp_path / "data"), *args], timeout=30)
    assert result.returncode == 2, (result.returncode, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("latchkey:") and args[0].lstrip("-") in lines[0], result.stderr


# --------------------------------------------------------------------------------------------- the access log

def test_access_log_has_one_line_per_request_without_the_query(tmp_path):
    """--access-log writes one line per request (label latchkey.access, message `request`) with
    method, path, status, duration_ms, request_id (the response's X-Request-Id) and
    client_address (the peer: X-Forwarded-For is ignored without --trusted-proxy). The path has
    no query: a state (or a code) in the query appears nowhere on stderr."""
    secret_state = "secretstate" + secrets.token_hex(6)
    with serve(tmp_path, "--access-log") as server:
        asked = [
            ("GET", "/healthz", 200),
            ("GET", f"/oauth2/authorize?client_id=no-such-client&response_type=code&state={secret_state}", 400),
            ("GET", "/no/such/path?token=" + secret_state, 404),
            ("GET", "/oauth2/token", 405),
            ("POST", "/oauth2/token", 400),
            ("HEAD", "/healthz", 200),
        ]
        answered = {}
        for method, path, status in asked:
            response = requests.request(method, server.url(path), timeout=TIMEOUT, allow_redirects=False,
                                        headers={"X-Forwarded-For": "203.0.113.9"})
            assert response.status_code == status, f"{method} {path}: {response.status_code} {response.text[:200]}"
            answered[response.headers["X-Request-Id"]] = (method, path.split("?")[0], status)

        access = wait_for_entries(server, json_log, lambda e: e["label"] == "latchkey.access",
                                  "in the access log", count=len(asked))
        assert len(access) == len(asked), access
        for line in access:
            assert line["message"] == "request" and line["level"] == "info", line
            assert line["request_id"] in answered, f"an access line for no response of ours: {line}"
            method, path, status = answered.pop(line["request_id"])
            assert (line["method"], line["path"], line["status"]) == (method, path, str(status)), line
            assert float(line["duration_ms"]) >= 0, line
            assert line["client_address"] == "127.0.0.1", line
        text = stderr_text(server)
        assert secret_state not in text and "state=" not in text, "the query reached the log"


def test_access_log_names_the_client_behind_a_trusted_proxy(tmp_path):
    """Behind a trusted proxy the access line's client_address is the address in X-Forwarded-For,
    and its request_id is the proxy's id."""
    with serve(tmp_path, "--access-log", "--trusted-proxy", "127.0.0.1") as server:
        response = requests.get(server.url("/healthz"), timeout=TIMEOUT,
                                headers={"X-Forwarded-For": "203.0.113.9", "X-Request-Id": "edge-1234"})
        assert response.headers["X-Request-Id"] == "edge-1234"
        [line] = wait_for_entries(server, json_log, lambda e: e["label"] == "latchkey.access", "in the access log")
        assert line["client_address"] == "203.0.113.9" and line["request_id"] == "edge-1234", line


# --------------------------------------------------------------------------------------------- TLS

def test_tls_serves_https(tmp_path):
    """With --tls-certificate and --tls-key the port speaks https: a client trusting the CA gets
    /healthz (by IP address and by name); the default issuer, in the ready file and in the
    metadata, is https://; a plain-http request gets no HTTP response; a client that does not
    trust the CA fails verification; the session cookie from GET /login is `Secure` (and
    `__Host-`). The audit log works over https as over http."""
    authority = TestAuthority(tmp_path / "ca")
    stranger = TestAuthority(tmp_path / "other-ca")
    with serve(tmp_path, "--tls-certificate", authority.cert_file, "--tls-key", authority.key_file) as server:
        base = f"https://127.0.0.1:{server.port}"
        assert server.issuer == base, server.issuer
        health = requests.get(base + "/healthz", verify=authority.ca_file, timeout=TIMEOUT)
        assert health.status_code == 200 and health.json() == {"status": "ok"}
        assert FRESH_ID.fullmatch(health.headers["X-Request-Id"])
        assert requests.get(f"https://localhost:{server.port}/healthz", verify=authority.ca_file,
                            timeout=TIMEOUT).status_code == 200
        metadata = requests.get(base + "/.well-known/oauth-authorization-server", verify=authority.ca_file,
                                timeout=TIMEOUT).json()
        assert metadata["issuer"] == base and metadata["token_endpoint"].startswith("https://"), metadata

        plain = raw_exchange(server.port, request_head("GET", "/healthz", b"Connection: close\r\n\r\n"))
        assert not plain.startswith(b"HTTP/"), f"plain http was answered: {plain[:200]!r}"
        with pytest.raises(requests.exceptions.ConnectionError):
            requests.get(f"http://127.0.0.1:{server.port}/healthz", timeout=TIMEOUT)
        with pytest.raises(requests.exceptions.SSLError):
            requests.get(base + "/healthz", verify=stranger.ca_file, timeout=TIMEOUT)

        browser = requests.Session()
        page = browser.get(base + "/login", verify=authority.ca_file, timeout=TIMEOUT)
        cookie = page.raw.headers.get("Set-Cookie")
        assert cookie, "GET /login set no cookie"
        attributes = [part.strip().lower() for part in cookie.split(";")]
        assert "secure" in attributes, f"the session cookie over https is not Secure: {cookie}"
        assert cookie.startswith("__Host-"), cookie

        create_user(server)
        answer = fail_sign_in(base, browser, verify=authority.ca_file)
        [failed] = wait_for_entries(server, json_log, event("login.failed"), "for the wrong password")
        assert failed["request_id"] == answer.headers["X-Request-Id"]


def test_tls_handshakes_and_heads_that_stall_are_closed_by_the_idle_timeout(tmp_path):
    """RV4 over TLS: a connection that never finishes its handshake, and one that finishes it and then
    sends half a request head, are both closed after --idle-timeout; a real client is served."""
    import socket
    import ssl
    import time
    authority = TestAuthority(tmp_path / "ca")
    with serve(tmp_path, "--tls-certificate", authority.cert_file, "--tls-key", authority.key_file,
               "--idle-timeout", "1") as server:
        silent = socket.create_connection(("127.0.0.1", server.port), timeout=5)
        context = ssl.create_default_context(cafile=authority.ca_file)
        half = context.wrap_socket(socket.create_connection(("127.0.0.1", server.port), timeout=5),
                                   server_hostname="localhost")
        half.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n")
        started = time.monotonic()
        for connection in (silent, half):
            connection.settimeout(5)
            try:
                assert connection.recv(1) == b""
            except (ConnectionResetError, ssl.SSLError):
                pass
        assert time.monotonic() - started < 4, "closed by the idle timeout, not by the client's own"
        silent.close()
        half.close()
        assert requests.get(f"https://127.0.0.1:{server.port}/healthz", verify=authority.ca_file,
                            timeout=TIMEOUT).status_code == 200


def _write(path, text):
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("case", ["certificate-only", "key-only", "garbage-certificate", "not-pem-certificate",
                                  "garbage-key", "missing-certificate", "key-of-another-certificate"])
def test_tls_mistakes_exit_2(tmp_path, case):
    """A TLS setting that cannot work is a configuration mistake: exit status 2 with one line on
    stderr, before the store is opened or anything listens: a certificate without a key (or the
    reverse), a PEM file that does not hold a certificate or a key, a file that cannot be read, a key
    that does not belong to the certificate."""
    authority = TestAuthority(tmp_path / "ca")
    garbage = _write(tmp_path / "garbage.pem", "-----BEGIN CERTIFICATE-----\nnot base64!\n-----END CERTIFICATE-----\n")
    not_pem = _write(tmp_path / "hello.txt", "hello\n")
    args = {
        "certificate-only": ["--tls-certificate", authority.cert_file],
        "key-only": ["--tls-key", authority.key_file],
        "garbage-certificate": ["--tls-certificate", garbage, "--tls-key", authority.key_file],
        "not-pem-certificate": ["--tls-certificate", not_pem, "--tls-key", authority.key_file],
        "garbage-key": ["--tls-certificate", authority.cert_file, "--tls-key", not_pem],
        "missing-certificate": ["--tls-certificate", str(tmp_path / "missing.pem"), "--tls-key", authority.key_file],
        "key-of-another-certificate": ["--tls-certificate", authority.cert_file,
                                       "--tls-key", TestAuthority(tmp_path / "other").key_file],
    }[case]
    data = tmp_path / "data"
    try:
        result = run_latchkey(["serve", "--port", "0", "--data-dir", str(data), *args], timeout=30)
    except subprocess.TimeoutExpired:
        pytest.fail(f"latchkey serve {' '.join(args)} kept running instead of refusing the setting")
    assert result.returncode == 2, (result.returncode, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("latchkey:") and "tls-" in lines[0], result.stderr
    assert not data.exists(), "the store was opened before the TLS settings were checked"


# --------------------------------------------------------------------------------------------- shutdown

TOKEN_BODY = b"grant_type=client_credentials&client_id=x&client_secret=y"


def token_head(length):
    return request_head("POST", "/oauth2/token",
                        b"Content-Type: application/x-www-form-urlencoded\r\n"
                        b"Content-Length: %d\r\n\r\n" % length)


def open_connection(server):
    """A connection the server has certainly accepted: one GET /healthz answered on it (keep-alive)."""
    connection = socket.create_connection(("127.0.0.1", server.port), timeout=TIMEOUT)
    connection.sendall(request_head("GET", "/healthz", b"\r\n"))
    status, _, _ = read_response(connection)
    assert status == 200
    return connection


def test_sigterm_lets_the_request_in_flight_finish(tmp_path):
    """On SIGTERM the listener closes at once (a new connection is refused) but a request already
    in flight (headers sent, body not yet) goes on: once its body arrives it gets its whole
    response (401 invalid_client, with its request id, logged as usual), and then the process
    exits with status 0."""
    server = serve(tmp_path)
    try:
        connection = open_connection(server)
        connection.sendall(token_head(len(TOKEN_BODY)))
        time.sleep(0.5)  # time for the server to read the head and start the request
        server.process.send_signal(signal.SIGTERM)
        time.sleep(0.5)
        assert wait_until_refused(server.port), "the listener still accepts connections after SIGTERM"
        assert server.alive(), f"the server exited with a request in flight\n{server.output_tail()}"

        connection.sendall(TOKEN_BODY)
        status, headers, body = read_response(connection)
        connection.close()
        assert status == 401 and json.loads(body)["error"] == "invalid_client", (status, body)
        assert FRESH_ID.fullmatch(headers.get("X-Request-Id", "")), headers
        try:
            exit_status = server.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the server did not exit within 10 s of its last request\n{server.output_tail()}")
        assert exit_status == 0, server.output_tail()
        [line] = wait_for_entries(server, json_log, event("client_authentication.failed"), "for the last request")
        assert line["request_id"] == headers["X-Request-Id"]
    finally:
        server.stop()


def test_shutdown_timeout_bounds_a_request_that_never_finishes(tmp_path):
    """With --shutdown-timeout 2, a request whose body never arrives delays the exit after SIGTERM
    by about 2 s, not more: the process exits on its own (not killed), well within 12 s, and the
    stuck connection is closed."""
    server = serve(tmp_path, "--shutdown-timeout", "2")
    try:
        connection = open_connection(server)
        connection.sendall(token_head(len(TOKEN_BODY)))
        time.sleep(0.5)  # time for the server to read the head and start the request
        started = time.monotonic()
        server.process.send_signal(signal.SIGTERM)
        try:
            exit_status = server.process.wait(timeout=12)
        except subprocess.TimeoutExpired:
            pytest.fail(f"still running 12 s after SIGTERM with --shutdown-timeout 2\n{server.output_tail()}")
        elapsed = time.monotonic() - started
        assert exit_status >= 0, f"ended by signal {-exit_status}"
        assert 1.5 <= elapsed < 12, f"exited {elapsed:.2f} s after SIGTERM (status {exit_status})"
        connection.settimeout(5)
        try:
            left = connection.recv(65536)
        except ConnectionResetError:
            left = b""
        assert not left.startswith(b"HTTP/1.1 2"), left
        connection.close()
    finally:
        server.stop()


def test_an_idle_connection_does_not_delay_shutdown(tmp_path):
    """A keep-alive connection with no request in flight does not hold the server up: with the
    default shutdown timeout (30 s) the process exits with status 0 within a few seconds of
    SIGTERM."""
    server = serve(tmp_path)
    try:
        connection = open_connection(server)
        started = time.monotonic()
        server.process.send_signal(signal.SIGTERM)
        try:
            exit_status = server.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pytest.fail(f"an idle keep-alive connection held the server up\n{server.output_tail()}")
        assert exit_status == 0 and time.monotonic() - started < 10
        connection.close()
    finally:
        server.stop()
