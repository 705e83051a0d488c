"""Real-browser tests of the admin console (/admin): headless Chromium against `latchkey serve --dev`.

As a new administrator would: open /admin signed out and land on the sign-in page, register a native app with a
logo, Markdown consent text and a privacy link, preview its consent page, then sign in to it and find that the
consent page shows what the preview showed; register a first-party app and sign in to it without a consent
page; create a user and disable them, and find both on the Activity page. Every page is checked at 1280 and 375 px by test_pages.check_page
(axe-core, labels, keyboard, overflow) and saved as a screenshot.
"""
import os
import subprocess
import sys
import time
from urllib.parse import urlencode

import pytest
from selenium.webdriver.support.ui import Select
import requests

from test_pages import (By, Keys, authorization_url, browser, check_page, chrome, page_problems,  # noqa: F401
                        redirect_uri, server, wait_for, wait_for_path, wait_for_redirect)
from latchkey_process import latchkey_binary, pkce

CONSENT_MARKDOWN = "Foto shows **your photos** on a map.\n\n<script>alert(1)</script> is shown as text."
LOGO = "https://foto.example/logo.png"


def console_sign_in(driver, server, page_problems):
    """Opens /admin signed out: the sign-in page, then back to the console as the demo administrator."""
    driver.get(server["issuer"] + "/admin")
    wait_for_path(driver, server, "/login")
    driver.find_element(By.ID, "username").send_keys("demo")
    driver.find_element(By.ID, "password").send_keys(server["password"] + Keys.ENTER)
    wait_for(driver, lambda d: d.current_url == server["issuer"] + "/admin", "the console after sign-in")
    check_page(driver, "admin-apps", page_problems)


def fill_app_form(driver, name, scopes, markdown="", logo="", policy="", first_party=False):
    driver.find_element(By.ID, "client_name").send_keys(name)
    driver.find_element(By.ID, "redirect_uris").send_keys("http://127.0.0.1/callback")
    for box in driver.find_elements(By.CSS_SELECTOR, "input[name=scope]"):
        if box.is_selected() != (box.get_attribute("value") in scopes):
            box.click()
    driver.find_element(By.ID, "logo_uri").send_keys(logo)
    driver.find_element(By.ID, "policy_uri").send_keys(policy)
    driver.find_element(By.ID, "consent_markdown").send_keys(markdown)
    if first_party:
        driver.find_element(By.ID, "first_party").click()


def client_id_of(driver, server, name):
    """The client_id of the app called `name`, from the console's list."""
    driver.get(server["issuer"] + "/admin")
    link = driver.find_element(By.XPATH, f"//a[strong[text()='{name}']]")
    return link.get_attribute("href").rsplit("/", 1)[1]


def authorize(driver, server, client_id, redirect_uri, scopes):
    verifier, challenge = pkce()
    query = urlencode({"response_type": "code", "client_id": client_id, "redirect_uri": redirect_uri,
                       "scope": " ".join(scopes), "state": "s1", "code_challenge": challenge,
                       "code_challenge_method": "S256"})
    driver.get(f"{server['issuer']}/oauth2/authorize?{query}")
    return verifier


def test_register_an_app_and_sign_in_to_what_the_preview_showed(browser, server, redirect_uri, page_problems):
    console_sign_in(browser, server, page_problems)
    browser.find_element(By.LINK_TEXT, "Register an app").click()
    wait_for_path(browser, server, "/admin/apps/new")
    check_page(browser, "admin-app-new", page_problems)
    fill_app_form(browser, "Foto", ["profile", "photos"], CONSENT_MARKDOWN, LOGO, "https://foto.example/privacy")
    browser.find_element(By.CSS_SELECTOR, "button[value=preview]").click()
    wait_for(browser, lambda d: d.find_elements(By.CSS_SELECTOR, ".preview-frame"), "the consent preview")
    check_page(browser, "admin-app-preview", page_problems)
    preview = browser.find_element(By.CSS_SELECTOR, ".preview-frame .consent-text").get_attribute("innerHTML")
    assert "<strong>your photos</strong>" in preview and "&lt;script&gt;" in preview, preview
    # The form kept what was typed: save it.
    assert browser.find_element(By.ID, "client_name").get_attribute("value") == "Foto"
    browser.find_element(By.CSS_SELECTOR, "button[value=save]").click()
    wait_for(browser, lambda d: "done=registered" in d.current_url, "the app list after registering")
    assert "The app was registered." in browser.find_element(By.CSS_SELECTOR, "[role=status]").text
    check_page(browser, "admin-apps-registered", page_problems)

    client_id = client_id_of(browser, server, "Foto")
    # Already signed in, so /oauth2/authorize answers with the consent page itself.
    authorize(browser, server, client_id, redirect_uri, ["profile", "photos"])
    wait_for(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "button[value=allow]"), "the consent page")
    consent = browser.find_element(By.CSS_SELECTOR, ".consent-text").get_attribute("innerHTML")
    assert consent == preview, "the consent page should show exactly what the preview showed"
    assert browser.find_element(By.CSS_SELECTOR, ".app img").get_attribute("src") == LOGO
    assert browser.find_element(By.LINK_TEXT, "Foto privacy policy").get_attribute("href") == "https://foto.example/privacy"
    check_page(browser, "consent-registered-in-console", page_problems)
    page_problems.verify()


def test_a_first_party_app_signs_in_without_a_consent_page(browser, server, redirect_uri, page_problems):
    console_sign_in(browser, server, page_problems)
    browser.get(server["issuer"] + "/admin/apps/new")
    fill_app_form(browser, "Company App", ["profile"], first_party=True)
    browser.find_element(By.CSS_SELECTOR, "button[value=save]").click()
    wait_for(browser, lambda d: "done=registered" in d.current_url, "the app list after registering")
    client_id = client_id_of(browser, server, "Company App")

    verifier = authorize(browser, server, client_id, redirect_uri, ["profile"])
    parameters = wait_for_redirect(browser, redirect_uri)
    tokens = requests.post(server["issuer"] + "/oauth2/token", data={
        "grant_type": "authorization_code", "code": parameters["code"], "client_id": client_id,
        "redirect_uri": redirect_uri, "code_verifier": verifier}, timeout=10)
    assert tokens.status_code == 200 and tokens.json()["scope"] == "profile", tokens.text
    # The consent was recorded all the same: the account page lists the app.
    browser.get(server["issuer"] + "/account")
    assert "Company App" in browser.find_element(By.TAG_NAME, "main").text
    page_problems.verify()


def test_users_create_disable_and_reauthenticate(browser, server, page_problems):
    console_sign_in(browser, server, page_problems)
    browser.find_element(By.LINK_TEXT, "Users").click()
    wait_for_path(browser, server, "/admin/users")
    check_page(browser, "admin-users", page_problems)
    browser.find_element(By.ID, "new-username").send_keys("bob")
    browser.find_element(By.ID, "new-name").send_keys("Bob Example")
    browser.find_element(By.ID, "new-password").send_keys("bob-password-1")
    browser.find_element(By.CSS_SELECTOR, "#create-heading ~ form button[type=submit]").click()
    wait_for(browser, lambda d: "done=created" in d.current_url, "the new user's page")
    check_page(browser, "admin-user", page_problems)
    browser.find_element(By.XPATH, "//button[starts-with(normalize-space(), 'Disable account')]").click()
    wait_for(browser, lambda d: "done=disabled" in d.current_url, "the disabled user's page")
    assert "disabled" in browser.find_element(By.CSS_SELECTOR, "p.note").text

    # Deleting asks for the password again once the sign-in is older than the window; here it is fresh,
    # so the confirmation page comes at once.
    browser.find_element(By.LINK_TEXT, "Delete user").click()
    wait_for(browser, lambda d: d.current_url.endswith("/delete"), "the delete confirmation")
    check_page(browser, "admin-user-delete", page_problems)
    browser.find_element(By.XPATH, "//button[normalize-space()='Delete bob']").click()
    wait_for(browser, lambda d: "done=deleted" in d.current_url, "the user list after deleting")
    assert "bob" not in browser.find_element(By.CSS_SELECTOR, "ul.rows").text

    browser.get(server["issuer"] + "/admin/reauthenticate?next=/admin/scopes")
    check_page(browser, "admin-reauthenticate", page_problems)
    browser.find_element(By.ID, "password").send_keys(server["password"] + Keys.ENTER)
    wait_for_path(browser, server, "/admin/scopes")
    check_page(browser, "admin-scopes", page_problems)

    browser.find_element(By.LINK_TEXT, "Activity").click()
    wait_for_path(browser, server, "/admin/activity")
    events = browser.find_element(By.CSS_SELECTOR, "ul.rows").text
    assert "user.disabled" in events and "user.created" in events, events
    check_page(browser, "admin-activity", page_problems)
    page_problems.verify()


def test_latchkey_login_signs_in_to_an_app_registered_in_the_console(browser, server, tmp_path, page_problems):
    """The issue's walk-through: register an app in the console, then `latchkey login` (the real CLI, with
    $BROWSER handing the URL to this Chromium) shows the consent page the preview showed and gets tokens."""
    console_sign_in(browser, server, page_problems)
    browser.get(server["issuer"] + "/admin/apps/new")
    fill_app_form(browser, "Foto CLI", ["profile", "photos"], CONSENT_MARKDOWN, LOGO, "https://foto.example/privacy")
    browser.find_element(By.CSS_SELECTOR, "button[value=preview]").click()
    wait_for(browser, lambda d: d.find_elements(By.CSS_SELECTOR, ".preview-frame"), "the consent preview")
    preview = browser.find_element(By.CSS_SELECTOR, ".preview-frame .consent-text").get_attribute("innerHTML")
    browser.find_element(By.CSS_SELECTOR, "button[value=save]").click()
    wait_for(browser, lambda d: "done=registered" in d.current_url, "the app list after registering")
    client_id = client_id_of(browser, server, "Foto CLI")

    # $BROWSER only writes the URL down; the test's Chromium opens it, as a person's browser would.
    opened = tmp_path / "opened-url"
    opener = tmp_path / "browser.py"
    opener.write_text(f"import sys; open({str(opened)!r}, 'w').write(sys.argv[1])\n")
    environment = {**os.environ, "BROWSER": f"{sys.executable} {opener}", "XDG_CONFIG_HOME": str(tmp_path / "config")}
    login = subprocess.Popen(
        [latchkey_binary(None), "login", "--issuer", server["issuer"], "--client-id", client_id,
         "--scope", "profile photos", "--timeout", "60"],
        env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 20
        while not opened.exists() and time.time() < deadline and login.poll() is None:
            time.sleep(0.1)
        assert opened.exists(), "latchkey login never opened a browser: " + (login.stderr.read() if login.poll() else "")
        browser.get(opened.read_text())
        wait_for(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "button[value=allow]"), "the consent page")
        assert browser.find_element(By.CSS_SELECTOR, ".consent-text").get_attribute("innerHTML") == preview
        check_page(browser, "consent-latchkey-login", page_problems)
        browser.find_element(By.CSS_SELECTOR, "button[value=allow]").click()
        out, err = login.communicate(timeout=30)
    finally:
        if login.poll() is None:
            login.kill()
    assert login.returncode == 0, err
    token = subprocess.run([latchkey_binary(None), "token"], env=environment, capture_output=True, text=True, timeout=30)
    assert token.returncode == 0 and token.stdout.strip().startswith("lk_at_"), token.stderr
    userinfo = requests.get(server["issuer"] + "/userinfo", headers={"Authorization": "Bearer " + token.stdout.strip()})
    assert userinfo.status_code == 200 and userinfo.json()["username"] == "demo"
    page_problems.verify()


def test_a_web_apps_secret_is_shown_once_with_a_working_copy_button(browser, server, page_problems):
    """The secret page: the one console page with a script (the copy button, served from this origin under
    the pages' CSP), checked like the others; the secret is never shown again."""
    console_sign_in(browser, server, page_problems)
    browser.get(server["issuer"] + "/admin/apps/new")
    Select(browser.find_element(By.ID, "application_type")).select_by_value("web")
    browser.find_element(By.ID, "client_name").send_keys("Web Reports")
    browser.find_element(By.ID, "redirect_uris").send_keys("https://reports.example/cb")
    browser.find_element(By.CSS_SELECTOR, "button[value=save]").click()
    wait_for(browser, lambda d: d.find_elements(By.ID, "client_secret"), "the secret page")
    secret = browser.find_element(By.ID, "client_secret").get_attribute("value")
    assert secret.startswith("lk_cs_")
    check_page(browser, "admin-app-secret", page_problems)
    browser.find_element(By.CSS_SELECTOR, "button[data-copy=client_secret]").click()
    wait_for(browser, lambda d: d.find_element(By.CSS_SELECTOR, "button[data-copy]").text == "Copied",
             "the copy button to run (the script must load under the page's policy)")
    client_id = client_id_of(browser, server, "Web Reports")
    browser.get(f"{server['issuer']}/admin/apps/{client_id}")
    assert secret not in browser.page_source, "the secret must not be shown again"
    page_problems.verify()


def test_resources_register_and_delete(browser, server, page_problems):
    """An administrator registers an MCP server as a resource (RFC 8707) and deletes it again."""
    console_sign_in(browser, server, page_problems)
    browser.find_element(By.LINK_TEXT, "Resources").click()
    wait_for_path(browser, server, "/admin/resources")
    check_page(browser, "admin-resources-empty", page_problems)
    browser.find_element(By.ID, "resource-uri").send_keys("https://mcp.example.com/mcp")
    browser.find_element(By.ID, "resource-name").send_keys("Example MCP")
    browser.find_element(By.ID, "resource-scopes").send_keys("sleep activity")
    Select(browser.find_element(By.ID, "resource-format")).select_by_value("jwt")
    browser.find_element(By.CSS_SELECTOR, "#add-resource-heading ~ form button[type=submit]").click()
    wait_for(browser, lambda d: "done=resource" in d.current_url, "the list after registering")
    rows = browser.find_element(By.CSS_SELECTOR, "ul.rows").text
    assert "Example MCP" in rows and "https://mcp.example.com/mcp" in rows and "jwt tokens" in rows, rows
    check_page(browser, "admin-resources", page_problems)

    # A mistake keeps the page and says what is wrong.
    browser.find_element(By.ID, "resource-uri").send_keys("http://not-loopback.example/api")
    browser.find_element(By.ID, "resource-name").send_keys("Plain")
    browser.find_element(By.ID, "resource-scopes").send_keys("sleep")
    browser.find_element(By.CSS_SELECTOR, "#add-resource-heading ~ form button[type=submit]").click()
    wait_for(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "[role=alert]"), "the error")
    assert "https" in browser.find_element(By.CSS_SELECTOR, "[role=alert]").text

    browser.find_element(By.CSS_SELECTOR, "a[aria-label='Delete Example MCP']").click()
    wait_for(browser, lambda d: "/admin/resources/delete" in d.current_url, "the delete confirmation")
    browser.find_element(By.XPATH, "//button[normalize-space()='Delete Example MCP']").click()
    wait_for(browser, lambda d: "done=deleted" in d.current_url, "the list after deleting")
    assert "Example MCP" not in browser.find_element(By.TAG_NAME, "main").text
    page_problems.verify()


def test_providers_add_disable_enable_and_delete(browser, server, page_problems):
    """An administrator adds a plain OAuth 2.0 provider (the console fetches nothing from it), finds the redirect
    URI to register there, disables and enables it, and deletes it through the confirmation."""
    console_sign_in(browser, server, page_problems)
    browser.find_element(By.LINK_TEXT, "Sign-in providers").click()
    wait_for_path(browser, server, "/admin/providers")
    check_page(browser, "admin-providers-empty", page_problems)

    # A mistake keeps the page, says what is wrong and keeps what was typed (but the secret).
    browser.find_element(By.ID, "provider-name").send_keys("other")
    browser.find_element(By.ID, "provider-issuer").send_keys("http://not-loopback.example")
    browser.find_element(By.ID, "provider-client-id").send_keys("latchkey")
    browser.find_element(By.CSS_SELECTOR, "#add-provider-heading ~ form button[type=submit]").click()
    wait_for(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "[role=alert]"), "the error")
    assert "https" in browser.find_element(By.CSS_SELECTOR, "[role=alert]").text
    assert browser.find_element(By.ID, "provider-name").get_attribute("value") == "other"
    assert browser.find_element(By.ID, "provider-issuer").get_attribute("aria-invalid") == "true"
    for field in ["provider-name", "provider-issuer", "provider-client-id"]:
        browser.find_element(By.ID, field).clear()

    browser.find_element(By.ID, "provider-name").send_keys("example")
    browser.find_element(By.ID, "provider-display-name").send_keys("Example IdP")
    Select(browser.find_element(By.ID, "provider-kind")).select_by_value("oauth2")
    browser.find_element(By.ID, "provider-issuer").send_keys("https://idp.example.com")
    browser.find_element(By.ID, "provider-client-id").send_keys("latchkey-client")
    browser.find_element(By.ID, "provider-client-secret").send_keys("a-secret-at-the-provider")
    browser.find_element(By.ID, "provider-scopes").send_keys("read:user user:email")
    browser.find_element(By.ID, "provider-authorization-endpoint").send_keys("https://idp.example.com/authorize")
    browser.find_element(By.ID, "provider-token-endpoint").send_keys("https://idp.example.com/token")
    browser.find_element(By.ID, "provider-userinfo-endpoint").send_keys("https://idp.example.com/userinfo")
    browser.find_element(By.ID, "provider-subject-claim").send_keys("id")
    browser.find_element(By.ID, "provider-username-claim").send_keys("login")
    assert browser.find_element(By.ID, "provider-creates-accounts").is_selected(), "a new provider makes accounts"
    browser.find_element(By.CSS_SELECTOR, "#add-provider-heading ~ form button[type=submit]").click()
    wait_for(browser, lambda d: "done=provider" in d.current_url, "the list after adding")
    rows = browser.find_element(By.CSS_SELECTOR, "ul.rows").text
    callback = server["issuer"] + "/federation/example/callback"
    assert "Example IdP" in rows and "OAuth 2.0" in rows and "https://idp.example.com" in rows, rows
    assert "enabled" in rows and "makes accounts" in rows and callback in rows, rows
    assert "a-secret-at-the-provider" not in browser.page_source, "the secret must not be shown"
    check_page(browser, "admin-providers", page_problems)

    browser.find_element(By.CSS_SELECTOR, "button[aria-label='Disable Example IdP']").click()
    wait_for(browser, lambda d: "done=provider-disabled" in d.current_url, "the list after disabling")
    assert "disabled" in browser.find_element(By.CSS_SELECTOR, "ul.rows").text
    browser.find_element(By.CSS_SELECTOR, "button[aria-label='Enable Example IdP']").click()
    wait_for(browser, lambda d: "done=provider-enabled" in d.current_url, "the list after enabling")
    assert "disabled" not in browser.find_element(By.CSS_SELECTOR, "ul.rows").text

    browser.find_element(By.CSS_SELECTOR, "a[aria-label='Delete Example IdP']").click()
    wait_for(browser, lambda d: "/admin/providers/delete" in d.current_url, "the delete confirmation")
    check_page(browser, "admin-provider-delete", page_problems)
    browser.find_element(By.XPATH, "//button[normalize-space()='Delete Example IdP']").click()
    wait_for(browser, lambda d: "done=deleted" in d.current_url, "the list after deleting")
    assert "Example IdP" not in browser.find_element(By.TAG_NAME, "main").text
    page_problems.verify()


def test_the_email_page_shows_the_outbox(browser, server, tmp_path, page_problems):
    """An administrator finds the outbox on the E-mail page: here the server has no relay, so a
    message queued with `latchkey mail test --queue` waits, and the page says how to set one up."""
    queued = subprocess.run(
        [latchkey_binary(), "mail", "test", "--queue", "--to", "alice@example.com", "--data-dir", str(tmp_path / "data"),
         "--smtp-url", "smtp://localhost:2525?starttls=off", "--mail-from", "latchkey@example.com"],
        capture_output=True, text=True, timeout=60)
    assert queued.returncode == 0, queued.stderr
    console_sign_in(browser, server, page_problems)
    browser.find_element(By.LINK_TEXT, "E-mail").click()
    wait_for_path(browser, server, "/admin/mail")
    main = browser.find_element(By.TAG_NAME, "main").text
    assert "E-mail is not set up" in main and "1 queued" in main, main
    assert "alice@example.com" in main and "test · queued" in main, main
    check_page(browser, "admin-mail", page_problems)
    page_problems.verify()
