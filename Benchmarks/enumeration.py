#!/usr/bin/env python3
"""Whether `POST /password/forgot` takes longer for a login that names an account.

Starts `latchkey serve` on a fresh SQLite store with an SMTP relay (aiosmtpd, as the tests use),
creates N accounts with addresses, then asks for resets alternately for a known login and an
unknown one, each from its own address (X-Forwarded-For from a trusted proxy, so the per-address
limit does not answer 429), and prints the median and p90 answer times of both and their ratio.
The accounts' e-mails are sent while it runs: the answer does not wait for them
(docs/threat-model.md AC3). A measurement to read, not a test: nothing here fails on a ratio.

    python3 Benchmarks/enumeration.py --bin .build/release/latchkey --accounts 200
"""
import argparse
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "Tests" / "Support"))
import requests  # noqa: E402
from latchkey_process import LatchkeyServer  # noqa: E402
from smtp_relay import SMTPRelay  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bin", help="the latchkey binary (default: $LATCHKEY_BIN or the debug build)")
    parser.add_argument("--accounts", type=int, default=100)
    args = parser.parse_args()
    with SMTPRelay() as relay, tempfile.TemporaryDirectory(prefix="latchkey-enumeration-") as data:
        server = LatchkeyServer(["--data-dir", data, "--smtp-url", relay.url, "--mail-from", "bench@example.com",
                                 "--trusted-proxy", "127.0.0.1/32"], binary=args.bin)
        try:
            for index in range(args.accounts):
                server.cli("users", "create", f"user{index}", "--password-stdin", "--email",
                           f"user{index}@example.com", stdin="a long sleepy passphrase\n")
            browser = requests.Session()
            form = browser.get(server.url("/password/forgot"), timeout=10)
            csrf = re.search(r'name="csrf_token" value="([^"]+)"', form.text).group(1)
            times = {"known": [], "unknown": []}
            for index in range(args.accounts):
                for kind, login in (("known", f"user{index}"), ("unknown", f"nobody{index}")):
                    address = f"10.{index // 250}.{index % 250}.{1 if kind == 'known' else 2}"
                    start = time.perf_counter()
                    answer = browser.post(server.url("/password/forgot"), data={"csrf_token": csrf, "login": login},
                                          headers={"X-Forwarded-For": address}, timeout=10)
                    times[kind].append((time.perf_counter() - start) * 1000)
                    assert answer.status_code == 200, answer.status_code
            for kind, values in times.items():
                values.sort()
                print(f"{kind:8} median {statistics.median(values):.2f} ms, p90 {values[int(len(values) * 0.9)]:.2f} ms")
            ratio = statistics.median(times["known"]) / statistics.median(times["unknown"])
            print(f"known / unknown, medians: {ratio:.3f}")
            deadline = time.monotonic() + 30
            while len(relay.messages) < args.accounts and time.monotonic() < deadline:
                time.sleep(0.2)
            print(f"reset links received by the relay: {len(relay.messages)} of {args.accounts}")
        finally:
            server.stop()


if __name__ == "__main__":
    main()
