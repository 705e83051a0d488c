"""Starting Tests/Interop/authlib_provider.py, an OpenID provider built from Authlib, as the upstream
identity provider that `latchkey serve` signs people in through (federation): the Python suites
Tests/Interop/test_federation.py and Tests/Browser/test_pages.py share it.

    sys.path.insert(0, "<checkout>/Tests/Support")
    from upstream_provider import AuthlibUpstream

    idp = AuthlibUpstream(workdir, "--client-id", "downstream", f"--client-secret={secret}",
                          "--redirect-uri", server.issuer + "/federation/acme/callback", "--mode", "good")
    idp.issuer, idp.stats(), idp.log()      # the issuer from its READY line; /_fixture/stats; its stderr
    idp.stop()

The provider's options (modes, the client, the user's claims) are in its docstring. It is up once
constructed (its READY line read), and logs a line per request to WORKDIR/authlib-N.log, which log()
returns for failure messages. Only the standard library and `requests` are used here.
"""
import itertools
import select
import subprocess
import sys
import time
from pathlib import Path

import requests

PROVIDER_SCRIPT = Path(__file__).resolve().parents[1] / "Interop" / "authlib_provider.py"
READY_TIMEOUT = 30  # seconds for the provider to print READY (it imports Flask and Authlib, makes an RSA key)
_numbers = itertools.count(1)


class AuthlibUpstream:
    """One `authlib_provider.py --port 0 ARGS...` process, up once constructed."""

    def __init__(self, workdir, *args, timeout=READY_TIMEOUT):
        self.args = [str(arg) for arg in args]
        self.log_path = Path(workdir) / f"authlib-{next(_numbers)}.log"
        self._log = open(self.log_path, "wb")
        self.process = subprocess.Popen([sys.executable, str(PROVIDER_SCRIPT), "--port", "0", *self.args],
                                        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=self._log)
        try:
            self.issuer = self._wait_until_ready(timeout)
        except BaseException:
            self.stop()
            raise

    def _wait_until_ready(self, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the Authlib provider exited with {self.process.returncode}\n{self.log()}")
            readable, _, _ = select.select([self.process.stdout], [], [], 0.2)
            if readable:
                line = self.process.stdout.readline().decode().strip()
                if line.startswith("READY "):
                    return line.split(" ", 1)[1]
        raise RuntimeError(f"the Authlib provider printed no READY line within {timeout} s\n{self.log()}")

    def log(self):
        """What the provider wrote on stderr: a line per request (method, path, status)."""
        if not self._log.closed:
            self._log.flush()
        return self.log_path.read_text(errors="replace")

    def userinfo(self, access_token):
        """Its /userinfo with `access_token`: the response, whatever its status."""
        return requests.get(self.issuer + "/userinfo", headers={"Authorization": f"Bearer {access_token}"}, timeout=5)

    def stats(self):
        """Its counters: {"jwks_requests", "token_requests", "authorize_requests", "userinfo_requests", "mode"}."""
        return requests.get(self.issuer + "/_fixture/stats", timeout=10).json()

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process.stdout:
            self.process.stdout.close()
        if not self._log.closed:
            self._log.close()

    def __enter__(self):
        return self

    def __exit__(self, *exception):
        self.stop()
