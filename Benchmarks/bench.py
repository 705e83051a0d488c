#!/usr/bin/env python3
"""Latchkey's benchmark: the real release server on loopback, driven by wrk.

Seeds a fresh store through the real CLI and real flows, runs each workload with wrk
(-t2 -c64 by default), and prints requests/s, p50, p99, errors and each workload's ratio to the
server's own /healthz measured in the same run. Ratios hold across machines; absolute numbers drift.
"""
import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from urllib.parse import parse_qs, urlencode, urlparse

import requests

VERIFIER = "01234567890123456789012345678901234567890123456789"
CHALLENGE = "-4cf-Mzo_qg9-uq0F4QwWhRh4AjcAqNx7SbYVsdmyQM"
REDIRECT = "http://127.0.0.1:9/callback"

# Shared Lua: a done() that prints one JSON line wrk's summary and latency, plus any per-thread counters.
LUA_SETUP = """
threads = {}
function setup(thread) table.insert(threads, thread); thread:set("tid", #threads) end
"""
LUA_DONE = LUA_SETUP + r"""
function done(summary, latency, requests)
  local flows = 0
  for _, t in ipairs(threads) do flows = flows + (t:get("flows") or 0) end
  local e = summary.errors
  io.write(string.format('BENCH {"requests":%d,"duration_us":%d,"p50_us":%d,"p99_us":%d,"mean_us":%d,"errors":%d,"flows":%d}\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99), latency.mean,
    e.connect + e.read + e.write + e.timeout + e.status, flows))
end
"""


def lua_post(path, body, headers):
    lines = [f'wrk.method = "POST"', f'wrk.path = "{path}"', f'wrk.body = "{body}"',
             'wrk.headers["Content-Type"] = "application/x-www-form-urlencoded"']
    lines += [f'wrk.headers["{k}"] = "{v}"' for k, v in headers.items()]
    return "\n".join(lines) + LUA_DONE


def lua_get(path, headers):
    return "\n".join([f'wrk.path = "{path}"'] + [f'wrk.headers["{k}"] = "{v}"' for k, v in headers.items()]) + LUA_DONE


def lua_saver(file):
    """A Lua `save(value)` that appends non-nil values to this thread's file `file.<thread>`."""
    return r"""
local out
function save(value)
  if not value then return end
  if not out then out = io.open("%s." .. tostring(tid), "w") end
  out:write(value, "\n")
  out:flush()
end
""" % file


def lua_from_list(file, make_request, on_response="", prelude=""):
    """Each thread takes every n-th value of `file` and uses each once; stops when they run out."""
    return prelude + r"""
threads = {}
local values = {}
local index = 1
local counter = 0
function setup(thread)
  table.insert(threads, thread)
  thread:set("tid", #threads)
  thread:set("id", counter)
  counter = counter + 1
end
function init(args)
  local n = 0
  for line in io.lines("%s") do
    if n %% tonumber(args[1]) == id then table.insert(values, line) end
    n = n + 1
  end
  flows = 0
end
function request()
  if index > #values then wrk.thread:stop() return wrk.format("GET", "/healthz") end
  local value = values[index]
  index = index + 1
  %s
end
function response(status, headers, body)
  if status == 200 then flows = flows + 1 end
  %s
end
""" % (file, make_request, on_response) + LUA_DONE.replace(LUA_SETUP, "")


class Server:
    def __init__(self, binary, store_args, port):
        self.process = subprocess.Popen([binary, "serve", "--port", str(port), *store_args],
                                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        deadline = time.time() + 60
        while time.time() < deadline:
            line = self.process.stdout.readline()
            if "Latchkey is serving" in line:
                return
        raise SystemExit("latchkey serve did not start")

    def peak_rss_mb(self):
        with open(f"/proc/{self.process.pid}/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
        return 0.0

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=30)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cli(binary, store_args, *arguments, stdin=None):
    result = subprocess.run([binary, *arguments, *store_args, "--json"], input=stdin, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"latchkey {' '.join(arguments)} failed: {result.stderr}")
    return json.loads(result.stdout)


def wrk(base, script, args, threads, connections, duration, workdir, name, profile=None):
    path = os.path.join(workdir, f"{name}.lua")
    with open(path, "w") as f:
        f.write(script)
    command = ["wrk", f"-t{threads}", f"-c{connections}", f"-d{duration}s", "--latency", "-s", path, base]
    if args:
        command += ["--", *args]
    recorder = None
    if profile:
        # perf samples the server's call stacks for exactly this workload (see --perf).
        pid, directory = profile
        recorder = subprocess.Popen(["perf", "record", "-F", "499", "-g", "-p", str(pid), "-o",
                                     os.path.join(directory, f"{name}.perf.data")],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.5)
    output = subprocess.run(command, capture_output=True, text=True).stdout
    if recorder:
        recorder.send_signal(signal.SIGINT)
        recorder.wait(timeout=60)
    match = re.search(r"BENCH (\{.*\})", output)
    if not match:
        raise SystemExit(f"wrk gave no result for {name}:\n{output}")
    result = json.loads(match.group(1))
    seconds = result["duration_us"] / 1e6
    result["rps"] = result["requests"] / seconds
    result["flows_per_s"] = result["flows"] / seconds
    if args:
        # A list workload stops when its pre-minted values run out, before wrk's clock does: its rate
        # is the one sustained while every connection was busy (Little's law: connections / mean latency).
        result["rps"] = connections / (result["mean_us"] / 1e6)
    return result


def sign_in(base, client_id, password):
    """A browser session for `bench` that has consented once, so authorize answers with a code at once."""
    browser = requests.Session()
    query = urlencode({"response_type": "code", "client_id": client_id, "redirect_uri": REDIRECT, "scope": "profile",
                       "code_challenge": CHALLENGE, "code_challenge_method": "S256"})
    page = browser.get(f"{base}/oauth2/authorize?{query}", allow_redirects=False)
    login = browser.get(base + page.headers["Location"])
    fields = dict(re.findall(r'name="(csrf_token|request)" value="([^"]*)"', login.text))
    page = browser.post(f"{base}/login", data={**fields, "username": "bench", "password": password}, allow_redirects=False)
    consent = browser.get(base + page.headers["Location"])
    fields = dict(re.findall(r'name="(csrf_token|request)" value="([^"]*)"', consent.text))
    page = browser.post(f"{base}/oauth2/authorize", data={**fields, "decision": "allow", "scope": "profile"},
                        allow_redirects=False)
    code = parse_qs(urlparse(page.headers["Location"]).query)["code"][0]
    tokens = requests.post(f"{base}/oauth2/token", data={"grant_type": "authorization_code", "code": code,
                           "client_id": client_id, "redirect_uri": REDIRECT, "code_verifier": VERIFIER}).json()
    cookie = "; ".join(f"{c.name}={c.value}" for c in browser.cookies)
    return cookie, query, tokens


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bin", required=True)
    parser.add_argument("--database-url", help="benchmark PostgreSQL instead of a fresh SQLite file")
    parser.add_argument("--duration", type=int, default=10)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--preload", type=int, default=0, help="bulk-load this many live tokens first (SQLite only)")
    parser.add_argument("--only", help="comma-separated workloads to run (healthz always runs; refresh needs code_exchange)")
    parser.add_argument("--perf", metavar="DIR",
                        help="record each workload's server call stacks with `perf record -g` into DIR/<workload>.perf.data")
    options = parser.parse_args()
    workloads = {"client_credentials", "userinfo", "introspection", "code_exchange", "refresh", "native_flow"}
    wanted = set(options.only.split(",")) if options.only else None
    if wanted and not wanted <= workloads:
        raise SystemExit(f"--only: unknown {', '.join(sorted(wanted - workloads))}; known: {', '.join(sorted(workloads))}")
    if wanted and "refresh" in wanted:
        wanted.add("code_exchange")
    want = lambda name: wanted is None or name in wanted
    if options.perf:
        if not shutil.which("perf"):
            raise SystemExit("--perf needs perf (Debian: apt-get install linux-perf)")
        os.makedirs(options.perf, exist_ok=True)

    workdir = tempfile.mkdtemp(prefix="latchkey-bench-")
    store = ["--database-url", options.database_url] if options.database_url else ["--data-dir", os.path.join(workdir, "data")]
    password = "bench-password-1"
    cli(options.bin, store, "users", "create", "bench", "--password-stdin", stdin=password + "\n")
    native = cli(options.bin, store, "clients", "create", "--type", "native", "--name", "Bench",
                 "--redirect-uri", "http://127.0.0.1/callback", "--scope", "profile")
    service = cli(options.bin, store, "clients", "create", "--type", "service", "--name", "RS", "--scope", "activity")
    if options.preload:
        preload(os.path.join(workdir, "data", "latchkey.sqlite"), options.preload)

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    server = Server(options.bin, store, port)
    try:
        import base64
        basic = "Basic " + base64.b64encode(f"{service['client_id']}:{service['client_secret']}".encode()).decode()
        cookie, authorize_query, tokens = sign_in(base, native["client_id"], password)
        profile = (server.process.pid, options.perf) if options.perf else None
        run = lambda name, script, args=None, duration=options.duration: wrk(
            base, script, args, options.threads, options.connections, duration, workdir, name, profile)

        results = {}
        results["healthz"] = run("healthz", lua_get("/healthz", {}))
        first_healthz = results["healthz"]["rps"]
        if want("client_credentials"):
            results["client_credentials"] = run("client_credentials", lua_post(
                "/oauth2/token", "grant_type=client_credentials", {"Authorization": basic}))
        if want("userinfo"):
            results["userinfo"] = run("userinfo", lua_get("/userinfo", {"Authorization": "Bearer " + tokens["access_token"]}))
        if want("introspection"):
            results["introspection"] = run("introspection", lua_post(
                "/oauth2/introspect", "token=" + tokens["access_token"], {"Authorization": basic}))
        if want("code_exchange"):
            exchange_and_refresh(run, options, workdir, native, authorize_query, cookie, results, want)
        if want("native_flow"):
            results["native_flow"] = run("native_flow", native_flow(native, authorize_query, cookie))

        # healthz again at the end: the baseline is the mean of both, so a slow spell of the
        # machine at the start or the end moves every ratio less.
        closing = run("healthz_after", lua_get("/healthz", {}))
        results["healthz"]["rps"] = (results["healthz"]["rps"] + closing["rps"]) / 2
        healthz_spread = (closing["rps"] - first_healthz) / first_healthz
        rss = server.peak_rss_mb()
    finally:
        server.stop()

    healthz = results["healthz"]["rps"]
    print(f"\nLatchkey benchmark: wrk -t{options.threads} -c{options.connections}, "
          f"{'PostgreSQL' if options.database_url else 'SQLite'}"
          f"{f', {options.preload:,} preloaded tokens' if options.preload else ''}; peak RSS {rss:.0f} MB; "
          f"healthz is the mean of a run before and after the others ({healthz_spread:+.0%} apart)\n")
    print(f"{'workload':<20}{'req/s':>10}{'× healthz':>11}{'p50 ms':>9}{'p99 ms':>9}{'errors':>8}")
    for name, r in results.items():
        rate = r["flows_per_s"] if name == "native_flow" else r["rps"]
        unit = " flows/s" if name == "native_flow" else ""
        print(f"{name:<20}{rate:>10.0f}{rate / healthz:>11.3f}{r['p50_us'] / 1000:>9.2f}{r['p99_us'] / 1000:>9.2f}"
              f"{r['errors']:>8}{unit}")
    shutil.rmtree(workdir, ignore_errors=True)


def exchange_and_refresh(run, options, workdir, native, authorize_query, cookie, results, want):
    """Code exchange over codes minted beforehand through real authorize requests (signed-in session,
    remembered consent), then refresh over the refresh tokens the exchange captured, each used once."""
    codes_file = os.path.join(workdir, "codes")
    mint = lua_get(f"/oauth2/authorize?{authorize_query}", {"Cookie": cookie}) + lua_saver(codes_file) + r"""
function response(status, headers, body)
  local location = headers["Location"]
  if location then save(string.match(location, "code=([^&]+)")) end
end
"""
    run("mint_codes", mint, duration=options.duration)
    subprocess.run(f"cat {codes_file}.* > {codes_file}", shell=True, check=True)
    refresh_file = os.path.join(workdir, "refresh")
    exchange_body = ('"grant_type=authorization_code&client_id=%s&redirect_uri=%s&code_verifier=%s&code=" .. value'
                     % (native["client_id"], requests.utils.quote(REDIRECT, safe=""), VERIFIER))
    capture_refresh = """
  save(string.match(body, '"refresh_token":"([^"]+)"'))
"""
    post = 'return wrk.format("POST", "/oauth2/token", {["Content-Type"]="application/x-www-form-urlencoded"}, %s)'
    results["code_exchange"] = run("code_exchange", lua_from_list(
        codes_file, post % exchange_body, capture_refresh, prelude=lua_saver(refresh_file)), [str(options.threads)])
    if want("refresh"):
        subprocess.run(f"cat {refresh_file}.* > {refresh_file}", shell=True, check=True)
        refresh_body = '"grant_type=refresh_token&client_id=%s&refresh_token=" .. value' % native["client_id"]
        results["refresh"] = run("refresh", lua_from_list(refresh_file, post % refresh_body), [str(options.threads)])


def native_flow(native, authorize_query, cookie):
    """The full native flow: authorize (remembered consent) then exchange, per thread."""
    return r"""
local pending = {}
flows = 0
function request()
  if #pending > 0 then
    local code = table.remove(pending)
    return wrk.format("POST", "/oauth2/token", {["Content-Type"]="application/x-www-form-urlencoded"}, %s .. code)
  end
  return wrk.format("GET", "/oauth2/authorize?%s", {["Cookie"]="%s"})
end
function response(status, headers, body)
  local location = headers["Location"]
  if location then
    local code = string.match(location, "code=([^&]+)")
    if code then table.insert(pending, code) end
  elseif status == 200 then
    flows = flows + 1
  end
end
""" % ('"grant_type=authorization_code&client_id=%s&redirect_uri=%s&code_verifier=%s&code="'
       % (native["client_id"], requests.utils.quote(REDIRECT, safe=""), VERIFIER), authorize_query, cookie) + LUA_DONE


def preload(database, count):
    """Bulk-loads `count` live access tokens straight into SQLite (one transaction, recursive CTE).

    Loaded with a rollback journal and a 1 GB page cache, then switched back to WAL: through the
    WAL, ten million rows were written twice (log, then checkpoint)."""
    started = time.time()
    sql = f"""
PRAGMA journal_mode=DELETE;
PRAGMA cache_size=-1000000;
BEGIN;
INSERT INTO grants (id, client_id, user_id, scope, created_at) VALUES ('preload', 'preload', NULL, 'profile', 0);
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {count})
INSERT INTO tokens (hash, kind, grant_id, client_id, user_id, scope, created_at, expires_at)
SELECT lower(hex(randomblob(32))), 'access', 'preload', 'preload', NULL, 'profile', 0, 4102444800 FROM n;
COMMIT;
PRAGMA journal_mode=WAL;
"""
    subprocess.run(["sqlite3", database], input=sql, text=True, check=True, capture_output=True)
    print(f"preloaded {count:,} tokens in {time.time() - started:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
