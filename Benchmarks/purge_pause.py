"""What does a purge cost the token requests beside it (SQLite)?

With 500-row batches, the soak's p99 rose in the windows where the purge deleted the most rows.
This workload asks the question alone, without the soak's mix or its 30 minutes: a fresh store
with --backlog expired access tokens (bulk-loaded, expired long before the 600 s kept for
replays), one server with the purge every --interval seconds, and client credentials paced at
--rate requests a second (wrk, -t2 -c64) twice:

  - `during`: from the first purge until it has deleted the backlog, which it does in batches, each
    a write transaction of its own in the writer's background lane;
  - `after`: the same load once the purge is done and --settle seconds have passed (so that the
    checkpoint of the WAL the deletions wrote is less likely to fall in it), the baseline from the
    same process.

It prints p50, p99 and p99.9 of both, p99 during ÷ p99 after, and how long the purge took. Run two
builds alternately (--bin) to compare their purges.

    python3 Benchmarks/purge_pause.py --bin .build/release/latchkey [--backlog 1000000] [--rate 1500]

It needs wrk and sqlite3 (scripts/test installs both).
"""
import argparse
import base64
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import bench
import soak


def load_expired(database, count):
    """Bulk-loads `count` access tokens that expired in 1970, so that every purge may delete them."""
    sql = f"""
PRAGMA journal_mode=DELETE;
BEGIN;
INSERT INTO grants (id, client_id, user_id, scope, created_at) VALUES ('backlog', 'backlog', NULL, 'profile', 0);
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {count})
INSERT INTO tokens (hash, verifier, kind, grant_id, client_id, user_id, scope, created_at, expires_at)
SELECT printf('%012x', i) || lower(hex(randomblob(6))), lower(hex(randomblob(32))), 'access', 'backlog',
    'backlog', NULL, 'profile', 1.0, 2.0 FROM n;
COMMIT;
PRAGMA journal_mode=WAL;
"""
    subprocess.run(["sqlite3", database], input=sql, text=True, check=True, capture_output=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", required=True, help="the latchkey release binary")
    parser.add_argument("--backlog", type=int, default=1_000_000, help="expired tokens for the purge to delete")
    parser.add_argument("--rate", type=float, default=1500, help="client credentials a second, for both passes")
    parser.add_argument("--interval", type=int, default=5, help="seconds from start to the first purge")
    parser.add_argument("--after", type=int, default=10, help="seconds of the baseline pass")
    parser.add_argument("--settle", type=int, default=5, help="seconds between the purge's end and the baseline")
    parser.add_argument("--json", help="write the results here")
    options = parser.parse_args()

    workdir = tempfile.mkdtemp(prefix="latchkey-purge-")
    store = ["--data-dir", os.path.join(workdir, "data")]
    try:
        service = bench.cli(options.bin, store, "clients", "create", "--type", "service", "--name", "RS",
                            "--scope", "activity")
        started = time.time()
        load_expired(os.path.join(workdir, "data", "latchkey.sqlite"), options.backlog)
        print(f"loaded {options.backlog:,} expired tokens in {time.time() - started:.0f} s", file=sys.stderr)
        launched = time.time()
        server = bench.LatchkeyServer(store + ["--purge-interval", str(options.interval), "--metrics-address", "0"],
                                      binary=options.bin, workdir=os.path.join(workdir, "serve"), keep_stderr=False)
        try:
            results = run(options, workdir, server, service, launched)
        finally:
            server.stop(timeout=30)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    during, after = results["during"], results["after"]
    print(f"{'pass':<8}{'req/s':>8}{'p50 ms':>8}{'p99 ms':>8}{'p99.9 ms':>10}{'errors':>8}")
    for name in ("during", "after"):
        r = results[name]
        print(f"{name:<8}{r['rps']:>8.0f}{r['p50_us'] / 1000:>8.2f}{r['p99_us'] / 1000:>8.2f}"
              f"{r['p999_us'] / 1000:>10.2f}{r['errors']:>8}")
    print(f"\np99 during the purge ÷ after it: {during['p99_us'] / after['p99_us']:.2f}; the purge deleted "
          f"{results['purged']:,.0f} rows in {results['purge_s']:.1f} s")
    if options.json:
        with open(options.json, "w") as out:
            json.dump({"options": vars(options), **results}, out, indent=1)


def run(options, workdir, server, service, launched):
    """The two passes; `launched`: when the server was started (its first purge is `interval` later)."""
    basic = "Basic " + base64.b64encode(f"{service['client_id']}:{service['client_secret']}".encode()).decode()
    script = bench.lua_post("/oauth2/token", "grant_type=client_credentials", {"Authorization": basic})
    path = os.path.join(workdir, "during.lua")
    with open(path, "w") as f:
        f.write(script + bench.lua_paced(options.rate / 2, 32))
    time.sleep(max(0, launched + options.interval - time.time()))
    # wrk stops on SIGINT and still reports; it is stopped once the metrics count a finished purge.
    wrk = subprocess.Popen(["wrk", "-t2", "-c64", "-d600s", "--latency", "-s", path, server.base],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    while (housekeeping := soak.purge_sample(server))["purges"] < 1:
        time.sleep(0.2)
    wrk.send_signal(signal.SIGINT)
    output = wrk.communicate(timeout=60)[0]
    during = json.loads(re.search(r"BENCH (\{.*\})", output).group(1))
    during["rps"] = during["requests"] / (during["duration_us"] / 1e6)
    time.sleep(options.settle)
    after = bench.wrk([server.base], script, False, 2, 64, options.after, workdir, "after", rate=options.rate)
    return {"during": during, "after": after, "purged": housekeeping["purged"], "purge_s": housekeeping["purge_s"]}


if __name__ == "__main__":
    main()
