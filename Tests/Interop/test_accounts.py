"""Accounts people run themselves, over real HTTP and real SMTP: sign-up with e-mail verification,
`prompt=create` from an app, invitations, password reset by e-mail, and the account page's changes.

Each test starts `latchkey serve` with `--smtp-url` pointing at aiosmtpd on loopback
(Tests/Support/smtp_relay.py) and reads the links out of the messages the relay received, as a
person would from their inbox. A requests.Session plays the browser.
"""
import base64
import hashlib
import json
import re
import time
from urllib.parse import parse_qs, urlencode, urlparse

import pytest
import requests

from latchkey_process import (LatchkeyServer, code_in, free_port, hidden_fields, pkce, run_latchkey,
                              sign_in_through_pages)
from smtp_relay import SMTPRelay

FROM = "accounts@example.com"
PASSWORD = "correct horse battery staple"
NEW_PASSWORD = "a new and longer passphrase"
_CSRF = re.compile(r'name="csrf_token" value="([^"]*)"')
_HIDDEN = re.compile(r'<input type="hidden" name="([^"]+)" value="([^"]*)">')


@pytest.fixture
def relay():
    with SMTPRelay() as relay:
        yield relay


def start(tmp_path, relay, *extra):
    return LatchkeyServer(["--data-dir", tmp_path / "data", "--smtp-url", relay.url, "--mail-from", FROM, *extra],
                          workdir=tmp_path / "serve")


def form_fields(html):
    """Every hidden field of the page's form (CSRF token, token, request, invitation)."""
    return dict(_HIDDEN.findall(html))


def submit(browser, server, path, page, **fields):
    """POSTs the form of `page` (its hidden fields) with `fields`, not following redirects."""
    return browser.post(server.url(path), data={**form_fields(page.text), **fields}, allow_redirects=False, timeout=20)


def link_in(message, path):
    """The link to `path` in a received message's plain-text part: an absolute URL."""
    text = message.message.get_body(preferencelist=("plain",)).get_content()
    found = re.search(r"(https?://\S+" + re.escape(path) + r"\?\S+)", text)
    assert found, f"no {path} link in:\n{text}"
    html = message.message.get_body(preferencelist=("html",)).get_content()
    assert found.group(1).replace("&", "&amp;") in html or found.group(1) in html
    return found.group(1)


def messages_to(relay, address):
    with relay.lock:
        return [m for m in relay.messages if address in m.rcpt_tos]


def wait_for_message(relay, address, count=1, timeout=15):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = messages_to(relay, address)
        if len(found) >= count:
            return found[count - 1]
        time.sleep(0.1)
    raise AssertionError(f"{address} got {len(messages_to(relay, address))} messages, not {count}")


def follow(browser, link, server):
    """Opens an e-mailed link (under the issuer) through the server's real address."""
    parts = urlparse(link)
    return browser.get(server.url(parts.path + "?" + parts.query), allow_redirects=False, timeout=20)


def sign_in(browser, server, username, password, request=None):
    page = browser.get(server.url("/login" + (f"?request={request}" if request else "")), timeout=20)
    return browser.post(server.url("/login"), allow_redirects=False, timeout=20,
                        data={**hidden_fields(page.text), "username": username, "password": password})


def claims(token):
    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


def test_sign_up_from_an_app_with_prompt_create_verifies_the_address_then_continues(tmp_path, relay):
    with start(tmp_path, relay, "--sign-up", "open", "--sign-up-domain", "example.org") as server:
        metadata = requests.get(server.url("/.well-known/openid-configuration"), timeout=10).json()
        assert "create" in metadata["prompt_values_supported"]
        redirect_uri = f"http://127.0.0.1:{free_port()}/callback"
        app = server.cli("clients", "create", "--type", "native", "--name", "Sleep Diary", "--redirect-uri",
                         redirect_uri, "--scope", "openid", "--scope", "email")
        verifier, challenge = pkce()
        browser = requests.Session()
        authorize = browser.get(server.url("/oauth2/authorize?" + urlencode({
            "response_type": "code", "client_id": app["client_id"], "redirect_uri": redirect_uri,
            "scope": "openid email", "state": "s1", "nonce": "n1", "prompt": "create",
            "code_challenge": challenge, "code_challenge_method": "S256"})), allow_redirects=False, timeout=20)
        assert authorize.status_code == 303 and authorize.headers["Location"].startswith("/signup?request=")
        form = browser.get(server.url(authorize.headers["Location"]), timeout=20)
        assert form.status_code == 200 and 'name="username"' in form.text and 'name="email"' in form.text

        # A domain off the allow-list, then a common password: refused, with the reason.
        refused = submit(browser, server, "/signup", form, username="mia", email="mia@example.com", password=PASSWORD)
        assert refused.status_code == 400 and "domain" in refused.text
        refused = submit(browser, server, "/signup", form, username="mia", email="mia@example.org", password="password1")
        assert refused.status_code == 400 and "most used" in refused.text

        done = submit(browser, server, "/signup", form, username="mia", email="mia@example.org", password=PASSWORD)
        assert done.status_code == 200 and "Check your e-mail" in done.text
        # Not yet: the address is unconfirmed, so the password alone does not sign in.
        request = form_fields(form.text)["request"]
        early = sign_in(browser, server, "mia", PASSWORD, request=request)
        assert early.status_code == 403 and "Confirm your e-mail address first" in early.text

        first = wait_for_message(relay, "mia@example.org")
        assert first.message["Subject"] == "Confirm your e-mail address"
        link = link_in(first, "/email/verify")
        assert link.startswith(server.issuer + "/email/verify?token=lk_el_")
        # The second link (sent again at the early sign-in) replaced the first.
        second_link = link_in(wait_for_message(relay, "mia@example.org", 2), "/email/verify")
        assert follow(browser, link, server).status_code == 410

        # Opening the link uses nothing (a mail scanner's GET); the button does.
        for _ in range(2):
            page = follow(browser, second_link, server)
            assert page.status_code == 200 and "mia@example.org" in page.text
        confirmed = submit(browser, server, "/email/verify", page)
        assert confirmed.status_code == 200 and "confirmed" in confirmed.text
        again = submit(browser, server, "/email/verify", page)
        assert "no longer works" in again.text

        # On with the app's request: sign in, consent, code, ID token with email_verified.
        assert f'href="/login?request={request}"' in confirmed.text
        signed_in = sign_in(browser, server, "mia", PASSWORD, request=request)
        assert signed_in.status_code == 303 and signed_in.headers["Location"].startswith("/consent?request=")
        consent = browser.get(server.url(signed_in.headers["Location"]), timeout=20)
        decision = browser.post(server.url("/oauth2/authorize"), allow_redirects=False, timeout=20,
                                data=[*hidden_fields(consent.text).items(), ("decision", "allow"),
                                      ("scope", "openid"), ("scope", "email")])
        location = decision.headers["Location"]
        assert location.startswith(redirect_uri) and parse_qs(urlparse(location).query)["state"] == ["s1"]
        tokens = requests.post(server.url("/oauth2/token"), timeout=20, data={
            "grant_type": "authorization_code", "code": code_in(location), "redirect_uri": redirect_uri,
            "client_id": app["client_id"], "code_verifier": verifier}).json()
        assert claims(tokens["id_token"])["nonce"] == "n1"
        identity = requests.get(server.url("/userinfo"), headers={"Authorization": f"Bearer {tokens['access_token']}"},
                                timeout=20).json()
        assert identity["email"] == "mia@example.org" and identity["email_verified"] is True


def test_prompt_create_is_refused_while_sign_up_is_not_open(tmp_path, relay):
    with start(tmp_path, relay) as server:
        assert requests.get(server.url("/signup"), timeout=10).status_code == 404
        metadata = requests.get(server.url("/.well-known/openid-configuration"), timeout=10).json()
        assert "create" not in metadata["prompt_values_supported"]
        redirect_uri = f"http://127.0.0.1:{free_port()}/callback"
        app = server.cli("clients", "create", "--type", "native", "--name", "Diary", "--redirect-uri", redirect_uri,
                         "--scope", "openid")
        _, challenge = pkce()
        answer = requests.get(server.url("/oauth2/authorize?" + urlencode({
            "response_type": "code", "client_id": app["client_id"], "redirect_uri": redirect_uri, "scope": "openid",
            "state": "s", "prompt": "create", "code_challenge": challenge, "code_challenge_method": "S256"})),
            allow_redirects=False, timeout=20)
        assert answer.status_code == 303
        assert parse_qs(urlparse(answer.headers["Location"]).query)["error"] == ["invalid_request"]


def test_an_invitation_makes_a_verified_account_once(tmp_path, relay):
    with start(tmp_path, relay, "--sign-up", "invite") as server:
        browser = requests.Session()
        closed = browser.get(server.url("/signup"), timeout=20)
        assert closed.status_code == 200 and "invitation only" in closed.text
        refused = submit(browser, server, "/signup", closed, username="x", email="x@example.com", password=PASSWORD)
        assert refused.status_code == 400 and "invitation only" in refused.text

        # The issuer and the sender are the ones serve recorded in the store when it started.
        invited = run_latchkey(["users", "invite", "noor@example.net", *server.store_args])
        assert invited.returncode == 0, invited.stderr
        link = link_in(wait_for_message(relay, "noor@example.net"), "/signup")
        form = follow(browser, link, server)
        assert form.status_code == 200 and 'value="noor@example.net"' in form.text and "readonly" in form.text
        # The address comes from the invitation, whatever the form says.
        created = submit(browser, server, "/signup", form, username="noor", email="other@example.com",
                         password=PASSWORD)
        assert created.status_code == 303 and created.headers["Location"] == "/account"
        account = browser.get(server.url("/account"), timeout=20)
        assert "noor@example.net" in account.text and "(confirmed)" in account.text
        # Used: the link's page no longer carries it, and a form sent with it anyway is refused.
        again = requests.Session()
        reopened = follow(again, link, server)
        assert "invitation only" in reopened.text
        reused = again.post(server.url("/signup"), allow_redirects=False, timeout=20, data={
            **form_fields(reopened.text), "invitation": parse_qs(urlparse(link).query)["invitation"][0],
            "username": "noor2", "password": PASSWORD})
        assert reused.status_code == 400 and "no longer works" in reused.text
        assert [u["username"] for u in server.cli("users", "list")["users"]] == ["noor"]


def test_a_reset_link_works_once_and_revokes_the_old_grants(tmp_path, relay):
    with start(tmp_path, relay) as server:
        server.cli("users", "create", "ravi", "--password-stdin", "--email", "ravi@example.com", stdin=PASSWORD + "\n")
        redirect_uri = f"http://127.0.0.1:{free_port()}/callback"
        app = server.cli("clients", "create", "--type", "native", "--name", "Runner", "--redirect-uri", redirect_uri,
                         "--scope", "activity")
        verifier, challenge = pkce()
        browser = requests.Session()
        signed = sign_in_through_pages(browser, server.url("/oauth2/authorize?" + urlencode({
            "response_type": "code", "client_id": app["client_id"], "redirect_uri": redirect_uri,
            "scope": "activity", "state": "s", "code_challenge": challenge, "code_challenge_method": "S256"})),
            "ravi", PASSWORD)
        tokens = requests.post(server.url("/oauth2/token"), timeout=20, data={
            "grant_type": "authorization_code", "code": code_in(signed.location), "redirect_uri": redirect_uri,
            "client_id": app["client_id"], "code_verifier": verifier}).json()
        assert "refresh_token" in tokens

        # Asked from another browser, with a forged Host: the link is still under the issuer.
        stranger = requests.Session()
        form = stranger.get(server.url("/password/forgot"), timeout=20)
        # (requests matches cookies to the Host header, so the session cookie goes by hand.)
        forged = {"Host": "evil.example", "Cookie": f"lk_session={stranger.cookies['lk_session']}"}
        asked = requests.post(server.url("/password/forgot"), headers=forged, timeout=20,
                              data={**form_fields(form.text), "login": "ravi"}, allow_redirects=False)
        assert asked.status_code == 200 and "Check your e-mail" in asked.text
        message = wait_for_message(relay, "ravi@example.com")
        link = link_in(message, "/password/reset")
        assert link.startswith(server.issuer + "/password/reset?token=") and "evil.example" not in message.raw.decode()
        # The store keeps the link's SHA-256, never the link (nor the message holding it, which is
        # sealed and then erased): the secret is nowhere in the database files.
        secret = parse_qs(urlparse(link).query)["token"][0]
        stored = b"".join(f.read_bytes() for f in (tmp_path / "data").iterdir() if f.name.startswith("latchkey.sqlite"))
        assert secret.encode() not in stored
        assert hashlib.sha256(secret.encode()).hexdigest().encode() in stored

        page = follow(stranger, link, server)
        assert page.status_code == 200 and page.headers["Referrer-Policy"] == "no-referrer"
        assert 'name="password"' in page.text and "ravi" in page.text
        weak = submit(stranger, server, "/password/reset", page, password="ravi2024")
        assert weak.status_code == 400
        done = submit(stranger, server, "/password/reset", page, password=NEW_PASSWORD)
        assert done.status_code == 200 and "Your password is changed" in done.text
        assert "no longer works" in submit(stranger, server, "/password/reset", page, password=PASSWORD + "!").text
        assert follow(stranger, link, server).status_code == 410

        # Everything the old password let in is gone: the refresh token, the session.
        refreshed = requests.post(server.url("/oauth2/token"), timeout=20, data={
            "grant_type": "refresh_token", "refresh_token": tokens["refresh_token"], "client_id": app["client_id"]})
        assert refreshed.status_code == 400 and refreshed.json()["error"] == "invalid_grant"
        assert browser.get(server.url("/account"), allow_redirects=False, timeout=20).status_code == 303
        assert sign_in(requests.Session(), server, "ravi", PASSWORD).status_code == 401
        assert sign_in(requests.Session(), server, "ravi", NEW_PASSWORD).status_code == 303
        notice = wait_for_message(relay, "ravi@example.com", 2)
        assert notice.message["Subject"] == "Your password was changed"


def test_forgot_password_answers_alike_for_known_and_unknown_accounts(tmp_path, relay):
    with start(tmp_path, relay) as server:
        server.cli("users", "create", "lena", "--password-stdin", "--email", "lena@example.com", stdin=PASSWORD + "\n")
        answers = {}
        for login in ["lena", "lena@example.com", "nobody", "nobody@example.com", "LENA@EXAMPLE.COM"]:
            browser = requests.Session()
            form = browser.get(server.url("/password/forgot"), timeout=20)
            answer = browser.post(server.url("/password/forgot"), data={**form_fields(form.text), "login": login},
                                  allow_redirects=False, timeout=20)
            answers[login] = (answer.status_code, answer.text, answer.headers.get("Content-Type"))
        assert len(set(answers.values())) == 1, answers
        wait_for_message(relay, "lena@example.com", 3)
        time.sleep(3)
        assert len(messages_to(relay, "lena@example.com")) == 3  # three known: lena, her address, in capitals
        assert all(m.rcpt_tos == ["lena@example.com"] for m in relay.messages)


def test_reset_requests_are_limited_per_account_and_per_address(tmp_path, relay):
    with start(tmp_path, relay) as server:
        server.cli("users", "create", "omar", "--password-stdin", "--email", "omar@example.com", stdin=PASSWORD + "\n")
        browser = requests.Session()
        form = browser.get(server.url("/password/forgot"), timeout=20)
        statuses = [browser.post(server.url("/password/forgot"), data={**form_fields(form.text), "login": "omar"},
                                 allow_redirects=False, timeout=20).status_code for _ in range(11)]
        # Ten answered alike from one address, then 429; the account got three links, no more.
        assert statuses == [200] * 10 + [429]
        wait_for_message(relay, "omar@example.com", 3)
        time.sleep(3)
        assert len(messages_to(relay, "omar@example.com")) == 3


def test_the_account_page_changes_password_and_address_and_deletes_the_account(tmp_path, relay):
    with start(tmp_path, relay) as server:
        server.cli("users", "create", "ada", "--password-stdin", "--email", "ada@example.com", "--email-verified",
                   stdin=PASSWORD + "\n")
        browser, other = requests.Session(), requests.Session()
        assert sign_in(browser, server, "ada", PASSWORD).status_code == 303
        assert sign_in(other, server, "ada", PASSWORD).status_code == 303

        form = browser.get(server.url("/account/password"), timeout=20)
        assert 'name="current_password"' in form.text and 'name="password"' in form.text
        wrong = submit(browser, server, "/account/password", form, current_password="not it", password=NEW_PASSWORD)
        assert wrong.status_code == 400 and "current password is not right" in wrong.text
        changed = submit(browser, server, "/account/password", form, current_password=PASSWORD, password=NEW_PASSWORD)
        assert changed.status_code == 200 and "Your password is changed" in changed.text
        # This browser stays signed in with a fresh session; the other one is signed out.
        assert browser.get(server.url("/account"), allow_redirects=False, timeout=20).status_code == 200
        assert other.get(server.url("/account"), allow_redirects=False, timeout=20).status_code == 303

        form = browser.get(server.url("/account/email"), timeout=20)
        asked = submit(browser, server, "/account/email", form, email="ada@example.net")
        assert asked.status_code == 200 and "ada@example.net" in asked.text
        notice = wait_for_message(relay, "ada@example.com", 2)  # the first was "password changed"
        assert notice.message["Subject"] == "Your e-mail address is changing"
        link = link_in(wait_for_message(relay, "ada@example.net"), "/email/verify")
        assert "ada@example.com" in browser.get(server.url("/account"), timeout=20).text  # not yet changed
        device = requests.Session()  # opened on another device, signed in nowhere
        assert "confirmed" in submit(device, server, "/email/verify", follow(device, link, server)).text
        account = browser.get(server.url("/account"), timeout=20).text
        assert "ada@example.net" in account and "(confirmed)" in account

        form = browser.get(server.url("/account/delete"), timeout=20)
        refused = submit(browser, server, "/account/delete", form, current_password=PASSWORD)
        assert refused.status_code == 400
        deleted = submit(browser, server, "/account/delete", form, current_password=NEW_PASSWORD)
        assert deleted.status_code == 200 and "deleted" in deleted.text
        assert "ada" not in [u["username"] for u in server.cli("users", "list")["users"]]


def test_forms_without_their_csrf_token_are_refused(tmp_path, relay):
    with start(tmp_path, relay, "--sign-up", "open") as server:
        for path, fields in [("/signup", {"username": "eve", "email": "eve@example.com", "password": PASSWORD}),
                             ("/password/forgot", {"login": "eve"}), ("/password/reset", {"password": PASSWORD}),
                             ("/email/verify", {"token": "lk_el_x"}), ("/account/password", {"password": PASSWORD}),
                             ("/account/email", {"email": "eve@example.com"}), ("/account/delete", {})]:
            answer = requests.post(server.url(path), data={**fields, "csrf_token": "forged"}, allow_redirects=False,
                                   timeout=20)
            assert answer.status_code == 403, (path, answer.status_code)
        assert server.cli("users", "list")["users"] == []


def test_an_administrator_invites_from_the_console(tmp_path, relay):
    with start(tmp_path, relay, "--sign-up", "invite") as server:
        server.cli("users", "create", "root", "--password-stdin", "--admin", stdin=PASSWORD + "\n")
        browser = requests.Session()
        assert sign_in(browser, server, "root", PASSWORD).status_code == 303
        page = browser.get(server.url("/admin/users"), timeout=20)
        assert page.status_code == 200 and 'action="/admin/users/invite"' in page.text
        bad = browser.post(server.url("/admin/users/invite"), data={**form_fields(page.text), "email": "not an address"},
                           allow_redirects=False, timeout=20)
        assert bad.status_code == 400 and "not of the form" in bad.text
        sent = browser.post(server.url("/admin/users/invite"), data={**form_fields(page.text), "email": "kim@example.net"},
                            allow_redirects=False, timeout=20)
        assert sent.status_code == 303 and sent.headers["Location"] == "/admin/users?done=invited"
        link = link_in(wait_for_message(relay, "kim@example.net"), "/signup")
        assert link.startswith(server.issuer + "/signup?invitation=lk_el_")


def test_serve_refuses_sign_up_settings_that_cannot_work(tmp_path):
    # Sign-up without e-mail: nobody could ever confirm an address.
    alone = run_latchkey(["serve", "--port", "0", "--data-dir", str(tmp_path / "a"), "--sign-up", "open"])
    assert alone.returncode == 2 and "smtp-url" in alone.stderr, alone.stderr
    # A domain allow-list with unconfirmed addresses proves nothing about the domain.
    relay = SMTPRelay()  # not started: serve stops before it would connect
    loose = run_latchkey(["serve", "--port", "0", "--data-dir", str(tmp_path / "b"), "--sign-up", "open",
                          "--sign-up-domain", "example.org", "--sign-up-email-verification", "optional",
                          "--smtp-url", relay.url, "--mail-from", FROM])
    assert loose.returncode == 2 and "sign-up-domain" in loose.stderr, loose.stderr
