"""E-mail over a real SMTP relay: `latchkey mail test` against aiosmtpd on loopback.

The relay runs the three ways `--smtp-url` names: plain text for a local relay
(`smtp://host:port?starttls=off`), STARTTLS required (`smtp://`) and TLS from the first byte
(`smtps://`), with a throwaway certificate authority that Latchkey is told to trust with
`--smtp-ca-file`, and with AUTH (PLAIN, or LOGIN when the relay offers only that). The failures a
mis-set relay gives are checked too: a wrong password (refused, exit 2, the password in no
output), an untrusted certificate, a relay without STARTTLS, a password given as a flag, a relay
that refuses the recipient, and a relay that slips a reply in after its STARTTLS answer (the
plain-text injection of CVE-2011-0411), which ends the session before anything is sent.
"""
import base64
import socket
import threading

import pytest

from https_documents import TestAuthority
from latchkey_process import run_latchkey
from smtp_relay import SMTPRelay

FROM = "latchkey@example.com"
TO = "alice@example.com"


@pytest.fixture(scope="module")
def authority(tmp_path_factory):
    return TestAuthority(tmp_path_factory.mktemp("smtp-ca"))


def mail_test(relay_url, *extra):
    return run_latchkey(["mail", "test", "--to", TO, "--smtp-url", relay_url, "--mail-from", FROM, *extra], timeout=60)


def test_plain_relay_gets_a_well_formed_message():
    with SMTPRelay() as relay:
        result = mail_test(relay.url)
        assert result.returncode == 0, result.stderr
        received = relay.wait_for(1)
    assert received.mail_from == FROM and received.rcpt_tos == [TO]
    message = received.message
    assert message["From"].addresses[0].addr_spec == FROM and message["To"].addresses[0].addr_spec == TO
    assert message["Subject"] == "Latchkey test message"
    assert message["Message-ID"].startswith("<") and message["Message-ID"].endswith("@example.com>")
    assert message["Date"].datetime is not None and message["Auto-Submitted"] == "auto-generated"
    assert message.get_content_type() == "multipart/alternative"
    assert "can send e-mail" in message.get_body(("plain",)).get_content()
    assert str(relay.port) not in received.raw.decode()  # the relay's address is not told to the recipient
    assert "<p>" in message.get_body(("html",)).get_content()
    # RFC 5322 §2.1.1: no line over 78 characters; every line ends in CRLF.
    lines = received.raw.split(b"\r\n")
    assert all(len(line) <= 78 for line in lines)
    assert b"\n" not in b"".join(lines)


def test_starttls_with_auth_plain_and_the_password_from_the_environment(authority, monkeypatch):
    monkeypatch.setenv("LATCHKEY_SMTP_PASSWORD", "relay-secret-1")
    with SMTPRelay(tls="starttls", authority=authority, login=("mailer", "relay-secret-1")) as relay:
        result = mail_test(relay.url, "--smtp-ca-file", authority.ca_file)
        assert result.returncode == 0, result.stderr
        assert relay.wait_for(1).authenticated_as == "mailer"


def test_starttls_with_auth_login_and_the_password_from_a_file(authority, tmp_path):
    password_file = tmp_path / "smtp-password"
    password_file.write_text("relay-secret-2\n")
    with SMTPRelay(tls="starttls", authority=authority, login=("mailer", "relay-secret-2"),
                   exclude_mechanisms=["PLAIN"]) as relay:
        result = mail_test(relay.url, "--smtp-ca-file", authority.ca_file, "--smtp-password-file", str(password_file))
        assert result.returncode == 0, result.stderr
        assert relay.wait_for(1).authenticated_as == "mailer"


def test_implicit_tls(authority, monkeypatch):
    monkeypatch.setenv("LATCHKEY_SMTP_PASSWORD", "relay-secret-3")
    with SMTPRelay(tls="implicit", authority=authority, login=("mailer", "relay-secret-3")) as relay:
        assert relay.url.startswith("smtps://")
        result = mail_test(relay.url, "--smtp-ca-file", authority.ca_file)
        assert result.returncode == 0, result.stderr
        assert relay.wait_for(1).authenticated_as == "mailer"


def test_a_wrong_password_is_refused_and_never_printed(authority, monkeypatch):
    monkeypatch.setenv("LATCHKEY_SMTP_PASSWORD", "not-the-password")
    with SMTPRelay(tls="starttls", authority=authority, login=("mailer", "relay-secret-4")) as relay:
        result = mail_test(relay.url, "--smtp-ca-file", authority.ca_file)
        assert result.returncode == 2, result.stderr  # a 5xx: trying again cannot help
        assert "535" in result.stderr
        assert "not-the-password" not in result.stderr + result.stdout
        assert base64.b64encode(b"not-the-password").decode() not in result.stderr + result.stdout
        assert relay.messages == []


def test_a_certificate_from_an_unknown_authority_is_refused(authority):
    with SMTPRelay(tls="starttls", authority=authority) as relay:
        result = mail_test(relay.url)
        assert result.returncode == 1, result.stderr
        assert "certificate" in result.stderr.lower() or "tls" in result.stderr.lower()
        assert relay.messages == []


def test_smtp_without_starttls_on_offer_is_refused(authority):
    """Nothing is sent in plain text; and since someone on the path may have removed the offer,
    the failure is one to try again (exit 1), not a reason to give messages up."""
    with SMTPRelay(tls="starttls", authority=authority, offer_starttls=False) as relay:
        result = mail_test(relay.url)
        assert result.returncode == 1, result.stderr
        assert "STARTTLS" in result.stderr
        assert relay.messages == []


def test_the_password_is_never_a_flag():
    result = run_latchkey(["mail", "test", "--to", TO, "--smtp-password", "x"])
    assert result.returncode != 0


def test_a_refused_recipient_is_a_permanent_failure():
    with SMTPRelay() as relay:
        relay.data_reply = "550 5.7.1 Delivery not authorized"
        result = mail_test(relay.url)
        assert result.returncode == 2, result.stderr
        assert "550" in result.stderr


def test_a_reply_slipped_in_after_starttls_ends_the_session():
    """A relay (or a machine in the middle) that answers STARTTLS and adds a plain-text reply in
    the same packet would have that reply read as if it came over TLS: Latchkey must hang up."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    seen = []

    def relay():
        connection, _ = listener.accept()
        with connection:
            connection.sendall(b"220 relay.test ESMTP\r\n")
            stream = connection.makefile("rb")
            while line := stream.readline():
                seen.append(line)
                if line.startswith(b"EHLO"):
                    connection.sendall(b"250-relay.test\r\n250 STARTTLS\r\n")
                elif line.startswith(b"STARTTLS"):
                    connection.sendall(b"220 go ahead\r\n250 injected\r\n")
                else:
                    return

    thread = threading.Thread(target=relay, daemon=True)
    thread.start()
    result = mail_test(f"smtp://localhost:{port}")
    listener.close()
    assert result.returncode == 1, result.stderr
    assert "after its STARTTLS answer" in result.stderr
    assert not any(line.startswith((b"MAIL", b"RCPT", b"DATA")) for line in seen)


def test_a_relay_cannot_make_latchkey_hold_an_endless_line():
    """A hostile relay that never ends its greeting line is cut off at 2,048 bytes."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def relay():
        connection, _ = listener.accept()
        with connection:
            try:
                connection.sendall(b"220 " + b"x" * 100_000)
                connection.recv(1)
            except OSError:
                pass

    threading.Thread(target=relay, daemon=True).start()
    result = mail_test(f"smtp://localhost:{port}?starttls=off")
    listener.close()
    assert result.returncode == 1, result.stderr
    assert "longer than 2048 bytes" in result.stderr
