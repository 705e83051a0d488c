"""Real-browser tests of Latchkey's pages: headless Chromium driven by Selenium against `latchkey serve --dev`.

Each flow runs at a desktop width (1280x900) and a phone width (375x812): sign-in with the keyboard,
consent with a permission unticked by the keyboard, deny, the error page for an unregistered redirect
URI, disconnecting an app on /account, OpenID Connect's logout (its question, then the signed-out page), and
signing in through an upstream identity provider (Tests/Interop/authlib_provider.py). Every page visited is checked for accessibility basics
(lang, a label for every visible control, every button and control reachable by Tab, no horizontal
overflow), scanned with axe-core (a "serious" or "critical" violation fails the test), and saved as a
full-page screenshot in $LATCHKEY_ARTIFACTS, else .build/artifacts/browser/, next to axe's findings as JSON.

Needs Debian's `chromium` and `chromium-driver`, and `selenium`, `axe-selenium-python` (which bundles
axe.min.js), `requests`, `pytest` from PyPI. Without any of them the module is skipped, unless
LATCHKEY_BROWSER_REQUIRED=1, when it fails instead.
"""
import base64
import json
import math
import os
import secrets
import shutil
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlparse

import pytest
import requests
from latchkey_process import LatchkeyError, LatchkeyServer, pkce
from upstream_provider import AuthlibUpstream

ROOT = Path(__file__).resolve().parents[2]

WIDTHS = {"desktop": (1280, 900), "phone": (375, 812)}
APP_NAME = "Latchkey Demo App"
ALL_SCOPES = ["profile", "activity", "sleep"]  # asked of the --dev client (registered for openid and email too)

CHROMIUM = next((p for p in map(shutil.which, ["chromium", "chromium-browser", "google-chrome"]) if p), None)
CHROMEDRIVER = shutil.which("chromedriver")
try:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.common.exceptions import StaleElementReferenceException, TimeoutException, WebDriverException
    from selenium.webdriver.support.ui import WebDriverWait
    HAVE_SELENIUM = True
except ImportError:
    HAVE_SELENIUM = False
try:
    from axe_selenium_python import Axe
    HAVE_AXE = True
except ImportError:
    HAVE_AXE = False

_missing = [name for name, ok in [("chromium", CHROMIUM), ("chromedriver", CHROMEDRIVER), ("selenium", HAVE_SELENIUM),
                                  ("axe-selenium-python", HAVE_AXE)]
            if not ok]
if _missing:
    message = "real-browser tests need " + ", ".join(_missing) + \
              " (apt-get install chromium chromium-driver; pip install selenium axe-selenium-python)"
    if os.environ.get("LATCHKEY_BROWSER_REQUIRED") == "1":
        raise RuntimeError(message)
    pytest.skip(message, allow_module_level=True)


# ---------------------------------------------------------------------------------------------- fixtures

def artifacts_dir():
    path = Path(os.environ.get("LATCHKEY_ARTIFACTS") or ROOT / ".build" / "artifacts" / "browser")
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture
def server(tmp_path):
    """A fresh `latchkey serve --dev` per test, so that no consent or session carries over (it starts in <1 s)."""
    try:
        process = LatchkeyServer(["--dev", "--data-dir", tmp_path / "data"], workdir=tmp_path / "serve")
    except LatchkeyError as error:
        pytest.fail(str(error))
    if not process.dev:
        process.stop()
        pytest.fail("latchkey serve --dev created no demo user and client:\n" + process.output_tail())
    yield {"issuer": process.issuer, "password": process.dev["password"], "client_id": process.dev["client_id"]}
    process.stop()


class _Callback(BaseHTTPRequestHandler):
    posted = []  # the form bodies of response_mode=form_post answers, as received

    def do_GET(self):
        body = b'<!doctype html><html lang="en"><title>App</title><p>The app received the redirect.</p></html>'
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        _Callback.posted.append({key: values[0] for key, values in parse_qs(self.rfile.read(length).decode()).items()})
        self.do_GET()

    def log_message(self, *arguments):
        pass


@pytest.fixture(scope="module")
def redirect_uri():
    """The app's loopback redirect: a tiny HTTP server, so the browser lands on a real page."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Callback)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/callback"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(scope="module")
def chrome():
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     "--no-first-run", "--no-default-browser-check", "--disable-extensions",
                     "--window-size=1280,900", "--lang=en-US", "--force-color-profile=srgb"]:
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(20)
    yield driver
    driver.quit()


@pytest.fixture(params=list(WIDTHS), ids=list(WIDTHS))
def browser(request, chrome):
    """The shared Chromium, emptied of cookies and set to the width under test."""
    width, height = WIDTHS[request.param]
    phone = width < 600
    chrome.execute_cdp_cmd("Network.clearBrowserCookies", {})
    chrome.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                           {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": phone})
    chrome.execute_cdp_cmd("Emulation.setTouchEmulationEnabled", {"enabled": phone, "maxTouchPoints": 5 if phone else 1})
    chrome.get("about:blank")
    chrome.width, chrome.height = width, height
    yield chrome


# ---------------------------------------------------------------------------------------------- helpers

def authorization_url(server, redirect_uri, scope=ALL_SCOPES):
    verifier, challenge = pkce()
    state = secrets.token_urlsafe(16)
    query = urlencode({"response_type": "code", "client_id": server["client_id"], "redirect_uri": redirect_uri,
                       "scope": " ".join(scope), "state": state, "code_challenge": challenge,
                       "code_challenge_method": "S256"})
    return f"{server['issuer']}/oauth2/authorize?{query}", verifier, state


def wait_for(driver, condition, what, timeout=10):
    def settled(d):
        # A condition that reads the page while it navigates may find its element gone: Chromium says so
        # as StaleElementReferenceException or, since version 15x, as an inspector error about a node
        # that "does not belong to the document". Either way, look again.
        try:
            return condition(d)
        except WebDriverException as error:
            if "does not belong to the document" in str(error):
                return False
            raise
    try:
        return WebDriverWait(driver, timeout, ignored_exceptions=[StaleElementReferenceException]).until(settled)
    except TimeoutException:
        pytest.fail(f"timed out waiting for {what}; the browser is at {driver.current_url}")


def wait_for_path(driver, server, path):
    wait_for(driver, lambda d: d.current_url.startswith(server["issuer"] + path)
             and d.execute_script("return document.readyState") == "complete", path)


def wait_for_redirect(driver, redirect_uri):
    wait_for(driver, lambda d: d.current_url.startswith(redirect_uri + "?"), "the redirect to the app")
    return {key: values[0] for key, values in parse_qs(urlparse(driver.current_url).query).items()}


def active(driver):
    return driver.execute_script(
        "const e = document.activeElement; "
        "return e ? [e.tagName, e.id || '', e.getAttribute('value') || '', e.textContent.trim()] : null")


# Moves focus to the top of the page, so that the next Tab goes to the first control (a mere blur() would
# leave Chrome's sequential-navigation starting point where the focus was).
TO_TOP_SCRIPT = """
document.body.setAttribute('tabindex', '-1'); document.body.focus(); document.body.removeAttribute('tabindex');
"""


def tab_to(driver, matches, what, limit=25):
    """Presses Tab from the top of the page until the focused element matches; fails if it never does."""
    driver.execute_script(TO_TOP_SCRIPT)
    for _ in range(limit):
        ActionChains(driver).send_keys(Keys.TAB).perform()
        if matches(active(driver)):
            return
    pytest.fail(f"{what} cannot be reached with Tab (last focus: {active(driver)})")


def screenshot(driver, name):
    """A full-page PNG: the whole document, including anything overflowing to the right."""
    size = driver.execute_cdp_cmd("Page.getLayoutMetrics", {})["cssContentSize"]
    width = max(driver.width, math.ceil(size["width"]))
    height = max(driver.height, math.ceil(size["height"]))
    shot = driver.execute_cdp_cmd("Page.captureScreenshot", {
        "format": "png", "captureBeyondViewport": True,
        "clip": {"x": 0, "y": 0, "width": width, "height": height, "scale": 1}})
    (artifacts_dir() / f"{name}-{driver.width}.png").write_bytes(base64.b64decode(shot["data"]))


ACCESSIBILITY_SCRIPT = r"""
const visible = e => { const s = getComputedStyle(e), r = e.getBoundingClientRect();
                       return s.display !== 'none' && s.visibility !== 'hidden' && r.width > 0 && r.height > 0; };
const text = e => (e ? e.textContent : '').replace(/\s+/g, ' ').trim();
const unlabelled = [], unnamedButtons = [], imagesWithoutAlt = [];
for (const e of document.querySelectorAll('input, select, textarea')) {
  if (e.type === 'hidden' || !visible(e)) continue;
  let name = Array.from(e.labels || []).map(text).join(' ') + (e.getAttribute('aria-label') || '');
  for (const id of (e.getAttribute('aria-labelledby') || '').split(/\s+/).filter(Boolean))
    name += text(document.getElementById(id));
  if (!name.trim()) unlabelled.push(e.outerHTML);
}
for (const b of document.querySelectorAll('button, input[type=submit]'))
  if (visible(b) && !(text(b) || b.value || b.getAttribute('aria-label'))) unnamedButtons.push(b.outerHTML);
for (const i of document.querySelectorAll('img'))
  if (!i.hasAttribute('alt')) imagesWithoutAlt.push(i.outerHTML);
// A fieldset is announced as a group named by its legend; one without a legend is an unnamed group.
const unnamedGroups = Array.from(document.querySelectorAll('fieldset'))
  .filter(f => !text(f.querySelector(':scope > legend')) && !f.getAttribute('aria-label'))
  .map(f => f.outerHTML.slice(0, 120));
return {
  lang: document.documentElement.getAttribute('lang') || '',
  title: document.title.trim(),
  h1: Array.from(document.querySelectorAll('h1')).map(text),
  unlabelled, unnamedButtons, imagesWithoutAlt, unnamedGroups,
  scrollWidth: document.documentElement.scrollWidth,
  innerWidth: window.innerWidth,
};
"""

TAB_WALK_SCRIPT = r"""
const visible = e => { const s = getComputedStyle(e), r = e.getBoundingClientRect();
                       return s.display !== 'none' && s.visibility !== 'hidden' && r.width > 0 && r.height > 0; };
const controls = Array.from(document.querySelectorAll('button, input, select, textarea, a[href]'))
  .filter(e => e.type !== 'hidden' && visible(e) && !e.disabled);
controls.forEach((e, i) => e.setAttribute('data-lk-tab', String(i)));
window.__lkFocused = [];
window.__lkNoRing = [];
document.addEventListener('focusin', ev => {
  const i = ev.target.getAttribute && ev.target.getAttribute('data-lk-tab');
  if (i === null || i === undefined) return;
  window.__lkFocused.push(Number(i));
  const s = getComputedStyle(ev.target);
  const ring = (s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) > 0) || s.boxShadow !== 'none';
  if (!ring) window.__lkNoRing.push(Number(i));
}, true);
document.body.setAttribute('tabindex', '-1'); document.body.focus(); document.body.removeAttribute('tabindex');
return controls.map(e => e.outerHTML.slice(0, 120));
"""


class PageProblems:
    """The problems of the pages seen in one test. They are collected rather than raised at once, so that the
    flow still runs to its end (the grant, the redirect, the tokens); each test calls verify() last."""

    def __init__(self):
        self.items = []

    def expect(self, condition, message):
        if not condition:
            self.items.append(message)

    def verify(self):
        assert not self.items, "page problems:\n- " + "\n- ".join(self.items)


@pytest.fixture
def page_problems():
    return PageProblems()


AXE_FAILING_IMPACTS = ("critical", "serious")  # axe's impacts, worst first; "moderate" and "minor" are only saved
AXE_TARGETS_SHOWN = 3                          # how many of a violation's elements the message names


def axe_problems(driver, name):
    """Runs axe-core on the current page and returns one problem per serious or critical violation.

    axe-selenium-python's Axe injects its bundled axe.min.js (again on every page, since a navigation drops it)
    and runs every rule axe has on the whole document. Every violation, whatever its impact, is saved as JSON
    next to the screenshots, for the moderate and minor ones that do not fail the test."""
    axe = Axe(driver)
    axe.inject()
    violations = axe.run()["violations"]
    (artifacts_dir() / f"axe-{name}-{driver.width}.json").write_text(json.dumps(violations, indent=2))
    problems = []
    for violation in violations:
        if violation["impact"] not in AXE_FAILING_IMPACTS:
            continue
        nodes = violation["nodes"]
        if violation["id"] == "autocomplete-valid":
            # The bundled axe-core (3.1.1) predates two HTML autocomplete tokens: `one-time-code`, which
            # password managers read to fill in an authenticator's code, and `webauthn`, which offers
            # passkeys in the username field's autofill. Every other autocomplete value is still checked.
            newer = ('autocomplete="one-time-code"', 'autocomplete="username webauthn"')
            nodes = [node for node in nodes if not any(token in node["html"] for token in newer)]
            if not nodes:
                continue
        # A target is a list of CSS selectors (more than one only inside iframes): join them to read as one.
        targets = [" ".join(node["target"]) for node in nodes]
        shown = ", ".join(targets[:AXE_TARGETS_SHOWN]) + (f" and {len(targets) - AXE_TARGETS_SHOWN} more"
                                                         if len(targets) > AXE_TARGETS_SHOWN else "")
        problems.append(f"axe {violation['id']} ({violation['impact']}): {violation['help']}; on {shown}")
    return problems


def keyboard_walk(driver):
    """Tabs from the top of the page through every control; returns the controls' HTML, the indices that
    got focus, and those that got it without a visible focus indicator. Leaves the focus at the top."""
    controls = driver.execute_script(TAB_WALK_SCRIPT)
    if not controls:
        return controls, set(), set()
    keys = ActionChains(driver)
    for _ in range(len(controls) + 2):
        keys.send_keys(Keys.TAB)
    keys.perform()
    focused = set(driver.execute_script("return window.__lkFocused"))
    no_ring = set(driver.execute_script("return window.__lkNoRing"))
    driver.execute_script(TO_TOP_SCRIPT)
    return controls, focused, no_ring


def check_page(driver, name, page_problems):
    """Screenshots the current page and checks its accessibility basics, adding what is wrong to page_problems."""
    screenshot(driver, name)
    # axe first, before the keyboard walk below marks the controls and moves the focus.
    problems = axe_problems(driver, name)
    facts = driver.execute_script(ACCESSIBILITY_SCRIPT)
    if not facts["lang"]:
        problems.append("<html> has no lang attribute")
    if not facts["title"]:
        problems.append("the page has no <title>")
    if len(facts["h1"]) != 1 or not facts["h1"][0]:
        problems.append(f"the page should have one non-empty <h1>, has {facts['h1']}")
    problems += [f"control without a label: {html}" for html in facts["unlabelled"]]
    problems += [f"button without a name: {html}" for html in facts["unnamedButtons"]]
    problems += [f"image without alt: {html}" for html in facts["imagesWithoutAlt"]]
    problems += [f"fieldset without a legend (an unnamed group to a screen reader): {html}"
                 for html in facts["unnamedGroups"]]
    # A phone browser widens the layout viewport to fit wide content, so innerWidth is compared with the
    # width under test as well as with scrollWidth.
    if facts["scrollWidth"] > facts["innerWidth"] or facts["innerWidth"] != driver.width:
        problems.append(f"the page overflows horizontally: scrollWidth {facts['scrollWidth']}, innerWidth "
                        f"{facts['innerWidth']}, at a {driver.width} px wide viewport")

    # Keyboard: from the top of the page, Tab must reach every visible button, control and link, and
    # each must show a focus ring. The ring is our CSS on :focus-visible, but whether Chromium deems
    # a focus "visible" is its own heuristic, which once in a few dozen walks did not for the first
    # Tab; so a control without a ring is walked to a second time, and flagged only if it has none
    # then either (a control our CSS gives no ring never has one).
    controls, focused, no_ring = keyboard_walk(driver)
    if no_ring:
        _, focused_again, no_ring_again = keyboard_walk(driver)
        focused |= focused_again
        no_ring &= no_ring_again
    problems += [f"not reachable with Tab: {html}" for i, html in enumerate(controls) if i not in focused]
    problems += [f"no visible focus indicator: {html}" for i, html in enumerate(controls) if i in no_ring]
    page_problems.items += [f"{name} at {driver.width} px: {problem}" for problem in problems]


def sign_in(driver, server, url, page_problems):
    """Opens the authorization URL, signs in as demo with the keyboard (Enter submits), lands on consent."""
    driver.get(url)
    wait_for_path(driver, server, "/login")
    check_page(driver, "login", page_problems)
    assert APP_NAME in driver.find_element(By.TAG_NAME, "main").text, "the sign-in page should name the app"
    username = driver.find_element(By.CSS_SELECTOR, "form[method=post] input[name=username]")
    password = driver.find_element(By.CSS_SELECTOR, "form[method=post] input[name=password]")
    username.send_keys("demo")
    password.send_keys(server["password"] + Keys.ENTER)
    wait_for_path(driver, server, "/consent")


def exchange(server, code, redirect_uri, verifier):
    response = requests.post(server["issuer"] + "/oauth2/token", data={
        "grant_type": "authorization_code", "code": code, "client_id": server["client_id"],
        "redirect_uri": redirect_uri, "code_verifier": verifier}, timeout=10)
    assert response.status_code == 200, response.text
    return response.json()


def scope_box(driver, scope):
    return driver.find_element(By.CSS_SELECTOR, f"form[method=post] input[type=checkbox][name=scope][value='{scope}']")


# ---------------------------------------------------------------------------------------------- tests

def test_sign_in_with_the_keyboard(browser, server, redirect_uri, page_problems):
    url, _, _ = authorization_url(server, redirect_uri)
    browser.get(url)
    wait_for_path(browser, server, "/login")
    assert active(browser)[1] == "username", "the username field should have the focus when the page opens"
    check_page(browser, "login", page_problems)

    # A wrong password first: the page says so, and keeps the request.
    browser.find_element(By.ID, "username").send_keys("demo")
    browser.find_element(By.ID, "password").send_keys("not the password" + Keys.ENTER)
    wait_for(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "[role=alert]"), "the sign-in error")
    assert "not right" in browser.find_element(By.CSS_SELECTOR, "[role=alert]").text
    check_page(browser, "login-error", page_problems)
    page_problems.expect(
        browser.find_element(By.ID, "username").get_attribute("value") == "demo",
        "login-error: after a wrong password the username should be kept, so that only the password has to be typed again")

    # Now with the keyboard only: the username field, Tab, the password, Enter.
    field = browser.find_element(By.ID, "username")
    field.clear()
    field.send_keys("demo")
    ActionChains(browser).send_keys(Keys.TAB).perform()
    assert active(browser)[1] == "password", "Tab from the username should go to the password"
    ActionChains(browser).send_keys(server["password"], Keys.ENTER).perform()
    wait_for_path(browser, server, "/consent")
    assert APP_NAME in browser.find_element(By.TAG_NAME, "h1").text
    assert "demo" in browser.find_element(By.TAG_NAME, "main").text, "consent should say who is signed in"
    check_page(browser, "consent", page_problems)
    page_problems.verify()


def test_consent_with_a_scope_unticked_by_the_keyboard(browser, server, redirect_uri, page_problems):
    url, verifier, state = authorization_url(server, redirect_uri)
    sign_in(browser, server, url, page_problems)
    check_page(browser, "consent", page_problems)
    for scope in ALL_SCOPES:
        assert scope_box(browser, scope).is_selected(), f"{scope} should be ticked by default"
    descriptions = {scope: scope_box(browser, scope).find_element(By.XPATH, "ancestor::label").text
                    for scope in ALL_SCOPES}
    assert all(descriptions.values()), descriptions
    # The choice must be the user's: the page may say that unticking is possible, not push to allow everything.
    text = browser.find_element(By.TAG_NAME, "main").text.lower()
    page_problems.expect("recommend" not in text and "best experience" not in text,
                         "consent: the page should not urge the user to allow every permission")

    # Tab to the activity checkbox, Space unticks it.
    tab_to(browser, lambda e: e and e[0] == "INPUT" and e[2] == "activity", "the activity checkbox")
    ActionChains(browser).send_keys(Keys.SPACE).perform()
    assert not scope_box(browser, "activity").is_selected()
    assert scope_box(browser, "profile").is_selected() and scope_box(browser, "sleep").is_selected()
    screenshot(browser, "consent-unticked")

    # Tab on to Allow, Enter presses it.
    ActionChains(browser).send_keys(Keys.TAB).perform()
    for _ in range(10):
        if active(browser)[0] == "BUTTON" and active(browser)[2] == "allow":
            break
        ActionChains(browser).send_keys(Keys.TAB).perform()
    assert active(browser)[2] == "allow", "Allow cannot be reached with Tab after the checkboxes"
    ActionChains(browser).send_keys(Keys.ENTER).perform()

    query = wait_for_redirect(browser, redirect_uri)
    assert query.get("state") == state
    assert query.get("iss") == server["issuer"]
    assert query.get("code", "").startswith("lk_ac_")
    token = exchange(server, query["code"], redirect_uri, verifier)
    granted = token["scope"].split()
    assert "activity" not in granted
    assert sorted(granted) == ["profile", "sleep"]
    page_problems.verify()


def test_deny(browser, server, redirect_uri, page_problems):
    url, _, state = authorization_url(server, redirect_uri)
    sign_in(browser, server, url, page_problems)
    check_page(browser, "consent", page_problems)
    browser.find_element(By.CSS_SELECTOR, "form[method=post] button[name=decision][value=deny]").click()
    query = wait_for_redirect(browser, redirect_uri)
    assert query.get("error") == "access_denied"
    assert query.get("state") == state
    assert "code" not in query
    page_problems.verify()


def test_form_post_sends_the_code_in_a_posted_form(browser, server, redirect_uri, page_problems):
    """response_mode=form_post: after consent the browser posts code, state and iss to the app by
    itself (the page's script comes from /assets under the page's policy), and no URL holds them."""
    url, verifier, state = authorization_url(server, redirect_uri)
    url += "&response_mode=form_post"
    _Callback.posted.clear()
    sign_in(browser, server, url, page_problems)
    browser.find_element(By.CSS_SELECTOR, "form[method=post] button[name=decision][value=allow]").click()
    wait_for(browser, lambda d: _Callback.posted and d.current_url == redirect_uri, "the form posted to the app")
    answer = _Callback.posted[-1]
    assert answer.get("state") == state and answer.get("iss") == server["issuer"], answer
    assert "code=" not in browser.current_url
    assert exchange(server, answer["code"], redirect_uri, verifier)["access_token"]
    page_problems.verify()


def test_error_page_for_an_unregistered_redirect_uri(browser, server, redirect_uri, page_problems):
    bad = "https://attacker.example/callback"
    url, _, _ = authorization_url(server, bad)
    browser.get(url)
    wait_for(browser, lambda d: d.execute_script("return document.readyState") == "complete", "the error page")
    time.sleep(0.3)  # a redirect, if the server wrongly sent one, would have started by now
    # No navigation away: the browser is still on the server's authorization endpoint.
    assert browser.current_url.startswith(server["issuer"] + "/oauth2/authorize?"), browser.current_url
    check_page(browser, "error-redirect-uri", page_problems)
    # The person reads plain words; the developer opens the details, which name the redirect URI.
    text = browser.find_element(By.TAG_NAME, "main").text
    assert "nothing was shared" in text, text
    browser.find_element(By.TAG_NAME, "summary").click()
    details = browser.find_element(By.TAG_NAME, "details").text
    assert "redirect" in details.lower(), f"the details should say the redirect URI is what is wrong: {details!r}"
    check_page(browser, "error-redirect-uri-details", page_problems)
    assert not browser.find_elements(By.CSS_SELECTOR, "a[href*='attacker.example'], form[action*='attacker.example']")
    assert requests.get(url, allow_redirects=False, timeout=10).status_code == 400
    page_problems.verify()


def test_account_page_disconnects_an_app(browser, server, redirect_uri, page_problems):
    url, verifier, _ = authorization_url(server, redirect_uri)
    sign_in(browser, server, url, page_problems)
    described = {box.get_attribute("value"): box.find_element(By.XPATH, "ancestor::label").find_element(
        By.TAG_NAME, "strong").text for box in browser.find_elements(By.CSS_SELECTOR, "input[name=scope]")}
    browser.find_element(By.CSS_SELECTOR, "form[method=post] button[name=decision][value=allow]").click()
    query = wait_for_redirect(browser, redirect_uri)
    token = exchange(server, query["code"], redirect_uri, verifier)
    assert requests.get(server["issuer"] + "/userinfo", headers={"Authorization": "Bearer " + token["access_token"]},
                        timeout=10).status_code == 200

    browser.get(server["issuer"] + "/account")
    wait_for_path(browser, server, "/account")
    check_page(browser, "account", page_problems)
    main = browser.find_element(By.TAG_NAME, "main")
    assert APP_NAME in main.text, "the connected app should be listed"
    buttons = [b for b in main.find_elements(By.CSS_SELECTOR, "form[method=post] button") if APP_NAME in b.text]
    assert len(buttons) == 1, "the app should have one revoke button that names it"
    missing = [d for d in described.values() if d not in main.text]
    page_problems.expect(not missing, "account: the page should say what the app can do in the consent page's "
                                      f"words, not in scope names: {missing} are not shown")

    # Press it with the keyboard: Tab to it, Enter.
    tab_to(browser, lambda e: e and e[0] == "BUTTON" and APP_NAME in e[3], "the app's revoke button")
    ActionChains(browser).send_keys(Keys.ENTER).perform()
    wait_for(browser, lambda d: APP_NAME not in d.find_element(By.TAG_NAME, "main").text, "the app to be gone")
    wait_for_path(browser, server, "/account")
    check_page(browser, "account-empty", page_problems)
    assert "No app is connected" in browser.find_element(By.TAG_NAME, "main").text

    refresh = requests.post(server["issuer"] + "/oauth2/token", data={
        "grant_type": "refresh_token", "refresh_token": token["refresh_token"], "client_id": server["client_id"]},
        timeout=10)
    assert refresh.status_code == 400, refresh.text
    assert refresh.json()["error"] == "invalid_grant"
    assert requests.get(server["issuer"] + "/userinfo", headers={"Authorization": "Bearer " + token["access_token"]},
                        timeout=10).status_code == 401

    # Sign out with the keyboard: back on the sign-in page, and /account asks to sign in again.
    tab_to(browser, lambda e: e and e[0] == "BUTTON" and "Sign out" in e[3], "the sign-out button")
    ActionChains(browser).send_keys(Keys.ENTER).perform()
    wait_for_path(browser, server, "/login")
    browser.get(server["issuer"] + "/account")
    wait_for_path(browser, server, "/login")
    page_problems.verify()


def test_rp_initiated_logout_asks_then_signs_out(browser, server, redirect_uri, page_problems):
    """OpenID Connect's logout endpoint without an id_token_hint: a question first, answered with the keyboard."""
    url, _, _ = authorization_url(server, redirect_uri)
    sign_in(browser, server, url, page_problems)
    browser.find_element(By.CSS_SELECTOR, "form[method=post] button[name=decision][value=allow]").click()
    wait_for_redirect(browser, redirect_uri)

    browser.get(server["issuer"] + "/oauth2/logout")
    wait_for_path(browser, server, "/oauth2/logout")
    check_page(browser, "logout-confirm", page_problems)
    assert "Sign out" in browser.find_element(By.TAG_NAME, "h1").text
    tab_to(browser, lambda e: e and e[0] == "BUTTON" and e[3] == "Sign out", "the sign-out button")
    ActionChains(browser).send_keys(Keys.ENTER).perform()
    wait_for(browser, lambda d: "signed out" in d.find_element(By.TAG_NAME, "h1").text, "the signed-out page")
    check_page(browser, "logged-out", page_problems)
    browser.get(server["issuer"] + "/account")
    wait_for_path(browser, server, "/login")
    page_problems.verify()


def test_consent_for_a_self_registered_agent_names_the_resource_and_says_it_is_unverified(
        browser, tmp_path, redirect_uri, page_problems):
    """An MCP-style agent registers itself (RFC 7591) and asks for a registered resource (RFC 8707):
    the consent page must say that this server has not verified the app, where the answer goes,
    and which resource the access is for, and still pass the page checks at both widths."""
    process = LatchkeyServer(["--dev", "--data-dir", tmp_path / "data", "--dynamic-registration", "open"],
                             workdir=tmp_path / "serve")
    try:
        server = {"issuer": process.issuer, "password": process.dev["password"]}
        resource = "https://tools.example/mcp"
        process.cli("resources", "add", resource, "--name", "Sleep tools", "--scope", "sleep")
        registered = requests.post(process.base + "/oauth2/register", json={
            "client_name": "Helpful Agent", "redirect_uris": ["http://127.0.0.1/callback"], "scope": "sleep"}, timeout=10)
        assert registered.status_code == 201, registered.text
        server["client_id"] = registered.json()["client_id"]
        verifier, challenge = pkce()
        query = urlencode({"response_type": "code", "client_id": server["client_id"], "redirect_uri": redirect_uri,
                           "scope": "sleep", "state": "st", "code_challenge": challenge,
                           "code_challenge_method": "S256", "resource": resource})
        browser.get(f"{server['issuer']}/oauth2/authorize?{query}")
        wait_for_path(browser, server, "/login")
        browser.find_element(By.ID, "username").send_keys("demo")
        browser.find_element(By.ID, "password").send_keys(server["password"] + Keys.ENTER)
        wait_for_path(browser, server, "/consent")
        check_page(browser, "consent-self-registered", page_problems)
        main = browser.find_element(By.TAG_NAME, "main").text
        assert "Not verified by this server." in main and "registered itself" in main, main
        assert "Your answer goes to 127.0.0.1 (an app on this device)." in main, main
        assert "Sleep tools" in main and resource in main, main
        browser.find_element(By.CSS_SELECTOR, "form[method=post] button[name=decision][value=allow]").click()
        answer = wait_for_redirect(browser, redirect_uri)
        token = requests.post(server["issuer"] + "/oauth2/token", data={
            "grant_type": "authorization_code", "code": answer["code"], "client_id": server["client_id"],
            "redirect_uri": redirect_uri, "code_verifier": verifier}, timeout=10)
        assert token.status_code == 200 and token.json()["scope"] == "sleep", token.text
        page_problems.verify()
    finally:
        process.stop()


def test_device_page_code_entry_and_the_other_device_warning(browser, tmp_path, page_problems):
    """RFC 8628: a TV shows a code; on the phone the user opens verification_uri_complete (the code
    filled in), continues, signs in, sees a consent page that warns the request came from another
    device, allows it, and is told to go back to the device, which then gets its token."""
    process = LatchkeyServer(["--dev", "--data-dir", tmp_path / "data"], workdir=tmp_path / "serve")
    try:
        server = {"issuer": process.issuer, "password": process.dev["password"]}
        client_id = process.cli("clients", "create", "--type", "native", "--name", "Living-room TV", "--scope", "profile",
                                "--allow-device-code")["client_id"]
        device = requests.post(server["issuer"] + "/oauth2/device_authorization",
                               data={"client_id": client_id, "scope": "profile"}, timeout=10).json()

        # A wrong code first, typed with the keyboard: the page says so and keeps the field.
        browser.get(device["verification_uri"])
        wait_for_path(browser, server, "/device")
        assert active(browser)[1] == "user_code", "the code field should have the focus when the page opens"
        check_page(browser, "device", page_problems)
        browser.find_element(By.ID, "user_code").send_keys("bcdf ghjk" + Keys.ENTER)
        wait_for(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "[role=alert]"), "the wrong-code message")
        assert "not right" in browser.find_element(By.CSS_SELECTOR, "[role=alert]").text
        check_page(browser, "device-wrong-code", page_problems)

        browser.get(device["verification_uri_complete"])
        wait_for_path(browser, server, "/device")
        assert browser.find_element(By.ID, "user_code").get_attribute("value") == device["user_code"]
        browser.find_element(By.CSS_SELECTOR, "form[method=post] button[type=submit]").click()
        wait_for_path(browser, server, "/login")
        assert "Living-room TV" in browser.find_element(By.TAG_NAME, "main").text
        browser.find_element(By.ID, "username").send_keys("demo")
        browser.find_element(By.ID, "password").send_keys(server["password"] + Keys.ENTER)
        wait_for_path(browser, server, "/consent")
        check_page(browser, "consent-device", page_problems)
        main = browser.find_element(By.TAG_NAME, "main").text
        assert "This request comes from another device" in main, main
        assert "Your answer goes to" not in main, main
        browser.find_element(By.CSS_SELECTOR, "form[method=post] button[name=decision][value=allow]").click()
        wait_for_path(browser, server, "/device")
        assert "Your device is connected" in browser.find_element(By.TAG_NAME, "h1").text
        check_page(browser, "device-connected", page_problems)
        token = requests.post(server["issuer"] + "/oauth2/token", data={
            "grant_type": "urn:ietf:params:oauth:grant-type:device_code", "device_code": device["device_code"],
            "client_id": client_id}, timeout=10)
        assert token.status_code == 200 and token.json()["scope"] == "profile", token.text
        page_problems.verify()
    finally:
        process.stop()


def _mailed_link(relay, address, path, count):
    """The `count`th message to `address`: its link to `path` (the plain-text part's absolute URL)."""
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        with relay.lock:
            received = [m for m in relay.messages if address in m.rcpt_tos]
        if len(received) >= count:
            text = received[count - 1].message.get_body(preferencelist=("plain",)).get_content()
            return next(word for word in text.split() if path + "?" in word)
        time.sleep(0.1)
    pytest.fail(f"{address} got no message {count} with a {path} link")


def _fill(driver, **fields):
    """Types into the form's fields; Enter in the last one submits it."""
    items = list(fields.items())
    for index, (name, value) in enumerate(items):
        element = driver.find_element(By.CSS_SELECTOR, f"form[method=post] input[name={name}]")
        element.clear()
        element.send_keys(value + (Keys.ENTER if index == len(items) - 1 else ""))


def test_sign_up_confirmed_by_email_then_the_account_pages(browser, tmp_path, page_problems):
    """A person signs up from the sign-in page's link, confirms the address from the e-mail the
    relay received, signs in, visits each account page, then resets the password by e-mail."""
    from smtp_relay import SMTPRelay
    with SMTPRelay() as relay:
        process = LatchkeyServer(["--data-dir", tmp_path / "data", "--sign-up", "open", "--smtp-url", relay.url,
                                  "--mail-from", "accounts@example.com"], workdir=tmp_path / "serve")
        try:
            server = {"issuer": process.issuer}
            password, address = "a long sleepy passphrase", f"mia-{browser.width}@example.org"
            browser.get(server["issuer"] + "/login")
            wait_for_path(browser, server, "/login")
            check_page(browser, "login-with-sign-up", page_problems)
            browser.find_element(By.LINK_TEXT, "Create an account").click()
            wait_for_path(browser, server, "/signup")
            assert active(browser)[1] == "username", "the username field should have the focus when the page opens"
            check_page(browser, "signup", page_problems)
            _fill(browser, username="mia", email=address, password="password1")
            wait_for(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "[role=alert]"), "the password's refusal")
            assert active(browser)[1] == "password", "after a refused password the focus should be on it"
            check_page(browser, "signup-error", page_problems)
            _fill(browser, email=address, password=password)
            wait_for(browser, lambda d: "Check your e-mail" in d.find_element(By.TAG_NAME, "h1").text, "the notice")
            check_page(browser, "signup-done", page_problems)

            browser.get(_mailed_link(relay, address, "/email/verify", 1))
            wait_for_path(browser, server, "/email/verify")
            check_page(browser, "verify-email", page_problems)
            browser.find_element(By.CSS_SELECTOR, "form[method=post] button[type=submit]").click()
            wait_for(browser, lambda d: "confirmed" in d.find_element(By.TAG_NAME, "h1").text, "the confirmation")
            check_page(browser, "email-verified", page_problems)

            browser.get(server["issuer"] + "/login")
            _fill(browser, username="mia", password=password)
            wait_for_path(browser, server, "/account")
            check_page(browser, "account-self", page_problems)
            assert address in browser.find_element(By.TAG_NAME, "main").text
            for path, name in [("/account/password", "account-password"), ("/account/email", "account-email"),
                               ("/account/delete", "account-delete")]:
                browser.get(server["issuer"] + path)
                wait_for_path(browser, server, path)
                check_page(browser, name, page_problems)

            browser.execute_cdp_cmd("Network.clearBrowserCookies", {})
            browser.get(server["issuer"] + "/login")
            browser.find_element(By.LINK_TEXT, "Forgot your password?").click()
            wait_for_path(browser, server, "/password/forgot")
            check_page(browser, "password-forgot", page_problems)
            _fill(browser, login="mia")
            wait_for(browser, lambda d: "Check your e-mail" in d.find_element(By.TAG_NAME, "h1").text, "the notice")
            check_page(browser, "password-forgot-done", page_problems)
            # Mail 2 is the reset link (mail 1 was the confirmation).
            browser.get(_mailed_link(relay, address, "/password/reset", 2))
            wait_for_path(browser, server, "/password/reset")
            check_page(browser, "password-reset", page_problems)
            _fill(browser, password="an even longer sleepy passphrase")
            wait_for(browser, lambda d: "changed" in d.find_element(By.TAG_NAME, "h1").text, "the new password's notice")
            check_page(browser, "password-reset-done", page_problems)

            # The console's users page, where an administrator invites someone.
            process.cli("users", "create", "root", "--admin", "--password-stdin", stdin=password + "\n")
            browser.execute_cdp_cmd("Network.clearBrowserCookies", {})
            browser.get(server["issuer"] + "/admin/users")
            wait_for_path(browser, server, "/login")
            _fill(browser, username="root", password=password)
            wait_for_path(browser, server, "/admin/users")
            assert browser.find_elements(By.ID, "invite-email"), "the users page should offer an invitation"
            check_page(browser, "console-users-invite", page_problems)
            page_problems.verify()
        finally:
            process.stop()


def test_two_step_sign_in_with_an_authenticator_app(browser, tmp_path, page_problems):
    """A person turns on two-step sign-in from the account page with a key typed from the page (as
    into an authenticator app; pyotp computes the codes), saves the recovery codes, signs out, and
    signs in again with the password and a code; an administrator's console user page shows it."""
    import pyotp
    process = LatchkeyServer(["--data-dir", tmp_path / "data"], workdir=tmp_path / "serve")
    try:
        server = {"issuer": process.issuer}
        password = "a long sleepy passphrase"
        process.cli("users", "create", "ines", "--admin", "--password-stdin", stdin=password + "\n")
        browser.get(server["issuer"] + "/login")
        _fill(browser, username="ines", password=password)
        wait_for_path(browser, server, "/account")
        browser.find_element(By.LINK_TEXT, "Two-step sign-in").click()
        wait_for_path(browser, server, "/account/security")
        check_page(browser, "account-security-off", page_problems)
        browser.find_element(By.LINK_TEXT, "Set up an authenticator app").click()
        wait_for_path(browser, server, "/account/security/totp")
        check_page(browser, "totp-set-up", page_problems)
        qr = browser.find_element(By.CSS_SELECTOR, ".qr svg")
        assert qr.size["width"] >= 150, f"the QR code is {qr.size['width']} px wide: too small for a camera"
        totp = pyotp.TOTP(browser.find_element(By.ID, "totp-secret").text.replace(" ", ""))
        _fill(browser, code="000000" if totp.now() != "000000" else "111111")
        wait_for(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "[role=alert]"), "the wrong code's refusal")
        assert active(browser)[1] == "code", "after a wrong code the focus should be on the code field"
        check_page(browser, "totp-set-up-error", page_problems)
        _fill(browser, code=totp.now())
        wait_for(browser, lambda d: "recovery codes" in d.find_element(By.TAG_NAME, "h1").text, "the recovery codes")
        assert len(browser.find_elements(By.CSS_SELECTOR, "ol.codes li")) == 10
        check_page(browser, "recovery-codes", page_problems)
        browser.find_element(By.PARTIAL_LINK_TEXT, "continue").click()
        wait_for_path(browser, server, "/account/security")
        assert "On since" in browser.find_element(By.TAG_NAME, "main").text
        check_page(browser, "account-security-on", page_problems)

        browser.execute_cdp_cmd("Network.clearBrowserCookies", {})
        browser.get(server["issuer"] + "/login")
        _fill(browser, username="ines", password=password)
        wait_for_path(browser, server, "/login/second-factor")
        assert active(browser)[1] == "code", "the code field should have the focus when the page opens"
        check_page(browser, "second-factor", page_problems)
        _fill(browser, code=totp.at(time.time() + 30))
        wait_for_path(browser, server, "/account")

        browser.get(server["issuer"] + "/admin/users")
        wait_for_path(browser, server, "/admin/users")
        browser.find_element(By.LINK_TEXT, "ines").click()
        wait_for(browser, lambda d: "Two-step sign-in" in d.find_element(By.TAG_NAME, "main").text, "the user page")
        assert "On: an authenticator app" in browser.find_element(By.TAG_NAME, "main").text
        check_page(browser, "console-user-second-factor", page_problems)
        # Another administrator's job in real life; here ines resets her own, from the confirmation page.
        browser.find_element(By.LINK_TEXT, "Reset second factors").click()
        wait_for(browser, lambda d: "Reset ines's second factors?" in d.find_element(By.TAG_NAME, "h1").text,
                 "the confirmation")
        check_page(browser, "console-reset-second-factors", page_problems)
        browser.find_element(By.CSS_SELECTOR, "form[method=post] button[type=submit]").click()
        wait_for(browser, lambda d: "were reset" in d.find_element(By.TAG_NAME, "main").text, "the reset's notice")
        assert "Off: no second factor" in browser.find_element(By.TAG_NAME, "main").text
        page_problems.verify()
    finally:
        process.stop()


def test_passkeys_with_chromiums_virtual_authenticator(browser, tmp_path, page_problems):
    """Chromium's virtual authenticator (a platform passkey that verifies the user): a passkey is added
    on the security page, signs in without a username, re-authenticates in the console, and once
    removed signs in no more. The server is http://localhost:PORT, where browsers allow WebAuthn."""
    from selenium.webdriver.common.virtual_authenticator import Protocol, Transport, VirtualAuthenticatorOptions
    process = LatchkeyServer(["--data-dir", tmp_path / "data", "--host", "localhost"], workdir=tmp_path / "serve")
    options = VirtualAuthenticatorOptions()
    options.protocol = Protocol.CTAP2
    options.transport = Transport.INTERNAL
    options.has_resident_key = True
    options.has_user_verification = True
    options.is_user_verified = True
    browser.add_virtual_authenticator(options)
    try:
        server = {"issuer": process.issuer}
        password = "a long sleepy passphrase"
        process.cli("users", "create", "noor", "--admin", "--password-stdin", stdin=password + "\n")
        browser.get(server["issuer"] + "/login")
        _fill(browser, username="noor", password=password)
        wait_for_path(browser, server, "/account")
        browser.get(server["issuer"] + "/account/security")
        wait_for_path(browser, server, "/account/security")
        check_page(browser, "security-passkeys", page_problems)
        # Enter in the form's last field starts the passkey, as the button does.
        _fill(browser, name="Laptop", current_password=password)
        wait_for(browser, lambda d: "Passkey added" in d.find_element(By.TAG_NAME, "h1").text, "the passkey's notice")
        assert len(browser.get_credentials()) == 1
        check_page(browser, "passkey-added", page_problems)
        browser.get(server["issuer"] + "/account/security")
        assert "Laptop" in browser.find_element(By.TAG_NAME, "main").text

        def sign_in_with_passkey():
            """Opens the sign-in page and signs in with the passkey: the username field's autofill
            (conditional mediation) may offer it at once, which the virtual authenticator accepts;
            otherwise the button does."""
            browser.execute_cdp_cmd("Network.clearBrowserCookies", {})
            browser.get(server["issuer"] + "/login")
            button = "//button[normalize-space()='Sign in with a passkey']"
            wait_for(browser, lambda d: not d.current_url.startswith(server["issuer"] + "/login?")
                     and (d.find_elements(By.XPATH, button) or "/login" not in d.current_url), "the sign-in page")
            if browser.current_url.startswith(server["issuer"] + "/login"):
                time.sleep(0.5)  # the autofill's request, if the browser makes one, settles first
            if browser.current_url.startswith(server["issuer"] + "/login") and browser.find_elements(By.XPATH, button):
                if "could not sign you in" not in browser.find_element(By.TAG_NAME, "main").text:
                    browser.find_element(By.XPATH, button).click()

        # No username: the passkey names its account, offered in the username field's autofill.
        sign_in_with_passkey()
        wait_for_path(browser, server, "/account")
        # And by its button, on a page that offers no autofill (it shows an error: a wrong password).
        # The credential is taken out of the authenticator meanwhile, so the autofill has nothing to offer.
        credentials = browser.get_credentials()
        browser.remove_all_credentials()
        browser.execute_cdp_cmd("Network.clearBrowserCookies", {})
        browser.get(server["issuer"] + "/login")
        _fill(browser, username="noor", password="not the password")
        wait_for(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "p.error[role=alert]:not([hidden])"),
                 "the wrong password's refusal")
        for credential in credentials:
            browser.add_credential(credential)
        check_page(browser, "login-with-passkey", page_problems)
        browser.find_element(By.XPATH, "//button[normalize-space()='Sign in with a passkey']").click()
        wait_for_path(browser, server, "/account")
        assert "noor" in browser.find_element(By.TAG_NAME, "main").text
        assert "noor" in browser.find_element(By.TAG_NAME, "main").text

        # The console's re-authentication takes the passkey instead of the password.
        browser.get(server["issuer"] + "/admin/reauthenticate?next=/admin/users")
        wait_for_path(browser, server, "/admin/reauthenticate")
        check_page(browser, "console-reauthenticate-passkey", page_problems)
        browser.find_element(By.XPATH, "//button[normalize-space()='Use a passkey']").click()
        wait_for_path(browser, server, "/admin/users")

        # Removed, it signs in no more, though the authenticator still holds it.
        browser.get(server["issuer"] + "/account/security")
        browser.find_element(By.LINK_TEXT, "Remove Laptop").click()
        wait_for_path(browser, server, "/account/security/passkeys/remove")
        check_page(browser, "passkey-remove", page_problems)
        _fill(browser, current_password=password)
        wait_for(browser, lambda d: "Passkey removed" in d.find_element(By.TAG_NAME, "h1").text, "the removal's notice")
        sign_in_with_passkey()
        wait_for(browser, lambda d: "could not sign you in" in d.find_element(By.TAG_NAME, "main").text,
                 "the refusal of a removed passkey")
        assert browser.current_url.startswith(server["issuer"] + "/login")
        check_page(browser, "login-passkey-refused", page_problems)
        page_problems.verify()
    finally:
        browser.remove_virtual_authenticator()
        process.stop()


def test_sign_in_through_an_upstream_identity_provider(browser, tmp_path, redirect_uri, page_problems):
    """Federation: with one upstream identity provider (Tests/Interop/authlib_provider.py, which signs its user
    in without a page) the sign-in page offers "Continue with Acme Corp", and the link signs Ada in, on to the
    app's consent page. The failure page (a callback with a state this server never made) and the security
    page's "Other ways to sign in", for an account made by the provider and for one with a password, pass the
    page checks too."""
    process = LatchkeyServer(["--dev", "--data-dir", tmp_path / "data"], workdir=tmp_path / "serve")
    idp = None
    try:
        server = {"issuer": process.issuer, "password": process.dev["password"], "client_id": process.dev["client_id"]}
        secret = secrets.token_urlsafe(24)
        idp = AuthlibUpstream(tmp_path, "--client-id", "latchkey-downstream", f"--client-secret={secret}",
                              "--redirect-uri", server["issuer"] + "/federation/acme/callback")
        process.cli("providers", "add", "acme", "--issuer", idp.issuer, "--client-id", "latchkey-downstream",
                    "--client-secret-stdin", "--display-name", "Acme Corp", stdin=secret + "\n")

        # The failure page first, while the browser is signed in to nothing.
        browser.get(server["issuer"] + "/federation/acme/callback?state=bogus&code=x")
        wait_for(browser, lambda d: d.execute_script("return document.readyState") == "complete", "the failure page")
        assert "Sign-in with Acme Corp did not complete" in browser.find_element(By.TAG_NAME, "h1").text
        check_page(browser, "federation-failed", page_problems)

        url, verifier, state = authorization_url(server, redirect_uri)
        browser.get(url)
        wait_for_path(browser, server, "/login")
        check_page(browser, "login-with-provider", page_problems)
        link = browser.find_element(By.PARTIAL_LINK_TEXT, "Continue with Acme Corp")
        assert "/federation/acme/start?request=" in link.get_attribute("href")
        link.click()
        wait_for_path(browser, server, "/consent")
        assert APP_NAME in browser.find_element(By.TAG_NAME, "h1").text
        assert "ada" in browser.find_element(By.TAG_NAME, "main").text, "consent should say who is signed in"
        screenshot(browser, "consent-federated")
        browser.find_element(By.CSS_SELECTOR, "form[method=post] button[name=decision][value=allow]").click()
        query = wait_for_redirect(browser, redirect_uri)
        assert query.get("state") == state
        exchange(server, query["code"], redirect_uri, verifier)
        assert idp.stats()["token_requests"] == 1

        # Ada's account, made by the provider: the link is listed, with its Remove button.
        browser.get(server["issuer"] + "/account/security")
        wait_for_path(browser, server, "/account/security")
        main = browser.find_element(By.TAG_NAME, "main").text
        assert "Other ways to sign in" in main and "Acme Corp" in main, main
        check_page(browser, "security-federated-account", page_problems)

        # Made an administrator, Ada confirms console changes by signing in again through Acme Corp:
        # the page offers that instead of a password field she does not have.
        process.cli("users", "set-role", "ada", "admin")
        browser.get(server["issuer"] + "/admin/reauthenticate?next=%2Fadmin%2Fproviders")
        wait_for_path(browser, server, "/admin/reauthenticate")
        assert not browser.find_elements(By.CSS_SELECTOR, "input[name=password]")
        again = browser.find_element(By.PARTIAL_LINK_TEXT, "Sign in again with Acme Corp")
        assert "/federation/acme/start?next=" in again.get_attribute("href")
        check_page(browser, "reauthenticate-through-provider", page_problems)
        again.click()
        wait_for_path(browser, server, "/admin/providers")

        # The demo account, with a password: a form to link Acme Corp, which asks for the password.
        browser.execute_cdp_cmd("Network.clearBrowserCookies", {})
        browser.get(server["issuer"] + "/login")
        _fill(browser, username="demo", password=server["password"])
        wait_for_path(browser, server, "/account")
        browser.get(server["issuer"] + "/account/security")
        wait_for_path(browser, server, "/account/security")
        assert browser.find_elements(By.CSS_SELECTOR, "form[action='/federation/acme/link'] input[name=password]")
        assert browser.find_elements(By.XPATH, "//button[normalize-space()='Link Acme Corp']")
        check_page(browser, "security-link-provider", page_problems)
        page_problems.verify()
    finally:
        if idp is not None:
            idp.stop()
        process.stop()
