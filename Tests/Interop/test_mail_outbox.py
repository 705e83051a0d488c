"""The outbox of `latchkey serve --smtp-url`: messages survive a relay that is down and a restart,
and here each reaches the relay once (delivery is at least once: docs/operations.md "E-mail").

Messages are queued with `latchkey mail test --queue` (into the store, as the server's own messages
are) and by the server itself (a password reset asked over HTTP), and watched with `latchkey mail
outbox --json`; the relay is aiosmtpd on loopback (Tests/Support/smtp_relay.py), started only when
the test wants it up.
"""
import re
import time

import requests

from latchkey_process import LatchkeyServer, admin, run_latchkey
from smtp_relay import SMTPRelay

FROM = "latchkey@example.com"


def queue(store, relay, to):
    result = run_latchkey(["mail", "test", "--queue", "--to", to, "--smtp-url", relay.url, "--mail-from", FROM, *store])
    assert result.returncode == 0, result.stderr
    return result.stdout.split()[1]  # "Queued ID for …"


def outbox(store):
    return admin(store, "mail", "outbox")


def wait_until(condition, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"not within {timeout} s: {what}")


def test_a_relay_down_and_a_restart_lose_nothing_and_send_nothing_twice(tmp_path):
    relay = SMTPRelay()  # its port chosen, not listening yet
    store = ["--data-dir", str(tmp_path / "data")]
    serve = [*store, "--smtp-url", relay.url, "--mail-from", FROM]

    server = LatchkeyServer(serve, workdir=tmp_path / "serve")
    try:
        server.cli("users", "create", "user1", "--password-stdin", "--email", "user1@example.com",
                   stdin="a long sleepy passphrase\n")
        first = [queue(store, relay, "user0@example.com")]
        # The server's own message: a reset link, asked for over HTTP while the relay is down.
        browser = requests.Session()
        form = browser.get(server.url("/password/forgot"), timeout=10)
        token = re.search(r'name="csrf_token" value="([^"]+)"', form.text).group(1)
        assert browser.post(server.url("/password/forgot"), data={"csrf_token": token, "login": "user1"},
                            timeout=10).status_code == 200
        first.append(wait_until(lambda: next((m["id"] for m in outbox(store)["messages"]
                                              if m["kind"] == "password_reset"), None), 10, "the reset link queued"))
        # The relay is down: each attempt fails, is recorded, and the message stays queued.
        def attempted():
            listed = outbox(store)
            return listed if all(m["attempts"] >= 1 and m["last_error"] for m in listed["messages"]) else None

        state = wait_until(attempted, 20, "a first attempt at both messages")
        assert state["queued"] == 2 and state["sent"] == 0
        assert all(m["status"] == "queued" and m["last_error"] for m in state["messages"])
    finally:
        assert server.stop() == 0, server.output_tail()

    # Queued while no server runs.
    later = queue(store, relay, "user2@example.com")
    with relay:
        server = LatchkeyServer(serve, workdir=tmp_path / "serve")
        try:
            # The new one goes at once; the two that failed when their retry falls due (10 s).
            wait_until(lambda: outbox(store)["sent"] == 3, 40, "all three messages sent")
            time.sleep(3)  # time for a duplicate, if there were to be one
        finally:
            assert server.stop() == 0, server.output_tail()
        received = list(relay.messages)

    assert sorted(m.rcpt_tos[0] for m in received) == [f"user{index}@example.com" for index in range(3)]
    message_ids = [m.message["Message-ID"] for m in received]
    assert len(set(message_ids)) == 3
    listed = outbox(store)
    assert (listed["queued"], listed["sent"], listed["failed"]) == (0, 3, 0)
    by_id = {m["id"]: m for m in listed["messages"]}
    assert {by_id[i]["message_id"] for i in first + [later]} == set(message_ids)
    assert all(by_id[i]["attempts"] >= 2 for i in first) and by_id[later]["attempts"] == 1


def test_a_refused_message_is_given_up_at_once(tmp_path):
    store = ["--data-dir", str(tmp_path / "data")]
    with SMTPRelay() as relay:
        relay.data_reply = "550 5.1.1 No such user"
        server = LatchkeyServer([*store, "--smtp-url", relay.url, "--mail-from", FROM], workdir=tmp_path / "serve")
        try:
            queue(store, relay, "nobody@example.com")
            def given_up():
                listed = outbox(store)
                return listed if listed["failed"] == 1 else None

            state = wait_until(given_up, 20, "the message given up")
        finally:
            assert server.stop() == 0, server.output_tail()
    message = state["messages"][0]
    assert message["status"] == "failed" and message["attempts"] == 1 and "550" in message["last_error"]


def test_serve_refuses_an_smtp_url_without_a_sender(tmp_path):
    result = run_latchkey(["serve", "--data-dir", str(tmp_path / "data"), "--smtp-url", "smtp://localhost:2525"])
    assert result.returncode == 2
    assert "mail-from" in result.stderr
