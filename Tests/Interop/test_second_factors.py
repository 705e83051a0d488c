"""Second factors over real HTTP: an authenticator app (TOTP, RFC 6238) set up and used with codes
pyotp computes, as any authenticator app does; recovery codes; the second sign-in step and its
throttle; `acr_values` stepping a password session up; the `require-second-factor` policy; and
the administrator's reset. A requests.Session plays the browser.
"""
import base64
import json
import re
import threading
import time
from urllib.parse import parse_qs, urlencode, urlparse

import numpy
import pyotp
import requests
import zxingcpp

from latchkey_process import LatchkeyServer, code_in, free_port, pkce

PASSWORD = "correct horse battery staple"
_SECRET = re.compile(r'id="totp-secret"[^>]*>([^<]+)<')
_CODES = re.compile(r"<li><code>([A-Z0-9-]{19})</code></li>")
_HIDDEN = re.compile(r'<input type="hidden" name="([^"]+)" value="([^"]*)">')
MFA = "urn:latchkey:acr:2"


def start(tmp_path, *extra):
    return LatchkeyServer(["--data-dir", tmp_path / "data", *extra], workdir=tmp_path / "serve")


def claims(token):
    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


def post(browser, server, path, page, **fields):
    """POSTs the form of `page` (its hidden fields) with `fields`, not following redirects."""
    hidden = dict(_HIDDEN.findall(page.text))
    return browser.post(server.url(path), data={**hidden, **fields}, allow_redirects=False, timeout=20)


def password_step(browser, server, username, request=None):
    """The sign-in page and its form: answers the POST /login response."""
    page = browser.get(server.url("/login" + (f"?request={request}" if request else "")), timeout=20)
    return post(browser, server, "/login", page, username=username, password=PASSWORD)


def qr_text(html):
    """Decodes the page's QR code (an SVG of unit squares) with zxing-cpp, as a phone's camera would."""
    side = int(re.search(r'viewBox="0 0 (\d+) \1"', html).group(1))
    image = numpy.full((side * 8, side * 8), 255, dtype=numpy.uint8)
    for x, y in re.findall(r"M(\d+) (\d+)h1v1h-1z", html):
        image[int(y) * 8:(int(y) + 1) * 8, int(x) * 8:(int(x) + 1) * 8] = 0
    found = zxingcpp.read_barcodes(image, formats=zxingcpp.BarcodeFormat.QRCode)
    assert len(found) == 1, "no QR code found in the page"
    return found[0].text


def set_up_authenticator(browser, server, path="/account/security/totp"):
    """Opens the set-up page, reads the key as a person would type it, and confirms it with a
    first code. Returns (pyotp.TOTP, the time of that code, the recovery codes, the response)."""
    page = browser.get(server.url(path), timeout=20)
    assert page.status_code == 200, page.text[:300]
    assert "<svg" in page.text and 'aria-label="QR code' in page.text
    totp = pyotp.TOTP(_SECRET.search(page.text).group(1).replace(" ", ""))
    # The QR code carries the same key in the otpauth:// URI authenticator apps read.
    scanned = pyotp.parse_uri(qr_text(page.text))
    assert scanned.secret == totp.secret and scanned.issuer == urlparse(server.issuer).hostname
    wrong = post(browser, server, "/account/security/totp", page, code="000000" if totp.now() != "000000" else "111111")
    assert wrong.status_code == 400 and "not right" in wrong.text
    moment = time.time()
    done = post(browser, server, "/account/security/totp", page, code=totp.at(moment))
    assert done.status_code == 200, done.text[:300]
    codes = _CODES.findall(done.text)
    assert len(codes) == 10 and len(set(codes)) == 10
    return totp, moment, codes, done


class App:
    """A native app registered on the server, and its authorization requests."""

    def __init__(self, server):
        self.server = server
        self.redirect_uri = f"http://127.0.0.1:{free_port()}/callback"
        self.client = server.cli("clients", "create", "--type", "native", "--name", "Field Notes", "--redirect-uri",
                                 self.redirect_uri, "--scope", "openid", "--first-party")
        self.verifier, self.challenge = pkce()

    def authorize(self, browser, **extra):
        return browser.get(self.server.url("/oauth2/authorize?" + urlencode({
            "response_type": "code", "client_id": self.client["client_id"], "redirect_uri": self.redirect_uri,
            "scope": "openid", "state": "s", "nonce": "n", "code_challenge": self.challenge,
            "code_challenge_method": "S256", **extra})), allow_redirects=False, timeout=20)

    def tokens(self, location):
        assert location.startswith(self.redirect_uri), location
        response = requests.post(self.server.url("/oauth2/token"), timeout=20, data={
            "grant_type": "authorization_code", "code": code_in(location), "redirect_uri": self.redirect_uri,
            "client_id": self.client["client_id"], "code_verifier": self.verifier})
        assert response.status_code == 200, response.text
        return response.json()


def request_of(location):
    return parse_qs(urlparse(location).query)["request"][0]


def test_an_authenticator_app_is_set_up_then_asked_for_at_every_sign_in(tmp_path):
    with start(tmp_path, "--sign-in-attempts", "5") as server:
        server.cli("users", "create", "alice", "--password-stdin", stdin=PASSWORD + "\n")
        app = App(server)
        browser = requests.Session()
        assert password_step(browser, server, "alice").status_code == 303
        totp, moment, recovery, _ = set_up_authenticator(browser, server)
        security = browser.get(server.url("/account/security"), timeout=20)
        assert "On since" in security.text and "10 of 10 recovery codes left" in security.text

        # A new browser: the password alone does not sign in any more.
        browser = requests.Session()
        asked = app.authorize(browser)
        request = request_of(asked.headers["Location"])
        step = password_step(browser, server, "alice", request=request)
        assert step.status_code == 303 and step.headers["Location"] == f"/login/second-factor?request={request}"
        assert browser.get(server.url("/account"), allow_redirects=False, timeout=20).status_code == 303
        form = browser.get(server.url(step.headers["Location"]), timeout=20)
        assert form.status_code == 200 and 'name="code"' in form.text and 'autocomplete="one-time-code"' in form.text

        # The code that confirmed the app is used up; a code two steps old is too late.
        assert post(browser, server, "/login/second-factor", form, code=totp.at(moment)).status_code == 401
        assert post(browser, server, "/login/second-factor", form, code=totp.at(time.time() - 60)).status_code == 401
        # The next step's code is within the one step of drift allowed.
        done = post(browser, server, "/login/second-factor", form, code=totp.at(time.time() + 30))
        assert done.status_code == 303 and done.headers["Location"] == f"/consent?request={request}"
        back = browser.get(server.url(done.headers["Location"]), allow_redirects=False, timeout=20)
        id_token = claims(app.tokens(back.headers["Location"])["id_token"])
        assert id_token["amr"] == ["pwd", "otp", "mfa"] and id_token["acr"] == MFA

        # A recovery code works once, typed in lower case with spaces.
        for expected in (303, 401):
            other = requests.Session()
            password_step(other, server, "alice")
            form = other.get(server.url("/login/second-factor"), timeout=20)
            typed = recovery[0].lower().replace("-", " ")
            assert post(other, server, "/login/second-factor", form, code=typed).status_code == expected
        security = browser.get(server.url("/account/security"), timeout=20)
        assert "9 of 10 recovery codes left" in security.text


def test_guessing_codes_is_throttled_per_account(tmp_path):
    with start(tmp_path, "--sign-in-attempts", "5") as server:
        server.cli("users", "create", "bruno", "--password-stdin", stdin=PASSWORD + "\n")
        browser = requests.Session()
        password_step(browser, server, "bruno")
        totp, _, _, _ = set_up_authenticator(browser, server)
        guesser = requests.Session()
        password_step(guesser, server, "bruno")
        form = guesser.get(server.url("/login/second-factor"), timeout=20)
        answers = [post(guesser, server, "/login/second-factor", form, code=f"{n:06d}").status_code for n in range(6)]
        assert answers[:5] == [401] * 5 and answers[5] == 429
        # Over the limit the code is not even checked: the right one is refused too.
        right = post(guesser, server, "/login/second-factor", form, code=totp.at(time.time() + 30))
        assert right.status_code == 429 and int(right.headers["Retry-After"]) > 0


def test_one_code_used_at_once_from_two_browsers_signs_in_one(tmp_path):
    with start(tmp_path) as server:
        server.cli("users", "create", "chen", "--password-stdin", stdin=PASSWORD + "\n")
        browser = requests.Session()
        password_step(browser, server, "chen")
        totp, _, _, _ = set_up_authenticator(browser, server)
        attempts = []
        for _ in range(8):
            session = requests.Session()
            password_step(session, server, "chen")
            attempts.append((session, session.get(server.url("/login/second-factor"), timeout=20)))
        code = totp.at(time.time() + 30)
        results = [None] * len(attempts)
        barrier = threading.Barrier(len(attempts))

        def attempt(index):
            session, form = attempts[index]
            barrier.wait()
            results[index] = post(session, server, "/login/second-factor", form, code=code).status_code

        threads = [threading.Thread(target=attempt, args=(i,)) for i in range(len(attempts))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(results) == [303] + [401] * (len(attempts) - 1), results


def test_acr_values_steps_a_password_session_up_and_prompt_none_cannot(tmp_path):
    with start(tmp_path) as server:
        server.cli("users", "create", "dana", "--password-stdin", stdin=PASSWORD + "\n")
        app = App(server)
        metadata = requests.get(server.url("/.well-known/openid-configuration"), timeout=10).json()
        assert MFA in metadata["acr_values_supported"] and "acr" in metadata["claims_supported"]
        browser = requests.Session()
        asked = app.authorize(browser)
        step = password_step(browser, server, "dana", request=request_of(asked.headers["Location"]))
        back = browser.get(server.url(step.headers["Location"]), allow_redirects=False, timeout=20)
        first = claims(app.tokens(back.headers["Location"])["id_token"])
        assert first["amr"] == ["pwd"] and first["acr"] == "urn:latchkey:acr:1"

        # prompt=none cannot show the set-up page.
        silent = app.authorize(browser, acr_values=MFA, prompt="none")
        assert silent.status_code == 303
        assert parse_qs(urlparse(silent.headers["Location"]).query)["error"] == ["interaction_required"]

        # An app that needs two factors: dana has none yet, so she sets one up, then goes on.
        asked = app.authorize(browser, acr_values=f"{MFA} urn:example:unknown")
        assert asked.headers["Location"].startswith("/account/security/totp?request=")
        request = request_of(asked.headers["Location"])
        totp, _, _, done = set_up_authenticator(browser, server, asked.headers["Location"])
        onward = re.search(r'href="(/consent\?request=[^"]+)"', done.text).group(1)
        assert request_of(onward) == request
        back = browser.get(server.url(onward), allow_redirects=False, timeout=20)
        tokens = app.tokens(back.headers["Location"])
        stepped = claims(tokens["id_token"])
        assert stepped["amr"] == ["pwd", "otp", "mfa"] and stepped["acr"] == MFA
        assert stepped["auth_time"] >= first["auth_time"]
        # A resource server learns the same by introspection (RFC 9470 §6.2).
        service = server.cli("clients", "create", "--type", "service", "--name", "Notes API", "--scope", "openid")
        introspected = requests.post(server.url("/oauth2/introspect"), data={"token": tokens["access_token"]},
                                     auth=(service["client_id"], service["client_secret"]), timeout=20).json()
        assert introspected["active"] and introspected["acr"] == MFA
        assert introspected["auth_time"] == stepped["auth_time"]

        # A new browser whose password session must step up with the code it already has.
        other = requests.Session()
        password_step(other, server, "dana")
        form = other.get(server.url("/login/second-factor"), timeout=20)
        assert post(other, server, "/login/second-factor", form, code=totp.at(time.time() + 30)).status_code == 303


def test_the_policy_makes_administrators_set_up_a_factor_and_an_administrator_resets_one(tmp_path):
    with start(tmp_path, "--require-second-factor", "admins") as server:
        server.cli("users", "create", "erin", "--password-stdin", "--admin", stdin=PASSWORD + "\n")
        server.cli("users", "create", "finn", "--password-stdin", stdin=PASSWORD + "\n")
        app = App(server)
        # Finn is no administrator: his password is enough.
        finn = requests.Session()
        asked = app.authorize(finn)
        step = password_step(finn, server, "finn", request=request_of(asked.headers["Location"]))
        assert step.headers["Location"].startswith("/consent?request=")

        # Erin must set one up before the console.
        erin = requests.Session()
        page = erin.get(server.url("/login?next=/admin/users"), timeout=20)
        signed_in = post(erin, server, "/login", page, username="erin", password=PASSWORD, next="/admin/users")
        assert signed_in.headers["Location"] == "/admin/users"
        console = erin.get(server.url("/admin/users"), allow_redirects=False, timeout=20)
        assert console.status_code == 303 and console.headers["Location"] == "/account/security/totp?next=%2Fadmin%2Fusers"
        _, _, _, done = set_up_authenticator(erin, server, console.headers["Location"])
        assert 'href="/admin/users"' in done.text
        assert erin.get(server.url("/admin/users"), allow_redirects=False, timeout=20).status_code == 200
        # Turning it off is refused while the policy requires it.
        remove = erin.get(server.url("/account/security/remove"), timeout=20)
        refused = post(erin, server, "/account/security/remove", remove, current_password=PASSWORD)
        assert refused.status_code == 400 and "must keep a second factor" in refused.text

        # Finn's account is required one by hand; an administrator resets Erin's from the command line.
        server.cli("users", "require-second-factor", "finn", "on")
        asked = app.authorize(finn)
        assert asked.headers["Location"].startswith("/account/security/totp?request=")
        server.cli("users", "reset-second-factors", "erin")
        again = requests.Session()
        page = again.get(server.url("/login?next=/admin"), timeout=20)
        signed_in = post(again, server, "/login", page, username="erin", password=PASSWORD, next="/admin")
        assert signed_in.headers["Location"] == "/admin"
        assert again.get(server.url("/admin"), allow_redirects=False, timeout=20).headers["Location"].startswith(
            "/account/security/totp")


def test_turning_off_and_new_recovery_codes_need_the_password(tmp_path):
    with start(tmp_path) as server:
        server.cli("users", "create", "gus", "--password-stdin", stdin=PASSWORD + "\n")
        browser = requests.Session()
        password_step(browser, server, "gus")
        _, _, old_codes, _ = set_up_authenticator(browser, server)
        renew = browser.get(server.url("/account/security/recovery-codes"), timeout=20)
        assert post(browser, server, "/account/security/recovery-codes", renew,
                    current_password="wrong").status_code == 400
        renewed = post(browser, server, "/account/security/recovery-codes", renew, current_password=PASSWORD)
        new_codes = _CODES.findall(renewed.text)
        assert len(new_codes) == 10 and not set(new_codes) & set(old_codes)
        # An old code no longer works.
        other = requests.Session()
        password_step(other, server, "gus")
        form = other.get(server.url("/login/second-factor"), timeout=20)
        assert post(other, server, "/login/second-factor", form, code=old_codes[0]).status_code == 401
        remove = browser.get(server.url("/account/security/remove"), timeout=20)
        assert post(browser, server, "/account/security/remove", remove, current_password=PASSWORD).status_code == 200
        # Off: the password alone signs in again, and the half-done session above is no way in.
        fresh = requests.Session()
        assert password_step(fresh, server, "gus").headers["Location"] == "/account"
        assert post(other, server, "/login/second-factor", form, code=new_codes[0]).status_code == 401


def test_the_forms_refuse_a_forged_csrf_token_and_change_nothing(tmp_path):
    with start(tmp_path) as server:
        server.cli("users", "create", "hana", "--password-stdin", stdin=PASSWORD + "\n")
        browser = requests.Session()
        password_step(browser, server, "hana")
        setup = browser.get(server.url("/account/security/totp"), timeout=20)
        factor = dict(_HIDDEN.findall(setup.text))["factor"]
        totp = pyotp.TOTP(_SECRET.search(setup.text).group(1).replace(" ", ""))
        for path, fields in [("/account/security/totp", {"factor": factor, "code": totp.now()}),
                             ("/account/security/recovery-codes", {"current_password": PASSWORD}),
                             ("/account/security/remove", {"current_password": PASSWORD})]:
            answer = browser.post(server.url(path), data={**fields, "csrf_token": "forged"}, allow_redirects=False,
                                  timeout=20)
            assert answer.status_code == 403, (path, answer.status_code)
        assert "Off:" in browser.get(server.url("/account/security"), timeout=20).text
        totp, _, _, _ = set_up_authenticator(browser, server)
        half = requests.Session()
        password_step(half, server, "hana")
        answer = half.post(server.url("/login/second-factor"), allow_redirects=False, timeout=20,
                           data={"csrf_token": "forged", "code": totp.at(time.time() + 30)})
        assert answer.status_code == 403
        assert half.get(server.url("/account"), allow_redirects=False, timeout=20).status_code == 303


def test_a_password_session_from_before_steps_up_and_cannot_change_the_factors(tmp_path):
    with start(tmp_path) as server:
        server.cli("users", "create", "ivo", "--password-stdin", stdin=PASSWORD + "\n")
        app = App(server)
        # Browser B signs in with the password while ivo has no second factor yet.
        stale = requests.Session()
        assert password_step(stale, server, "ivo").headers["Location"] == "/account"
        signed_in_at = time.time()
        time.sleep(1.1)
        owner = requests.Session()
        password_step(owner, server, "ivo")
        totp, _, _, _ = set_up_authenticator(owner, server)

        # B's password alone no longer reaches an app: it steps up with a code first, and the ID
        # token's auth_time stays the password's (a code renews no sign-in time).
        asked = app.authorize(stale)
        request = request_of(asked.headers["Location"])
        assert asked.headers["Location"] == f"/login/second-factor?request={request}"
        form = stale.get(server.url(asked.headers["Location"]), timeout=20)
        done = post(stale, server, "/login/second-factor", form, code=totp.at(time.time() + 30))
        assert done.headers["Location"] == f"/consent?request={request}"
        back = stale.get(server.url(done.headers["Location"]), allow_redirects=False, timeout=20)
        id_token = claims(app.tokens(back.headers["Location"])["id_token"])
        assert id_token["amr"] == ["pwd", "otp", "mfa"] and id_token["auth_time"] <= signed_in_at + 1
        # A session that used its second factor gains nothing from another code.
        again = post(stale, server, "/login/second-factor", form, code=totp.at(time.time() + 30))
        assert again.status_code == 403

        # A third browser with the password alone cannot touch the factors.
        thief = requests.Session()
        page = thief.get(server.url("/login"), timeout=20)
        # (ivo's password now leads to the second step: the thief's session is half signed in.)
        assert post(thief, server, "/login", page, username="ivo", password=PASSWORD).headers["Location"] \
            == "/login/second-factor"
        assert thief.get(server.url("/account/security/totp"), allow_redirects=False, timeout=20).status_code == 303

        # Replacing the authenticator from a two-factor session needs the password as well.
        setup = owner.get(server.url("/account/security/totp"), timeout=20)
        assert 'name="current_password"' in setup.text
        other = pyotp.TOTP(_SECRET.search(setup.text).group(1).replace(" ", ""))
        assert post(owner, server, "/account/security/totp", setup, code=other.now()).status_code == 400
        replaced = post(owner, server, "/account/security/totp", setup, code=other.now(), current_password=PASSWORD)
        assert replaced.status_code == 200 and len(_CODES.findall(replaced.text)) == 10


def test_the_address_is_told_when_the_second_factors_change(tmp_path):
    from smtp_relay import SMTPRelay
    with SMTPRelay() as relay, start(tmp_path, "--smtp-url", relay.url, "--mail-from", "accounts@example.com") as server:
        server.cli("users", "create", "jo", "--password-stdin", "--email", "jo@example.org", "--email-verified",
                   stdin=PASSWORD + "\n")
        browser = requests.Session()
        password_step(browser, server, "jo")
        set_up_authenticator(browser, server)
        renew = browser.get(server.url("/account/security/recovery-codes"), timeout=20)
        post(browser, server, "/account/security/recovery-codes", renew, current_password=PASSWORD)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            with relay.lock:
                received = [m for m in relay.messages if "jo@example.org" in m.rcpt_tos]
            if len(received) >= 2:
                break
            time.sleep(0.1)
        assert len(received) == 2, received
        texts = [m.message.get_body(preferencelist=("plain",)).get_content() for m in received]
        # The outbox sends in any order.
        assert sorted("set up" in text for text in texts) == [False, True]
        assert any("An authenticator app (with new recovery codes) was set up" in text for text in texts)
        assert any("New recovery codes replaced the old ones" in text for text in texts)
        assert all(server.issuer + "/account/security" in text for text in texts)
        # Nothing secret goes by mail: no key, no recovery code.
        assert not any(re.search(r"[A-Z0-9]{4}-[A-Z0-9]{4}-[A-Z0-9]{4}-[A-Z0-9]{4}", text) for text in texts)
