"""docs/threat-model.md section W over HTTP: the cases an outside review found where features meet,
as attacks on a running `latchkey serve` (the catalogue's `srv`, provisioned through the CLI)."""
import pytest

from latchkey_process import LatchkeyError
from security_harness import (
    Browser, Server, auth_params, form_fields, get_code, introspect, pkce, redeem, sign_in_and_redeem, split_location,
    userinfo,
)

NATIVE_REDIRECT = "com.example.app:/oauth2redirect"


def test_RV5_a_refresh_token_is_no_access_token(srv, alice):
    grant = sign_in_and_redeem(srv, alice, srv.clients["native"], redirect_uri=NATIVE_REDIRECT)
    # The resource server's introspection does not see it; /userinfo does not take it.
    assert introspect(srv, grant.rt).json() == {"active": False}
    response = userinfo(srv, grant.rt)
    assert response.status_code == 401 and 'error="invalid_token"' in response.headers["WWW-Authenticate"]
    active = introspect(srv, grant.at).json()
    assert active["active"] is True and active["token_type"] == "Bearer"


def test_RV6_a_personal_app_cannot_introspect_other_apps_tokens(srv, alice):
    scanner = srv.add_client(None, "web", ["https://scanner.example/cb"], ["profile"], owner="bob", name="Scanner")
    grant = sign_in_and_redeem(srv, alice, srv.clients["native"], redirect_uri=NATIVE_REDIRECT)
    assert introspect(srv, grant.at, as_client=scanner).json() == {"active": False}
    assert introspect(srv, grant.at).json()["active"] is True  # the administrator's resource server


def test_RV7_userinfo_refuses_a_token_minted_for_a_resource(srv, alice):
    resource = "https://rv7.example/api"
    srv.cli("resources", "add", resource, "--name", "RV7 API", "--scope", "read")
    grant = redeem(srv, get_code(alice, srv.clients["native"], scope="read profile", redirect_uri=NATIVE_REDIRECT,
                                 extra=[("resource", resource)]))
    assert "profile" in grant.tokens["scope"].split()
    response = userinfo(srv, grant.at)
    assert response.status_code == 401 and 'error="invalid_token"' in response.headers["WWW-Authenticate"]
    plain = sign_in_and_redeem(srv, alice, srv.clients["native"], redirect_uri=NATIVE_REDIRECT)
    assert userinfo(srv, plain.at).status_code == 200


def test_RV10_logout_does_not_redirect_a_signed_out_browser_without_a_hint(srv):
    app = srv.cli("clients", "create", "--type", "native", "--name", "RV10", "--redirect-uri",
                  "http://127.0.0.1/callback", "--post-logout-redirect-uri", "https://rv10.example/bye",
                  "--scope", "profile")
    stranger = Browser(srv)
    for method in ("GET", "POST"):
        params = {"client_id": app["client_id"], "post_logout_redirect_uri": "https://rv10.example/bye",
                  "state": "x"}
        response = stranger.get("/oauth2/logout", params=params) if method == "GET" else \
            stranger.post("/oauth2/logout", data=params)
        assert response.status_code == 200, (method, response.status_code)
        assert "Location" not in response.headers and "rv10.example" not in response.headers.get("Refresh", "")


def test_RV13_the_consent_form_posted_directly_checks_the_personal_apps_owner(srv, bob):
    personal = srv.add_client(None, "native", ["http://127.0.0.1/callback"], ["profile"], owner="alice",
                              name="Alice's own")
    _, challenge = pkce()
    fresh = Browser(srv, "bob")
    start = fresh.authorize(auth_params(personal, redirect_uri="http://127.0.0.1:5000/callback", scope="profile",
                                        state="s", challenge=challenge))
    assert start.status_code == 303 and start.headers["Location"].startswith("/login")
    request_id = form_fields(fresh.get(start.headers["Location"]).text)["request"]
    assert fresh.sign_in(request_id=request_id).status_code == 303
    # Instead of following the redirect to the consent page, bob posts the form himself.
    csrf = form_fields(fresh.get("/account").text)["csrf_token"]
    response = fresh.post("/oauth2/authorize", data=[("csrf_token", csrf), ("request", request_id),
                                                      ("decision", "allow"), ("scope", "profile")])
    assert response.status_code == 303
    _, query, _ = split_location(response.headers["Location"])
    assert query.get("error") == ["access_denied"] and "code" not in query


@pytest.mark.parametrize("next_path", ["/admin/%2e%2e/account", "/admin/%2E%2E/%2E%2E/evil", "/admin/%252e%252e/x",
                                       "/admin%2f..%2faccount"])
def test_RV16_console_next_with_encoded_dot_segments_goes_to_the_console(srv, next_path):
    browser = Browser(srv, "bob")
    fields = form_fields(browser.get("/login", params={"next": next_path}).text)
    response = browser.post("/login", data={"csrf_token": fields["csrf_token"], "username": "bob",
                                            "password": "battery-staple", "next": next_path})
    assert response.status_code == 303 and response.headers["Location"] == "/admin", response.headers.get("Location")


@pytest.mark.parametrize("uri", ["https:evil.example/cb", "https:/evil.example/cb", "https://user@evil.example/cb"])
def test_RV17_redirect_uris_need_an_authority(srv, uri):
    with pytest.raises(LatchkeyError):
        srv.cli("clients", "create", "--type", "web", "--name", "RV17", "--redirect-uri", uri, "--scope", "profile")


def test_RV4_half_sent_request_heads_do_not_hold_the_server(tmp_path):
    """300 connections that each send half a request head and then wait, against a server allowed 256
    open files: the cap keeps descriptors for everyone else, the idle timeout closes the attackers,
    and the server answers again within seconds while they still hold their sockets."""
    import socket
    import subprocess
    import time

    server = Server(tmp_path / "rv4", extra_args=["--idle-timeout", "2", "--max-connections", "100"])
    attackers = []
    try:
        subprocess.run(["prlimit", "--pid", str(server.pid), "--nofile=256:256"], check=True)
        host, port = "127.0.0.1", server.port
        for _ in range(300):
            attacker = socket.create_connection((host, port), timeout=5)
            attacker.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
            attackers.append(attacker)
        started = time.monotonic()
        answered = None
        while time.monotonic() - started < 10:
            try:
                if server.get("/healthz", timeout=2).status_code == 200:
                    answered = time.monotonic() - started
                    break
            except OSError:
                pass
            time.sleep(0.2)
        assert answered is not None, "the server never answered while the slow connections stayed open"
        # Every attacker was closed by the server: reading gives end of file (or a reset).
        closed = 0
        for attacker in attackers:
            attacker.settimeout(5)
            try:
                closed += attacker.recv(1) == b""
            except ConnectionResetError:
                closed += 1
            except socket.timeout:
                pass
        assert closed == len(attackers)
    finally:
        for attacker in attackers:
            attacker.close()
        server.stop()
