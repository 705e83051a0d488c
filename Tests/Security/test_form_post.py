"""docs/threat-model.md's FP cases: `response_mode=form_post` (OAuth 2.0 Form Post Response Mode)
and the other response modes, sent to a real `latchkey serve` by a requests.Session playing the
browser (security_harness.Browser). The headless-Chromium run of the same flow, with the form
posted by the page's script, is Tests/Browser/test_pages.py's
`test_form_post_sends_the_code_in_a_posted_form`.
"""
import html
import re

from security_harness import assert_no_redirect, auth_params, exchange, Grant, pkce, split_location

NATIVE_LOOPBACK = "http://127.0.0.1/callback"


def hidden_fields(page):
    return {html.unescape(name): html.unescape(value)
            for name, value in re.findall(r'<input type="hidden" name="([^"]*)" value="([^"]*)"', page)}


def form_post(browser, client, redirect_uri, state, scope="read", response_type="code", decision="allow", extra=()):
    """Drives /authorize (response_mode=form_post), sign-in and consent; returns the final answer
    and the PKCE verifier."""
    verifier, challenge = pkce()
    params = auth_params(client, redirect_uri=redirect_uri, scope=scope, state=state, challenge=challenge,
                         response_type=response_type, extra=[("response_mode", "form_post"), *extra])
    return browser.follow(browser.authorize(params), decision=decision), verifier


def test_FP01_the_answer_is_a_posted_form_that_no_url_holds(srv, alice):
    """FP1: the code, state and iss travel in a form posted to the registered redirect URI, never in
    a URL (a history entry, a Referer, a server log); the page is not framed, cached or referred
    from, runs only its own script, and escapes what it echoes (a state made to break out of the
    attribute stays text)."""
    native = srv.clients["native"]
    state = '"><script>alert(1)</script>'
    page, verifier = form_post(alice, native, NATIVE_LOOPBACK, state)
    assert page.status_code == 200, page.text[:300]
    assert "Location" not in page.headers
    policy = page.headers["Content-Security-Policy"]
    assert "frame-ancestors 'none'" in policy and "script-src 'self'" in policy and "unsafe-inline" not in policy.split(
        "script-src")[1]
    assert page.headers["Cache-Control"] == "no-store" and page.headers["Referrer-Policy"] == "no-referrer"
    assert f'<form method="post" action="{NATIVE_LOOPBACK}" id="form-post">' in page.text
    assert '<script src="/assets/form-post.js"' in page.text
    assert "<script>alert(1)" not in page.text and not re.search(r"<script(?![^>]*\bsrc=)", page.text)
    fields = hidden_fields(page.text)
    assert fields["state"] == state and fields["iss"] == srv.issuer
    grant = Grant(native, fields["code"], verifier, NATIVE_LOOPBACK, state, None)
    response = exchange(srv, grant)
    assert response.status_code == 200, response.text
    script = alice.get("/assets/form-post.js")
    assert script.status_code == 200 and script.headers["Content-Type"].startswith("text/javascript")


def test_FP02_errors_go_back_the_same_way_and_never_to_an_unregistered_uri(srv, alice):
    """FP2: a denial comes back by form too, with the state; a request whose redirect URI is not
    registered gets the error page, never a form to that URI."""
    native = srv.clients["native"]
    # prompt=consent: alice may have consented to `read` for the native app already (FP1 does),
    # and the page must be shown for her to deny.
    page, _ = form_post(alice, native, NATIVE_LOOPBACK, "deny-state", decision="deny", extra=[("prompt", "consent")])
    assert page.status_code == 200 and "Location" not in page.headers, (page.status_code, page.headers)
    assert f'<form method="post" action="{NATIVE_LOOPBACK}"' in page.text
    fields = hidden_fields(page.text)
    assert fields.get("error") == "access_denied" and fields.get("state") == "deny-state" and "code" not in fields
    assert fields.get("iss") == srv.issuer and fields.get("error_description"), fields
    attacker = "https://attacker.example/cb"
    response = alice.authorize(auth_params(native, redirect_uri=attacker, state="x",
                                           extra=[("response_mode", "form_post")]))
    assert_no_redirect(response, attacker)


def test_FP03_an_implicit_token_never_goes_in_the_query(srv, alice):
    """FP3: response_mode=query for the implicit grant is refused, and the refusal itself goes in
    the fragment; an unknown response_mode is invalid_request (in the query, for a code). A code
    may come back in the fragment when asked for."""
    spa = srv.clients["spa"]
    response = alice.follow(alice.authorize(auth_params(spa, redirect_uri="https://spa.example/cb", state="q",
                                                         response_type="token", extra=[("response_mode", "query")])))
    location = response.headers["Location"]
    assert location.startswith("https://spa.example/cb#") and "access_token" not in location
    assert "error=invalid_request" in location
    native = srv.clients["native"]
    unknown = alice.follow(alice.authorize(auth_params(native, redirect_uri=NATIVE_LOOPBACK, state="u",
                                                        extra=[("response_mode", "web_message")])))
    location = unknown.headers["Location"]
    assert location.startswith(NATIVE_LOOPBACK + "?") and "error=invalid_request" in location.split("#")[0], location
    assert "code=" not in location
    verifier, challenge = pkce()
    params = auth_params(native, redirect_uri=NATIVE_LOOPBACK, state="f", challenge=challenge,
                         extra=[("response_mode", "fragment")])
    in_fragment = alice.follow(alice.authorize(params))
    base, query, fragment = split_location(in_fragment.headers["Location"])
    assert base == NATIVE_LOOPBACK and not query and fragment.get("state") == ["f"], in_fragment.headers["Location"]
    assert fragment.get("iss") == [srv.issuer], fragment
    response = exchange(srv, Grant(native, fragment["code"][0], verifier, NATIVE_LOOPBACK, "f", None))
    assert response.status_code == 200, response.text
