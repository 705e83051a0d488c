#!/usr/bin/env python3
"""Latchkey's benchmark: the real release server on loopback, driven by wrk.

Seeds a fresh store through the real CLI and real flows, runs each workload with wrk
(-t2 -c64 by default), and prints requests/s, p50, p99, errors and each workload's ratio to the
server's own /healthz measured in the same run. Ratios hold across machines; absolute numbers drift.

With `--bare BIN` (scripts/bench builds it: Benchmarks/BareHummingbird) it also measures a bare
Hummingbird application answering the same constant, before and after everything else, and gives
Latchkey's /healthz as a ratio to it: what Latchkey's middleware, routing and headers cost.

Then a paced pass (unless --no-paced) drives each main workload again at half the rate it reached
at saturation (or, with --paced-from, that an earlier run reached: two builds at the same rates;
--paced-share for another share than half) and reports p50, p99 and p99.9: latency under a load
the server can carry, rather than the queueing of 64 connections that never wait. With
--database-url it starts two instances on the one database (--instances) and splits every
workload's connections between them.

`readyz`, run only when --only names it, is the floor of a request that queries the store once:
`GET /readyz` counts the applied schema steps and does nothing else.

The sign-in storm (`signin_storm`) asks whether password checks stall the token endpoint: client
credentials at a fixed rate (--storm-rate, 50/s), alone and while 20 connections keep signing in
through the sign-in form (--storm-connections), then wrk's saturation rate of client credentials
alone and during the storm.
"""
import argparse
import base64
import collections
import glob
import http.client
import json
import math
import multiprocessing
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import quote, urlencode, urlparse

import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "Tests" / "Support"))
from latchkey_process import (  # noqa: E402
    LatchkeyError, LatchkeyServer, admin, code_in, hidden_fields, sign_in_through_pages,
)

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
  local flows, late = 0, 0
  for _, t in ipairs(threads) do
    flows = flows + (t:get("flows") or 0)
    late = late + (t:get("late") or 0)
  end
  local e = summary.errors
  io.write(string.format('BENCH {"requests":%d,"duration_us":%d,"p50_us":%d,"p99_us":%d,"p999_us":%d,"mean_us":%d,"errors":%d,"flows":%d,"late":%d}\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99), latency:percentile(99.9),
    latency.mean, e.connect + e.read + e.write + e.timeout + e.status, flows, late))
end
"""


def lua_paced(rate_per_thread, connections_per_thread):
    """A wrk `delay()` that holds each thread to `rate_per_thread` requests a second: every request
    takes the next slot of a fixed schedule (clock_gettime through LuaJIT's ffi) and waits for it.
    A request sent more than 1 ms after its slot (every connection was busy) counts as `late`, since
    wrk times a request from when it is sent, not from when it was due.

    wrk asks `delay()` only after a response, so every connection's first request would go at once,
    a burst at full concurrency; those first requests are `GET /healthz` instead, so that the burst
    costs next to nothing and the workload's own requests all keep to the schedule. Appended after
    the workload's script, whose `request()` it wraps."""
    return r"""
local workload_request = request or function() return wrk.format() end
local unpaced = %d
function request()
  if unpaced > 0 then
    unpaced = unpaced - 1
    return wrk.format("GET", "/healthz", {}, "")
  end
  return workload_request()
end
local ffi = require("ffi")
ffi.cdef[[ typedef struct { long tv_sec; long tv_nsec; } bench_timespec; int clock_gettime(int, bench_timespec *); ]]
local clock = ffi.new("bench_timespec")
local function now_ms()
  ffi.C.clock_gettime(1, clock)
  return tonumber(clock.tv_sec) * 1000 + tonumber(clock.tv_nsec) / 1e6
end
local interval_ms = %.6f
local next_slot = nil
late = 0
function delay()
  local now = now_ms()
  if next_slot == nil then next_slot = now end
  local wait = next_slot - now
  next_slot = next_slot + interval_ms
  if wait < -1 then late = late + 1 end
  if wait <= 0 then return 0 end
  return math.floor(wait + 0.5)
end
""" % (connections_per_thread, 1000.0 / rate_per_thread)


def lua_post(path, body, headers):
    lines = [f'wrk.method = "POST"', f'wrk.path = "{path}"', f'wrk.body = "{body}"',
             'wrk.headers["Content-Type"] = "application/x-www-form-urlencoded"']
    lines += [f'wrk.headers["{k}"] = "{v}"' for k, v in headers.items()]
    return "\n".join(lines) + LUA_DONE


def lua_get(path, headers):
    return "\n".join([f'wrk.path = "{path}"'] + [f'wrk.headers["{k}"] = "{v}"' for k, v in headers.items()]) + LUA_DONE


def lua_saver(file):
    """A Lua `save(value)` that appends non-nil values to this thread's file `file.<pid>.<thread>`
    (the pid keeps apart the files of wrk processes run at once against several instances)."""
    return r"""
local ffi = require("ffi")
pcall(ffi.cdef, "int getpid(void);")
local out
function save(value)
  if not value then return end
  if not out then out = io.open("%s." .. tostring(ffi.C.getpid()) .. "." .. tostring(tid), "w") end
  out:write(value, "\n")
  out:flush()
end
""" % file


def lua_from_list(file, make_request, on_response="", prelude=""):
    """Each thread takes every n-th value of `file` (n = args[1], counting the threads of every wrk
    process; args[2] is this process's first thread) and uses each once; stops when they run out."""
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
    if n %% tonumber(args[1]) == id + tonumber(args[2] or 0) then table.insert(values, line) end
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


def cpu_seconds(pid):
    """The user and system CPU time process `pid` has used (/proc/PID/stat, fields 14 and 15)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def peak_rss_mb(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def cli(binary, store_args, *arguments, stdin=None):
    try:
        return admin(store_args, *arguments, binary=binary, stdin=stdin)
    except LatchkeyError as error:
        raise SystemExit(str(error))


def wrk(bases, script, listed, threads, connections, duration, workdir, name, profile=None, rate=None):
    """Runs `script` with wrk against every URL of `bases` at once (one per server instance), the
    threads and connections split between them, and merges what they report: requests and errors
    added up, p50 the mean of the instances', p99 and p99.9 the worst. `rate` paces the whole run
    at that many requests a second (lua_paced); None saturates. `listed`: the script takes values
    from a list (lua_from_list), so each wrk is told its share."""
    per_threads = max(1, threads // len(bases))
    per_connections = max(per_threads, connections // len(bases))
    path = os.path.join(workdir, f"{name}.lua")
    with open(path, "w") as f:
        f.write(script + (lua_paced(rate / (len(bases) * per_threads), per_connections // per_threads) if rate else ""))
    recorder = None
    if profile:
        # perf samples the (first) server's call stacks for exactly this workload (see --perf).
        pid, directory = profile
        recorder = subprocess.Popen(["perf", "record", "-F", "499", "-g", "-p", str(pid), "-o",
                                     os.path.join(directory, f"{name}.perf.data")],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.5)
    processes = []
    for index, base in enumerate(bases):
        command = ["wrk", f"-t{per_threads}", f"-c{per_connections}", f"-d{duration}s", "--latency", "-s", path, base]
        if listed:
            command += ["--", str(len(bases) * per_threads), str(index * per_threads)]
        processes.append(subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    outputs = [process.communicate()[0] for process in processes]
    if recorder:
        recorder.send_signal(signal.SIGINT)
        recorder.wait(timeout=60)
    parts = []
    for output in outputs:
        match = re.search(r"BENCH (\{.*\})", output)
        if not match:
            raise SystemExit(f"wrk gave no result for {name}:\n{output}")
        part = json.loads(match.group(1))
        seconds = part["duration_us"] / 1e6
        part["rps"] = part["requests"] / seconds
        if listed and not rate:
            # A list workload stops when its pre-minted values run out, before wrk's clock does: its
            # rate is the one sustained while every connection was busy (Little's law: connections /
            # mean latency).
            part["rps"] = per_connections / (part["mean_us"] / 1e6)
        part["flows_per_s"] = part["flows"] / seconds
        parts.append(part)
    result = {key: sum(part[key] for part in parts)
              for key in ("requests", "errors", "flows", "late", "rps", "flows_per_s")}
    result["duration_us"] = max(part["duration_us"] for part in parts)
    result["p50_us"] = sum(part["p50_us"] for part in parts) / len(parts)
    for key in ("p99_us", "p999_us"):
        result[key] = max(part[key] for part in parts)
    result["mean_us"] = sum(part["mean_us"] * part["requests"] for part in parts) / max(1, result["requests"])
    result["instances"] = len(parts)
    return result


def sign_in(base, client_id, password, scope="profile"):
    """A browser session for `bench` that has consented once, so authorize answers with a code at once."""
    browser = requests.Session()
    query = urlencode({"response_type": "code", "client_id": client_id, "redirect_uri": REDIRECT, "scope": scope,
                       "code_challenge": CHALLENGE, "code_challenge_method": "S256"})
    signed_in = sign_in_through_pages(browser, f"{base}/oauth2/authorize?{query}", "bench", password, grant=scope.split())
    code = code_in(signed_in.location)
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
    parser.add_argument("--storm-rate", type=float, default=50,
                        help="signin_storm: client-credentials requests per second at the fixed rate (default 50)")
    parser.add_argument("--storm-connections", type=int, default=20,
                        help="signin_storm: connections that keep signing in (default 20)")
    parser.add_argument("--bare", metavar="BIN",
                        help="the bare Hummingbird baseline (latchkey-bare-hummingbird) to measure /healthz against")
    parser.add_argument("--no-paced", dest="paced", action="store_false",
                        help="skip the pass at half the saturation rate")
    parser.add_argument("--paced-from", metavar="JSON",
                        help="pace at half (--paced-share) the saturation rates of an earlier run's --json file rather than this "
                             "run's: two builds compared at the same request rates")
    parser.add_argument("--paced-share", type=float, default=0.5, metavar="F",
                        help="pace at this share of the saturation rates instead of half (the target's), to see "
                             "how p99 grows with the load")
    parser.add_argument("--instances", type=int,
                        help="server instances on the one store (default 2 with --database-url, else 1)")
    parser.add_argument("--json", metavar="FILE", help="also write the figures to FILE as JSON")
    parser.add_argument("--soak", type=float, metavar="MINUTES",
                        help="instead of the workloads, a mixed load at half saturation for MINUTES (Benchmarks/soak.py)")
    parser.add_argument("--soak-window", type=int, default=300, metavar="S",
                        help="--soak: seconds per reported window (default 300)")
    parser.add_argument("--soak-calibration", type=int, default=20, metavar="S",
                        help="--soak: seconds of the mix at saturation, to find half its rate (default 20)")
    parser.add_argument("--soak-rate", type=float, metavar="R",
                        help="--soak: run the mix at R req/s instead of half the calibration's rate, to compare "
                             "two builds at one rate")
    parser.add_argument("--soak-signins", type=float, default=1, metavar="R",
                        help="--soak: sign-ins with a device flow per second beside the mix (default 1)")
    parser.add_argument("--soak-plot", metavar="FILE", help="--soak: draw RSS and p99 over time into FILE (SVG)")
    parser.add_argument("--soak-control", action="store_true",
                        help="--soak: only GET /healthz, at half its own saturation, with no side load: how far a "
                             "window's p99 moves on this host when nothing in the store changes")
    options = parser.parse_args()
    options.instances = options.instances or (2 if options.database_url else 1)
    if options.instances > 1 and not options.database_url:
        raise SystemExit("--instances above 1 needs --database-url: SQLite is for one instance")
    if options.soak:
        import soak
        return soak.run(sys.modules[__name__], options)
    workloads = {"client_credentials", "userinfo", "introspection", "code_exchange", "refresh", "native_flow",
                 "signin_storm", "code_exchange_openid_es256", "code_exchange_openid_rs256",
                 "client_credentials_resource", "client_credentials_jwt", "client_credentials_jwt_es256", "readyz"}
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
    if options.database_url and "LATCHKEY_KEY_ENCRYPTION_KEY" not in os.environ:
        # PostgreSQL needs the key that seals the signing keys given (SQLite makes one in its folder).
        os.environ["LATCHKEY_KEY_ENCRYPTION_KEY"] = base64.b64encode(os.urandom(32)).decode()
    password = "bench-password-1"
    cli(options.bin, store, "users", "create", "bench", "--password-stdin", stdin=password + "\n")
    native = cli(options.bin, store, "clients", "create", "--type", "native", "--name", "Bench",
                 "--redirect-uri", "http://127.0.0.1/callback", "--scope", "profile")
    service = cli(options.bin, store, "clients", "create", "--type", "service", "--name", "RS", "--scope", "activity")
    # OpenID Connect relying parties: the same exchange, plus an ID token signed with each algorithm.
    relying_parties = {alg: cli(options.bin, store, "clients", "create", "--type", "native", "--name", f"RP {alg}",
                                "--redirect-uri", "http://127.0.0.1/callback", "--scope", "openid", "--scope", "profile",
                                "--id-token-signing-alg", alg)
                       for alg in ("ES256", "RS256") if want(f"code_exchange_openid_{alg.lower()}")}
    # RFC 8707 resources: the same client-credentials request naming one, with opaque and with
    # JWT (RFC 9068) access tokens signed RS256 and ES256.
    resources = {"client_credentials_resource": ("https://api.bench.example/", "opaque", "RS256"),
                 "client_credentials_jwt": ("https://jwt.bench.example/", "jwt", "RS256"),
                 "client_credentials_jwt_es256": ("https://es256.bench.example/", "jwt", "ES256")}
    for name, (uri, token_format, alg) in resources.items():
        if want(name):
            cli(options.bin, store, "resources", "add", uri, "--name", name, "--scope", "activity",
                "--token-format", token_format, "--token-signing-alg", alg)
    if options.preload:
        preload(os.path.join(workdir, "data", "latchkey.sqlite"), options.preload)

    servers, bare = [], None
    try:
        # The audit log (stderr, a line per request) is discarded, as a file would add a write per request.
        for index in range(options.instances):
            servers.append(LatchkeyServer(store, binary=options.bin, workdir=os.path.join(workdir, f"serve{index}"),
                                          keep_stderr=False))
        if options.bare:
            bare = BareServer(options.bare)
    except LatchkeyError as error:
        for server in servers:
            server.stop(timeout=30)
        raise SystemExit(str(error))
    bases = [server.base for server in servers]
    base = bases[0]
    storm = None
    try:
        basic = "Basic " + base64.b64encode(f"{service['client_id']}:{service['client_secret']}".encode()).decode()
        cookie, authorize_query, tokens = sign_in(base, native["client_id"], password)
        profile = (servers[0].pid, options.perf) if options.perf else None
        # `on`: the servers to drive (every instance unless told); perf records only Latchkey's runs.
        def run(name, script, listed=False, duration=options.duration, rate=None, on=bases):
            """wrk against `on`, adding the CPU time the Latchkey servers spent per request."""
            before = sum(cpu_seconds(server.pid) for server in servers)
            result = wrk(on, script, listed, options.threads, options.connections, duration, workdir, name,
                         profile if on is not bare_bases else None, rate)
            spent = sum(cpu_seconds(server.pid) for server in servers) - before
            result["cpu_ms_per_request"] = spent * 1000 / max(1, result["requests"]) if on is not bare_bases else None
            return result

        bare_bases = [bare.base] if bare else []
        scripts = {
            "healthz": lua_get("/healthz", {}),
            "client_credentials": lua_post("/oauth2/token", "grant_type=client_credentials", {"Authorization": basic}),
            "userinfo": lua_get("/userinfo", {"Authorization": "Bearer " + tokens["access_token"]}),
            "introspection": lua_post("/oauth2/introspect", "token=" + tokens["access_token"], {"Authorization": basic}),
        }

        results = {}
        if bare:
            results["bare"] = run("bare", scripts["healthz"], on=bare_bases)
        results["healthz"] = run("healthz", scripts["healthz"])
        first_healthz = results["healthz"]["rps"]
        # Only when named: `GET /readyz` makes one small query and nothing else, the floor of any
        # request that needs the store once (on PostgreSQL, one round trip to a backend).
        if wanted and "readyz" in wanted:
            results["readyz"] = run("readyz", lua_get("/readyz", {}))
        if want("client_credentials"):
            results["client_credentials"] = run("client_credentials", scripts["client_credentials"])
        for name, (uri, _, _) in resources.items():
            if want(name):
                results[name] = run(name, lua_post(
                    "/oauth2/token", "grant_type=client_credentials&resource=" + quote(uri, safe=""),
                    {"Authorization": basic}))
        for name in ("userinfo", "introspection"):
            if want(name):
                results[name] = run(name, scripts[name])
        openid = [f"code_exchange_openid_{alg.lower()}" for alg in relying_parties]
        if any(want(name) for name in openid):
            exchanges(run, options, workdir, base, password, native, authorize_query, cookie, relying_parties, results, want)
        elif want("code_exchange"):
            exchange_and_refresh(run, options, workdir, native, authorize_query, cookie, results, want)
        if want("native_flow"):
            results["native_flow"] = run("native_flow", native_flow(native, authorize_query, cookie))
        if want("signin_storm"):
            # The storm signs in at the first instance, so its wrk runs go there alone.
            storm = signin_storm(base, basic, password, options, lambda name, script: run(name, script, on=bases[:1]),
                                 results)

        # healthz again at the end: the baseline is the mean of both, so a slow spell of the
        # machine at the start or the end moves every ratio less.
        closing = run("healthz_after", scripts["healthz"])
        results["healthz"]["rps"] = (results["healthz"]["rps"] + closing["rps"]) / 2
        healthz_spread = (closing["rps"] - first_healthz) / first_healthz
        if bare:
            after = run("bare_after", scripts["healthz"], on=bare_bases)
            results["bare"]["rps"] = (results["bare"]["rps"] + after["rps"]) / 2

        # The paced pass: each main workload at half the rate it reached above.
        paced = {}
        if options.paced:
            # The rates to pace at: half (--paced-share) of this run's saturation, or of an earlier run's.
            pace, share = results, options.paced_share
            if options.paced_from:
                with open(options.paced_from) as earlier:
                    pace = {**results, **json.load(earlier)["saturation"]}
            for name in ("healthz", "client_credentials", "userinfo", "introspection"):
                if name in results:
                    paced[name] = run(f"{name}_paced", scripts[name], rate=pace[name]["rps"] * share)
            if "code_exchange" in results:
                rates = {name: pace[name]["rps"] * share for name in ("code_exchange", "refresh") if name in results}
                exchange_and_refresh(run, options, workdir, native, authorize_query, cookie, paced, want, rates=rates)
            if "native_flow" in results:
                paced["native_flow"] = run("native_flow_paced", native_flow(native, authorize_query, cookie),
                                           rate=pace["native_flow"]["rps"] * share)
        rss = max(peak_rss_mb(server.pid) for server in servers)
    finally:
        for server in servers:
            server.stop(timeout=30)
        if bare:
            bare.stop()

    healthz = results["healthz"]["rps"]
    instances = f", {options.instances} instances on one database" if options.instances > 1 else ""
    print(f"\nLatchkey benchmark: wrk -t{options.threads} -c{options.connections}, "
          f"{'PostgreSQL' if options.database_url else 'SQLite'}{instances}"
          f"{f', {options.preload:,} preloaded tokens' if options.preload else ''}; peak RSS {rss:.0f} MB; "
          f"healthz is the mean of a run before and after the others ({healthz_spread:+.0%} apart)\n")
    print(f"{'workload':<28}{'req/s':>10}{'× healthz':>11}{'p50 ms':>9}{'p99 ms':>9}{'CPU ms':>8}{'errors':>8}")
    for name, r in results.items():
        if name == "bare":
            continue
        rate = r["flows_per_s"] if name == "native_flow" else r["rps"]
        unit = " flows/s" if name == "native_flow" else ""
        cpu = r.get("cpu_ms_per_request")
        print(f"{name:<28}{rate:>10.0f}{rate / healthz:>11.3f}{r['p50_us'] / 1000:>9.2f}{r['p99_us'] / 1000:>9.2f}"
              f"{cpu if cpu is not None else float('nan'):>8.3f}{r['errors']:>8}{unit}")
    print("(CPU ms: the Latchkey instances' user and system CPU time per request, all instances together)")
    if bare:
        print(f"\n/healthz ÷ bare Hummingbird: {healthz:,.0f} ÷ {results['bare']['rps']:,.0f} req/s = "
              f"{healthz / results['bare']['rps']:.3f} (target ≥ {BARE_TARGET})")
    if paced:
        print_paced(paced, pace, options.paced_share)
    if storm:
        print_storm(storm, results, options)
    if options.json:
        with open(options.json, "w") as out:
            json.dump({"options": vars(options), "rss_mb": rss, "saturation": results,
                       "paced": paced, "healthz_spread": healthz_spread}, out, indent=1, default=str)
    shutil.rmtree(workdir, ignore_errors=True)


BARE_TARGET = 0.85
# At half the saturation rate, each workload's p99 against /healthz's p99 in the same paced pass.
PACED_TARGET_RATIO = 2


def print_paced(paced, results, share):
    at = "half the saturation rate" if share == 0.5 else f"{share:g} of the saturation rate"
    print(f"\nAt {at} (paced by wrk's delay(); latency from when each request was sent; "
          f"late: sent over 1 ms after its slot)\n")
    print(f"{'workload':<28}{'target/s':>10}{'req/s':>10}{'p50 ms':>9}{'p99 ms':>9}{'p99.9 ms':>10}{'late':>8}"
          f"{'errors':>8}{'p99 ÷ healthz':>15}")
    baseline = paced["healthz"]["p99_us"] if "healthz" in paced else None
    for name, r in paced.items():
        target = results[name]["rps"] * share
        late = r["late"] / max(1, r["requests"])
        ratio = r["p99_us"] / baseline if baseline else float("nan")
        verdict = "" if name == "healthz" or ratio <= PACED_TARGET_RATIO else f"  over {PACED_TARGET_RATIO}×"
        print(f"{name:<28}{target:>10.0f}{r['rps']:>10.0f}{r['p50_us'] / 1000:>9.2f}{r['p99_us'] / 1000:>9.2f}"
              f"{r['p999_us'] / 1000:>10.2f}{late:>8.1%}{r['errors']:>8}{ratio:>15.2f}{verdict}")


class BareServer:
    """The bare Hummingbird baseline (Benchmarks/BareHummingbird), on a free loopback port."""

    def __init__(self, binary):
        self.process = subprocess.Popen([binary, "0"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        line = self.process.stdout.readline().strip()
        if not line.isdigit():
            self.stop()
            raise SystemExit(f"{binary} did not start (printed {line!r})")
        self.base = f"http://127.0.0.1:{line}"

    def stop(self):
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()


def exchanges(run, options, workdir, base, password, native, authorize_query, cookie, relying_parties, results, want):
    """The plain code exchange and the exchange with openid (an ID token signed ES256, RS256) in two
    rounds, the second in the reverse order, each figure the mean of both: a run that comes later
    meets a larger store and measures slower, which would otherwise be charged to ID tokens."""
    sessions = {"code_exchange": (native, authorize_query, cookie)}
    for alg, rp in relying_parties.items():
        rp_cookie, rp_query, _ = sign_in(base, rp["client_id"], password, scope="openid profile")
        sessions[f"code_exchange_openid_{alg.lower()}"] = (rp, rp_query, rp_cookie)
    names = [name for name in sessions if want(name)]
    rounds = []
    for order in (names, list(reversed(names))):
        measured = {}
        for name in order:
            client, query, session_cookie = sessions[name]
            # Refresh runs once, over the refresh tokens of the last plain exchange.
            last = order is not names and name == "code_exchange"
            refresh = want if last else (lambda _: False)
            exchange_and_refresh(run, options, workdir, client, query, session_cookie, measured, refresh, name=name)
        if "refresh" in measured:
            results["refresh"] = measured.pop("refresh")
        rounds.append(measured)
    for name in names:
        first, second = rounds[0][name], rounds[1][name]
        results[name] = {key: (first[key] + second[key]) / 2 if key != "errors" else first[key] + second[key]
                         for key in first}


def exchange_and_refresh(run, options, workdir, native, authorize_query, cookie, results, want, name="code_exchange",
                         rates=None):
    """Code exchange over codes minted beforehand through real authorize requests (signed-in session,
    remembered consent), then refresh over the refresh tokens the exchange captured, each used once.
    `rates` paces them (requests/s by workload name); without it they saturate."""
    rates = rates or {}
    suffix = "_paced" if rates else ""
    codes_file = os.path.join(workdir, "codes-" + name + suffix)
    mint = lua_get(f"/oauth2/authorize?{authorize_query}", {"Cookie": cookie}) + lua_saver(codes_file) + r"""
function response(status, headers, body)
  local location = headers["Location"]
  if location then save(string.match(location, "code=([^&]+)")) end
end
"""
    run("mint_codes" + suffix, mint, duration=options.duration)
    gather(codes_file)
    refresh_file = os.path.join(workdir, "refresh-" + name + suffix)
    exchange_body = ('"grant_type=authorization_code&client_id=%s&redirect_uri=%s&code_verifier=%s&code=" .. value'
                     % (native["client_id"], requests.utils.quote(REDIRECT, safe=""), VERIFIER))
    capture_refresh = """
  save(string.match(body, '"refresh_token":"([^"]+)"'))
"""
    post = 'return wrk.format("POST", "/oauth2/token", {["Content-Type"]="application/x-www-form-urlencoded"}, %s)'
    # Paced, the exchange runs long enough to leave refresh tokens for the whole paced refresh run,
    # which goes faster.
    duration = options.duration
    if rates.get(name) and rates.get("refresh"):
        duration = math.ceil(options.duration * max(1.0, rates["refresh"] / rates[name]))
    results[name] = run(name + suffix, lua_from_list(
        codes_file, post % exchange_body, capture_refresh, prelude=lua_saver(refresh_file)), listed=True,
        rate=rates.get(name), duration=duration)
    gather(refresh_file)  # also when unused, so that a later round's list holds only its own tokens
    if want("refresh"):
        refresh_body = '"grant_type=refresh_token&client_id=%s&refresh_token=" .. value' % native["client_id"]
        results["refresh"] = run("refresh" + suffix, lua_from_list(refresh_file, post % refresh_body), listed=True,
                                 rate=rates.get("refresh"))


def gather(file):
    """Concatenates the per-thread files `file.<pid>.<thread>` that lua_saver wrote into `file`, and
    removes them, so that a later round's values are not mixed with these (used) ones."""
    parts = sorted(glob.glob(glob.escape(file) + ".*"))
    with open(file, "w") as out:
        for part in parts:
            with open(part) as values:
                out.write(values.read())
            os.remove(part)


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


# --------------------------------------------------------------------------------------------- sign-in storm

STORM_WARMUP = 1.0      # seconds for the storm's connections to get going before anything is measured
STORM_TARGET_P99_MS = 100
CC_ALONE, CC_STORM = "cc alone", "cc + sign-in storm"   # the two wrk rows signin_storm adds to the table


def signin_storm(base, basic, password, options, run, results):
    """Do sign-ins (bcrypt, about 0.1 s of CPU each) stall the token endpoint? Client credentials at a
    fixed rate, first alone (the baseline) and then while `--storm-connections` connections keep
    signing in; then wrk's saturation rate of client credentials, alone and during the storm. Adds
    the two wrk runs to `results` and returns the rest."""
    token = ("/oauth2/token", "grant_type=client_credentials",
             {"Authorization": basic, "Content-Type": "application/x-www-form-urlencoded"})
    figures = {"alone": fixed_rate(base, *token, options.storm_rate, options.duration)}
    with SignInStorm(base, "bench", password, options.storm_connections) as storm:
        figures["storm"] = fixed_rate(base, *token, options.storm_rate, options.duration)
    figures["signins"] = storm.figures(figures["storm"]["started"], figures["storm"]["ended"])

    script = lua_post("/oauth2/token", "grant_type=client_credentials", {"Authorization": basic})
    results[CC_ALONE] = run("cc_alone", script)
    with SignInStorm(base, "bench", password, options.storm_connections) as storm:
        since = time.monotonic()
        results[CC_STORM] = run("cc_storm", script)
        until = time.monotonic()
    figures["signins_wrk"] = storm.figures(since, until)
    return figures


def fixed_rate(base, path, body, headers, rate, duration):
    """POSTs `body` to `path` at a fixed `rate` per second for `duration` seconds, open loop: request i
    is due at start + i / rate whatever became of the ones before, and its latency counts from when
    it was due, so a server that stalls shows as latency, not as fewer requests (wrk cannot hold a
    rate). The requests are dealt round-robin to one thread per request a second (8 to 128), each
    on its own keep-alive connection."""
    address = urlparse(base)
    total = max(1, round(rate * duration))
    senders = min(total, max(8, min(128, math.ceil(rate))))
    start = time.monotonic() + 0.1
    latency = [0.0] * total
    status = [None] * total

    def send(first):
        connection = None
        for i in range(first, total, senders):
            due = start + i / rate
            pause = due - time.monotonic()
            if pause > 0:
                time.sleep(pause)
            try:
                if connection is None:
                    connection = http.client.HTTPConnection(address.hostname, address.port, timeout=60)
                connection.request("POST", path, body, headers)
                response = connection.getresponse()
                response.read()
                status[i] = response.status
                if response.will_close:
                    connection.close()
                    connection = None
            except (OSError, http.client.HTTPException) as error:
                status[i] = type(error).__name__
                if connection:
                    connection.close()
                connection = None
            latency[i] = time.monotonic() - due
        if connection:
            connection.close()

    threads = [threading.Thread(target=send, args=(first,)) for first in range(senders)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    ordered = sorted(latency)
    answers = collections.Counter(status)
    return {"requests": total, "non_200": total - answers[200], "answers": answers,
            "p50_ms": percentile(ordered, 50) * 1000, "p99_ms": percentile(ordered, 99) * 1000,
            "max_ms": ordered[-1] * 1000, "started": start, "ended": time.monotonic()}


def percentile(ordered, p):
    """Nearest-rank percentile of an ascending list."""
    return ordered[min(len(ordered) - 1, max(0, math.ceil(p / 100 * len(ordered)) - 1))] if ordered else float("nan")


class SignInStorm:
    """`connections` threads that each keep signing `username` in through the sign-in form: a fresh
    browser session each time (GET /login for the form and its CSRF token, POST /login, a real
    password check), on one keep-alive connection per thread, until the `with` block ends (and the
    sign-ins under way have been answered). The threads live in a child process, so that their Python
    work does not delay the clocks of whatever measures in this one. A refusal (429, 503, or any answer
    but the 303 of a sign-in) is followed by a 0.1 s pause rather than at once by the next attempt."""

    def __init__(self, base, username, password, connections):
        context = multiprocessing.get_context("fork")
        self.stop = context.Event()
        self.outcome = context.Queue()
        self.process = context.Process(target=_storm, daemon=True,
                                       args=(base, username, password, connections, self.stop, self.outcome))
        self.records = None

    def __enter__(self):
        self.process.start()
        time.sleep(STORM_WARMUP)
        return self

    def __exit__(self, *exception):
        self.stop.set()
        try:
            self.records = self.outcome.get(timeout=300)
        except Exception:
            self.process.kill()
            raise SystemExit("the sign-in storm gave no result")
        self.process.join(timeout=30)

    def figures(self, since, until):
        """Sign-ins answered between `since` and `until` (time.monotonic(), which the processes share)."""
        inside = [(status, seconds) for finished, status, seconds in self.records if since <= finished <= until]
        answers = collections.Counter(status for status, _ in inside)
        signed_in = sorted(seconds for status, seconds in inside if status == 303)
        return {"per_s": len(signed_in) / (until - since), "signed_in": len(signed_in), "429": answers[429],
                "503": answers[503], "other": {k: v for k, v in answers.items() if k not in (303, 429, 503)},
                "p50_ms": percentile(signed_in, 50) * 1000, "p99_ms": percentile(signed_in, 99) * 1000}


def _storm(base, username, password, connections, stop, outcome):
    """The child process of a SignInStorm: puts [(finished, status, seconds)] on `outcome` when stopped."""
    records, lock = [], threading.Lock()

    def sign_in_again_and_again():
        browser = requests.Session()
        while not stop.is_set():
            browser.cookies.clear()
            began = time.monotonic()
            try:
                page = browser.get(base + "/login", timeout=300)
                status = page.status_code
                if status == 200:
                    status = browser.post(base + "/login", allow_redirects=False, timeout=300, data={
                        **hidden_fields(page.text), "username": username, "password": password}).status_code
            except requests.RequestException as error:
                status = type(error).__name__
            finished = time.monotonic()
            with lock:
                records.append((finished, status, finished - began))
            if status != 303:
                stop.wait(0.1)

    threads = [threading.Thread(target=sign_in_again_and_again) for _ in range(connections)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    outcome.put(records)


def print_storm(storm, results, options):
    def others(answers, expected):
        odd = sorted((str(k), v) for k, v in answers.items() if k not in expected)
        return f"  ({', '.join(f'{k} ×{v}' for k, v in odd)})" if odd else ""

    print(f"\nSign-in storm: client credentials at a fixed {options.storm_rate:g} req/s for {options.duration} s, "
          f"alone and while {options.storm_connections} connections keep signing in\n"
          f"(latency counted from when each request was due)\n")
    print(f"{'client credentials':<20}{'requests':>10}{'non-200':>9}{'p50 ms':>9}{'p99 ms':>9}{'max ms':>9}")
    for label, r in (("alone", storm["alone"]), ("during the storm", storm["storm"])):
        print(f"{label:<20}{r['requests']:>10}{r['non_200']:>9}{r['p50_ms']:>9.2f}{r['p99_ms']:>9.2f}"
              f"{r['max_ms']:>9.2f}{others(r['answers'], (200,))}")
    p99 = storm["storm"]["p99_ms"]
    verdict = "met" if p99 <= STORM_TARGET_P99_MS else "not met"
    print(f"target p99 ≤ {STORM_TARGET_P99_MS} ms during the storm: {verdict} "
          f"({p99 / max(storm['alone']['p99_ms'], 0.001):.1f} × the p99 alone)\n")
    print(f"{'sign-ins':<20}{'per s':>10}{'done':>9}{'429':>9}{'503':>9}{'p50 ms':>9}{'p99 ms':>9}")
    for label, s in (("during fixed rate", storm["signins"]), ("during wrk", storm["signins_wrk"])):
        print(f"{label:<20}{s['per_s']:>10.1f}{s['signed_in']:>9}{s['429']:>9}{s['503']:>9}{s['p50_ms']:>9.0f}"
              f"{s['p99_ms']:>9.0f}{others(s['other'], ())}")
    alone, during = results[CC_ALONE]["rps"], results[CC_STORM]["rps"]
    print(f"\nclient credentials saturation (wrk): {alone:,.0f} req/s alone, {during:,.0f} during the storm "
          f"({during / alone:.2f} ×)")


def preload(database, count):
    """Bulk-loads `count` live access tokens straight into SQLite (one transaction, recursive CTE),
    as split tokens issued one a millisecond over the time before now: each row keyed by its
    selector (the issue time in milliseconds and 6 random bytes, in hex) with its verifier's digest.

    Loaded with a rollback journal and a 1 GB page cache, then switched back to WAL: through the
    WAL, ten million rows were written twice (log, then checkpoint)."""
    started = time.time()
    first_ms = int(started * 1000) - count
    sql = f"""
PRAGMA journal_mode=DELETE;
PRAGMA cache_size=-1000000;
BEGIN;
INSERT INTO grants (id, client_id, user_id, scope, created_at) VALUES ('preload', 'preload', NULL, 'profile', 0);
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {count})
INSERT INTO tokens (hash, verifier, kind, grant_id, client_id, user_id, scope, created_at, expires_at)
SELECT printf('%012x', {first_ms} + i) || lower(hex(randomblob(6))), lower(hex(randomblob(32))), 'access', 'preload',
    'preload', NULL, 'profile', ({first_ms} + i) / 1000.0, 4102444800 FROM n;
COMMIT;
PRAGMA journal_mode=WAL;
"""
    subprocess.run(["sqlite3", database], input=sql, text=True, check=True, capture_output=True)
    print(f"preloaded {count:,} tokens in {time.time() - started:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
