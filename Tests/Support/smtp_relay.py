"""A real SMTP relay on loopback for the e-mail tests (aiosmtpd from PyPI), keeping every message
it accepted.

    from smtp_relay import SMTPRelay
    with SMTPRelay(tls="starttls", authority=TestAuthority(tmp_path), login=("mailer", "s3cret")) as relay:
        relay.url            # "smtp://mailer@localhost:PORT" (the password is given apart)
        relay.messages       # [Received(mail_from, rcpt_tos, message, authenticated_as)]
        relay.wait_for(1)    # the first message, waiting up to 10 s for it

`tls`: "none" (plain text; the URL carries ?starttls=off), "starttls" (offered and required before
anything else) or "implicit" (smtps://). `login`: the user and password AUTH requires, else none.
`offer_starttls=False` makes a relay that does not offer STARTTLS at all.
"""
import email
import email.policy
import socket
import ssl
import threading
import time
from dataclasses import dataclass

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword


@dataclass
class Received:
    mail_from: str
    rcpt_tos: list
    message: email.message.EmailMessage
    raw: bytes
    authenticated_as: str | None


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Handler:
    def __init__(self, relay):
        self.relay = relay

    async def handle_DATA(self, server, session, envelope):
        login = session.auth_data.login.decode() if isinstance(session.auth_data, LoginPassword) else None
        raw = envelope.original_content or envelope.content
        with self.relay.lock:
            self.relay.messages.append(Received(
                envelope.mail_from, list(envelope.rcpt_tos),
                email.message_from_bytes(raw, policy=email.policy.default), raw, login))
        return self.relay.data_reply


class SMTPRelay:
    def __init__(self, tls="none", authority=None, login=None, offer_starttls=True, exclude_mechanisms=()):
        self.tls, self.login = tls, login
        self.messages, self.lock = [], threading.Lock()
        self.data_reply = "250 OK: queued"
        self.port = _free_port()
        context = None
        if tls != "none":
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            context.load_cert_chain(authority.cert_file, authority.key_file)
        options = dict(hostname="127.0.0.1", port=self.port, server_hostname="relay.test",
                       auth_exclude_mechanism=list(exclude_mechanisms))
        if login:
            # aiosmtpd sees only STARTTLS as TLS: under implicit TLS it would hide AUTH.
            options.update(authenticator=self._authenticate, auth_require_tls=tls == "starttls")
        else:
            options.update(auth_required=False)
        if tls == "implicit":
            options.update(ssl_context=context)
        elif tls == "starttls" and offer_starttls:
            options.update(tls_context=context, require_starttls=True)
        self.controller = Controller(_Handler(self), **options)
        self.client_context = None
        if tls == "implicit":
            # The controller checks that the relay is up by connecting to it: over TLS here.
            self.controller.ssl_context = context

    def _authenticate(self, server, session, envelope, mechanism, auth_data):
        if isinstance(auth_data, LoginPassword) and (auth_data.login.decode(), auth_data.password.decode()) == self.login:
            return AuthResult(success=True, auth_data=auth_data)
        return AuthResult(success=False, handled=False)

    @property
    def url(self):
        scheme = "smtps" if self.tls == "implicit" else "smtp"
        user = f"{self.login[0]}@" if self.login else ""
        query = "?starttls=off" if self.tls == "none" else ""
        return f"{scheme}://{user}localhost:{self.port}{query}"

    def wait_for(self, count, timeout=10):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if len(self.messages) >= count:
                    return self.messages[count - 1]
            time.sleep(0.05)
        raise AssertionError(f"the relay received {len(self.messages)} messages, not {count}, within {timeout} s")

    def __enter__(self):
        self.controller.start()
        return self

    def __exit__(self, *exception):
        self.controller.stop()
