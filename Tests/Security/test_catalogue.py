"""docs/threat-model.md's attack catalogue, T01–T68 (T29 is the client library's and lives in the Swift tests),
each sent over real HTTP to a real `latchkey serve`, checking the refusal and the absence of side effects.

Fixture names follow the catalogue (native, native2, multi, web, web2, legacy, svc, spa, rs; alice, bob;
scopes read, write, admin, svc.read). The resource API is `GET /userinfo`, which needs `profile` (or
`openid`, which its challenge names), so `profile` stands in for the catalogue's read/write scope wherever a resource check is made.
"""
import base64
import collections
import math
import random
import re
import secrets
import socket
import string
import time

import pytest
import requests

from security_harness import (
    THROTTLE_WINDOW,
    Browser, Grant, assert_alive, assert_dead, assert_inactive, assert_no_redirect, assert_redirect_err,
    assert_rt_alive, assert_rt_dead, assert_token_err, assert_token_err_one_of, auth_params, barrier_run,
    exchange, form_fields, get_code, introspect, pkce, redeem, refresh, revoke, s256, sign_in_and_redeem,
    split_location, trimmed, userinfo, welch_t,
)

NATIVE_REDIRECT = "com.example.app:/oauth2redirect"
SRV_IDLE_TIMEOUT = 5  # conftest's `srv`
WEB_CB = "https://client.example.com/cb"
FORM = {"Content-Type": "application/x-www-form-urlencoded"}


def fresh_state():
    return secrets.token_urlsafe(8)


def no_session_browser(server):
    return Browser(server, "alice")


# ============================================================================================ A. PKCE

def test_T01_public_client_without_pkce_is_refused(srv):
    browser = no_session_browser(srv)  # not signed in: the error must come before any login page
    native = srv.clients["native"]
    response = browser.authorize(auth_params(native, NATIVE_REDIRECT, scope="read", state="s1"))
    where = assert_redirect_err(response, NATIVE_REDIRECT, "invalid_request", "s1", srv.issuer)
    assert "code_challenge" in where.get("error_description", [""])[0]


def test_T01b_require_pkce_refuses_confidential_client_without_challenge(strict, srv):
    web = strict.clients["web"]
    response = no_session_browser(strict).authorize(auth_params(web, WEB_CB, scope="read", state="s1"))
    assert_redirect_err(response, WEB_CB, "invalid_request", "s1", strict.issuer)
    # Control: without --require-pkce a web client may omit PKCE (it must then send state): login page.
    response = no_session_browser(srv).authorize(auth_params(srv.clients["web"], WEB_CB, scope="read", state="s1"))
    assert response.status_code == 303 and response.headers["Location"].startswith("/login")


def test_T02_plain_and_missing_method_are_refused(srv, alice):
    native = srv.clients["native"]
    verifier, challenge = pkce()
    plain = auth_params(native, NATIVE_REDIRECT, state="s2", challenge=verifier[:43], method="plain")
    assert_redirect_err(alice.authorize(plain), NATIVE_REDIRECT, "invalid_request", "s2", srv.issuer)
    no_method = auth_params(native, NATIVE_REDIRECT, state="s2", challenge=challenge, method=None)
    assert_redirect_err(alice.authorize(no_method), NATIVE_REDIRECT, "invalid_request", "s2", srv.issuer)
    metadata = srv.get("/.well-known/oauth-authorization-server").json()
    assert metadata["code_challenge_methods_supported"] == ["S256"]


@pytest.mark.parametrize("case,challenge,method", [
    ("method_without_challenge", None, "S256"),
    ("42_chars", "A" * 42, "S256"),
    ("129_chars", "A" * 129, "S256"),
    ("equals", "A" * 42 + "=", "S256"),
    ("plus", "A" * 42 + "+", "S256"),
    ("slash", "A" * 42 + "/", "S256"),
    ("space", "A" * 21 + " " + "A" * 21, "S256"),
    ("nul", "A" * 42 + "\x00", "S256"),
    ("empty_counts_as_omitted", "", "S256"),
])
def test_T03_malformed_or_missing_challenge(srv, alice, case, challenge, method):
    native = srv.clients["native"]
    params = [("response_type", "code"), ("client_id", native["id"]), ("redirect_uri", NATIVE_REDIRECT),
              ("scope", "read"), ("state", "s3")]
    if challenge is not None:
        params.append(("code_challenge", challenge))
    # `code_challenge=` with no method is PKCE omitted (6749 §3.1), so T01's rule applies.
    if method and case != "empty_counts_as_omitted":
        params.append(("code_challenge_method", method))
    assert_redirect_err(alice.authorize(params), NATIVE_REDIRECT, "invalid_request", "s3", srv.issuer)


def test_T04_missing_code_verifier(srv, alice):
    grant = get_code(alice, srv.clients["native"], redirect_uri=NATIVE_REDIRECT)
    assert_token_err(exchange(srv, grant, verifier=None), 400, "invalid_grant")
    # Nothing was issued and the code was not burned (decision 1): the rightful request still works.
    assert exchange(srv, grant).status_code == 200


def test_T05_wrong_verifier_does_not_consume_the_code(srv, alice):
    grant = get_code(alice, srv.clients["native"], redirect_uri=NATIVE_REDIRECT)
    wrong, _ = pkce()
    assert_token_err(exchange(srv, grant, verifier=wrong[:43]), 400, "invalid_grant")
    response = exchange(srv, grant)
    assert response.status_code == 200, response.text
    assert_alive(srv, response.json()["access_token"])


def _code_with_verifier(srv, browser, verifier):
    """A code whose challenge is S256(verifier), whatever the verifier looks like."""
    native = srv.clients["native"]
    state = fresh_state()
    params = auth_params(native, NATIVE_REDIRECT, scope="read", state=state, challenge=s256(verifier))
    response = browser.follow(browser.authorize(params))
    _, query, _ = split_location(response.headers["Location"])
    grant = Grant(native, query["code"][0], verifier, NATIVE_REDIRECT, state, response.headers["Location"])
    return grant


@pytest.mark.parametrize("verifier", [
    "A" * 40 + "-._", "~" + "a" * 126 + "Z",
], ids=["43_chars", "128_chars"])
def test_T06_verifier_length_limits_accepted(srv, alice, verifier):
    grant = _code_with_verifier(srv, alice, verifier)
    response = exchange(srv, grant)
    assert response.status_code == 200, response.text


@pytest.mark.parametrize("verifier", [
    "A" * 42, "A" * 129, "A" * 42 + "$", "A" * 21 + " " + "A" * 21, "A" * 42 + "+", "A" * 42 + "é",
    "A" * 42 + "\x00",
], ids=["42_chars", "129_chars", "dollar", "space", "plus", "non_ascii", "nul"])
def test_T06_verifier_length_and_charset_refused(srv, alice, verifier):
    grant = _code_with_verifier(srv, alice, verifier)
    assert_token_err(exchange(srv, grant), 400, "invalid_grant")


def test_T06_verifier_given_twice(srv, alice):
    grant = get_code(alice, srv.clients["native"], redirect_uri=NATIVE_REDIRECT)
    response = exchange(srv, grant, extra=[("code_verifier", grant.verifier)])
    assert_token_err(response, 400, "invalid_request")  # a repeat is invalid_request (T06, T31)
    assert exchange(srv, grant).status_code == 200  # nothing consumed by the refused request


# Timing tests (T07, T41). A modest sample of two kinds of wrong candidate is sent interleaved in random
# order, so drift on the machine affects both kinds alike; the slowest 10 % of each is dropped (scheduler
# hiccups), and Welch's t is computed by hand. A leaking comparison of 256-bit values would differ by a few
# nanoseconds per byte, which HTTP round trips of a few milliseconds on a shared 2-core CI box cannot
# resolve anyway, so the assertion is deliberately loose (|t| < 4.5, far beyond α = 0.01's 2.6): it catches
# a gross leak (say, an early return before a slow step) and cannot flake on noise.
T_LIMIT = 4.5


def _timed(send, kinds):
    samples = {kind: [] for kind in kinds}
    order = [kind for kind in kinds for _ in range(kinds[kind][0])]
    random.shuffle(order)
    counters = {kind: 0 for kind in kinds}
    for kind in order:
        candidates = kinds[kind][1]
        candidate = candidates[counters[kind] % len(candidates)]
        counters[kind] += 1
        start = time.perf_counter()
        response = send(candidate)
        samples[kind].append(time.perf_counter() - start)
        yield kind, response
    _timed.samples = samples


def test_T07_verifier_comparison_timing_does_not_depend_on_prefix(srv, alice):
    grant = get_code(alice, srv.clients["native"], redirect_uri=NATIVE_REDIRECT, scope="read")
    target = s256(grant.verifier)
    # Wrong verifiers whose S256 value shares the first two characters of the challenge, and fully wrong ones.
    prefix = []
    while len(prefix) < 16:
        candidate = secrets.token_urlsafe(32)[:43]
        if s256(candidate)[:2] == target[:2] and candidate != grant.verifier:
            prefix.append(candidate)
    wrong = [secrets.token_urlsafe(32)[:43] for _ in range(16)]
    session = requests.Session()
    native = srv.clients["native"]

    def send(verifier):
        return session.post(srv.url("/oauth2/token"), data={
            "grant_type": "authorization_code", "code": grant.code, "client_id": native["id"],
            "redirect_uri": NATIVE_REDIRECT, "code_verifier": verifier}, timeout=20)

    for _, response in _timed(send, {"prefix": (300, prefix), "wrong": (300, wrong)}):
        assert response.status_code == 400 and response.json()["error"] == "invalid_grant"
    samples = _timed.samples
    t = welch_t(trimmed(samples["prefix"]), trimmed(samples["wrong"]))
    print(f"Welch t = {t:.2f}")
    assert abs(t) < T_LIMIT, f"Welch t = {t:.2f}"
    # 600 failed checks later the code is still the rightful app's (decision 1), and nothing was issued.
    assert exchange(srv, grant).status_code == 200


def test_T08_verifier_for_code_issued_without_challenge(srv, alice):
    legacy = srv.clients["legacy"]
    grant = get_code(alice, legacy, scope="read", pkce_on=False)
    verifier, _ = pkce()
    assert_token_err(exchange(srv, grant, verifier=verifier[:43]), 400, "invalid_grant")
    assert exchange(srv, grant).status_code == 200  # the refused request issued nothing and burned nothing


# ============================================================================================ B. codes

def test_T09_code_replay_revokes_issued_tokens(srv, alice):
    # The catalogue's second replay after 30 s is left out to keep the suite short; the record outlives the
    # code's 60 s lifetime (README: codes are purged ten minutes after expiry).
    grant = sign_in_and_redeem(srv, alice, srv.clients["native"], redirect_uri=NATIVE_REDIRECT)
    assert_alive(srv, grant.at)
    time.sleep(1)
    assert_token_err(exchange(srv, grant), 400, "invalid_grant")
    assert_dead(srv, grant.at)
    assert_rt_dead(srv, grant.client, grant.rt)
    # A later replay is still recognised and still refused.
    assert_token_err(exchange(srv, grant), 400, "invalid_grant")


def _concurrent_redemption_round(srv, browser, client, count):
    grant = get_code(browser, client, redirect_uri=NATIVE_REDIRECT, scope="read profile")
    data = {"grant_type": "authorization_code", "code": grant.code, "client_id": client["id"],
            "redirect_uri": NATIVE_REDIRECT, "code_verifier": grant.verifier}
    return barrier_run(count, lambda i: requests.post(srv.url("/oauth2/token"), data=data, timeout=30))


def test_T10_concurrent_double_redemption_exactly_one_wins(srv, alice):
    native = srv.clients["native"]
    started = time.time()
    rounds = 0
    while rounds < 20 and (rounds < 5 or time.time() - started < 25):
        results = _concurrent_redemption_round(srv, alice, native, 20)
        rounds += 1
        for r in results:
            assert isinstance(r, requests.Response), f"transport error: {r!r}"
            assert r.status_code < 500 and r.status_code != 409, r.text
        winners = [r for r in results if r.status_code == 200]
        assert len(winners) == 1, [(r.status_code, r.text[:80]) for r in results]
        for r in results:
            if r.status_code != 200:
                assert_token_err(r, 400, "invalid_grant")
        # The losers were otherwise valid replays, so what the winner got is revoked (as T09).
        assert_dead(srv, winners[0].json()["access_token"])
        assert_inactive(srv, winners[0].json()["refresh_token"])


def test_T11_replay_by_other_client_or_wrong_verifier_revokes_nothing(srv, alice):
    native, native2 = srv.clients["native"], srv.clients["native2"]
    grant = sign_in_and_redeem(srv, alice, native, redirect_uri=NATIVE_REDIRECT)
    # (a) another public client presents the used code with the right verifier
    assert_token_err(exchange(srv, grant, client=native2), 400, "invalid_grant")
    # (b) the same client with a wrong verifier
    assert_token_err(exchange(srv, grant, verifier=pkce()[0]), 400, "invalid_grant")
    # (b') the same client with another redirect URI
    assert_token_err(exchange(srv, grant, redirect_uri="http://127.0.0.1/callback"), 400, "invalid_grant")
    assert_alive(srv, grant.at)
    assert_rt_alive(srv, grant.client, grant.rt)
    # (c) web2, authenticated, presents web's used code
    web_grant = sign_in_and_redeem(srv, alice, srv.clients["web"], redirect_uri=WEB_CB)
    assert_token_err(exchange(srv, web_grant, client=srv.clients["web2"]), 400, "invalid_grant")
    assert_alive(srv, web_grant.at)
    assert_rt_alive(srv, web_grant.client, web_grant.rt)


def test_T12_code_expiry(short):
    browser = Browser(short, "alice")
    native = short.clients["native"]
    # Positive control: redeemed at once, well inside the 2 s lifetime.
    assert redeem(short, get_code(browser, native, redirect_uri=NATIVE_REDIRECT)).tokens["access_token"]
    grant = get_code(browser, native, redirect_uri=NATIVE_REDIRECT)
    time.sleep(3.2)
    assert_token_err(exchange(short, grant), 400, "invalid_grant")
    assert_token_err(exchange(short, grant), 400, "invalid_grant")


def test_T13_code_bound_to_client(srv, alice):
    web, web2 = srv.clients["web"], srv.clients["web2"]
    native, native2 = srv.clients["native"], srv.clients["native2"]
    web_grant = get_code(alice, web, redirect_uri=WEB_CB)
    # (a) redeemed by web2 with valid credentials
    assert_token_err(exchange(srv, web_grant, client=web2), 400, "invalid_grant")
    # (c) Basic as web, body client_id=web2
    response = exchange(srv, web_grant, extra=[("client_id", web2["id"])])
    assert_token_err(response, 400, "invalid_request")  # T13 (c)
    # (b) native's code with client_id=native2 and the right verifier
    native_grant = get_code(alice, native, redirect_uri=NATIVE_REDIRECT)
    assert_token_err(exchange(srv, native_grant, client=native2), 400, "invalid_grant")
    # Nothing was issued or consumed: the rightful clients still redeem.
    assert exchange(srv, web_grant).status_code == 200
    assert exchange(srv, native_grant).status_code == 200


def test_T14_redirect_uri_at_token_endpoint_must_match(srv, alice):
    web, web2 = srv.clients["web"], srv.clients["web2"]
    grant = get_code(alice, web, redirect_uri=WEB_CB)
    assert_token_err(exchange(srv, grant, redirect_uri=None), 400, "invalid_grant")                 # (a)
    assert_token_err(exchange(srv, grant, redirect_uri=WEB_CB + "?tenant=1"), 400, "invalid_grant")  # (b)
    assert_token_err(exchange(srv, grant, redirect_uri=WEB_CB + "/"), 400, "invalid_grant")         # (c)
    assert exchange(srv, grant).status_code == 200
    # (d) /authorize omitted it (one registered): the registered value is accepted, another is not.
    single = web2["redirects"][0]
    grant = get_code(alice, web2, scope="read", redirect_uri=single, omit_redirect=True)
    assert_token_err(exchange(srv, grant, redirect_uri="https://client2.example.com/other"), 400, "invalid_grant")
    assert exchange(srv, grant, redirect_uri=single).status_code == 200
    grant = get_code(alice, web2, scope="read", redirect_uri=single, omit_redirect=True)
    assert exchange(srv, grant, redirect_uri=None).status_code == 200


def test_T15_code_guessing_and_malformed_codes(srv, alice):
    native = srv.clients["native"]
    session = requests.Session()

    def send(code_pairs):
        data = [("grant_type", "authorization_code"), ("client_id", native["id"]),
                ("redirect_uri", NATIVE_REDIRECT), ("code_verifier", "A" * 43)] + code_pairs
        return session.post(srv.url("/oauth2/token"), data=data, timeout=20)

    for _ in range(300):
        guess = "lk_ac_" + base64.urlsafe_b64encode(secrets.token_bytes(32)).rstrip(b"=").decode()
        assert_token_err(send([("code", guess)]), 400, "invalid_grant")
    assert_token_err(send([("code", "")]), 400, "invalid_request")
    for odd in ["lk_ac_\x00x", "lk_ac_'x", "lk_ac_../x", "..", "'"]:
        assert_token_err(send([("code", odd)]), 400, "invalid_grant")
    huge = send([("code", "lk_ac_" + "A" * 64 * 1024)])
    assert huge.status_code in (400, 413) and huge.json()["error"] in ("invalid_request", "invalid_grant")
    assert_token_err(send([("code", "a"), ("code", "b")]), 400, "invalid_request")
    # Unknown and used codes look the same.
    used = sign_in_and_redeem(srv, alice, native, redirect_uri=NATIVE_REDIRECT)
    other = exchange(srv, used, client=srv.clients["native2"])  # a replay that revokes nothing (T11)
    unknown = send([("code", "lk_ac_" + "B" * 43)])
    assert other.json() == unknown.json() and other.status_code == unknown.status_code
    # Entropy: 40 issued codes, all distinct, 256-bit random parts, near-uniform base64url characters.
    codes = [get_code(alice, native, redirect_uri=NATIVE_REDIRECT, scope="read").code for _ in range(40)]
    assert len(set(codes)) == len(codes)
    bodies = [c[len("lk_ac_"):] for c in codes]
    assert all(c.startswith("lk_ac_") for c in codes)
    assert all(len(b) >= 43 and re.fullmatch(r"[A-Za-z0-9_-]+", b) for b in bodies)
    counts = collections.Counter("".join(bodies))
    total = sum(counts.values())
    per_char = -sum(n / total * math.log2(n / total) for n in counts.values())
    assert per_char * min(map(len, bodies)) >= 128, f"{per_char:.2f} bits per character"


# ============================================================================================ C. redirects

def _assert_refused_redirects(srv, browser, client, uris, state="sC"):
    for uri in uris:
        verifier, challenge = pkce()
        params = auth_params(client, redirect_uri=uri, scope="read", state=state, challenge=challenge)
        response = browser.authorize(params)
        assert_no_redirect(response, uri)


def test_T16_unregistered_redirect_uri(srv, alice):
    _assert_refused_redirects(srv, alice, srv.clients["web"], ["https://attacker.example/cb"])


def test_T17_path_variations(srv, alice):
    _assert_refused_redirects(srv, alice, srv.clients["web"], [
        WEB_CB + "/evil", WEB_CB + "123", "https://client.example.com/Cb", WEB_CB + "/../evil",
        WEB_CB + "/%2E%2E/evil", WEB_CB + "%2F..%2Fevil", WEB_CB + "/%252E%252E/", WEB_CB + ";x",
        "//client.example.com/cb"])


def test_T18_query_and_fragment_variations(srv, alice):
    _assert_refused_redirects(srv, alice, srv.clients["web"], [
        WEB_CB + "?x=1", WEB_CB + "?tenant=2", WEB_CB + "?tenant=1&x=1", WEB_CB + "?x=1&tenant=1",
        WEB_CB + "?tenant", WEB_CB + "#x", WEB_CB + "#"])


def test_T19_authority_tricks(srv, alice):
    _assert_refused_redirects(srv, alice, srv.clients["web"], [
        "https://client.example.com@attacker.example/cb", "https://attacker.example#@client.example.com/cb",
        "https://attacker.example\\@client.example.com/cb", "https://client.example.com.attacker.example/cb",
        "https://client.example.com%2F@attacker.example/cb", "https://client.example.com%00.attacker.example/cb",
        "https://client.example.com\x00.attacker.example/cb",
        "https://\u0441lient.example.com/cb", "https://xn--lient-3ve.example.com/cb",
        "https://user:pass@client.example.com/cb"])


def test_T20_case_normalisation_scheme_and_port(srv, alice):
    _assert_refused_redirects(srv, alice, srv.clients["web"], [
        "HTTPS://client.example.com/cb", "https://CLIENT.example.com/cb", "https://client.example.com:443/cb",
        WEB_CB + "/", "https://client.example.com./cb", "https://client.example.com/%63b",
        "http://client.example.com/cb", "https://client.example.com:8443/cb"])


def test_T20_registration_refuses_plain_http_off_loopback(srv):
    for type_ in ("web", "native", "browser"):
        result = srv.cli("clients", "create", "--type", type_, "--name", "bad", "--redirect-uri",
                         "http://client.example.com/cb", check=False)
        assert result.returncode != 0, result.stdout


@pytest.mark.parametrize("uri", ["http://127.0.0.1:51734/callback", "http://[::1]:51734/callback",
                                 "http://127.0.0.1/callback"])
def test_T21_loopback_any_port_accepted(srv, alice, uri):
    native = srv.clients["native"]
    # A fresh browser sees the login page: the request was accepted.
    response = no_session_browser(srv).authorize(auth_params(native, uri, scope="read", state="s", challenge=pkce()[1]))
    assert response.status_code == 303 and response.headers["Location"].startswith("/login")
    grant = get_code(alice, native, redirect_uri=uri, scope="read")
    assert grant.location.startswith(uri + "?code=")
    assert exchange(srv, grant).status_code == 200


def test_T22_loopback_everything_but_port_must_match(srv, alice):
    _assert_refused_redirects(srv, alice, srv.clients["native"], [
        "http://127.0.0.1:51734/callback/x", "http://127.0.0.1:51734/Callback", "http://127.000.000.001:51734/callback",
        "http://127.0.0.1:51734/x/../callback", "HTTP://127.0.0.1:51734/callback", "https://127.0.0.1:51734/callback",
        "http://localhost:51734/callback", "http://127.0.0.2/callback", "http://127.0.0.1.attacker.example/callback",
        "http://[::ffff:127.0.0.1]:51734/callback", "http://127.0.0.1:0/callback", "http://127.0.0.1:99999/callback"])
    # The token request must repeat the port used at /authorize (T14).
    grant = get_code(alice, srv.clients["native"], redirect_uri="http://127.0.0.1:51734/callback", scope="read")
    assert_token_err(exchange(srv, grant, redirect_uri="http://127.0.0.1:51735/callback"), 400, "invalid_grant")
    assert exchange(srv, grant).status_code == 200


def test_T23_private_use_scheme_lookalikes_and_dangerous_schemes(srv, alice):
    _assert_refused_redirects(srv, alice, srv.clients["native"], [
        "com.example.app.evil:/oauth2redirect", "com.example.ap:/oauth2redirect", "COM.EXAMPLE.APP:/oauth2redirect",
        "com.example.app://oauth2redirect", "com.example.app:/oauth2redirect/../x", "com.evil.app:/oauth2redirect",
        "javascript:alert(1)//", "data:text/html,<script>alert(1)</script>", "file:///etc/passwd", "/foo/../bar"])


def test_T23_registration_refuses_dangerous_schemes(srv):
    for uri in ["javascript:alert(1)", "data:text/html,x", "file:///etc/passwd", "vbscript:msgbox", "myapp:/cb"]:
        result = srv.cli("clients", "create", "--type", "native", "--name", "bad", "--redirect-uri", uri, check=False)
        assert result.returncode != 0, f"{uri} was registered: {result.stdout}"


def test_T24_redirect_uri_required_when_several_registered(srv, alice):
    multi = srv.clients["multi"]
    response = alice.authorize(auth_params(multi, scope="read", state="s", challenge=pkce()[1], omit_redirect=True))
    assert_no_redirect(response)
    assert "invalid_request" in response.text
    # Positive: a client with exactly one registered URI may omit it.
    grant = get_code(alice, srv.clients["native2"], scope="read", redirect_uri="com.example.other:/cb",
                     omit_redirect=True)
    assert exchange(srv, grant, redirect_uri=None).status_code == 200


def test_T25_no_error_to_unvalidated_redirect_and_client_checked_first(srv, alice):
    web = srv.clients["web"]
    attacker = "https://attacker.example/cb"
    cases = [
        [("response_type", "code"), ("client_id", "nope"), ("redirect_uri", WEB_CB), ("scope", "read"), ("state", "s")],
        [("response_type", "code"), ("redirect_uri", WEB_CB), ("scope", "read"), ("state", "s")],
        auth_params(web, attacker, scope="read", state="s", response_type="bogus"),
        auth_params(web, attacker, scope="admin", state="s", challenge=pkce()[1]),
        auth_params(web, attacker, scope="read", state="s", challenge=pkce()[1], extra=[("prompt", "none")]),
        auth_params(web, attacker, scope="read", state="s", challenge="A" * 43, method="plain"),
    ]
    for params in cases:
        assert_no_redirect(alice.authorize(params), attacker)
        assert_no_redirect(no_session_browser(srv).authorize(params), attacker)


# ============================================================================================ D. responses

def test_T26_errors_with_valid_redirect_are_delivered(srv, alice):
    native = srv.clients["native"]
    challenge = pkce()[1]
    response = alice.authorize(auth_params(native, NATIVE_REDIRECT, state="s", challenge=challenge, response_type="token"))
    assert_redirect_err(response, NATIVE_REDIRECT, "unauthorized_client", "s", srv.issuer, fragment=True)
    response = alice.authorize(auth_params(native, NATIVE_REDIRECT, state="s", challenge=challenge, response_type="bogus"))
    assert_redirect_err(response, NATIVE_REDIRECT, "unsupported_response_type", "s", srv.issuer)
    params = [p for p in auth_params(native, NATIVE_REDIRECT, state="s", challenge=challenge) if p[0] != "response_type"]
    response = alice.authorize(params)
    assert response.status_code == 303
    error = split_location(response.headers["Location"])[1].get("error")
    assert error in (["invalid_request"], ["unsupported_response_type"])
    assert_redirect_err(response, NATIVE_REDIRECT, error[0], "s", srv.issuer)
    # (c) the user denies on the consent page
    fresh = srv.add_client(None, "native", [NATIVE_REDIRECT], ["read", "profile"], name="Deny Me")
    page = alice.consent_page_for(auth_params(fresh, NATIVE_REDIRECT, scope="read", state="sd", challenge=challenge))
    response = alice.submit_consent(page, decision="deny")
    assert response.status_code == 303
    assert_redirect_err(response, NATIVE_REDIRECT, "access_denied", "sd", srv.issuer)


def test_T27_state_is_echoed_exactly(srv, alice):
    native = srv.clients["native"]
    long_state = "".join(random.choice(string.ascii_letters + string.digits + "-._~") for _ in range(1000))
    for state in [long_state, "a b&c=d+é"]:
        grant = get_code(alice, native, redirect_uri=NATIVE_REDIRECT, scope="read", state=state)
        assert split_location(grant.location)[1]["state"] == [state]
        error = alice.authorize(auth_params(native, NATIVE_REDIRECT, scope="admin", state=state, challenge=pkce()[1]))
        assert_redirect_err(error, NATIVE_REDIRECT, "invalid_scope", state, srv.issuer)
    for params_state in [None, ""]:
        verifier, challenge = pkce()
        params = auth_params(native, NATIVE_REDIRECT, scope="read", challenge=challenge)
        if params_state is not None:
            params.append(("state", params_state))
        response = alice.follow(alice.authorize(params))
        _, query, _ = split_location(response.headers["Location"])
        assert "code" in query and "state" not in query, response.headers["Location"]
        error = alice.authorize([p for p in params if p[0] != "scope"] + [("scope", "admin")])
        assert_redirect_err(error, NATIVE_REDIRECT, "invalid_scope", None, srv.issuer)


def test_T28_iss_in_every_authorization_response(srv, alice, https_srv):
    metadata = srv.get("/.well-known/oauth-authorization-server").json()
    assert metadata["authorization_response_iss_parameter_supported"] is True
    assert metadata["issuer"] == srv.issuer
    grant = get_code(alice, srv.clients["native"], redirect_uri=NATIVE_REDIRECT, scope="read")
    assert split_location(grant.location)[1]["iss"] == [srv.issuer]
    error = alice.authorize(auth_params(srv.clients["native"], NATIVE_REDIRECT, scope="read", state="s"))
    assert_redirect_err(error, NATIVE_REDIRECT, "invalid_request", "s", srv.issuer)
    spa = srv.clients["spa"]
    response = alice.follow(alice.authorize(auth_params(spa, scope="read", state="si", response_type="token")))
    assert split_location(response.headers["Location"])[2]["iss"] == [srv.issuer]
    # With an https issuer the value is that issuer, identical to the metadata.
    https_meta = https_srv.get("/.well-known/oauth-authorization-server").json()
    assert https_meta["issuer"] == "https://as.test"
    error = Browser(https_srv).authorize(auth_params(https_srv.clients["native"], NATIVE_REDIRECT, scope="read", state="s"))
    assert_redirect_err(error, NATIVE_REDIRECT, "invalid_request", "s", "https://as.test")


# ============================================================================================ E. input

def test_T30_duplicate_parameters_at_authorize(srv, alice):
    native = srv.clients["native"]
    verifier, challenge = pkce()
    base = auth_params(native, NATIVE_REDIRECT, scope="read", state="s", challenge=challenge)
    for name, value in [("response_type", "code"), ("scope", "read"), ("code_challenge", challenge),
                        ("code_challenge_method", "S256")]:
        response = alice.authorize(base + [(name, value)])
        assert_redirect_err(response, NATIVE_REDIRECT, "invalid_request", "s", srv.issuer)
    response = alice.authorize(base + [("state", "t")])
    assert_redirect_err(response, NATIVE_REDIRECT, "invalid_request", None, srv.issuer)
    for name, value in [("redirect_uri", NATIVE_REDIRECT), ("client_id", native["id"])]:
        assert_no_redirect(alice.authorize(base + [(name, value)]))


def test_T31_duplicate_parameters_at_token_revoke_introspect(srv, alice):
    native = srv.clients["native"]
    grant = get_code(alice, native, redirect_uri=NATIVE_REDIRECT)
    for extra in [[("code", "lk_ac_other")], [("grant_type", "authorization_code")],
                  [("code_verifier", grant.verifier)], [("client_id", native["id"])], [("redirect_uri", NATIVE_REDIRECT)]]:
        assert_token_err(exchange(srv, grant, extra=extra), 400, "invalid_request")
    assert exchange(srv, grant).status_code == 200  # none of them consumed the code
    issued = sign_in_and_redeem(srv, alice, native, redirect_uri=NATIVE_REDIRECT)
    response = refresh(srv, native, issued.rt, extra=[("refresh_token", issued.rt)])
    assert_token_err(response, 400, "invalid_request")
    rs = srv.clients["rs"]
    response = srv.post("/oauth2/revoke", data=[("token", issued.at), ("token", "x"), ("client_id", native["id"])])
    assert_token_err(response, 400, "invalid_request")
    response = srv.post("/oauth2/introspect", data=[("token", issued.at), ("token", "x")], auth=(rs["id"], rs["secret"]))
    assert_token_err(response, 400, "invalid_request")
    assert_alive(srv, issued.at)


def test_T32_empty_and_unknown_parameters(srv, alice):
    native, native2 = srv.clients["native"], srv.clients["native2"]
    # scope= is omitted, and this server requires a scope: invalid_scope (T49's policy).
    response = alice.authorize(auth_params(native, NATIVE_REDIRECT, scope="", state="s", challenge=pkce()[1]))
    assert_redirect_err(response, NATIVE_REDIRECT, "invalid_scope", "s", srv.issuer)
    # code_challenge= is omitted: PKCE missing (T03e).
    response = alice.authorize(auth_params(native, NATIVE_REDIRECT, scope="read", state="s", challenge="", method=None))
    assert_redirect_err(response, NATIVE_REDIRECT, "invalid_request", "s", srv.issuer)
    # redirect_uri= is omitted: allowed for a client with one registered; unknown parameters are ignored.
    grant = get_code(alice, native2, scope="read", redirect_uri="com.example.other:/cb", omit_redirect=True,
                     extra=[("redirect_uri", ""), ("extra", "foobar"), ("foo[]", "x")])
    response = exchange(srv, grant, redirect_uri=None, extra=[("extra", "foobar"), ("foo[]", "x")])
    assert response.status_code == 200, response.text


BAD_CONTENT_TYPES = ["text/plain", "invalid/@@##", "</><script>", "", "multipart/form-data; boundary=x",
                     "application/json"]


def test_T33_token_endpoint_method_content_type_and_body(srv, alice):
    native = srv.clients["native"]
    grant = get_code(alice, native, redirect_uri=NATIVE_REDIRECT)
    fields = {"grant_type": "authorization_code", "code": grant.code, "client_id": native["id"],
              "redirect_uri": NATIVE_REDIRECT, "code_verifier": grant.verifier}
    response = srv.get("/oauth2/token", params=fields)
    assert response.status_code in (400, 405) and "access_token" not in response.text
    response = srv.post("/oauth2/token", json=fields)
    assert_token_err(response, 400, "invalid_request")
    form = requests.models.RequestEncodingMixin._encode_params(fields)
    # The same for every endpoint a client authenticates at, pushed requests and device requests included.
    client_endpoints = ("/oauth2/token", "/oauth2/revoke", "/oauth2/introspect", "/oauth2/par",
                        "/oauth2/device_authorization")
    for path in client_endpoints:
        for content_type in BAD_CONTENT_TYPES:
            response = srv.post(path, data=form, headers={"Content-Type": content_type})
            assert_token_err(response, 400, "invalid_request")
        latin1 = ("grant_type=authorization_code&code=" + grant.code + "&client_id=" + native["id"] +
                  "&x=\xe9").encode("latin-1")
        response = srv.post(path, data=latin1,
                            headers={"Content-Type": "application/x-www-form-urlencoded; charset=iso-8859-1"})
        assert_token_err(response, 400, "invalid_request")
        response = srv.post(path, data=latin1, headers=FORM)  # raw 0xE9 is not UTF-8 either
        assert_token_err(response, 400, "invalid_request")
    web = srv.clients["web"]
    for path in client_endpoints:
        response = srv.post(path + "?client_secret=" + web["secret"] + "&client_id=" + web["id"],
                            data={"grant_type": "client_credentials", "token": "x"})
        assert_token_err_one_of(response, [(400, "invalid_request"), (401, "invalid_client")])
    assert exchange(srv, grant).status_code == 200  # nothing above consumed the code


def test_T34_malformed_form_bodies(srv, alice):
    native = srv.clients["native"]
    head = f"grant_type=authorization_code&client_id={native['id']}&redirect_uri=x&code_verifier={'A' * 43}"
    bodies = [head + "&code=%ZZ", head + "&code=%", "&&&=&=x", head + "&code[]=a&code[]=b", head + "&code[x]=y",
              head + "&code=a&code=b", "\ufeff" + head + "&code=abc", head + "&" + "x" * (1024 * 1024),
              head + "&code=%FF", head + "&code=%C3"]
    for body in bodies:
        response = srv.post("/oauth2/token", data=body.encode("utf-8"), headers=FORM)
        assert response.status_code in (400, 413), f"{body[:60]!r}: {response.status_code}"
        assert_token_err(response, response.status_code, "invalid_request")
    # A body shorter than its Content-Length: the server stays responsive meanwhile, and within its
    # idle timeout (conftest gives `srv` 5 s) it refuses the request or closes the connection:
    # a server that never answers fails here (RV4).
    with socket.create_connection(("127.0.0.1", srv.port), timeout=10) as slow:
        slow.sendall(b"POST /oauth2/token HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\n"
                     b"Content-Length: 1000\r\n\r\ngrant_type=auth")
        started = time.perf_counter()
        assert srv.get("/healthz").status_code == 200
        assert time.perf_counter() - started < 2
        slow.settimeout(SRV_IDLE_TIMEOUT + 3)
        try:
            answer = slow.recv(200)
        except ConnectionResetError:
            answer = b""
        assert answer == b"" or answer.startswith(b"HTTP/1.1 4"), answer
        assert time.perf_counter() - started < SRV_IDLE_TIMEOUT + 3


def _cyrillic_lookalike(client_id):
    homoglyphs = {"a": "\u0430", "e": "\u0435", "o": "\u043e", "p": "\u0440", "c": "\u0441", "x": "\u0445",
                  "A": "\u0410", "E": "\u0415", "O": "\u041e", "P": "\u0420", "C": "\u0421", "K": "\u041a"}
    for i, ch in enumerate(client_id):
        if ch in homoglyphs:
            return client_id[:i] + homoglyphs[ch] + client_id[i + 1:]
    return "\u0430" + client_id[1:]


def test_T35_nul_in_client_id_is_not_truncated(srv, alice):
    web, native = srv.clients["web"], srv.clients["native"]
    for client_id in [web["id"] + "\x00", web["id"] + "\x00.evil"]:
        params = [("response_type", "code"), ("client_id", client_id), ("redirect_uri", WEB_CB), ("scope", "read"),
                  ("state", "s"), ("code_challenge", pkce()[1]), ("code_challenge_method", "S256")]
        assert_no_redirect(alice.authorize(params))
    # At the token endpoint too: a public client's id with a NUL appended is not that client.
    native_grant = get_code(alice, native, redirect_uri=NATIVE_REDIRECT)
    response = exchange(srv, native_grant, client={"id": native["id"] + "\x00", "secret": None})
    assert_token_err(response, 401, "invalid_client")  # no such client: nothing was truncated


def test_T35_nul_in_username_is_not_truncated(srv):
    """`alice<NUL>x` is not alice: the sign-in fails like any unknown user."""
    browser = Browser(srv)
    response = browser.sign_in("alice\x00x", "correct-horse")
    assert response.status_code == 401 and "Location" not in response.headers
    assert not _signed_in(browser)


def test_T35_lookalike_client_and_nul_in_redirect_uri(srv, alice):
    web = srv.clients["web"]
    challenge = pkce()[1]
    params = [("response_type", "code"), ("client_id", _cyrillic_lookalike(web["id"])), ("redirect_uri", WEB_CB),
              ("scope", "read"), ("state", "s"), ("code_challenge", challenge), ("code_challenge_method", "S256")]
    assert_no_redirect(alice.authorize(params))
    bad = WEB_CB + "\x00.attacker.example"
    assert_no_redirect(alice.authorize(auth_params(web, bad, scope="read", state="s", challenge=challenge)), bad)


def test_T35_crlf_in_state_never_splits_headers(srv, alice):
    native = srv.clients["native"]
    state = "x\r\nSet-Cookie: a=b"
    response = alice.authorize(auth_params(native, NATIVE_REDIRECT, scope="admin", state=state, challenge=pkce()[1]))
    assert_redirect_err(response, NATIVE_REDIRECT, "invalid_scope", state, srv.issuer)
    assert "\r" not in response.headers["Location"] and "\n" not in response.headers["Location"]
    assert "a=b" not in response.headers.get("Set-Cookie", "")


def test_T35_scope_outside_the_grammar_and_nul_verifier(srv, alice):
    native = srv.clients["native"]
    challenge = pkce()[1]
    for scope in ["read\nwrite", "read  write", "r\u00e9ad", " read", "read\x00"]:
        response = alice.authorize(auth_params(native, NATIVE_REDIRECT, scope=scope, state="s", challenge=challenge))
        assert_redirect_err(response, NATIVE_REDIRECT, "invalid_scope", "s", srv.issuer)
    grant = _code_with_verifier(srv, alice, "A" * 42 + "\x00")
    assert_token_err(exchange(srv, grant), 400, "invalid_grant")


def test_T36_oversized_inputs(srv, alice):
    native = srv.clients["native"]
    # A 1 MB query string on /authorize.
    response = srv.raw_request("GET", "/oauth2/authorize?client_id=" + native["id"] + "&x=" + "a" * (1024 * 1024))
    assert response.status_code in (400, 413, 414, 431) and "Location" not in response.headers
    # A 10 MB body, a 64 KB body parameter.
    response = srv.post("/oauth2/token", data=b"grant_type=x&a=" + b"b" * (10 * 1024 * 1024), headers=FORM)
    assert_token_err(response, 413, "invalid_request")
    response = srv.post("/oauth2/token", data=b"grant_type=authorization_code&code=" + b"b" * (64 * 1024), headers=FORM)
    assert_token_err(response, 413, "invalid_request")
    # One parameter over 8 KiB in a body under 64 KiB.
    response = srv.post("/oauth2/token", data={"grant_type": "authorization_code", "client_id": native["id"],
                                               "code": "lk_ac_" + "b" * (9 * 1024)})
    assert_token_err(response, 400, "invalid_request")
    # 10,000 parameters.
    response = srv.post("/oauth2/token", data="&".join(f"p{i}=1" for i in range(10000)).encode(), headers=FORM)
    assert response.status_code in (400, 413) and response.json()["error"] == "invalid_request"
    # A 100 KB Authorization header.
    response = srv.get("/userinfo", headers={"Authorization": "Bearer " + "x" * (100 * 1024)})
    assert response.status_code in (400, 401, 413, 431)
    # A 10 KB state on /authorize: an error page, not a redirect (the limit is 8 KiB per parameter).
    response = alice.authorize(auth_params(native, NATIVE_REDIRECT, scope="read", state="s" * (10 * 1024),
                                           challenge=pkce()[1]))
    assert_no_redirect(response)
    assert "invalid_request" in response.text
    # Good requests still work.
    assert srv.get("/healthz").status_code == 200
    assert sign_in_and_redeem(srv, alice, native, redirect_uri=NATIVE_REDIRECT).at


# ============================================================================================ F. client auth

def _basic(user, password):
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def test_T37_wrong_secret_and_unknown_client(srv):
    web = srv.clients["web"]
    data = {"grant_type": "client_credentials"}
    wrong = srv.post("/oauth2/token", data=data, headers={"Authorization": _basic(web["id"], "wrong")})
    unknown = srv.post("/oauth2/token", data=data, headers={"Authorization": _basic("nope", "x")})
    body_wrong = assert_token_err(wrong, 401, "invalid_client", basic=True)
    body_unknown = assert_token_err(unknown, 401, "invalid_client", basic=True)
    assert body_wrong == body_unknown
    post = srv.post("/oauth2/token", data={**data, "client_id": web["id"], "client_secret": "wrong"})
    assert_token_err(post, 401, "invalid_client")
    post_unknown = srv.post("/oauth2/token", data={**data, "client_id": "nope", "client_secret": "wrong"})
    assert post.json() == post_unknown.json()


def test_T38_two_authentication_methods(srv, alice):
    web = srv.clients["web"]
    grant = get_code(alice, web, redirect_uri=WEB_CB)
    allowed = [(400, "invalid_request"), (401, "invalid_client")]
    for extra in [[("client_secret", web["secret"])], [("client_secret", "other")]]:
        assert_token_err_one_of(exchange(srv, grant, extra=extra), allowed)
    body = [("grant_type", "authorization_code"), ("code", grant.code), ("redirect_uri", WEB_CB),
            ("code_verifier", grant.verifier), ("client_secret", web["secret"])]
    assert_token_err_one_of(srv.post("/oauth2/token", data=body, auth=(web["id"], web["secret"])), allowed)
    assert exchange(srv, grant).status_code == 200  # nothing was consumed


def test_T38_basic_with_client_assertion_is_refused(srv, alice):
    """Basic plus client_assertion is two methods (RFC 6749 §2.3): refused before either is checked."""
    web = srv.clients["web"]
    grant = get_code(alice, web, redirect_uri=WEB_CB)
    extra = [("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"),
             ("client_assertion", "eyJhbGciOiJub25lIn0.e30.")]
    assert_token_err_one_of(exchange(srv, grant, extra=extra), [(400, "invalid_request"), (401, "invalid_client")])
    assert exchange(srv, grant).status_code == 200  # nothing was consumed


def test_T39_method_must_match_registration(srv, alice):
    native, web = srv.clients["native"], srv.clients["web"]
    grant = get_code(alice, native, redirect_uri=NATIVE_REDIRECT)
    # (a) a public client sending a secret, in the body or as Basic
    assert_token_err(exchange(srv, grant, extra=[("client_secret", "x")]), 401, "invalid_client")
    response = exchange(srv, grant, auth=(native["id"], "x"))
    assert_token_err(response, 401, "invalid_client", basic=True)  # T39: 401 for both
    # (b) a confidential client sending no secret
    web_grant = get_code(alice, web, redirect_uri=WEB_CB)
    response = exchange(srv, web_grant, auth=None, extra=[("client_id", web["id"])])
    assert_token_err(response, 401, "invalid_client")
    assert exchange(srv, grant).status_code == 200
    # (c) decision 6: client_secret_post is accepted for a confidential client.
    response = exchange(srv, web_grant, auth=None, extra=[("client_id", web["id"]), ("client_secret", web["secret"])])
    assert response.status_code == 200, response.text


def test_T40_malformed_basic_credentials_and_appendix_b(srv):
    svc = srv.clients["svc"]
    data = {"grant_type": "client_credentials"}
    for header in ["Basic", "Basic ", "Basic !!!notbase64", "Basic " + base64.b64encode(svc["id"].encode()).decode(),
                   _basic(svc["id"], "%ZZ"), "Basic " + base64.b64encode(b"\xff\xfe:\xff").decode(),
                   "Basic " + base64.b64encode(f"{svc['id']}:{svc['secret']}".encode()).decode() + "!!"]:
        response = srv.post("/oauth2/token", data=data, headers={"Authorization": header})
        assert_token_err_one_of(response, [(400, "invalid_request"), (401, "invalid_client")])
    # The scheme is case-insensitive.
    token = base64.b64encode(f"{svc['id']}:{svc['secret']}".encode()).decode()
    assert srv.post("/oauth2/token", data=data, headers={"Authorization": "basic " + token}).status_code == 200
    # Appendix B: id and secret form-urlencoded before base64; every character percent-encoded decodes the same.
    encoded_secret = "".join(f"%{b:02X}" for b in svc["secret"].encode())
    encoded_id = "".join(f"%{b:02X}" for b in svc["id"].encode())
    response = srv.post("/oauth2/token", data=data, headers={"Authorization": _basic(encoded_id, encoded_secret)})
    assert response.status_code == 200, response.text


def test_T41_client_secret_guessing_is_throttled(throttle):
    svc, svc2 = throttle.clients["svc"], throttle.clients["svc2"]
    data = {"grant_type": "client_credentials"}
    statuses = []
    for i in range(8):
        response = throttle.post("/oauth2/token", data=data, auth=(svc["id"], f"wrong-{i}"),
                                 headers={"X-Forwarded-For": f"10.0.0.{i}"})
        statuses.append(response.status_code)
    assert statuses[:5] == [401] * 5, statuses
    assert statuses[-1] == 429, statuses
    throttled = throttle.post("/oauth2/token", data=data, auth=(svc["id"], svc["secret"]))
    assert throttled.status_code == 429 and throttled.headers.get("Retry-After"), throttled.text
    assert throttled.json()["error"] == "temporarily_unavailable" and "access_token" not in throttled.json()
    for path in ("/oauth2/revoke", "/oauth2/introspect"):
        response = throttle.post(path, data={"token": "x"}, auth=(svc["id"], svc["secret"]))
        assert response.status_code == 429 and response.json()["error"] == "temporarily_unavailable"
    # Another client is unaffected.
    assert throttle.post("/oauth2/token", data=data, auth=(svc2["id"], svc2["secret"])).status_code == 200


def test_T41_client_secrets_are_stored_hashed(srv):
    import glob
    secret = srv.clients["web"]["secret"]
    for path in glob.glob(srv.data + "/**", recursive=True):
        if path.endswith(".log"):
            continue
        try:
            with open(path, "rb") as f:
                content = f.read()
        except (IsADirectoryError, PermissionError):
            continue
        assert secret.encode() not in content, f"the client secret is stored in clear in {path}"


def test_T41_secret_comparison_timing_does_not_depend_on_prefix(srv):
    svc = srv.add_client(None, "service", [], ["svc.read"], name="timing")
    real = svc["secret"]
    prefix = [real[:-3] + "".join(random.choice(string.ascii_letters) for _ in range(3)) for _ in range(16)]
    wrong = ["lk_cs_" + secrets.token_urlsafe(32) for _ in range(16)]
    session = requests.Session()

    def send(secret):
        return session.post(srv.url("/oauth2/token"), data={"grant_type": "client_credentials"},
                            auth=(svc["id"], secret), timeout=20)

    for _, response in _timed(send, {"prefix": (300, prefix), "wrong": (300, wrong)}):
        assert response.status_code == 401
    samples = _timed.samples
    t = welch_t(trimmed(samples["prefix"]), trimmed(samples["wrong"]))
    print(f"Welch t = {t:.2f}")
    assert abs(t) < T_LIMIT, f"Welch t = {t:.2f}"
    assert send(real).status_code == 200


# ============================================================================================ G. refresh

def test_T42_refresh_rotation(srv, alice, strict):
    native = srv.clients["native"]
    grant = sign_in_and_redeem(srv, alice, native, redirect_uri=NATIVE_REDIRECT)
    response = refresh(srv, native, grant.rt)
    assert response.status_code == 200, response.text
    second = response.json()
    assert second["refresh_token"] != grant.rt and second["access_token"] != grant.at
    assert_alive(srv, second["access_token"])
    assert_alive(srv, grant.at)  # policy: an access token lives until it expires or its grant is revoked
    # Strict rotation: the old refresh token cannot be used again at all.
    strict_native = strict.clients["native"]
    strict_grant = sign_in_and_redeem(strict, Browser(strict, "alice"), strict_native, redirect_uri=NATIVE_REDIRECT)
    assert refresh(strict, strict_native, strict_grant.rt).status_code == 200
    assert_token_err(refresh(strict, strict_native, strict_grant.rt), 400, "invalid_grant")


def test_T42_rotated_out_refresh_token_introspects_inactive(srv, alice, strict):
    """A refresh token that can no longer be redeemed (its presentation is reuse) is not active (RFC 7662 §2.2):
    on the strict server as soon as it is rotated, on the default one once its successor has been used."""
    strict_native = strict.clients["native"]
    grant = sign_in_and_redeem(strict, Browser(strict, "alice"), strict_native, redirect_uri=NATIVE_REDIRECT)
    assert refresh(strict, strict_native, grant.rt).status_code == 200
    assert_inactive(strict, grant.rt)
    native = srv.clients["native"]
    grant = sign_in_and_redeem(srv, alice, native, redirect_uri=NATIVE_REDIRECT)
    second = refresh(srv, native, grant.rt).json()
    assert refresh(srv, native, second["refresh_token"]).status_code == 200
    assert_inactive(srv, grant.rt)


def test_T43_reuse_detection_revokes_the_family(srv, alice):
    native = srv.clients["native"]
    grant = sign_in_and_redeem(srv, alice, native, redirect_uri=NATIVE_REDIRECT)
    second = refresh(srv, native, grant.rt).json()
    third = refresh(srv, native, second["refresh_token"]).json()  # the successor was used: no grace for RT1
    assert_token_err(refresh(srv, native, grant.rt), 400, "invalid_grant")
    for access in (grant.at, second["access_token"], third["access_token"]):
        assert_dead(srv, access)
    assert_rt_dead(srv, native, third["refresh_token"])
    assert_rt_dead(srv, native, second["refresh_token"])


def test_T43_strict_reuse_detection_revokes_the_family(strict):
    native = strict.clients["native"]
    grant = sign_in_and_redeem(strict, Browser(strict, "alice"), native, redirect_uri=NATIVE_REDIRECT)
    second = refresh(strict, native, grant.rt).json()
    assert_token_err(refresh(strict, native, grant.rt), 400, "invalid_grant")
    assert_rt_dead(strict, native, second["refresh_token"])
    assert_dead(strict, grant.at)
    assert_dead(strict, second["access_token"])


def test_T43_grace_retry_then_retired_successor_is_reuse(srv, alice):
    """Decision 3: a lost response may be retried once within the grace window while the successor is
    unused; that retired successor presented later is reuse and revokes everything."""
    native = srv.clients["native"]
    grant = sign_in_and_redeem(srv, alice, native, redirect_uri=NATIVE_REDIRECT)
    lost = refresh(srv, native, grant.rt).json()  # the response the phone never received
    retry = refresh(srv, native, grant.rt)
    assert retry.status_code == 200, retry.text
    retry = retry.json()
    assert retry["refresh_token"] != lost["refresh_token"]
    assert_rt_alive(srv, native, retry["refresh_token"])
    assert_token_err(refresh(srv, native, lost["refresh_token"]), 400, "invalid_grant")
    for access in (grant.at, lost["access_token"], retry["access_token"]):
        assert_dead(srv, access)
    assert_rt_dead(srv, native, retry["refresh_token"])


def _race_refresh(server, browser, count):
    native = server.clients["native"]
    grant = sign_in_and_redeem(server, browser, native, redirect_uri=NATIVE_REDIRECT, scope="read profile")
    data = {"grant_type": "refresh_token", "refresh_token": grant.rt, "client_id": native["id"]}
    results = barrier_run(count, lambda i: requests.post(server.url("/oauth2/token"), data=data, timeout=30))
    for r in results:
        assert isinstance(r, requests.Response), f"transport error: {r!r}"
        assert r.status_code < 500, r.text
        if r.status_code != 200:
            assert_token_err(r, 400, "invalid_grant")
    return grant, results


def test_T44_concurrent_refresh_strict_exactly_one_wins(strict):
    browser = Browser(strict, "alice")
    started = time.time()
    rounds = 0
    while rounds < 20 and (rounds < 5 or time.time() - started < 15):
        grant, results = _race_refresh(strict, browser, 10)
        rounds += 1
        winners = [r.json() for r in results if r.status_code == 200]
        assert len(winners) == 1, [(r.status_code, r.text[:60]) for r in results]
        # The losers presented a rotated token: reuse, so the whole family is revoked.
        assert_dead(strict, winners[0]["access_token"])
        assert_inactive(strict, winners[0]["refresh_token"])
        assert_dead(strict, grant.at)


def test_T44_concurrent_refresh_with_grace_leaves_at_most_one_chain(srv, alice):
    started = time.time()
    rounds = 0
    while rounds < 20 and (rounds < 5 or time.time() - started < 15):
        grant, results = _race_refresh(srv, alice, 10)
        rounds += 1
        issued = [r.json() for r in results if r.status_code == 200]
        assert issued, "no refresh succeeded"
        alive = [t for t in issued if introspect(srv, t["refresh_token"]).json().get("active")]
        assert len(alive) <= 1, f"{len(alive)} live refresh tokens after one race"
        for token in alive:
            assert refresh(srv, srv.clients["native"], token["refresh_token"]).status_code == 200


def test_T45_narrowing_scope_on_refresh(srv, alice):
    native = srv.clients["native"]
    grant = sign_in_and_redeem(srv, alice, native, redirect_uri=NATIVE_REDIRECT, scope="read profile")
    response = refresh(srv, native, grant.rt, scope="read")
    assert response.status_code == 200, response.text
    narrow = response.json()
    assert narrow["scope"] == "read"
    denied = userinfo(srv, narrow["access_token"])
    assert denied.status_code == 403 and 'error="insufficient_scope"' in denied.headers["WWW-Authenticate"]
    wide = refresh(srv, native, narrow["refresh_token"]).json()
    assert set(wide["scope"].split()) == {"read", "profile"}
    assert userinfo(srv, wide["access_token"]).status_code == 200


def test_T46_widening_scope_on_refresh_is_refused(srv, alice):
    native = srv.clients["native"]
    grant = sign_in_and_redeem(srv, alice, native, redirect_uri=NATIVE_REDIRECT, scope="read")
    assert_token_err(refresh(srv, native, grant.rt, scope="read write"), 400, "invalid_scope")
    assert_token_err(refresh(srv, native, grant.rt, scope="admin"), 400, "invalid_scope")
    assert_alive(srv, grant.at)
    response = refresh(srv, native, grant.rt)  # still usable: not a reuse event
    assert response.status_code == 200 and response.json()["scope"] == "read"


def test_T47_refresh_token_bound_to_client_without_revoking(srv, alice):
    native, native2 = srv.clients["native"], srv.clients["native2"]
    grant = sign_in_and_redeem(srv, alice, native, redirect_uri=NATIVE_REDIRECT)
    assert_token_err(refresh(srv, native2, grant.rt), 400, "invalid_grant")
    assert_alive(srv, grant.at)
    assert_rt_alive(srv, grant.client, grant.rt)
    web, web2 = srv.clients["web"], srv.clients["web2"]
    web_grant = sign_in_and_redeem(srv, alice, web, redirect_uri=WEB_CB)
    assert_token_err(refresh(srv, web2, web_grant.rt), 400, "invalid_grant")
    assert_alive(srv, web_grant.at)
    assert refresh(srv, native, grant.rt).status_code == 200
    assert refresh(srv, web, web_grant.rt).status_code == 200


def test_T48_expired_refresh_token(short):
    native = short.clients["native"]
    grant = sign_in_and_redeem(short, Browser(short, "alice"), native, redirect_uri=NATIVE_REDIRECT)
    time.sleep(3.5)
    assert_token_err(refresh(short, native, grant.rt), 400, "invalid_grant")
    assert_inactive(short, grant.rt)


def _user_with_grant(srv, name):
    srv.add_user(name, "initial-password-1")
    browser = Browser(srv, name)
    return browser, sign_in_and_redeem(srv, browser, srv.clients["native"], redirect_uri=NATIVE_REDIRECT)


def test_T48_refresh_token_after_user_deleted(srv):
    _, grant = _user_with_grant(srv, "dora")
    srv.cli("users", "delete", "dora", check=False)
    assert_rt_dead(srv, srv.clients["native"], grant.rt)
    assert_dead(srv, grant.at)


def test_T48_refresh_token_after_password_change(srv):
    _, grant = _user_with_grant(srv, "carol")
    result = srv.cli("users", "set-password", "carol", "--password-stdin", stdin="another-password-2\n", check=False)
    assert result.returncode == 0, result.stderr
    assert_rt_dead(srv, srv.clients["native"], grant.rt)


def test_T48_refresh_token_after_consent_revoked(srv):
    browser, grant = _user_with_grant(srv, "erin")
    page = browser.get("/account")
    assert page.status_code == 200
    fields = form_fields(page.text)
    response = browser.post("/account/revoke", data={"csrf_token": fields["csrf_token"],
                                                     "client_id": srv.clients["native"]["id"]})
    assert response.status_code == 303
    assert_rt_dead(srv, srv.clients["native"], grant.rt)
    assert_dead(srv, grant.at)


def test_T48_confidential_refresh_requires_authentication(srv, alice):
    web = srv.clients["web"]
    grant = sign_in_and_redeem(srv, alice, web, redirect_uri=WEB_CB)
    assert_token_err(refresh(srv, web, grant.rt, auth=None, extra=[("client_id", web["id"])]), 401, "invalid_client")
    assert_token_err(refresh(srv, web, grant.rt, auth=None), 401, "invalid_client")
    assert_token_err(refresh(srv, web, grant.rt, auth=(web["id"], "wrong")), 401, "invalid_client", basic=True)
    assert_rt_alive(srv, grant.client, grant.rt)
    assert_alive(srv, grant.at)


# ============================================================================================ H. scope

def test_T49_unknown_and_disallowed_scopes(srv, alice):
    native = srv.clients["native"]
    for scope in ["read frobnicate", "admin", "svc.read", ""]:
        response = alice.authorize(auth_params(native, NATIVE_REDIRECT, scope=scope, state="s", challenge=pkce()[1]))
        assert_redirect_err(response, NATIVE_REDIRECT, "invalid_scope", "s", srv.issuer)


def test_T50_user_deselects_scopes_and_tampering_adds_nothing(srv, alice):
    fresh = srv.add_client(None, "native", [NATIVE_REDIRECT], ["read", "write", "profile"], name="Partial")
    verifier, challenge = pkce()
    page = alice.consent_page_for(auth_params(fresh, NATIVE_REDIRECT, scope="profile read", state="s", challenge=challenge))
    response = alice.submit_consent(page, grant=["read"])
    code = split_location(response.headers["Location"])[1]["code"][0]
    tokens = exchange(srv, Grant(fresh, code, verifier, NATIVE_REDIRECT, "s", None)).json()
    assert tokens["scope"] == "read"
    denied = userinfo(srv, tokens["access_token"])
    assert denied.status_code == 403 and 'error="insufficient_scope"' in denied.headers["WWW-Authenticate"]
    # Tampered form: scopes that were not requested (write) or not allowed (admin) are not granted.
    other = srv.add_client(None, "native", [NATIVE_REDIRECT], ["read", "write", "profile"], name="Tamper")
    verifier, challenge = pkce()
    page = alice.consent_page_for(auth_params(other, NATIVE_REDIRECT, scope="read", state="s", challenge=challenge))
    response = alice.submit_consent(page, grant=["read", "write", "admin", "profile"])
    code = split_location(response.headers["Location"])[1]["code"][0]
    tokens = exchange(srv, Grant(other, code, verifier, NATIVE_REDIRECT, "s", None)).json()
    assert tokens["scope"] == "read"
    assert userinfo(srv, tokens["access_token"]).status_code == 403


def test_T51_resource_api_enforces_scope(srv, alice):
    native = srv.clients["native"]
    narrow = sign_in_and_redeem(srv, alice, native, redirect_uri=NATIVE_REDIRECT, scope="read write")
    response = userinfo(srv, narrow.at)
    assert response.status_code == 403
    challenge = response.headers["WWW-Authenticate"]
    # The challenge names openid; profile opens it too, as before OpenID Connect.
    assert challenge.startswith("Bearer") and 'error="insufficient_scope"' in challenge and 'scope="openid"' in challenge
    full = sign_in_and_redeem(srv, alice, native, redirect_uri=NATIVE_REDIRECT, scope="read write profile")
    assert userinfo(srv, full.at).status_code == 200


def test_T52_bearer_presentation_and_validation(srv, alice):
    grant = sign_in_and_redeem(srv, alice, srv.clients["native"], redirect_uri=NATIVE_REDIRECT)
    response = srv.get("/userinfo")
    assert response.status_code == 401
    challenge = response.headers["WWW-Authenticate"]
    assert challenge.startswith("Bearer realm=") and "error=" not in challenge
    for garbage in ["garbage", "lk_at_" + "A" * 43, "eyJhbGciOiJub25lIn0.eyJzdWIiOiJhbGljZSJ9.",
                    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2ln"]:
        response = userinfo(srv, garbage)
        assert response.status_code == 401 and 'error="invalid_token"' in response.headers["WWW-Authenticate"]
    # The token in the query is ignored: as if absent.
    response = srv.get("/userinfo", params={"access_token": grant.at})
    assert response.status_code == 401 and "error=" not in response.headers["WWW-Authenticate"]
    # Lowercase scheme accepted.
    assert userinfo(srv, grant.at, scheme="bearer").status_code == 200
    # Revoked.
    assert revoke(srv, srv.clients["native"], grant.at).status_code == 200
    assert_dead(srv, grant.at)


def test_T52_token_in_header_and_body_is_invalid_request(srv, alice):
    """RFC 6750 §2: a client MUST NOT use more than one method; the catalogue expects 400 invalid_request."""
    grant = sign_in_and_redeem(srv, alice, srv.clients["native"], redirect_uri=NATIVE_REDIRECT)
    response = srv.get("/userinfo", headers={"Authorization": f"Bearer {grant.at}", **FORM},
                       data=f"access_token={grant.at}")
    assert response.status_code == 400 and 'error="invalid_request"' in response.headers.get("WWW-Authenticate", "")


def test_T52_expired_access_token(short):
    grant = sign_in_and_redeem(short, Browser(short, "alice"), short.clients["native"], redirect_uri=NATIVE_REDIRECT)
    assert userinfo(short, grant.at).status_code == 200
    time.sleep(2.5)
    assert_dead(short, grant.at)


# ============================================================================================ I. implicit

def test_T53_implicit_refused_unless_opted_in(srv, alice, https_srv):
    for key in ("native", "web"):
        client = srv.clients[key]
        response = alice.authorize(auth_params(client, client["redirects"][0], scope="read", state="s",
                                               response_type="token"))
        assert_redirect_err(response, client["redirects"][0], "unauthorized_client", "s", srv.issuer, fragment=True)
    # Without any opted-in client, the metadata offers no implicit grant.
    metadata = https_srv.get("/.well-known/oauth-authorization-server").json()
    assert metadata["response_types_supported"] == ["code"]
    assert "implicit" not in metadata["grant_types_supported"]


def test_T54_opted_in_implicit_constraints(srv, alice):
    spa = srv.clients["spa"]
    response = alice.follow(alice.authorize(auth_params(spa, scope="profile", state="si", response_type="token")))
    assert response.status_code == 303
    location = response.headers["Location"]
    base, query, fragment = split_location(location)
    assert base == "https://spa.example/cb" and not query
    assert fragment["token_type"] == ["Bearer"] and fragment["state"] == ["si"] and fragment["iss"] == [srv.issuer]
    assert "refresh_token" not in fragment
    # README: the user chooses 1 day to 1 year (longer than T54 would like); the default is the shortest.
    assert int(fragment["expires_in"][0]) == 86400
    assert userinfo(srv, fragment["access_token"][0]).status_code == 200
    # response_mode=query: an error in the fragment, no token anywhere.
    response = alice.authorize(auth_params(spa, scope="read", state="sq", response_type="token",
                                           extra=[("response_mode", "query")]))
    assert_redirect_err(response, "https://spa.example/cb", "invalid_request", "sq", srv.issuer, fragment=True)
    _assert_refused_redirects(srv, alice, spa, ["https://attacker.example/cb", "https://spa.example/cb/",
                                                "https://spa.example/cb?x=1"])


# ============================================================================================ J. grants

def test_T55_public_client_cannot_use_client_credentials(srv):
    response = srv.post("/oauth2/token", data={"grant_type": "client_credentials", "client_id": srv.clients["native"]["id"],
                                               "scope": "read"})
    assert_token_err(response, 400, "unauthorized_client")  # T55


def test_T56_client_credentials_rules(srv):
    svc, web = srv.clients["svc"], srv.clients["web"]
    auth = (svc["id"], svc["secret"])
    response = srv.post("/oauth2/token", data={"grant_type": "client_credentials", "scope": "svc.read"}, auth=auth)
    assert response.status_code == 200, response.text
    body = response.json()
    assert "refresh_token" not in body and "id_token" not in body and body["scope"] == "svc.read"
    response = srv.post("/oauth2/token", data={"grant_type": "client_credentials"}, auth=(web["id"], web["secret"]))
    assert_token_err(response, 400, "unauthorized_client")
    response = srv.post("/oauth2/token", data={"grant_type": "client_credentials", "scope": "admin"}, auth=auth)
    assert_token_err(response, 400, "invalid_scope")
    response = srv.post("/oauth2/token", data={"grant_type": "authorization_code", "code": "x"}, auth=auth)
    assert_token_err(response, 400, "unauthorized_client")
    for grant_type in ("password", "foo"):
        response = srv.post("/oauth2/token", data={"grant_type": grant_type, "username": "alice",
                                                   "password": "correct-horse"}, auth=auth)
        assert_token_err(response, 400, "unsupported_grant_type")


# ============================================================================================ K. headers

def _assert_token_headers(response):
    assert response.headers.get("Cache-Control") == "no-store", response.headers
    assert response.headers.get("Pragma") == "no-cache"
    if response.status_code == 200 and response.request.path_url.startswith("/oauth2/revoke"):
        # RFC 7009 §2.2: an empty 200 body; empty is not JSON, so it carries no Content-Type.
        assert response.content == b"" and "Content-Type" not in response.headers, response.headers
    else:
        assert response.headers.get("Content-Type", "").replace(" ", "").lower() == "application/json;charset=utf-8"
    assert "ETag" not in response.headers and "Last-Modified" not in response.headers


def test_T57_no_store_on_token_material(srv, alice):
    native, svc = srv.clients["native"], srv.clients["svc"]
    grant = get_code(alice, native, redirect_uri=NATIVE_REDIRECT)
    bad = exchange(srv, grant, verifier=pkce()[0])
    good = exchange(srv, grant)
    rt = good.json()["refresh_token"]
    responses = [bad, good, refresh(srv, native, rt), refresh(srv, native, "nope"),
                 srv.post("/oauth2/token", data={"grant_type": "client_credentials"}, auth=(svc["id"], svc["secret"])),
                 srv.post("/oauth2/token", data={"grant_type": "client_credentials"}, auth=(svc["id"], "x")),
                 introspect(srv, good.json()["access_token"]), introspect(srv, "nope"),
                 revoke(srv, native, "nope"), revoke(srv, srv.clients["web"], "nope", auth=None)]
    for response in responses:
        _assert_token_headers(response)


def _assert_page_headers(response):
    assert "frame-ancestors 'none'" in response.headers.get("Content-Security-Policy", "")
    assert response.headers.get("X-Frame-Options") == "DENY"
    assert response.headers.get("X-Content-Type-Options") == "nosniff"
    assert response.headers.get("Referrer-Policy") == "no-referrer"


def test_T58_clickjacking_protection_on_every_page(srv, alice):
    browser = Browser(srv, "alice")
    _assert_page_headers(browser.get("/login"))
    _assert_page_headers(browser.authorize(auth_params(srv.clients["web"], "https://attacker.example/cb", scope="read",
                                                       state="s")))
    fresh = srv.add_client(None, "native", [NATIVE_REDIRECT], ["read"], name="Frames")
    _assert_page_headers(alice.consent_page_for(auth_params(fresh, NATIVE_REDIRECT, scope="read", state="s",
                                                            challenge=pkce()[1])))
    _assert_page_headers(alice.get("/account"))
    _assert_page_headers(alice.get("/"))
    # The device verification page (RFC 8628), its form's answer, and the page after a decision.
    device_page = alice.get("/device")
    _assert_page_headers(device_page)
    csrf = re.search(r'name="csrf_token" value="([^"]*)"', device_page.text).group(1)
    _assert_page_headers(alice.post("/device", data={"csrf_token": csrf, "user_code": "BCDF-GHJK"}))
    _assert_page_headers(alice.get("/device?result=approved"))


def _third_party_references(html, allowed=()):
    refs = re.findall(r'(?:src|href|action)="([^"]*)"', html)
    return [r for r in refs if re.match(r"^(https?:)?//", r) and not any(r.startswith(a) for a in allowed)]


def test_T59_no_referrer_leak_and_no_307(srv):
    browser = Browser(srv, "alice")
    fresh = srv.add_client(None, "native", [NATIVE_REDIRECT], ["read"], name="Referrer")
    params = auth_params(fresh, NATIVE_REDIRECT, scope="read", state="s", challenge=pkce()[1])
    first = browser.authorize(params)
    assert first.status_code == 303
    login = browser.get(first.headers["Location"])
    _assert_page_headers(login)
    assert "<script" not in login.text.lower() and not _third_party_references(login.text)
    fields = form_fields(login.text)
    posted = browser.post("/login", data={**fields, "username": "alice", "password": "correct-horse"})
    assert posted.status_code == 303
    consent = browser.get(posted.headers["Location"])
    _assert_page_headers(consent)
    assert "<script" not in consent.text.lower() and not _third_party_references(consent.text)
    final = browser.submit_consent(consent)
    assert final.status_code == 303 and final.headers["Location"].startswith(NATIVE_REDIRECT + "?code=")
    assert final.headers.get("Referrer-Policy") == "no-referrer"
    preflight = srv.raw_request("OPTIONS", "/oauth2/authorize", headers={
        "Origin": "https://attacker.example", "Access-Control-Request-Method": "GET"})
    assert "Access-Control-Allow-Origin" not in preflight.headers
    cross = srv.get("/oauth2/authorize", params=params, headers={"Origin": "https://attacker.example"})
    assert "Access-Control-Allow-Origin" not in cross.headers


# ============================================================================================ L. forms

def _signed_in(browser):
    response = browser.get("/account")
    return response.status_code == 200


def test_T60_csrf_on_the_login_form(srv):
    victim = Browser(srv, "alice")
    first = victim.authorize(auth_params(srv.clients["native"], NATIVE_REDIRECT, scope="read", state="s",
                                         challenge=pkce()[1]))
    request_id = first.headers["Location"].split("request=")[1]
    victim.get(first.headers["Location"])
    credentials = {"username": "alice", "password": "correct-horse", "request": request_id}
    # (a) no CSRF token
    response = victim.post("/login", data=credentials)
    assert response.status_code == 403 and "Location" not in response.headers
    assert not _signed_in(victim)
    # (b) a token from another browser session
    other = Browser(srv, "alice")
    other_token = form_fields(other.login_page().text)["csrf_token"]
    response = victim.post("/login", data={**credentials, "csrf_token": other_token})
    assert response.status_code == 403 and not _signed_in(victim)
    # (c) a valid token of this session but another session's pending request: no code for that request.
    attacker = Browser(srv, "alice")
    token = form_fields(attacker.login_page().text)["csrf_token"]
    response = attacker.post("/login", data={**credentials, "csrf_token": token})
    for _ in range(4):
        assert "code=" not in response.headers.get("Location", ""), response.headers
        if response.status_code != 303 or not response.headers["Location"].startswith("/"):
            break
        response = attacker.get(response.headers["Location"])
    assert "code=" not in response.headers.get("Location", "")
    # (d) cross-site: no cookies (SameSite=Lax), no token
    response = requests.post(srv.url("/login"), data=credentials, headers={"Origin": "https://attacker.example"},
                             allow_redirects=False, timeout=20)
    assert response.status_code == 403 and "Location" not in response.headers
    # The victim's own request is intact.
    final = victim.follow(victim.sign_in("alice", "correct-horse", request_id=request_id))
    assert final.status_code == 303 and final.headers["Location"].startswith(NATIVE_REDIRECT + "?code="), final.text[:300]


def test_T61_consent_csrf_binding_and_double_submission(srv):
    fresh = srv.add_client(None, "native", [NATIVE_REDIRECT], ["read", "profile"], name="Trusted App")
    alice = Browser(srv, "alice")
    page = alice.consent_page_for(auth_params(fresh, NATIVE_REDIRECT, scope="read", state="s", challenge=pkce()[1],
                                              extra=[("client_name", "Evil App")]))
    fields = form_fields(page.text)
    # The page names the registered app, not echoed parameters.
    assert "Trusted App" in page.text and "Evil App" not in page.text
    # (a) cross-site POST: no CSRF token (with and without cookies)
    for sender in (alice.session, requests.Session()):
        response = sender.post(srv.url("/oauth2/authorize"), data={"request": fields["request"], "decision": "allow",
                                                                    "scope": "read"},
                               headers={"Origin": "https://attacker.example"}, allow_redirects=False, timeout=20)
        assert response.status_code == 403 and "Location" not in response.headers
    # (d) approving with GET
    response = alice.get("/oauth2/authorize", params={"csrf_token": fields["csrf_token"], "request": fields["request"],
                                                      "decision": "allow", "scope": "read"})
    assert response.status_code in (400, 403, 405) and "code=" not in response.headers.get("Location", "")
    # (b)/(e) bob's session approving alice's request with bob's own valid CSRF token
    bob = Browser(srv, "bob")
    assert bob.sign_in("bob", "battery-staple").status_code == 303
    bob_token = form_fields(bob.get("/account").text)["csrf_token"]
    response = bob.post("/oauth2/authorize", data={"csrf_token": bob_token, "request": fields["request"],
                                                   "decision": "allow", "scope": "read"})
    assert response.status_code in (400, 403) and "Location" not in response.headers
    # (c) double submission: one code, then an error page.
    first = alice.submit_consent(page)
    assert first.status_code == 303 and "code=" in first.headers["Location"]
    second = alice.submit_consent(page)
    assert second.status_code in (400, 403) and "Location" not in second.headers


def _login(browser, username, password, headers=None):
    page = browser.get("/login")
    token = form_fields(page.text)["csrf_token"]
    return browser.post("/login", data={"csrf_token": token, "username": username, "password": password},
                        headers=headers or {})


def test_T62_login_throttling_without_user_enumeration(throttle):
    throttle.add_user("carol", "carol-password")
    browser = Browser(throttle)
    # Same answer for an unknown user and a wrong password.
    unknown = _login(browser, "nobody-here", "whatever-1")
    wrong = _login(browser, "bob", "wrong-password")
    assert unknown.status_code == wrong.status_code == 401
    assert "The username or password is not right." in unknown.text
    assert re.sub(r'value="[^"]*"', "", unknown.text) == re.sub(r'value="[^"]*"', "", wrong.text)
    # Per account: alice is throttled after 5 failures, even with the right password and a spoofed address.
    statuses = [_login(browser, "alice", f"wrong-{i}").status_code for i in range(6)]
    assert statuses[:5] == [401] * 5 and statuses[5] == 429, statuses
    for headers in ({}, {"X-Forwarded-For": "203.0.113.9"}):
        right = _login(Browser(throttle), "alice", "correct-horse", headers=headers)
        assert right.status_code == 429 and right.headers.get("Retry-After"), right.status_code
        assert "try" in right.text.lower() and not _signed_in_after(throttle, right)
    # bob is unaffected, and his success clears his own count.
    assert _login(Browser(throttle), "bob", "battery-staple").status_code == 303
    # After the window the right password works.
    time.sleep(THROTTLE_WINDOW + 1)
    assert _login(Browser(throttle), "alice", "correct-horse").status_code == 303
    # Per address: failures spread over many usernames from one address.
    statuses = [_login(browser, f"user{i}", "wrong-password").status_code for i in range(13)]
    assert statuses == [401] * 12 + [429], statuses
    assert _login(Browser(throttle), "carol", "carol-password").status_code == 429  # the address limit applies
    time.sleep(THROTTLE_WINDOW + 1)
    assert _login(Browser(throttle), "carol", "carol-password").status_code == 303


def _signed_in_after(server, response):
    cookie = response.cookies.get("lk_session")
    if not cookie:
        return False
    return requests.get(server.url("/account"), cookies={"lk_session": cookie}, allow_redirects=False,
                        timeout=20).status_code == 200


def test_T63_session_fixation_and_cookie_attributes(srv, https_srv):
    # The attacker plants a real anonymous session cookie in the victim's browser.
    attacker = Browser(srv, "alice")
    attacker.get("/login")
    planted = attacker.session.cookies.get("lk_session")
    assert planted
    victim = Browser(srv, "alice")
    victim.session.cookies.set("lk_session", planted, domain="127.0.0.1", path="/")
    response = victim.sign_in("alice", "correct-horse")
    assert response.status_code == 303
    fresh = victim.session.cookies.get("lk_session")
    assert fresh and fresh != planted
    assert attacker.get("/account").status_code == 303  # the planted id is not signed in
    assert victim.get("/account").status_code == 200
    set_cookie = response.headers["Set-Cookie"]
    assert "HttpOnly" in set_cookie and "SameSite=Lax" in set_cookie and "Domain" not in set_cookie
    # With an https issuer: __Host- prefix, Secure, HttpOnly, SameSite, no Domain, before and after sign-in.
    page = requests.get(https_srv.url("/login"), allow_redirects=False, timeout=20)
    anonymous = page.headers["Set-Cookie"]
    name, value = anonymous.split(";")[0].split("=", 1)
    assert name == "__Host-lk_session"
    token = form_fields(page.text)["csrf_token"]
    signed = requests.post(https_srv.url("/login"), data={"csrf_token": token, "username": "alice",
                                                          "password": "correct-horse"},
                           headers={"Cookie": f"{name}={value}"}, allow_redirects=False, timeout=20)
    assert signed.status_code == 303
    for cookie in (anonymous, signed.headers["Set-Cookie"]):
        attributes = [a.strip() for a in cookie.split(";")]
        assert attributes[0].startswith("__Host-lk_session=")
        assert "Secure" in attributes and "HttpOnly" in attributes and "SameSite=Lax" in attributes
        assert "Path=/" in attributes and not any(a.lower().startswith("domain") for a in attributes)
    assert signed.headers["Set-Cookie"].split(";")[0] != f"{name}={value}"


def test_T63_sign_out_ends_the_session_and_its_pending_requests(srv):
    browser = Browser(srv, "alice")
    assert browser.sign_in("alice", "correct-horse").status_code == 303
    old_cookie = browser.session.cookies.get("lk_session")
    fresh = srv.add_client(None, "native", [NATIVE_REDIRECT], ["read"], name="Sign Out")
    pending = browser.authorize(auth_params(fresh, NATIVE_REDIRECT, scope="read", state="s", challenge=pkce()[1]))
    assert pending.status_code == 200  # the consent page of a pending request
    pending_id = form_fields(pending.text)["request"]
    account = browser.get("/account")
    assert 'action="/logout"' in account.text and "Sign out" in account.text
    assert 'action="/logout"' in pending.text
    # Without the CSRF token nothing happens.
    refused = browser.post("/logout", data={"csrf_token": "lk_csrf_forged"})
    assert refused.status_code in (400, 403) and _signed_in(browser)
    token = form_fields(account.text)["csrf_token"]
    response = browser.post("/logout", data={"csrf_token": token})
    assert response.status_code == 303 and response.headers["Location"].startswith("/login")
    # Replaying the old cookie: not signed in, and the pending request is gone.
    replay = Browser(srv, "alice")
    replay.session.cookies.set("lk_session", old_cookie, domain="127.0.0.1", path="/")
    assert replay.get("/account").status_code == 303
    resumed = replay.get("/consent?request=" + pending_id)
    assert resumed.status_code in (303, 400) and "code=" not in resumed.headers.get("Location", "")
    if resumed.status_code == 303:
        assert resumed.headers["Location"].startswith("/login")
        after = replay.follow(resumed)
        assert "code=" not in after.headers.get("Location", "")


# ============================================================================================ M. revocation

def test_T64_revoking_refresh_token_revokes_the_grant(srv, alice):
    native, web = srv.clients["native"], srv.clients["web"]
    grant = sign_in_and_redeem(srv, alice, native, redirect_uri=NATIVE_REDIRECT)
    response = revoke(srv, native, grant.rt, hint="refresh_token")
    assert response.status_code == 200 and response.content == b""
    assert_rt_dead(srv, native, grant.rt)
    assert_dead(srv, grant.at)
    # Revoking an access token ends that token only (README: "an access token just itself").
    web_grant = sign_in_and_redeem(srv, alice, web, redirect_uri=WEB_CB)
    assert revoke(srv, web, web_grant.at, hint="access_token").status_code == 200
    assert_dead(srv, web_grant.at)
    assert_rt_alive(srv, web_grant.client, web_grant.rt)


def test_T65_unknown_tokens_hints_and_malformed_revocation(srv, alice):
    native = srv.clients["native"]
    assert revoke(srv, native, "garbage").status_code == 200
    grant = sign_in_and_redeem(srv, alice, native, redirect_uri=NATIVE_REDIRECT)
    assert revoke(srv, native, grant.at, hint="refresh_token").status_code == 200  # wrong hint: still found
    assert_dead(srv, grant.at)
    assert revoke(srv, native, grant.at).status_code == 200  # already revoked
    other = sign_in_and_redeem(srv, alice, native, redirect_uri=NATIVE_REDIRECT)
    assert revoke(srv, native, other.rt, hint="foo").status_code == 200  # unknown hint: still found
    assert_rt_dead(srv, native, other.rt)
    response = srv.post("/oauth2/revoke", data={"client_id": native["id"]})
    assert_token_err(response, 400, "invalid_request")
    response = srv.get("/oauth2/revoke", params={"token": grant.rt, "client_id": native["id"]})
    assert response.status_code in (400, 405), response.status_code


def test_T66_revocation_requires_authentication_and_cannot_touch_others(srv, alice):
    web, web2 = srv.clients["web"], srv.clients["web2"]
    native, native2 = srv.clients["native"], srv.clients["native2"]
    web_grant = sign_in_and_redeem(srv, alice, web, redirect_uri=WEB_CB)
    unauthenticated = srv.post("/oauth2/revoke", data={"token": web_grant.rt, "client_id": web["id"]})
    assert_token_err(unauthenticated, 401, "invalid_client")
    assert_token_err(revoke(srv, web, web_grant.rt, auth=(web["id"], "wrong")), 401, "invalid_client", basic=True)
    assert revoke(srv, web2, web_grant.rt).status_code == 200  # decision 5: silent, changes nothing
    assert_rt_alive(srv, web_grant.client, web_grant.rt)
    assert_alive(srv, web_grant.at)
    native_grant = sign_in_and_redeem(srv, alice, native, redirect_uri=NATIVE_REDIRECT)
    assert revoke(srv, native2, native_grant.rt).status_code == 200
    assert revoke(srv, native2, native_grant.at).status_code == 200
    assert_rt_alive(srv, native_grant.client, native_grant.rt)
    assert_alive(srv, native_grant.at)


# ============================================================================================ N. introspection

def test_T67_introspection_requires_authentication_and_reveals_nothing(srv, alice):
    native = srv.clients["native"]
    grant = sign_in_and_redeem(srv, alice, native, redirect_uri=NATIVE_REDIRECT)
    rs = srv.clients["rs"]
    # (a) unauthenticated, wrong secret, public client
    assert_token_err(srv.post("/oauth2/introspect", data={"token": grant.at}), 401, "invalid_client")
    assert_token_err(srv.post("/oauth2/introspect", data={"token": grant.at}, auth=(rs["id"], "wrong")), 401,
                     "invalid_client", basic=True)
    response = srv.post("/oauth2/introspect", data={"token": grant.at, "client_id": native["id"]})
    assert_token_err(response, 401, "invalid_client")
    assert "active" not in response.json()
    # A wrong hint still resolves an active token.
    active = introspect(srv, grant.at, hint="refresh_token").json()
    assert active["active"] is True and active["token_type"] == "Bearer"
    # (b) inactive tokens: exactly {"active": false}
    revoked = sign_in_and_redeem(srv, alice, native, redirect_uri=NATIVE_REDIRECT)
    revoke(srv, native, revoked.at)
    assert_inactive(srv, revoked.at)
    consumed = get_code(alice, native, redirect_uri=NATIVE_REDIRECT)
    redeem(srv, consumed)
    assert_inactive(srv, consumed.code)
    assert_inactive(srv, "garbage")
    reused = sign_in_and_redeem(srv, alice, native, redirect_uri=NATIVE_REDIRECT)
    successor = refresh(srv, native, reused.rt).json()
    refresh(srv, native, successor["refresh_token"])
    refresh(srv, native, reused.rt)  # reuse: the grant is revoked
    assert_inactive(srv, successor["refresh_token"])
    assert_inactive(srv, reused.at)


def test_T67_expired_access_token_introspects_inactive(short):
    grant = sign_in_and_redeem(short, Browser(short, "alice"), short.clients["native"], redirect_uri=NATIVE_REDIRECT)
    assert introspect(short, grant.at).json()["active"] is True
    time.sleep(2.5)
    response = introspect(short, grant.at)
    assert response.json() == {"active": False} and response.headers["Cache-Control"] == "no-store"


def test_T68_metadata_security_claims(https_srv):
    response = https_srv.get("/.well-known/oauth-authorization-server")
    assert response.status_code == 200
    assert response.headers["Content-Type"].startswith("application/json")
    metadata = response.json()
    assert metadata["issuer"] == "https://as.test"
    assert metadata["code_challenge_methods_supported"] == ["S256"]
    assert metadata["authorization_response_iss_parameter_supported"] is True
    assert "password" not in metadata["grant_types_supported"] and "implicit" not in metadata["grant_types_supported"]
    assert metadata["response_types_supported"] == ["code"]
    assert set(metadata["token_endpoint_auth_methods_supported"]) == {"none", "client_secret_basic", "client_secret_post",
                                                                      "private_key_jwt"}
    for key in ("authorization_endpoint", "token_endpoint", "revocation_endpoint", "introspection_endpoint"):
        assert metadata[key].startswith("https://as.test/"), metadata[key]
    for key, value in metadata.items():
        if key.endswith("_endpoint"):
            assert value.startswith("https://"), (key, value)


def test_ST1_forged_verifiers_are_refused(srv, alice):
    """A split token's selector (its first 22 characters with the prefix) with any other verifier is
    refused everywhere, and the attempts neither burn the code nor rotate or revoke the tokens."""
    native = srv.clients["native"]

    def forged(value):
        return value[:22] + base64.urlsafe_b64encode(secrets.token_bytes(32)).rstrip(b"=").decode()

    grant = get_code(alice, native, redirect_uri=NATIVE_REDIRECT)
    assert len(grant.code) == 6 + 16 + 43
    real_code = grant.code
    grant.code = forged(real_code)
    assert_token_err(exchange(srv, grant), 400, "invalid_grant")
    grant.code = real_code
    redeem(srv, grant)
    for value in (grant.at, grant.rt):
        assert len(value) == 6 + 16 + 43
        for attempt in (forged(value), value[:22], value[:22] + (grant.rt if value == grant.at else grant.at)[22:]):
            assert_inactive(srv, attempt)
            assert revoke(srv, native, attempt).status_code == 200  # unknown: 200, nothing revoked (RFC 7009)
    assert userinfo(srv, forged(grant.at)).status_code == 401
    assert_token_err(refresh(srv, native, forged(grant.rt)), 400, "invalid_grant")
    assert introspect(srv, grant.at).json()["active"] is True
    assert userinfo(srv, grant.at).status_code == 200
    assert refresh(srv, native, grant.rt).status_code == 200
