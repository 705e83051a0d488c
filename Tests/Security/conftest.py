"""Servers for the catalogue suite: each a real `latchkey serve` on a loopback port, provisioned with the
catalogue's fixture through the real CLI while it runs.

- `srv`: the main server (default policies).
- `short`: short code, access and refresh token lifetimes (T12, T48, T52, T67 expiry cases).
- `strict`: `--require-pkce` (T01b) and `--refresh-grace-period 0` (strict rotation: T42, T43, T44).
- `https_srv`: `--issuer https://as.test` and no implicit client (T28, T63 cookie attributes, T68).
- `throttle`: small sign-in and client-authentication limits (T41, T62).
"""
import pytest

from security_harness import THROTTLE_WINDOW, Browser, Server, provision, serve_supports


def _start(tmp_path_factory, name, args=(), issuer=None, spa=True):
    server = Server(tmp_path_factory.mktemp(name), extra_args=args, issuer=issuer)
    try:
        provision(server, spa=spa)
    except BaseException:
        server.stop()
        raise
    return server


@pytest.fixture(scope="session")
def srv(tmp_path_factory):
    # The main server answers hundreds of deliberately failed client authentications and a few failed
    # sign-ins; once the throttles exist, lift them here so one test cannot lock out another (T41 and
    # T62 test the throttles on their own server).
    args = []
    for option in ("--client-auth-attempts", "--sign-in-attempts", "--sign-in-attempts-per-address"):
        if serve_supports(option):
            args += [option, "1000000"]
    # A short idle timeout, so that T34's slow body is cut in seconds (test_catalogue.SRV_IDLE_TIMEOUT).
    args += ["--idle-timeout", "5"]
    server = _start(tmp_path_factory, "main", args)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def short(tmp_path_factory):
    server = _start(tmp_path_factory, "short", ["--code-lifetime", "2", "--access-token-lifetime", "2",
                                                "--refresh-token-lifetime", "3"])
    yield server
    server.stop()


@pytest.fixture(scope="session")
def strict(tmp_path_factory):
    server = _start(tmp_path_factory, "strict", ["--require-pkce", "--refresh-grace-period", "0"])
    yield server
    server.stop()


@pytest.fixture(scope="session")
def https_srv(tmp_path_factory):
    server = _start(tmp_path_factory, "https", issuer="https://as.test", spa=False)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def throttle(tmp_path_factory):
    server = _start(tmp_path_factory, "throttle", [
        "--sign-in-attempts", "5", "--sign-in-attempts-per-address", "12", "--sign-in-window", str(THROTTLE_WINDOW),
        "--client-auth-attempts", "5"])
    yield server
    server.stop()


@pytest.fixture(scope="session")
def alice(srv):
    return Browser(srv, "alice")


@pytest.fixture(scope="session")
def bob(srv):
    return Browser(srv, "bob")
