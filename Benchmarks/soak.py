"""The soak (`scripts/bench --soak MINUTES`): does anything drift over hours of a mixed load?

One server on a fresh SQLite store (or two on one PostgreSQL database, with --database-url) carries
a mixed load at half the rate it reached at saturation (or at --soak-rate, to compare two builds at
one rate), window after window (--soak-window, 300 s):

  - wrk (-t2 -c64 by default) keeps every grant going, each thread through a fixed cycle: authorize
    with a signed-in session and remembered consent (a code), code exchange with PKCE, refresh
    chains (each refresh token used once, its successor queued), `/userinfo`, introspection, client
    credentials (opaque, and a JWT signed ES256 for a resource), token exchange of the user's access
    token, and revocation of the refresh tokens of every other exchange (RFC 7009);
  - a child process signs in through the sign-in form (a password check) and approves a device
    authorization (RFC 8628) with that session, then polls for its token, --soak-signins times a
    second;
  - the purge runs every minute (--purge-interval 60), over lifetimes short enough that it has
    something to do: codes 60 s, access tokens 120 s, refresh tokens 300 s, sessions 600 s.

Every few seconds it samples each server's resident memory and open files, the store's size (the
SQLite file and its WAL, or PostgreSQL's database and WAL), its rows, and from each server's
metrics (on, as an operator would run it) the time its purges took and the rows they deleted; for
each window it reports those with the window's p99 and errors, and the share of the machine's CPU
time that its host stole and that its cores spent waiting for the disk (/proc/stat), since on a
shared virtual machine those move p99 as much as the server does. The target: after the first
window, RSS and p99 within 10 % of their median over the later windows, no error, and a store
whose size levels off once the purge keeps up (lifetime plus the 600 s kept for replays, so from
about 16 minutes in). Since each window before that deletes more than the one before, the report
also gives p99's spread over the windows that began after it, when there are two (a soak of 30
minutes or more): the windows in which a rise would be drift rather than the purge's growing work.
With --soak-plot FILE it draws RSS and p99 over time as an SVG.

--soak-control is the same run with nothing that could drift: wrk sends only `GET /healthz`, at
half the rate it reached alone, and there is no side load; the purge runs but finds nothing. Its
windows' p99 moves only with the host (the cores wrk shares, what the hypervisor takes), so its
spread is the floor under the mix's: a target tighter than it cannot be told from noise here.
"""
import collections
import json
import multiprocessing
import os
import re
import statistics
import subprocess
import threading
import time
from urllib.parse import quote, urljoin

import requests

from latchkey_process import LatchkeyError, LatchkeyServer, hidden_fields

SAMPLE_SECONDS = 5
# Rows are counted less often: a count(*) of a million tokens reads most of the file, and every
# 5 s that would be a load of the soak's own beside the server's. Samples between keep the last counts.
ROW_COUNT_SECONDS = 30
CALIBRATION_SECONDS = 20
DRIFT_LIMIT = 0.10
# When the store stops growing: the longest lifetime in SETTINGS (refresh tokens, 300 s), the 600 s
# expired codes and tokens are kept for replays, and one purge interval. Before it, each window
# deletes more than the one before; from it, the purge deletes what the mix makes.
LEVELS_OFF_SECONDS = 300 + 600 + 60
# Lifetimes short enough for the purge to have work within the soak; the side load enters a device
# code a second from one address, which the per-address limit (right or wrong codes) would stop.
SETTINGS = ["--code-lifetime", "60", "--access-token-lifetime", "120", "--refresh-token-lifetime", "300",
            "--session-lifetime", "600", "--purge-interval", "60", "--device-poll-interval", "1",
            "--user-code-attempts-per-address", "1000000", "--metrics-address", "0"]
# The tables whose rows the purge bounds, and the ones it does not touch, counted each sample.
COUNTED = ["tokens", "grants", "authorization_codes", "sessions", "device_authorizations", "audit_events"]
DEVICE_CODE = "urn:ietf:params:oauth:grant-type:device_code"
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"


def mixed_script(bench, native, service_basic, exchanger_basic, resource, kept_query, doomed_query, cookie, errors):
    """The wrk script of the mix. A thread's requests follow CYCLE; a request whose input is missing
    (no code, refresh token or access token queued yet) becomes an authorization request instead.
    Responses are told apart by what they hold: a redirect with a code, or a token response whose
    scope says which authorization it came from (`profile` is kept and refreshed; `profile activity`
    is revoked), so that no request ever uses a token another one revoked. Every answer of 400 or
    above is written, with the start of its body, to the files `errors.<pid>.<thread>`."""
    form = '{["Content-Type"]="application/x-www-form-urlencoded"%s}'
    service = form % f', ["Authorization"]="{service_basic}"'
    exchanger = form % f', ["Authorization"]="{exchanger_basic}"'
    plain = form % ""
    client = native["client_id"]
    redirect = quote(bench.REDIRECT, safe="")
    return bench.lua_saver(errors) + r"""
local CYCLE = {"authorize_kept", "exchange", "userinfo", "refresh", "introspect", "client_credentials",
  "authorize_doomed", "exchange", "refresh", "userinfo", "client_credentials_jwt", "token_exchange", "revoke",
  "introspect"}
local NEEDS = {exchange = "codes", refresh = "chains", revoke = "doomed", userinfo = "access",
  introspect = "access", token_exchange = "access"}
local queues = {codes = {}, chains = {}, doomed = {}, access = {}}
local LIMIT = 32
local step = 0
local flip = false
local function push(name, value)
  local queue = queues[name]
  queue[#queue + 1] = value
  if #queue > LIMIT then table.remove(queue, 1) end
end
local function newest(name) local queue = queues[name]; return queue[#queue] end
local function oldest(name) return table.remove(queues[name], 1) end
function request()
  step = step %% #CYCLE + 1
  local op = CYCLE[step]
  local need = NEEDS[op]
  if need and #queues[need] == 0 then
    flip = not flip
    op = flip and "authorize_kept" or "authorize_doomed"
  end
  if op == "authorize_kept" then
    return wrk.format("GET", "/oauth2/authorize?%s", {["Cookie"]="%s"})
  elseif op == "authorize_doomed" then
    return wrk.format("GET", "/oauth2/authorize?%s", {["Cookie"]="%s"})
  elseif op == "exchange" then
    return wrk.format("POST", "/oauth2/token", %s,
      "grant_type=authorization_code&client_id=%s&redirect_uri=%s&code_verifier=%s&code=" .. oldest("codes"))
  elseif op == "refresh" then
    return wrk.format("POST", "/oauth2/token", %s, "grant_type=refresh_token&client_id=%s&refresh_token=" .. oldest("chains"))
  elseif op == "revoke" then
    return wrk.format("POST", "/oauth2/revoke", %s,
      "token_type_hint=refresh_token&client_id=%s&token=" .. oldest("doomed"))
  elseif op == "userinfo" then
    return wrk.format("GET", "/userinfo", {["Authorization"]="Bearer " .. newest("access")})
  elseif op == "introspect" then
    return wrk.format("POST", "/oauth2/introspect", %s, "token=" .. newest("access"))
  elseif op == "client_credentials" then
    return wrk.format("POST", "/oauth2/token", %s, "grant_type=client_credentials")
  elseif op == "client_credentials_jwt" then
    return wrk.format("POST", "/oauth2/token", %s, "grant_type=client_credentials&resource=%s")
  else
    return wrk.format("POST", "/oauth2/token", %s,
      "grant_type=%s&subject_token_type=%s&subject_token=" .. newest("access"))
  end
end
function response(status, headers, body)
  if status >= 400 then save(status .. " " .. string.gsub(string.sub(body, 1, 160), "\n", " ")) end
  local location = headers["Location"]
  if location then
    local code = string.match(location, "[?&]code=([^&]+)")
    if code then push("codes", code) end
    return
  end
  local refresh = string.match(body, '"refresh_token":"([^"]+)"')
  if not refresh then return end
  if string.match(body, '"scope":"profile"') then
    push("chains", refresh)
    push("access", string.match(body, '"access_token":"([^"]+)"'))
  else
    push("doomed", refresh)
  end
end
""" % (kept_query, cookie, doomed_query, cookie,
       plain, client, redirect, bench.VERIFIER,
       plain, client,
       plain, client,
       service,
       service,
       service, quote(resource, safe=""),
       exchanger, quote(TOKEN_EXCHANGE, safe=""), quote(ACCESS_TOKEN_TYPE, safe="")) + bench.LUA_DONE


class Store:
    """The store's size and rows: the SQLite file and its WAL, or PostgreSQL's database and WAL."""

    def __init__(self, data_dir=None, database_url=None):
        self.data_dir, self.database_url = data_dir, database_url
        if database_url:
            bins = sorted(os.listdir("/usr/lib/postgresql"), key=lambda v: [int(p) for p in v.split(".")])
            self.psql = f"/usr/lib/postgresql/{bins[-1]}/bin/psql"

    def sample(self, count_rows=True):
        counts = " UNION ALL ".join(f"SELECT '{table}', count(*) FROM {table}" for table in COUNTED)
        if not count_rows:
            counts = "SELECT 'none', 0"
        if self.database_url:
            query = (f"SELECT 'db', pg_database_size(current_database()) UNION ALL "
                     f"SELECT 'wal', coalesce(sum(size), 0) FROM pg_ls_waldir() UNION ALL {counts}")
            output = subprocess.run([self.psql, "-qAtF", "|", self.database_url, "-c", query],
                                    capture_output=True, text=True, timeout=60).stdout
        else:
            database = os.path.join(self.data_dir, "latchkey.sqlite")
            output = subprocess.run(["sqlite3", "-readonly", "-separator", "|", database, counts],
                                    capture_output=True, text=True, timeout=60).stdout
            output += f"\ndb|{size(database)}\nwal|{size(database + '-wal')}"
        values = dict(line.split("|") for line in output.splitlines() if "|" in line)
        return {"db_mb": int(values.get("db", 0)) / 1e6, "wal_mb": int(values.get("wal", 0)) / 1e6,
                "rows": {table: int(values[table]) for table in COUNTED if table in values}}


def refusals(bench, errors):
    """Prints the kinds of error answers wrk's threads wrote down in the last run, and forgets them."""
    bench.gather(errors)
    with open(errors) as lines:
        kinds = collections.Counter(line.strip()[:100] for line in lines)
    for kind, count in kinds.most_common(5):
        print(f"    {count} × {kind}", flush=True)


def size(path):
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def process_sample(pid):
    with open(f"/proc/{pid}/status") as status:
        rss = next(int(line.split()[1]) / 1024 for line in status if line.startswith("VmRSS:"))
    return {"rss_mb": rss, "files": len(os.listdir(f"/proc/{pid}/fd"))}


PURGE_SERIES = re.compile(r"^(latchkey_purge_duration_seconds_sum|latchkey_purge_duration_seconds_count"
                          r"|latchkey_purged_rows_total) (\S+)$", re.MULTILINE)


# SQLite's checkpoints: `passive` beside the writer, `writer` when the WAL passed its limit.
CHECKPOINT_SERIES = re.compile(r'^latchkey_sqlite_checkpoint_duration_seconds_(sum|count)\{mode="(\w+)"\} (\S+)$',
                               re.MULTILINE)
# The counters sampled from each server's metrics, totals since it started.
HOUSEKEEPING = ("purge_s", "purges", "purged", "checkpoint_s", "writer_checkpoints")


def purge_sample(server):
    """The server's housekeeping so far, from its metrics: the purges' seconds, runs and rows
    deleted; the seconds its SQLite checkpoints took beside the writer, and how many the writer ran."""
    with open(server.ready_file) as ready:
        port = json.load(ready)["metrics_port"]
    text = requests.get(f"http://127.0.0.1:{port}/metrics", timeout=60).text
    values = {name: float(value) for name, value in PURGE_SERIES.findall(text)}
    checkpoints = {(field, mode): float(value) for field, mode, value in CHECKPOINT_SERIES.findall(text)}
    return {"purge_s": values.get("latchkey_purge_duration_seconds_sum", 0.0),
            "purges": values.get("latchkey_purge_duration_seconds_count", 0.0),
            "purged": values.get("latchkey_purged_rows_total", 0.0),
            "checkpoint_s": checkpoints.get(("sum", "passive"), 0.0),
            "writer_checkpoints": checkpoints.get(("count", "writer"), 0.0)}


def host_sample():
    """The machine's CPU time so far, in clock ticks, from /proc/stat's first line: all of it, the
    time stolen by the host (a virtual machine's neighbours), and the time idle waiting for I/O."""
    with open("/proc/stat") as stat:
        fields = [int(value) for value in stat.readline().split()[1:9]]
    return {"host_ticks": sum(fields), "steal_ticks": fields[7], "iowait_ticks": fields[4]}


class Sampler(threading.Thread):
    """Samples the servers and the store every SAMPLE_SECONDS until stopped."""

    def __init__(self, servers, store, started):
        super().__init__(daemon=True)
        self.servers, self.store, self.started = servers, store, started
        self.samples, self.done = [], threading.Event()
        self.rows, self.rows_counted = {}, None

    def run(self):
        while True:
            self.samples.append(self.take())
            if self.done.wait(SAMPLE_SECONDS):
                self.samples.append(self.take())
                return

    def take(self):
        processes = [process_sample(server.pid) for server in self.servers]
        purges = [purge_sample(server) for server in self.servers]
        now = time.monotonic()
        count_rows = self.rows_counted is None or now - self.rows_counted >= ROW_COUNT_SECONDS or self.done.is_set()
        sample = self.store.sample(count_rows)
        if count_rows:
            self.rows, self.rows_counted = sample["rows"], now
        return {"t": now - self.started, "rss_mb": max(p["rss_mb"] for p in processes),
                "files": max(p["files"] for p in processes), **sample, "rows": self.rows,
                **{key: sum(p[key] for p in purges) for key in HOUSEKEEPING}, **host_sample()}


def side_load(base, username, password, device_client, per_second, stop, outcome):
    """The child process: signs in through the form, then approves a device authorization with
    that session and polls for its token, `per_second` times a second, open loop. Puts
    {"done", "failures": [(when, what)]} on `outcome` when stopped."""
    done, failures = 0, []
    next_at = time.monotonic()
    while not stop.is_set():
        stop.wait(max(0.0, next_at - time.monotonic()))
        next_at += 1 / per_second
        browser = requests.Session()
        try:
            step = "sign-in page"
            page = browser.get(base + "/login", timeout=60)
            step = "sign-in"
            answer = browser.post(base + "/login", allow_redirects=False, timeout=60,
                                  data={**hidden_fields(page.text), "username": username, "password": password})
            assert answer.status_code == 303, answer.status_code
            step = "device authorization"
            device = requests.post(base + "/oauth2/device_authorization", timeout=60,
                                   data={"client_id": device_client, "scope": "profile"}).json()
            step = "user code"
            form = browser.get(base + "/device", params={"user_code": device["user_code"]}, timeout=60)
            entered = browser.post(base + "/device", allow_redirects=False, timeout=60,
                                   data={**hidden_fields(form.text), "user_code": device["user_code"]})
            step = "device consent"
            consent = entered  # signed in already: the consent page at once
            if entered.status_code == 303:
                consent = browser.get(urljoin(base, entered.headers["Location"]), timeout=60)
            assert "comes from another device" in consent.text, consent.status_code
            decided = browser.post(base + "/oauth2/authorize", allow_redirects=False, timeout=60,
                                   data=[*hidden_fields(consent.text).items(), ("decision", "allow"),
                                         ("scope", "profile")])
            assert decided.status_code == 303, decided.status_code
            step = "device token"
            token = requests.post(base + "/oauth2/token", timeout=60, data={
                "grant_type": DEVICE_CODE, "device_code": device["device_code"], "client_id": device_client})
            assert token.status_code == 200, token.text[:200]
            done += 1
        except (AssertionError, KeyError, requests.RequestException) as error:
            failures.append((time.monotonic(), f"{step}: {type(error).__name__} {error}"[:200]))
    outcome.put({"done": done, "failures": failures})


def run(bench, options):
    """The soak; `bench` is Benchmarks/bench.py (its wrk driver, sign-in and CLI helpers)."""
    workdir = bench.tempfile.mkdtemp(prefix="latchkey-soak-")
    data_dir = os.path.join(workdir, "data")
    store = ["--database-url", options.database_url] if options.database_url else ["--data-dir", data_dir]
    if options.database_url and "LATCHKEY_KEY_ENCRYPTION_KEY" not in os.environ:
        os.environ["LATCHKEY_KEY_ENCRYPTION_KEY"] = bench.base64.b64encode(os.urandom(32)).decode()
    password = "bench-password-1"
    cli = lambda *arguments, stdin=None: bench.cli(options.bin, store, *arguments, stdin=stdin)
    cli("users", "create", "bench", "--password-stdin", stdin=password + "\n")
    native = cli("clients", "create", "--type", "native", "--name", "Soak app", "--redirect-uri",
                 "http://127.0.0.1/callback", "--scope", "profile", "--scope", "activity")
    service = cli("clients", "create", "--type", "service", "--name", "Soak service", "--scope", "activity")
    exchanger = cli("clients", "create", "--type", "service", "--name", "Soak backend", "--scope", "profile",
                    "--allow-token-exchange")
    tv = cli("clients", "create", "--type", "native", "--name", "Soak TV", "--scope", "profile", "--allow-device-code")
    resource = "https://soak.bench.example/"
    cli("resources", "add", resource, "--name", "Soak API", "--scope", "activity", "--token-format", "jwt",
        "--token-signing-alg", "ES256")
    basic = lambda c: "Basic " + bench.base64.b64encode(f"{c['client_id']}:{c['client_secret']}".encode()).decode()

    servers = []
    try:
        for index in range(options.instances):
            servers.append(LatchkeyServer([*store, *SETTINGS], binary=options.bin, keep_stderr=False,
                                          workdir=os.path.join(workdir, f"serve{index}")))
    except LatchkeyError as error:
        for server in servers:
            server.stop(timeout=30)
        raise SystemExit(str(error))
    bases = [server.base for server in servers]
    sampler = Sampler(servers, Store(data_dir=data_dir, database_url=options.database_url), time.monotonic())
    side = None
    try:
        def script():
            """The mix with a fresh signed-in session (each window gets one: sessions last 600 s), or
            with --soak-control `GET /healthz` alone."""
            if options.soak_control:
                return bench.lua_get("/healthz", {})
            cookie, query, _ = bench.sign_in(bases[0], native["client_id"], password, scope="profile activity")
            kept = query.replace("scope=profile+activity", "scope=profile")
            assert kept != query, query
            return mixed_script(bench, native, basic(service), basic(exchanger), resource, kept, query, cookie,
                                errors)

        errors = os.path.join(workdir, "errors")
        run_wrk = lambda name, duration, rate=None: bench.wrk(
            bases, script(), False, options.threads, options.connections, duration, workdir, name, None, rate)
        saturation = run_wrk("soak_saturation", options.soak_calibration)
        rate = options.soak_rate or saturation["rps"] / 2
        load = "GET /healthz" if options.soak_control else "the mix"
        print(f"soak: {load} saturated at {saturation['rps']:,.0f} req/s ({saturation['errors']} errors); "
              f"soaking at {rate:,.0f} req/s{' (--soak-rate)' if options.soak_rate else ''} for {options.soak} min",
              flush=True)
        context = multiprocessing.get_context("fork")
        stop, outcome = context.Event(), context.Queue()
        if not options.soak_control:
            side = context.Process(target=side_load, daemon=True, args=(
                bases[0], "bench", password, tv["client_id"], options.soak_signins, stop, outcome))
            # The side load forks before the sampler's thread starts: a fork while that thread is
            # starting sqlite3 or psql would hand the child the pipe the parent then waits on.
            side.start()
        sampler.started = time.monotonic()
        sampler.start()
        windows = []
        remaining = max(1, round(options.soak * 60))
        while remaining > 0:
            length = min(options.soak_window, remaining)
            began = time.monotonic() - sampler.started
            result = run_wrk(f"soak_window_{len(windows) + 1}", length, rate=rate)
            windows.append({"began": began, "ended": time.monotonic() - sampler.started, **result})
            print(f"  window {len(windows)}: {result['rps']:,.0f} req/s, p99 {result['p99_us'] / 1000:.1f} ms, "
                  f"{result['errors']} errors, {result['late']} late", flush=True)
            refusals(bench, errors)
            remaining -= length
        stop.set()
        side_result = {"done": 0, "failures": []}
        if side:
            side_result = outcome.get(timeout=300)
            side.join(timeout=30)
        sampler.done.set()
        sampler.join(timeout=120)
    finally:
        if side and side.is_alive():
            side.kill()
        for server in servers:
            server.stop(timeout=30)
    report = summarize(windows, sampler.samples, side_result, saturation, rate, sampler.started)
    print_report(report, options)
    if options.json:
        with open(options.json, "w") as out:
            json.dump({"options": vars(options), "soak": report}, out, indent=1, default=str)
    if options.soak_plot:
        os.makedirs(os.path.dirname(os.path.abspath(options.soak_plot)), exist_ok=True)
        with open(options.soak_plot, "w") as out:
            out.write(plot(report, options))
    bench.shutil.rmtree(workdir, ignore_errors=True)
    if not report["verdict"]["no_errors"]:
        raise SystemExit("soak: there were errors")


def summarize(windows, samples, side, saturation, rate, started):
    rows = []
    # The purges' counters are totals since start: a window's share is the growth over it.
    at = lambda t, key: ([s[key] for s in samples if s["t"] <= t] or [0])[-1]
    grew = lambda window, key: at(window["ended"], key) - at(window["began"], key)
    for index, window in enumerate(windows):
        inside = [s for s in samples if window["began"] <= s["t"] <= window["ended"] + SAMPLE_SECONDS] or samples[-1:]
        last = inside[-1]
        failures = sum(1 for when, _ in side["failures"] if window["began"] <= when - started < window["ended"])
        rows.append({"window": index + 1, "minutes": round(window["ended"] / 60, 1), "ended": window["ended"],
                     "rps": window["rps"],
                     "p50_ms": window["p50_us"] / 1000, "p99_ms": window["p99_us"] / 1000,
                     "errors": window["errors"], "side_failures": failures, "late": window["late"],
                     "rss_mb": max(s["rss_mb"] for s in inside), "files": max(s["files"] for s in inside),
                     "db_mb": last["db_mb"], "wal_mb": max(s["wal_mb"] for s in inside), "rows": last["rows"],
                     **{key: grew(window, key) for key in HOUSEKEEPING},
                     # What the host took from this machine, and how long its cores waited for the disk.
                     **{f"{key}_pct": 100 * grew(window, f"{key}_ticks") / max(1, grew(window, "host_ticks"))
                        for key in ("steal", "iowait")}})
    later = rows[1:] or rows
    drift = lambda key, among=later: max(abs(r[key] / statistics.median(x[key] for x in among) - 1) for r in among)
    errors = sum(r["errors"] for r in rows) + len(side["failures"])
    verdict = {"rss_drift": drift("rss_mb"), "p99_drift": drift("p99_ms"), "errors": errors,
               "no_errors": errors == 0 and saturation["errors"] == 0}
    # The same p99 measure over the windows that began once the store levelled off, when there are
    # two: growth in them is drift, where before it the purge's work was still rising.
    steady = [r for r, w in zip(rows, windows) if w["began"] >= LEVELS_OFF_SECONDS]
    if len(steady) >= 2:
        verdict.update(steady_from=steady[0]["window"], steady_p99_drift=drift("p99_ms", steady))
    return {"rate": rate, "saturation_rps": saturation["rps"], "windows": rows, "samples": samples,
            "side": {"done": side["done"], "failures": [(when - started, what) for when, what in side["failures"][:20]]},
            "verdict": verdict}


def print_report(report, options):
    store = "PostgreSQL, two instances" if options.database_url else "SQLite"
    share = "set by --soak-rate; the calibration reached" if options.soak_rate else "half of"
    load = (f"GET /healthz alone at {report['rate']:,.0f} req/s ({share} {report['saturation_rps']:,.0f}), "
            "nothing beside it (--soak-control)" if options.soak_control else
            f"the mix at {report['rate']:,.0f} req/s ({share} {report['saturation_rps']:,.0f}), "
            f"{report['side']['done']} sign-ins with a device flow beside it")
    print(f"\nSoak: {options.soak} min on {store}, {load}\n")
    tables = COUNTED
    print(f"{'window':>6}{'min':>6}{'req/s':>8}{'p50 ms':>8}{'p99 ms':>8}{'err':>5}{'RSS MB':>8}{'files':>6}"
          f"{'db MB':>8}{'WAL MB':>8}{'purges':>7}{'purge s':>8}{'purged':>9}{'ckpt s':>7}{'by writer':>10}"
          f"{'steal %':>8}{'iowait %':>9}  "
          + " ".join(f"{t[:12]:>12}" for t in tables))
    for r in report["windows"]:
        print(f"{r['window']:>6}{r['minutes']:>6}{r['rps']:>8.0f}{r['p50_ms']:>8.2f}{r['p99_ms']:>8.2f}{r['errors'] + r['side_failures']:>5}"
              f"{r['rss_mb']:>8.1f}{r['files']:>6}{r['db_mb']:>8.1f}{r['wal_mb']:>8.1f}"
              f"{r['purges']:>7.0f}{r['purge_s']:>8.2f}{r['purged']:>9.0f}"
              f"{r['checkpoint_s']:>7.1f}{r['writer_checkpoints']:>10.0f}"
              f"{r['steal_pct']:>8.1f}{r['iowait_pct']:>9.1f}  "
              + " ".join(f"{r['rows'].get(t, 0):>12}" for t in tables))
    v = report["verdict"]
    ok = lambda x: "met" if x <= DRIFT_LIMIT else "not met"
    print(f"\nafter the first window: RSS within {v['rss_drift']:.1%} of its median ({ok(v['rss_drift'])}), "
          f"p99 within {v['p99_drift']:.1%} ({ok(v['p99_drift'])}); errors: {v['errors']}")
    if "steady_from" in v and not options.soak_control:
        print(f"once the store levelled off (window {v['steady_from']} on, {LEVELS_OFF_SECONDS // 60} min in): "
              f"p99 within {v['steady_p99_drift']:.1%} of its median ({ok(v['steady_p99_drift'])})")
    for when, what in report["side"]["failures"]:
        print(f"  the side load failed {when:.0f} s in: {what}")


def plot(report, options):
    """An SVG of RSS and the store's size (every sample) and p99 (every window) over the soak's minutes."""
    width, height, left, right, top, panel, gap = 720, 620, 60, 20, 30, 150, 50
    samples, windows = report["samples"], report["windows"]
    load = "GET /healthz alone" if options.soak_control else "the mix"
    end = max([s["t"] for s in samples] + [1]) / 60

    def axis(y0, values, label, unit):
        high = max(values + [1]) * 1.15
        x = lambda minutes: left + (width - left - right) * minutes / end
        y = lambda value: y0 + panel - panel * value / high
        parts = [f'<text x="{left}" y="{y0 - 8}" font-size="13">{label}</text>',
                 f'<line x1="{left}" y1="{y0 + panel}" x2="{width - right}" y2="{y0 + panel}" stroke="#888"/>',
                 f'<line x1="{left}" y1="{y0}" x2="{left}" y2="{y0 + panel}" stroke="#888"/>']
        for fraction in (0, 0.5, 1):
            value = high * fraction
            parts.append(f'<text x="{left - 6}" y="{y(value) + 4:.1f}" font-size="11" text-anchor="end">'
                         f'{value:.0f}{unit}</text>')
        return x, y, parts

    body = []
    x, y, parts = axis(top, [s["rss_mb"] for s in samples], "Resident memory (MB), the larger instance", "")
    body += parts
    body.append('<polyline fill="none" stroke="#1f6feb" stroke-width="1.5" points="'
                + " ".join(f"{x(s['t'] / 60):.1f},{y(s['rss_mb']):.1f}" for s in samples) + '"/>')
    y0 = top + panel + gap
    x, y, parts = axis(y0, [w["p99_ms"] for w in windows], f"p99 latency of {load} (ms), per window", "")
    body += parts
    previous = 0
    for w in windows:
        body.append(f'<line x1="{x(previous):.1f}" y1="{y(w["p99_ms"]):.1f}" x2="{x(w["ended"] / 60):.1f}" '
                    f'y2="{y(w["p99_ms"]):.1f}" stroke="#d1242f" stroke-width="2"/>')
        previous = w["ended"] / 60
    y0 += panel + gap
    size = "PostgreSQL's pg_database_size" if options.database_url else "the SQLite file, without its WAL"
    x, y, parts = axis(y0, [s["db_mb"] for s in samples], f"The store's size (MB): {size}", "")
    body += parts
    body.append('<polyline fill="none" stroke="#1a7f37" stroke-width="1.5" points="'
                + " ".join(f"{x(s['t'] / 60):.1f},{y(s['db_mb']):.1f}" for s in samples) + '"/>')
    for minutes in range(0, int(end) + 1, max(1, int(end) // 6 or 1)):
        body.append(f'<text x="{x(minutes):.1f}" y="{y0 + panel + 16}" font-size="11" text-anchor="middle">'
                    f'{minutes} min</text>')
    store = "PostgreSQL, two instances" if options.database_url else "SQLite"
    title = f"Soak: {options.soak} min on {store}, {load} at {report['rate']:,.0f} req/s"
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'font-family="sans-serif" role="img" aria-label="{title}">\n<title>{title}</title>\n'
            f'<rect width="100%" height="100%" fill="white"/>\n' + "\n".join(body) + "\n</svg>\n")
