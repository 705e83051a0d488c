#!/usr/bin/env python3
"""Property-based fuzzing of Latchkey's JSON and form endpoints against docs/openapi.yaml.

Starts `latchkey serve --dev` on a free loopback port with a throwaway data directory (through
Tests/Support/latchkey_process.py), registers a service client with the CLI, signs the demo user in
(PKCE, as a native app) to get a user access token with scope `profile`, then runs Schemathesis
(examples, coverage and fuzzing phases, seeded) with HTTP Basic for the client endpoints and that
bearer token for /userinfo, a service client's latchkey:admin token for the admin API, and a
dynamically registered client's registration access token for RFC 7592. Every response must be no
5xx, conform to the description (status, headers, content type, body), and pass the extra checks in
hooks.py, and every operation must answer 2xx at least once (hooks.py mixes in known-good requests).
Prints what was tried; exits non-zero on any failure.

    python3 Tests/Fuzz/run_fuzz.py [--max-examples N] [--seed S] [schemathesis options...]

The binary is $LATCHKEY_BIN, default .build/debug/latchkey. Needs `schemathesis` and `requests`.
"""
import argparse
import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import requests

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "Tests" / "Support"))
from latchkey_process import (  # noqa: E402
    LatchkeyError, LatchkeyServer, code_in, free_port, pkce, sign_in_through_pages,
)


def user_token(server, scope):
    """Signs `demo` in through the pages, as a browser would, and redeems the code as the --dev
    native client (PKCE S256, loopback redirect); returns the token response."""
    verifier, challenge = pkce()
    redirect_uri = f"http://127.0.0.1:{free_port()}/callback"
    client_id = server.dev["client_id"]
    request = requests.Request("GET", server.base + "/oauth2/authorize", params={
        "response_type": "code", "client_id": client_id, "redirect_uri": redirect_uri,
        "scope": scope, "state": "fuzz", "code_challenge": challenge, "code_challenge_method": "S256"}).prepare()
    signed_in = sign_in_through_pages(requests.Session(), request.url, "demo", server.dev["password"],
                                      grant=scope.split())
    response = requests.post(server.base + "/oauth2/token", data={
        "grant_type": "authorization_code", "code": code_in(signed_in.location), "client_id": client_id,
        "redirect_uri": redirect_uri, "code_verifier": verifier})
    response.raise_for_status()
    return response.json()


def summarize(report_path):
    """From Schemathesis' ndjson event stream: per operation, test cases by phase and responses by
    status; and the failing checks."""
    operations, failures = {}, set()
    with open(report_path) as stream:
        for line in stream:
            event = json.loads(line)
            kind, body = next(iter(event.items()))
            if kind != "ScenarioFinished":
                continue
            recorder = body.get("recorder", {})
            entry = operations.setdefault(recorder.get("label") or "?", {"phases": {}, "statuses": {}})
            phase = str(body.get("phase", "?")).lower()
            entry["phases"][phase] = entry["phases"].get(phase, 0) + len(recorder.get("cases", {}))
            for interaction in recorder.get("interactions", {}).values():
                if interaction.get("response"):
                    status = interaction["response"].get("status_code")
                    entry["statuses"][status] = entry["statuses"].get(status, 0) + 1
            for checks in recorder.get("checks", {}).values():
                for check in checks:
                    if str(check.get("status")).lower() == "failure":
                        failures.add(f"{recorder.get('label')}: {check.get('name')}")
    return operations, failures


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--max-examples", type=int, default=None, help="per operation and phase (default: the toml's)")
    parser.add_argument("--seed", type=int, default=None, help="Hypothesis seed (default: the toml's)")
    options, extra = parser.parse_known_args()

    workdir = tempfile.mkdtemp(prefix="latchkey-fuzz-")
    data = os.path.join(workdir, "data")
    os.mkdir(data)
    started = time.time()
    try:
        # Registration open (and not throttled, so the fuzzer meets the rules, not the limit).
        server = LatchkeyServer(["--dev", "--data-dir", data, "--dynamic-registration", "open",
                                 "--registrations-per-address", "1000000", "--registrations-overall", "1000000",
                                 "--pushed-requests-per-client", "1000000"], workdir=workdir)
    except LatchkeyError as error:
        sys.exit(str(error))
    try:
        service = server.cli("clients", "create", "--type", "service", "--name", "Fuzz service",
                             "--scope", "profile", "--scope", "activity")
        auth = (service["client_id"], service["client_secret"])
        target = server.cli("clients", "create", "--type", "service", "--name", "Fuzz wrong secrets",
                            "--scope", "profile")
        token_url = server.base + "/oauth2/token"
        # The admin API's caller: a service client's own token with latchkey:admin.
        automation = server.cli("clients", "create", "--type", "service", "--name", "Fuzz automation",
                                "--scope", "latchkey:admin")
        admin_token = requests.post(token_url, auth=(automation["client_id"], automation["client_secret"]),
                                    data={"grant_type": "client_credentials", "scope": "latchkey:admin"}).json()

        # The service client's own tokens, for revocation and introspection of live tokens.
        own = [requests.post(token_url, auth=auth, data={"grant_type": "client_credentials", "scope": scope}).json()
               for scope in ("profile", "activity", "profile activity")]
        # /userinfo needs a user. A client_credentials token with scope profile is issued, but it
        # has no user, so /userinfo answers it invalid_token; use a real sign-in instead.
        probe = requests.get(server.base + "/userinfo", headers={"Authorization": f"Bearer {own[0]['access_token']}"})
        bearer_note = (f"a client_credentials token at /userinfo gets {probe.status_code} (it has no user), "
                       "so the bearer is a signed-in user's token")
        # Separate grants (sign-ins) for separate purposes, so that what the fuzzer revokes or
        # rotates never ends the grant of the bearer it relies on.
        user = user_token(server, "profile activity")   # the fuzzer's bearer for /userinfo
        other_user = user_token(server, "activity")     # lacks profile: 403 at /userinfo
        victims = [user_token(server, "profile") for _ in range(2)]
        rotating = [user_token(server, "profile activity")["refresh_token"] for _ in range(3)]
        revoked = user_token(server, "profile")
        requests.post(server.base + "/oauth2/revoke",
                      data={"token": revoked["access_token"], "client_id": server.dev["client_id"]}).raise_for_status()
        live_tokens = [t["access_token"] for t in own] + [
            victims[0]["access_token"], victims[0]["refresh_token"], victims[1]["access_token"],
            revoked["access_token"]]
        other_bearers = [
            f"Bearer {other_user['access_token']}",   # no profile scope: 403 insufficient_scope (keep first)
            f"Bearer {user['refresh_token']}",        # a refresh token is no access token
            f"Bearer {own[0]['access_token']}",       # client_credentials: no user
            f"Bearer {revoked['access_token']}",      # revoked
            "Bearer lk_at_not-a-token", "Bearer", "bearer  " + user["access_token"] + "x",
            "Basic " + base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode(),
        ]

        # Known-good requests (hooks.py sends them among the drawn ones), so that every operation
        # reaches its success path: the run fails if one never answers 2xx.
        registration = {"client_name": "Fuzz agent", "redirect_uris": ["http://127.0.0.1/callback"],
                        "token_endpoint_auth_method": "none", "scope": "profile"}
        registered, deletable = [requests.post(server.base + "/oauth2/register", json=registration).json()
                                 for _ in range(2)]
        device_app = server.cli("clients", "create", "--type", "native", "--name", "Fuzz device",
                                "--redirect-uri", "http://127.0.0.1/callback", "--scope", "profile",
                                "--allow-device-code")
        admin_target = server.cli("clients", "create", "--type", "web", "--name", "Fuzz admin target",
                                  "--redirect-uri", "https://fuzz.example/cb", "--scope", "profile")
        admin_doomed = server.cli("clients", "create", "--type", "web", "--name", "Fuzz admin doomed",
                                  "--redirect-uri", "https://fuzz.example/cb", "--scope", "profile")
        server.cli("resources", "add", "https://fuzz.example/old-api", "--name", "Fuzz old API", "--scope", "activity")
        github_shape = ["--kind", "oauth2", "--client-id", "fuzz", "--subject-claim", "id",
                        "--authorization-endpoint", "https://idp.fuzz.example/authorize",
                        "--token-endpoint", "https://idp.fuzz.example/token",
                        "--userinfo-endpoint", "https://idp.fuzz.example/user"]
        for name in ("fuzz-kept", "fuzz-doomed"):
            server.cli("providers", "add", name, *github_shape)
        _, challenge = pkce()
        admin_bearer = {"Authorization": f"Bearer {admin_token['access_token']}"}
        good = {
            "POST /oauth2/register": [{"body": registration}],
            "GET /oauth2/register/{client_id}": [{"path": {"client_id": registered["client_id"]}}],
            "PUT /oauth2/register/{client_id}": [{
                "path": {"client_id": registered["client_id"]},
                "body": {**registration, "client_id": registered["client_id"], "client_name": "Fuzz agent 2"}}],
            "DELETE /oauth2/register/{client_id}": [{
                "path": {"client_id": deletable["client_id"]},
                "headers": {"Authorization": f"Bearer {deletable['registration_access_token']}"}}],
            "POST /oauth2/par": [{"body": {
                "client_id": server.dev["client_id"], "response_type": "code",
                "redirect_uri": "http://127.0.0.1:5000/callback", "scope": "profile", "state": "fuzz",
                "code_challenge": challenge, "code_challenge_method": "S256"}, "headers": {"Authorization": None}}],
            "POST /oauth2/device_authorization": [{
                "body": {"client_id": device_app["client_id"], "scope": "profile"}, "headers": {"Authorization": None}}],
            "POST /admin/api/clients": [{"headers": admin_bearer, "body": {
                "application_type": "web", "client_name": "Fuzz web", "redirect_uris": ["https://fuzz.example/cb2"],
                "scope": "profile"}}],
            "PUT /admin/api/clients/{client_id}": [{"headers": admin_bearer, "path": {"client_id": admin_target["client_id"]},
                                                    "body": {"application_type": "web", "client_name": "Fuzz target 2",
                                                             "redirect_uris": ["https://fuzz.example/cb"],
                                                             "scope": "profile"}}],
            "DELETE /admin/api/clients/{client_id}": [{"headers": admin_bearer,
                                                       "path": {"client_id": admin_doomed["client_id"]}}],
            "POST /admin/api/resources": [{"headers": admin_bearer, "body": {
                "resource": "https://fuzz.example/api", "name": "Fuzz API", "scopes": ["activity"]}}],
            "DELETE /admin/api/resources": [{"headers": admin_bearer,
                                             "query": {"resource": "https://fuzz.example/old-api"}}],
            "POST /admin/api/providers": [{"headers": admin_bearer, "body": {
                "name": "fuzz-new", "kind": "oauth2", "client_id": "fuzz",
                "authorization_endpoint": "https://idp.fuzz.example/authorize",
                "token_endpoint": "https://idp.fuzz.example/token", "userinfo_endpoint": "https://idp.fuzz.example/user"}}],
            "GET /admin/api/providers/{name}": [{"headers": admin_bearer, "path": {"name": "fuzz-kept"}}],
            "PATCH /admin/api/providers/{name}": [{"headers": admin_bearer, "path": {"name": "fuzz-kept"},
                                                   "body": {"enabled": True}}],
            "DELETE /admin/api/providers/{name}": [{"headers": admin_bearer, "path": {"name": "fuzz-doomed"}}],
        }

        env = {**os.environ,
               "LATCHKEY_FUZZ_GOOD": json.dumps(good),
               "LATCHKEY_FUZZ_REGISTERED_CLIENT_ID": registered["client_id"],
               "LATCHKEY_FUZZ_REGISTRATION_TOKEN": registered["registration_access_token"],
               "LATCHKEY_FUZZ_DELETABLE_CLIENT_ID": deletable["client_id"],
               "LATCHKEY_FUZZ_HOOKS": str(HERE / "hooks.py"),
               "LATCHKEY_FUZZ_CLIENT_ID": auth[0], "LATCHKEY_FUZZ_CLIENT_SECRET": auth[1],
               "LATCHKEY_FUZZ_BEARER": user["access_token"],
               "LATCHKEY_FUZZ_ADMIN_BEARER": admin_token["access_token"],
               "LATCHKEY_FUZZ_TARGET_CLIENT_ID": target["client_id"],
               "LATCHKEY_FUZZ_NATIVE_CLIENT_ID": server.dev["client_id"],
               "LATCHKEY_FUZZ_TOKENS": json.dumps(live_tokens),
               "LATCHKEY_FUZZ_REFRESH_TOKENS": json.dumps(rotating),
               "LATCHKEY_FUZZ_OTHER_BEARERS": json.dumps(other_bearers),
               "SCHEMATHESIS_HOOKS": "", "NO_COLOR": "1"}
        print(f"== fuzzing {server.base} (data in {data})", flush=True)
        print(f"   {bearer_note}", flush=True)
        # Two passes: the OAuth surface first, then the admin API, which may disable, delete or
        # change the password of any user (the demo user too), and so end the first pass's bearer.
        reports, returncodes = [], []
        for name, selection in [("oauth", "--exclude-path-regex"), ("admin", "--include-path-regex")]:
            report = os.path.join(workdir, f"events-{name}.ndjson")
            command = [sys.executable, "-m", "schemathesis.cli", "--config-file", str(HERE / "schemathesis.toml"),
                       "run", str(ROOT / "docs/openapi.yaml"), "--url", server.base, "--no-color",
                       selection, "^/admin/api/", "--report", "ndjson", "--report-ndjson-path", report]
            if options.max_examples:
                command += ["--max-examples", str(options.max_examples)]
            if options.seed is not None:
                command += ["--seed", str(options.seed)]
            command += extra
            returncodes.append(subprocess.run(command, env=env, cwd=workdir).returncode)
            reports.append(report)
            if name == "oauth":
                # The token the fuzzer used as its bearer must still work: nothing in the pass may
                # have ended its grant (the service client cannot revoke another client's token).
                try:
                    still = requests.get(server.base + "/userinfo", timeout=10,
                                         headers={"Authorization": f"Bearer {user['access_token']}"}).status_code
                except requests.RequestException as error:
                    still = f"no answer: {error}"
        alive = server.alive()
    finally:
        status = server.stop()

    operations, failures = {}, set()
    for report in reports:
        if os.path.exists(report):
            more_operations, more_failures = summarize(report)
            operations.update(more_operations)
            failures |= more_failures
    total_cases = sum(sum(entry["phases"].values()) for entry in operations.values())
    total_requests = sum(sum(entry["statuses"].values()) for entry in operations.values())
    print("\n== Latchkey fuzz summary")
    print(f"   schemathesis {_version()}, seed {options.seed if options.seed is not None else 'from schemathesis.toml'}, "
          f"{time.time() - started:.0f} s in all")
    print(f"   {total_cases} test cases on {len(operations)} operations, {total_requests} responses recorded")
    for label, entry in sorted(operations.items()):
        phases = ", ".join(f"{phase} {count}" for phase, count in sorted(entry["phases"].items()))
        statuses = " ".join(f"{status}x{count}" for status, count in sorted(entry["statuses"].items()))
        print(f"   {label:44} {phases:40} responses {statuses}")
    problems = []
    if any(returncodes):
        problems.append(f"schemathesis exited {returncodes}; failing checks: "
                        + ("; ".join(sorted(failures)) or "see above"))
    if not alive:
        problems.append("the server died during the run")
    if status != 0:
        problems.append(f"the server exited {status} when stopped")
    if still != 200:
        problems.append(f"the fuzzer's bearer token stopped working ({still})")
    # Every operation must succeed at least once: one that only ever meets its refusals has not had
    # its success path fuzzed at all.
    never = sorted(label for label, entry in operations.items()
                   if not any(200 <= int(status) < 300 for status in entry["statuses"] if str(status).isdigit()))
    if never:
        problems.append("never answered 2xx: " + ", ".join(never))
    for problem in problems:
        print(f"   FAILED: {problem}")
    if problems:
        print(f"   The server's log and Schemathesis' events are in {workdir}")
        return 1
    print("   OK: no 5xx, every response conforms to docs/openapi.yaml and the checks in Tests/Fuzz/hooks.py, "
          "and every operation answered 2xx at least once")
    shutil.rmtree(workdir, ignore_errors=True)
    return 0


def _version():
    try:
        from importlib.metadata import version
        return version("schemathesis")
    except Exception:
        return "?"


if __name__ == "__main__":
    sys.exit(main())
