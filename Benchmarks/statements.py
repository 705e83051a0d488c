#!/usr/bin/env python3
"""Counts the statements each kind of request sends to PostgreSQL: on PostgreSQL each is a round
trip, which costs more than the rest of most requests (docs/performance.md, round three).

    python3 Benchmarks/statements.py --bin .build/release/latchkey --database-url URL --log FILE

URL names a PostgreSQL server whose role may create databases and set `log_statement` (the test
cluster of `scripts/postgres start` can; its log is `$LATCHKEY_TEST_PGDATA/log`), and FILE is that
server's log. A fresh database is made with `log_statement = 'all'`; each request runs twice to
warm up (prepared statements, the pool) and the background work they caused is let finish (the
activity log is written in batches, apart from any request), then once more while the log is
read. Statements of the background work that polls on its own (back-channel logout deliveries)
are left out."""
import argparse
import base64
import glob
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench  # noqa: E402
from latchkey_process import LatchkeyServer  # noqa: E402

BACKGROUND = re.compile(r"logout_deliveries")
# With --check, the most statements each request may send (`scripts/test` checks): on PostgreSQL a
# round trip costs more than the rest of most requests, so one more is a change to make on purpose,
# here, with its reason.
AT_MOST = {"client credentials": 2, "/userinfo": 1, "introspection": 2, "refresh": 3,
           "authorize (consent remembered)": 8, "authorize, then code exchange": 11}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bin", required=True)
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--log", required=True, help="the PostgreSQL server's log file")
    parser.add_argument("--check", action="store_true", help="fail when a request sends more than AT_MOST says")
    options = parser.parse_args()
    psql = sorted(glob.glob("/usr/lib/postgresql/*/bin/psql"))[-1]
    database = f"statements_{os.getpid()}"
    subprocess.run([psql, "-q", options.database_url, "-c", f"CREATE DATABASE {database}"], check=True)
    subprocess.run([psql, "-q", options.database_url, "-c", f"ALTER DATABASE {database} SET log_statement = 'all'"],
                   check=True)
    store = ["--database-url", options.database_url.rsplit("/", 1)[0] + "/" + database]
    os.environ.setdefault("LATCHKEY_KEY_ENCRYPTION_KEY", base64.b64encode(os.urandom(32)).decode())
    password = "statements-password-1"
    bench.cli(options.bin, store, "users", "create", "bench", "--password-stdin", stdin=password + "\n")
    native = bench.cli(options.bin, store, "clients", "create", "--type", "native", "--name", "Notes",
                       "--redirect-uri", "http://127.0.0.1/callback", "--scope", "profile")
    service = bench.cli(options.bin, store, "clients", "create", "--type", "service", "--name", "RS",
                        "--scope", "activity")
    workdir = tempfile.mkdtemp(prefix="latchkey-statements-")
    server = LatchkeyServer(store, binary=options.bin, workdir=workdir, keep_stderr=False)
    try:
        base = server.base
        basic = {"Authorization": "Basic " + base64.b64encode(
            f"{service['client_id']}:{service['client_secret']}".encode()).decode()}
        cookie, query, tokens = bench.sign_in(base, native["client_id"], password)
        state = {"refresh": tokens["refresh_token"], "code": None}

        def authorize():
            answer = requests.get(f"{base}/oauth2/authorize?{query}", headers={"Cookie": cookie}, allow_redirects=False)
            state["code"] = bench.code_in(answer.headers["Location"])

        def exchange():
            authorize()
            requests.post(f"{base}/oauth2/token", data={
                "grant_type": "authorization_code", "code": state["code"], "client_id": native["client_id"],
                "redirect_uri": bench.REDIRECT, "code_verifier": bench.VERIFIER}).raise_for_status()

        def refresh():
            answer = requests.post(f"{base}/oauth2/token", data={
                "grant_type": "refresh_token", "refresh_token": state["refresh"], "client_id": native["client_id"]})
            answer.raise_for_status()
            state["refresh"] = answer.json()["refresh_token"]

        requests_to_count = {
            "client credentials": lambda: requests.post(
                f"{base}/oauth2/token", data={"grant_type": "client_credentials"}, headers=basic).raise_for_status(),
            "/userinfo": lambda: requests.get(
                f"{base}/userinfo", headers={"Authorization": "Bearer " + tokens["access_token"]}).raise_for_status(),
            "introspection": lambda: requests.post(
                f"{base}/oauth2/introspect", data={"token": tokens["access_token"]}, headers=basic).raise_for_status(),
            "refresh": refresh,
            "authorize (consent remembered)": authorize,
            "authorize, then code exchange": exchange,
        }
        print(f"{'request':<34}{'statements':>11}{'at most':>9}")
        over = []
        for name, send in requests_to_count.items():
            statements = count(options.log, send)
            print(f"{name:<34}{len(statements):>11}{AT_MOST[name]:>9}")
            for statement in statements:
                print(f"    {statement[:100]}")
            if len(statements) > AT_MOST[name]:
                over.append(name)
    finally:
        server.stop(timeout=30)
    if options.check and over:
        raise SystemExit(f"more statements than AT_MOST allows: {', '.join(over)}")


def count(log, send):
    """The statements `send()` made, from the log, after two warm-up calls."""
    send()
    send()
    time.sleep(2)
    start = os.path.getsize(log)
    send()
    time.sleep(0.5)
    with open(log, errors="replace") as lines:
        lines.seek(start)
        found = [re.sub(r".*LOG:  ", "", line).strip() for line in lines
                 if re.search(r"LOG:  (statement|execute)", line) and not BACKGROUND.search(line)]
    return found


if __name__ == "__main__":
    main()
