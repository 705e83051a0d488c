"""Starting `latchkey serve` from Python, and the helpers that the Python suites (Tests/Interop,
Tests/Security, Tests/Fuzz, Tests/Browser) and Benchmarks/bench.py share.

    sys.path.insert(0, "<checkout>/Tests/Support")
    from latchkey_process import LatchkeyServer

    with LatchkeyServer(["--dev", "--data-dir", data]) as server:
        server.issuer, server.port, server.pid, server.base     # base: where to connect (issuer may differ)
        server.dev["username"], server.dev["password"], server.dev["client_id"]   # when --dev seeded the store
        service = server.cli("clients", "create", "--type", "service", "--name", "S")  # --json, same store

The server always gets `--port 0 --ready-file WORKDIR/ready.json` before the caller's arguments;
it is up when the ready file appears (`latchkey serve` writes it atomically once it listens), so
nothing here reads the human start-up text. Its stdout and stderr (the audit log) go to
WORKDIR/serve.stdout and WORKDIR/serve.stderr. Only the standard library and `requests` are used.

The binary is the one the caller names, else $LATCHKEY_BIN, else .build/debug/latchkey of this
checkout. A binary that a rebuild is replacing (busy, briefly missing, half written) is waited for.
"""
import base64
import contextlib
import errno
import hashlib
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections import namedtuple
from pathlib import Path
from urllib.parse import parse_qs, urljoin, urlparse

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_BINARY = ROOT / ".build" / "debug" / "latchkey"
START_TIMEOUT = 60        # seconds for `latchkey serve` to write its ready file
STOP_TIMEOUT = 20         # seconds between SIGTERM and SIGKILL
REBUILD_PATIENCE = 120    # seconds to keep retrying while the binary is being replaced
_REBUILDING = {errno.ETXTBSY, errno.ENOENT, errno.ENOEXEC}


class LatchkeyError(RuntimeError):
    """`latchkey serve` did not start, or an admin command failed; the message has its output."""


def latchkey_binary(binary=None):
    """`binary` when given, else $LATCHKEY_BIN, else the debug build of this checkout."""
    return str(binary or os.environ.get("LATCHKEY_BIN") or DEFAULT_BINARY)


def _while_rebuilding(start):
    """Calls `start()` (which executes the binary) again while the binary is being rewritten."""
    deadline = time.monotonic() + REBUILD_PATIENCE
    while True:
        try:
            return start()
        except OSError as error:
            if error.errno not in _REBUILDING or time.monotonic() > deadline:
                raise
            time.sleep(1)


# --------------------------------------------------------------------------------------------- the CLI

def run_latchkey(args, binary=None, stdin=None, timeout=120):
    """Runs `latchkey ARGS...`; returns the CompletedProcess (text), whatever its exit status."""
    command = [latchkey_binary(binary), *args]
    return _while_rebuilding(lambda: subprocess.run(command, input=stdin, capture_output=True, text=True,
                                                    timeout=timeout))


def admin(store_args, *args, binary=None, stdin=None, check=True):
    """An admin command (`clients create ...`, `users create ...`, `scopes add ...`) on the store that
    `store_args` names (`--data-dir D` or `--database-url U`), with `--json`. Returns the parsed JSON;
    with check=False, the CompletedProcess whatever its exit status."""
    result = run_latchkey([*args, *store_args, "--json"], binary=binary, stdin=stdin)
    if not check:
        return result
    if result.returncode != 0:
        raise LatchkeyError(f"latchkey {' '.join(args)} exited {result.returncode}: {result.stderr.strip()}")
    return json.loads(result.stdout)


def _option(args, name):
    """The value of `--name VALUE` or `--name=VALUE` in an argument list, else None."""
    for i, arg in enumerate(args):
        if arg == name and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith(name + "="):
            return arg[len(name) + 1:]
    return None


def store_arguments(args):
    """The store options of a `serve` argument list, for admin commands on the same store."""
    store = []
    for name in ("--data-dir", "--database-url", "--key-encryption-key-file"):
        value = _option(args, name)
        if value is not None:
            store += [name, value]
    return store


# --------------------------------------------------------------------------------------------- the server

class LatchkeyServer:
    """One `latchkey serve --port 0 --ready-file ...` process, up once constructed.

    Attributes: `issuer`, `port`, `pid` and `dev` (the demo credentials {"username", "password",
    "client_id"} when --dev created them on this start, else None) from the ready file; `base`, the
    URL to connect to (http://HOST:PORT; the same as the issuer unless --issuer was given);
    `store_args`, the --data-dir / --database-url given; `workdir`, where the ready file and logs are.

    `workdir` defaults to a fresh temporary folder, removed by stop(); one the caller gives is kept.
    `keep_stderr=False` sends stderr (the audit log, a line per request) to /dev/null instead of a file.
    Raises LatchkeyError, with the tail of the server's output, if the process exits before it is
    ready or is not ready within `timeout` seconds.
    """

    def __init__(self, args=(), binary=None, workdir=None, timeout=START_TIMEOUT, keep_stderr=True):
        self.args = [str(arg) for arg in args]
        if _option(self.args, "--port") is not None:
            raise ValueError("LatchkeyServer always passes --port 0; read the port from .port")
        self.binary = latchkey_binary(binary)
        self.store_args = store_arguments(self.args)
        self._own_workdir = workdir is None
        self.workdir = str(workdir) if workdir is not None else tempfile.mkdtemp(prefix="latchkey-serve-")
        os.makedirs(self.workdir, exist_ok=True)
        self.ready_file = os.path.join(self.workdir, "ready.json")
        self.stdout_path = os.path.join(self.workdir, "serve.stdout")
        self.stderr_path = os.path.join(self.workdir, "serve.stderr") if keep_stderr else None
        self.returncode = None
        self.process = None
        if os.path.exists(self.ready_file):  # from an earlier start in the same folder
            os.remove(self.ready_file)
        command = [self.binary, "serve", "--port", "0", "--ready-file", self.ready_file, *self.args]
        try:
            with open(self.stdout_path, "ab") as out, \
                    (open(self.stderr_path, "ab") if keep_stderr else open(os.devnull, "wb")) as err:
                self.process = _while_rebuilding(lambda: subprocess.Popen(
                    command, stdin=subprocess.DEVNULL, stdout=out, stderr=err))
            ready = self._wait_until_ready(timeout)
        except BaseException:
            self.stop()
            raise
        self.issuer = ready["issuer"]
        self.port = int(ready["port"])
        self.pid = int(ready["pid"])
        self.dev = ready.get("dev")
        host = _option(self.args, "--host") or "127.0.0.1"
        host = {"0.0.0.0": "127.0.0.1", "::": "::1", "localhost": "127.0.0.1"}.get(host, host)
        self.base = f"http://{f'[{host}]' if ':' in host else host}:{self.port}"

    def _wait_until_ready(self, timeout):
        deadline = time.monotonic() + timeout
        while True:
            try:
                with open(self.ready_file) as f:
                    return json.load(f)  # written to a temporary name and renamed: never half there
            except FileNotFoundError:
                pass
            status = self.process.poll()
            if status is not None:
                raise LatchkeyError(f"{self._name()} exited with status {status} "
                                    f"before it was ready\n{self.output_tail()}")
            if time.monotonic() > deadline:
                raise LatchkeyError(f"{self._name()} was not ready (no ready file) "
                                    f"within {timeout} s\n{self.output_tail()}")
            time.sleep(0.05)

    def _name(self):
        return " ".join([self.binary, "serve", *self.args])

    def output_tail(self, characters=3000):
        """The end of the server's stdout and stderr, for failure messages."""
        parts = []
        for name, path in (("stdout", self.stdout_path), ("stderr", self.stderr_path)):
            if path is None:
                parts.append(f"--- {name}: not kept")
                continue
            try:
                with open(path, errors="replace") as f:
                    parts.append(f"--- {name}:\n{f.read()[-characters:]}")
            except OSError as error:
                parts.append(f"--- {name}: {error}")
        return "\n".join(parts)

    def alive(self):
        return self.process is not None and self.process.poll() is None

    def stop(self, timeout=STOP_TIMEOUT):
        """SIGTERM, wait up to `timeout` s, then SIGKILL. Returns the exit status (0 after a clean
        SIGTERM; negative for a signal). Calling it again returns the same status."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process is not None:
            self.returncode = self.process.returncode
        if self._own_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)
        return self.returncode

    def __enter__(self):
        return self

    def __exit__(self, *exception):
        self.stop()

    def url(self, path):
        return self.base + path

    def cli(self, *args, stdin=None, check=True):
        """An admin command on this server's store, with --json (see admin())."""
        return admin(self.store_args, *args, binary=self.binary, stdin=stdin, check=check)


# --------------------------------------------------------------------------------------------- the browser's way

SignIn = namedtuple("SignIn", "location consent")
SignIn.__doc__ = """location: the redirect to the app; consent: the consent page (None when consent was remembered)."""

_HIDDEN = re.compile(r'name="(csrf_token|request)" value="([^"]*)"')


def hidden_fields(html):
    """The CSRF token and pending-request handle of a sign-in or consent form."""
    return dict(_HIDDEN.findall(html))


def _expect(response, status, what):
    if response.status_code != status:
        raise AssertionError(f"{what} answered {response.status_code}, expected {status}: {response.text[:300]}")


def sign_in_through_pages(session, authorization_url, username, password, grant=None, timeout=20):
    """Goes through the server's pages as a browser would for one authorization request: GET the
    authorization URL (a 303 to the sign-in page), the sign-in page, POST /login with its CSRF token
    (a 303), then the consent page, allowing the scopes in `grant` (default: every one offered),
    unless consent is remembered and the server sends the browser straight back to the app.
    `session` is a requests.Session, the browser's cookie jar. Returns SignIn(location, consent)."""
    parts = urlparse(authorization_url)
    base = f"{parts.scheme}://{parts.netloc}"
    page = session.get(authorization_url, allow_redirects=False, timeout=timeout)
    _expect(page, 303, "the authorization request")
    login = session.get(urljoin(base, page.headers["Location"]), allow_redirects=False, timeout=timeout)
    _expect(login, 200, "the sign-in page")
    signed_in = session.post(base + "/login", allow_redirects=False, timeout=timeout,
                             data={**hidden_fields(login.text), "username": username, "password": password})
    _expect(signed_in, 303, "the sign-in")
    consent = session.get(urljoin(base, signed_in.headers["Location"]), allow_redirects=False, timeout=timeout)
    if consent.status_code == 303:  # consent remembered from an earlier sign-in: straight to the app
        return SignIn(consent.headers["Location"], None)
    _expect(consent, 200, "the consent page")
    scopes = re.findall(r'name="scope" value="([^"]*)"', consent.text) if grant is None else grant
    decision = session.post(base + "/oauth2/authorize", allow_redirects=False, timeout=timeout,
                            data=[*hidden_fields(consent.text).items(), ("decision", "allow"),
                                  *[("scope", scope) for scope in scopes]])
    _expect(decision, 303, "the consent decision")
    return SignIn(decision.headers["Location"], consent)


def code_in(location):
    """The authorization code in a redirect to the app."""
    return parse_qs(urlparse(location).query)["code"][0]


# --------------------------------------------------------------------------------------------- small things

def s256(verifier):
    """The PKCE S256 challenge of a verifier (RFC 7636 §4.2)."""
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode("utf-8")).digest()).rstrip(b"=").decode()


def pkce():
    """A fresh (verifier, S256 challenge): 64 characters of [A-Za-z0-9_-]."""
    verifier = secrets.token_urlsafe(48)
    return verifier, s256(verifier)


def free_port():
    """A loopback port free just now, for something other than latchkey (a redirect URI's port):
    latchkey picks its own with --port 0."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serving(tmp_path_factory, *args):
    """`latchkey serve ARGS` on a fresh SQLite store in folders of `tmp_path_factory` (pytest's),
    stopped at the end of the `with` block, where it must exit cleanly."""
    server = LatchkeyServer(["--data-dir", tmp_path_factory.mktemp("latchkey-data"), *args],
                            workdir=tmp_path_factory.mktemp("latchkey-serve"))
    try:
        yield server
    except BaseException:
        server.stop()
        raise
    assert server.stop() == 0, server.output_tail()


def log_records(server, mark, event, client_id, wait=5):
    """The server's log records (JSON lines of its stderr) written after byte `mark` for `event`
    naming `client_id`, waiting up to `wait` seconds for one to appear."""
    deadline = time.monotonic() + wait
    while True:
        with open(server.stderr_path, "rb") as log:
            log.seek(mark)
            text = log.read().decode("utf-8", errors="replace")
        records = []
        for line in text.splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if record.get("event") == event and record.get("client_id") == client_id:
                records.append(record)
        if records or time.monotonic() > deadline:
            return records
        time.sleep(0.05)
