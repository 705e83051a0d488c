"""The Prometheus metrics of `latchkey serve --metrics-address`, read as Prometheus reads them.

`prometheus_client`'s text parser (the reference implementation of the exposition format, from
PyPI) reads GET /metrics on the metrics listener. The main test scrapes once, runs a scripted flow
through the real pages and endpoints (a requests.Session plays the browser, plain requests the
apps), scrapes again and checks that every latchkey_* counter moved by exactly what the flow did:
the series the flow touches by their amount, every other series not at all. A counter series
appears only at its first increment, so a series missing from a scrape counts as 0.

Hummingbird counts a request (http_server_requests_total) and ends its timer and the in-flight
gauge only once the response body is written, a moment after the client may have read it, so the
second scrape is repeated until the in-flight requests are done (see settled_scrape()).

Users and clients are made with the CLI on the server's data directory while it runs.
"""
import json
import os
import secrets
import socket
import time
from urllib.parse import parse_qs, urlencode, urljoin, urlparse

import requests
from prometheus_client.parser import text_string_to_metric_families

from latchkey_process import (
    LatchkeyServer, code_in, free_port, hidden_fields, pkce, sign_in_through_pages)

USERNAME = "alice"
PASSWORD = "correct horse battery staple"
NATIVE_REDIRECT_URI = "http://127.0.0.1/callback"  # a loopback redirect: any port matches
SCOPE = "openid profile"
TIMEOUT = 20
SETTLE_TIMEOUT = 5  # seconds for the request counters to catch up with the responses already read


# --------------------------------------------------------------------------------------------- scraping

class Scrape:
    """One GET /metrics, parsed: `values` maps (sample name, labels) to the value, with labels a
    sorted tuple of (name, value) pairs; `types` maps each sample name to its family's type."""

    def __init__(self, response):
        self.response = response
        self.values, self.types = {}, {}
        for family in text_string_to_metric_families(response.text):
            for sample in family.samples:
                key = (sample.name, tuple(sorted(sample.labels.items())))
                assert key not in self.values, f"the series {key} is exposed twice"
                self.values[key] = sample.value
                self.types[sample.name] = family.type

    def get(self, name, **labels):
        """A series' value, 0 when the series is missing (a counter not yet incremented)."""
        return self.values.get((name, tuple(sorted(labels.items()))), 0)

    def series(self, name):
        """(labels dict, value) of every series of sample `name`."""
        return [(dict(labels), value) for (sample, labels), value in self.values.items() if sample == name]

    def total(self, name, **labels):
        """The sum of the series of `name` whose labels include `labels`."""
        return sum(value for series_labels, value in self.series(name)
                   if all(series_labels.get(k) == v for k, v in labels.items()))


def metrics_port(server):
    """The metrics listener's port from the ready file (LatchkeyServer reads only the main port)."""
    with open(server.ready_file) as f:
        return json.load(f)["metrics_port"]


def scrape(server):
    response = requests.get(f"http://127.0.0.1:{metrics_port(server)}/metrics", timeout=TIMEOUT)
    assert response.status_code == 200, f"GET /metrics answered {response.status_code}: {response.text[:300]}"
    return Scrape(response)


def settled_scrape(server):
    """A scrape taken once no request is in flight (http_server_active_requests all 0: the gauge
    goes down just after the request is counted), or the last one after SETTLE_TIMEOUT seconds."""
    deadline = time.monotonic() + SETTLE_TIMEOUT
    while True:
        current = scrape(server)
        if all(value == 0 for _, value in current.series("http_server_active_requests")) \
                or time.monotonic() > deadline:
            return current
        time.sleep(0.05)


def moved(before, after, name, **labels):
    """How much one series grew between two scrapes."""
    return after.get(name, **labels) - before.get(name, **labels)


def counter_deltas(before, after, prefix):
    """{(sample name, labels): after - before} for every counter series whose name starts with
    `prefix` and that moved (a series in `before` but gone from `after` shows as a negative move)."""
    keys = {key for scrape in (before, after) for key in scrape.values
            if key[0].startswith(prefix) and scrape.types[key[0]] == "counter"}
    deltas = {key: after.values.get(key, 0) - before.values.get(key, 0) for key in keys}
    return {key: delta for key, delta in deltas.items() if delta != 0}


def series(name, **labels):
    """The key of one series, as in Scrape.values."""
    return (name, tuple(sorted(labels.items())))


def listening_addresses(port):
    """The local addresses of the TCP sockets listening on `port` (Linux: /proc/net/tcp and tcp6)."""
    addresses = set()
    for table, width in (("/proc/net/tcp", 4), ("/proc/net/tcp6", 16)):
        try:
            with open(table) as f:
                rows = f.read().splitlines()[1:]
        except FileNotFoundError:
            continue
        for row in rows:
            fields = row.split()
            address, local_port = fields[1].split(":")
            if fields[3] == "0A" and int(local_port, 16) == port:  # 0A: LISTEN
                raw = bytes.fromhex(address)
                # The kernel prints each 32-bit word in host (little-endian) order.
                raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
                family = socket.AF_INET if width == 4 else socket.AF_INET6
                addresses.add(socket.inet_ntop(family, raw))
    return addresses


# --------------------------------------------------------------------------------------------- the flow's steps

def create_native_client(server):
    return server.cli("clients", "create", "--type", "native", "--name", f"Metrics app {secrets.token_hex(3)}",
                      "--redirect-uri", NATIVE_REDIRECT_URI, "--scope", "openid", "--scope", "profile")


def create_service_client(server):
    return server.cli("clients", "create", "--type", "service", "--name", f"Metrics service {secrets.token_hex(3)}")


def authorization_url(server, client, challenge, redirect_uri, **params):
    query = {"response_type": "code", "client_id": client["client_id"], "redirect_uri": redirect_uri,
             "scope": SCOPE, "state": secrets.token_urlsafe(12), "code_challenge": challenge,
             "code_challenge_method": "S256", **params}
    return server.url("/oauth2/authorize?" + urlencode(query))


def fail_sign_in(server, browser):
    """POSTs the sign-in form with a wrong password; asserts that it did not sign in."""
    page = browser.get(server.url("/login"), allow_redirects=False, timeout=TIMEOUT)
    assert page.status_code == 200, page.text[:300]
    answer = browser.post(server.url("/login"), allow_redirects=False, timeout=TIMEOUT,
                          data={**hidden_fields(page.text), "username": USERNAME, "password": "not " + PASSWORD})
    assert answer.status_code != 303, "a wrong password signed in"


def deny_consent(server, browser, url):
    """For a signed-in browser: follows `url`, an authorization request that shows the consent page
    (prompt=consent), and denies it. Returns the redirect to the app."""
    answer = browser.get(url, allow_redirects=False, timeout=TIMEOUT)
    for _ in range(3):  # the consent page is a redirect or two away, on the server
        location = urljoin(server.base + "/", answer.headers.get("Location", ""))
        if answer.status_code != 303 or not location.startswith(server.base + "/"):
            break
        answer = browser.get(location, allow_redirects=False, timeout=TIMEOUT)
    assert answer.status_code == 200 and 'action="/oauth2/authorize"' in answer.text, \
        f"expected the consent page, got {answer.status_code}: {answer.text[:300]}"
    decision = browser.post(server.url("/oauth2/authorize"), allow_redirects=False, timeout=TIMEOUT,
                            data=[*hidden_fields(answer.text).items(), ("decision", "deny")])
    assert decision.status_code == 303, decision.text[:300]
    return decision.headers["Location"]


def token_request(server, data, auth=None):
    return requests.post(server.url("/oauth2/token"), data=data, auth=auth, allow_redirects=False, timeout=TIMEOUT)


def assert_token_error(response, status, error):
    assert response.status_code == status, \
        f"expected {status} {error}, got {response.status_code}: {response.text[:300]}"
    body = response.json()
    assert body.get("error") == error, body
    assert "access_token" not in body and "refresh_token" not in body, f"a token was issued: {body}"


# --------------------------------------------------------------------------------------------- the tests

TOKENS = "latchkey_tokens_issued_total"


def test_counters_move_by_exactly_what_a_flow_did(tmp_path):
    """One scripted flow moves each latchkey_* counter series by exactly what it did and no other:
    sign-ins (failed, succeeded), consents (granted, denied), tokens by grant type and client type,
    a refresh token reused, a code replayed, a client's failed authentication, a revocation. The
    request counter counts the token endpoint's answers by route pattern and status; route labels
    never hold a raw path, a query or an id; the SQLite store's operations are timed. The metrics
    are not on the main port, the listener given only a port binds 127.0.0.1, and it answers the
    Prometheus text format 0.0.4. Without --metrics-client-labels no series has a client_id."""
    # A grace period of 0 makes the second use of a rotated refresh token a reuse at once
    # (the default tolerates it while the successor is unused).
    server = LatchkeyServer(["--data-dir", tmp_path / "data", "--metrics-address", "0",
                             "--refresh-grace-period", "0"], workdir=tmp_path / "serve")
    try:
        port = metrics_port(server)
        assert port != server.port
        if os.path.exists("/proc/net/tcp"):
            assert listening_addresses(port) == {"127.0.0.1"}, \
                f"--metrics-address PORT should listen on 127.0.0.1 only: {listening_addresses(port)}"

        # The admin commands work on the data directory of the running server.
        server.cli("users", "create", USERNAME, "--password-stdin", stdin=PASSWORD + "\n")
        native = create_native_client(server)
        service = create_service_client(server)
        assert service["client_secret"]

        before = scrape(server)
        assert before.response.headers["Content-Type"].startswith("text/plain; version=0.0.4"), \
            before.response.headers["Content-Type"]

        # 1. A wrong password on the sign-in form, then the whole authorization through the
        #    pages: a successful sign-in and consent granted.
        browser = requests.Session()
        fail_sign_in(server, browser)
        verifier, challenge = pkce()
        redirect_uri = f"http://127.0.0.1:{free_port()}/callback"
        signed_in = sign_in_through_pages(browser, authorization_url(server, native, challenge, redirect_uri),
                                          USERNAME, PASSWORD)
        assert signed_in.consent is not None, "the first authorization should have shown the consent page"
        code = code_in(signed_in.location)

        # 2. The code for tokens (200 #1).
        redemption = [("grant_type", "authorization_code"), ("code", code), ("redirect_uri", redirect_uri),
                      ("code_verifier", verifier), ("client_id", native["client_id"])]
        exchanged = token_request(server, redemption)
        assert exchanged.status_code == 200, exchanged.text
        first_refresh_token = exchanged.json()["refresh_token"]

        # 3. Refresh (200 #2), then the retired refresh token again: reuse (400), which revokes the grant.
        refreshed = token_request(server, [("grant_type", "refresh_token"), ("refresh_token", first_refresh_token),
                                           ("client_id", native["client_id"])])
        assert refreshed.status_code == 200, refreshed.text
        assert_token_error(token_request(server, [("grant_type", "refresh_token"),
                                                  ("refresh_token", first_refresh_token),
                                                  ("client_id", native["client_id"])]), 400, "invalid_grant")

        # 4. The same code redeemed again: a replay (400), and no token. (After the refresh steps,
        #    since a replay revokes the grant and its refresh token.)
        assert_token_error(token_request(server, redemption), 400, "invalid_grant")

        # 5. A second authorization, prompt=consent, and the user denies it.
        _, challenge = pkce()
        denied = deny_consent(server, browser, authorization_url(server, native, challenge, redirect_uri,
                                                                 prompt="consent"))
        assert parse_qs(urlparse(denied).query).get("error") == ["access_denied"], denied

        # 6. The service client's credentials for a token (200 #3), then a wrong secret (401).
        credentials = token_request(server, {"grant_type": "client_credentials"},
                                    auth=(service["client_id"], service["client_secret"]))
        assert credentials.status_code == 200, credentials.text
        assert_token_error(token_request(server, {"grant_type": "client_credentials"},
                                         auth=(service["client_id"], "not-the-secret")), 401, "invalid_client")

        # 7. The service client revokes its access token.
        revoked = requests.post(server.url("/oauth2/revoke"), data={"token": credentials.json()["access_token"]},
                                auth=(service["client_id"], service["client_secret"]), timeout=TIMEOUT)
        assert revoked.status_code == 200, revoked.text

        # 8. Paths that must not become route labels: an id in the path, an unknown path with a
        #    query, and /metrics on the main port, which is not served there.
        assert requests.get(server.url(f"/admin/api/clients/{native['client_id']}"), timeout=TIMEOUT) \
            .status_code == 401
        assert requests.get(server.url(f"/no/such/{native['client_id']}?secret=x"), timeout=TIMEOUT) \
            .status_code == 404
        on_main_port = requests.get(server.url("/metrics"), timeout=TIMEOUT)
        assert on_main_port.status_code == 404, "the metrics must not be served on the public port"
        assert "latchkey_" not in on_main_port.text

        after = settled_scrape(server)

        # Every latchkey_* counter: exactly these moves, no other series touched.
        expected = {
            series("latchkey_sign_ins_total", result="failed"): 1,
            series("latchkey_sign_ins_total", result="succeeded"): 1,
            series("latchkey_consents_total", decision="granted"): 1,
            series("latchkey_consents_total", decision="denied"): 1,
            series(TOKENS, grant_type="authorization_code", client_type="native"): 1,
            series(TOKENS, grant_type="refresh_token", client_type="native"): 1,
            series(TOKENS, grant_type="client_credentials", client_type="service"): 1,
            series("latchkey_refresh_token_reuse_total"): 1,
            series("latchkey_code_replays_total"): 1,
            series("latchkey_client_authentication_failures_total", reason="invalid_client"): 1,
            series("latchkey_revocations_total", by="client"): 1,
        }
        assert counter_deltas(before, after, "latchkey_") == expected

        # The request counter, by route pattern and status: the token endpoint answered 200
        # three times (code, refresh, client credentials), 400 twice (reuse, replay), 401 once.
        requests_total = "http_server_requests_total"
        token_answers = {labels["status"]: moved(before, after, requests_total, **labels)
                         for labels, _ in after.series(requests_total) if labels["route"] == "/oauth2/token"}
        assert {status: n for status, n in token_answers.items() if n} == {"200": 3, "400": 2, "401": 1}
        assert moved(before, after, requests_total, route="/oauth2/revoke", method="POST", status="200") == 1
        assert moved(before, after, requests_total, route="NotFound", method="GET", status="404") == 2
        assert moved(before, after, "http_server_request_duration_seconds_count",
                     route="/oauth2/token", method="POST", status="200") == 3
        routes = {dict(labels)["route"] for name, labels in after.values
                  if name.startswith("http_server_") and "route" in dict(labels)}
        assert "/oauth2/authorize" in routes and "/login" in routes
        for route in routes:
            assert route == "NotFound" or route.startswith("/"), route
            assert "?" not in route and "=" not in route, f"a query in a route label: {route}"
            for secret in (native["client_id"], service["client_id"], code, "no/such"):
                assert secret not in route, f"a raw path in a route label: {route}"
        assert any(route.startswith("/admin/api/clients/") for route in routes), \
            f"the admin API's client route should be labelled by its pattern: {sorted(routes)}"

        # The store's operations are timed, all of them labelled store="sqlite".
        store = after.series("latchkey_store_operation_duration_seconds_count")
        assert store and {labels["store"] for labels, _ in store} == {"sqlite"}, store
        assert after.total("latchkey_store_operation_duration_seconds_count", store="sqlite") \
            > before.total("latchkey_store_operation_duration_seconds_count", store="sqlite")
        assert after.types["latchkey_sqlite_group_commit_batch_size_count"] == "histogram"
        assert after.get("latchkey_sqlite_group_commit_batch_size_count") \
            > before.get("latchkey_sqlite_group_commit_batch_size_count"), "the flow's writes were not batched"
        # The WAL is checkpointed beside the writer, 50 ms after a commit; the gauge holds its length.
        deadline = time.monotonic() + 10
        checkpointed = after
        while "latchkey_sqlite_wal_pages" not in checkpointed.types and time.monotonic() < deadline:
            time.sleep(0.1)
            checkpointed = scrape(server)
        assert checkpointed.types.get("latchkey_sqlite_wal_pages") == "gauge", "no checkpoint reported the WAL"
        assert checkpointed.get("latchkey_sqlite_wal_pages") > 0
        assert checkpointed.get("latchkey_sqlite_checkpoint_duration_seconds_count", mode="passive") >= 1

        # Without --metrics-client-labels, no series names a client.
        labelled = [key for key in after.values if "client_id" in dict(key[1])]
        assert not labelled, f"series with a client_id label: {labelled}"
    except BaseException:
        print(server.output_tail())  # shown by pytest with the failure
        server.stop()
        raise
    assert server.stop() == 0, server.output_tail()


def test_client_labels_name_the_client(tmp_path):
    """With --metrics-client-labels, a client-credentials token is counted in a series whose
    client_id label is that client's id, and only there (counted once)."""
    with LatchkeyServer(["--data-dir", tmp_path / "data", "--metrics-address", "0", "--metrics-client-labels"],
                        workdir=tmp_path / "serve") as server:
        service = create_service_client(server)
        response = token_request(server, {"grant_type": "client_credentials"},
                                 auth=(service["client_id"], service["client_secret"]))
        assert response.status_code == 200, response.text
        after = scrape(server)
        assert after.series(TOKENS) == [({"grant_type": "client_credentials", "client_type": "service",
                                          "client_id": service["client_id"]}, 1.0)]


def test_the_purge_is_timed_and_counts_its_rows(tmp_path):
    """Each run of the background purge adds one observation to latchkey_purge_duration_seconds (a
    histogram) and the rows it deleted to latchkey_purged_rows_total: a failed sign-in's throttle
    rows, whose one-second window has ended, are gone at the next run, once a second here."""
    with LatchkeyServer(["--data-dir", tmp_path / "data", "--metrics-address", "0", "--purge-interval", "1",
                         "--sign-in-window", "1"], workdir=tmp_path / "serve") as server:
        server.cli("users", "create", USERNAME, "--password-stdin", stdin=PASSWORD + "\n")
        fail_sign_in(server, requests.Session())
        deadline = time.monotonic() + 30
        while True:
            current = scrape(server)
            if current.get("latchkey_purged_rows_total") >= 1 or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert current.types["latchkey_purged_rows_total"] == "counter"
        assert current.get("latchkey_purged_rows_total") >= 1, "the throttle rows were not purged"
        assert current.types["latchkey_purge_duration_seconds_count"] == "histogram"
        assert current.get("latchkey_purge_duration_seconds_count") >= 1
        assert 0 < current.get("latchkey_purge_duration_seconds_sum") < 30


def test_no_metrics_listener_unless_asked(tmp_path):
    """Without --metrics-address there is no metrics listener: the ready file has no metrics_port,
    and the main port does not serve /metrics."""
    with LatchkeyServer(["--data-dir", tmp_path / "data"], workdir=tmp_path / "serve") as server:
        with open(server.ready_file) as f:
            ready = json.load(f)
        assert "metrics_port" not in ready, ready
        assert {"port", "issuer"} <= set(ready)
        assert requests.get(server.url("/metrics"), timeout=TIMEOUT).status_code == 404
