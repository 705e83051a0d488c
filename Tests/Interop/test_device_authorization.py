"""The device authorization grant (RFC 8628) against `latchkey serve --dev`.

Authlib's OAuth2Session plays the device: it polls the token endpoint with the device_code grant
(its generic fetch_token, which raises authorization_pending, slow_down and the rest as OAuthError).
A requests.Session plays the user's phone at /device. `latchkey login --device` is run as a process,
and the QR code it prints is read back with zxing-cpp.
"""
import json
import re
import secrets
import subprocess
from urllib.parse import urljoin

import numpy
import pytest
import requests
import zxingcpp
from authlib.integrations.requests_client import OAuth2Session
from authlib.integrations.base_client.errors import OAuthError
from prometheus_client.parser import text_string_to_metric_families

from latchkey_process import hidden_fields, latchkey_binary

DEVICE_CODE = "urn:ietf:params:oauth:grant-type:device_code"


# The `server` fixture's (Tests/conftest.py): few entries per address, so the guessing test
# reaches the limit quickly.
SERVE_ARGS = ["--dev", "--user-code-attempts-per-address", "12", "--metrics-address", "0"]


@pytest.fixture(scope="module")
def metadata(server):
    document = requests.get(server.issuer + "/.well-known/oauth-authorization-server", timeout=10).json()
    assert document["device_authorization_endpoint"] == server.issuer + "/oauth2/device_authorization"
    assert DEVICE_CODE in document["grant_types_supported"]
    return document


def tv_app(server, *extra):
    """A native app registered for the device grant only: no redirect URI."""
    created = server.cli("clients", "create", "--type", "native", "--name", f"Living-room TV {secrets.token_hex(3)}",
                         "--scope", "profile", "--scope", "activity", "--allow-device-code", *extra)
    assert server.cli("clients", "show", created["client_id"])["allow_device_code"] is True
    return created["client_id"]


def start(metadata, client_id, scope="profile activity"):
    response = requests.post(metadata["device_authorization_endpoint"],
                             data={"client_id": client_id, "scope": scope}, timeout=10)
    assert response.status_code == 200, response.text
    assert response.headers["Cache-Control"] == "no-store"
    return response.json()


def poll(metadata, client_id, device_code):
    """One poll by Authlib: the token, or the OAuth error code."""
    device = OAuth2Session(client_id, token_endpoint_auth_method="none")
    try:
        return device.fetch_token(metadata["token_endpoint"], grant_type=DEVICE_CODE, device_code=device_code)
    except OAuthError as error:
        return error.error


def counters(server):
    """The latchkey_* counter samples on the metrics listener, by (name, labels)."""
    with open(server.ready_file) as ready:
        port = json.load(ready)["metrics_port"]
    text = requests.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(text) for sample in family.samples
            if sample.name.startswith("latchkey_") and family.type == "counter"}


def moved(before, after, name, **labels):
    key = (name, tuple(sorted(labels.items())))
    return after.get(key, 0) - before.get(key, 0)


def enter_code(server, phone, user_code, decision="allow", grant=("profile",)):
    """The user's side: the code at /device, sign-in, consent. Returns the final page's text."""
    form = phone.get(server.url("/device"), params={"user_code": user_code}, timeout=10)
    assert form.status_code == 200
    assert f'value="{user_code}"' in form.text, "verification_uri_complete fills the code in"
    entered = phone.post(server.url("/device"), data={**hidden_fields(form.text), "user_code": user_code},
                         allow_redirects=False, timeout=10)
    assert entered.status_code == 303, entered.text
    page = phone.get(urljoin(server.base, entered.headers["Location"]), allow_redirects=False, timeout=10)
    if "/login" in entered.headers["Location"]:
        signed_in = phone.post(server.url("/login"), allow_redirects=False, timeout=10,
                               data={**hidden_fields(page.text), "username": "demo", "password": server.dev["password"]})
        assert signed_in.status_code == 303
        page = phone.get(urljoin(server.base, signed_in.headers["Location"]), allow_redirects=False, timeout=10)
    assert page.status_code == 200
    assert "comes from another device" in page.text
    decided = phone.post(server.url("/oauth2/authorize"), allow_redirects=False, timeout=10,
                         data=[*hidden_fields(page.text).items(), ("decision", decision),
                               *[("scope", scope) for scope in grant]])
    assert decided.status_code == 303
    assert decided.headers["Location"] == f"/device?result={'approved' if decision == 'allow' else 'denied'}"
    return phone.get(urljoin(server.base, decided.headers["Location"]), timeout=10).text


def test_tv_signs_in_through_a_phone_and_authlib_polls_for_the_token(server, metadata):
    client_id = tv_app(server)
    device = start(metadata, client_id)
    assert re.fullmatch(r"[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}", device["user_code"])
    assert device["verification_uri"] == server.issuer + "/device"
    assert device["verification_uri_complete"] == server.issuer + "/device?user_code=" + device["user_code"]
    assert device["interval"] == 5 and device["expires_in"] == 600

    before = counters(server)
    assert poll(metadata, client_id, device["device_code"]) == "authorization_pending"
    # Polling again at once is too fast: slow_down, and the interval grows by 5 s.
    assert poll(metadata, client_id, device["device_code"]) == "slow_down"

    done = enter_code(server, requests.Session(), device["user_code"])
    assert "go back to your device" in done
    token = poll(metadata, client_id, device["device_code"])
    assert isinstance(token, dict), token
    assert token["token_type"] == "Bearer" and token["scope"] == "profile"
    after = counters(server)
    assert moved(before, after, "latchkey_device_user_codes_total", result="entered") == 1
    assert moved(before, after, "latchkey_tokens_issued_total", grant_type=DEVICE_CODE, client_type="native") == 1
    assert requests.get(metadata["userinfo_endpoint"], timeout=10,
                        headers={"Authorization": "Bearer " + token["access_token"]}).status_code == 200
    # The device code works once; the second redemption revokes the first one's tokens.
    assert poll(metadata, client_id, device["device_code"]) == "invalid_grant"
    assert requests.get(metadata["userinfo_endpoint"], timeout=10,
                        headers={"Authorization": "Bearer " + token["access_token"]}).status_code == 401


def test_denied_request_answers_access_denied(server, metadata):
    client_id = tv_app(server)
    device = start(metadata, client_id)
    enter_code(server, requests.Session(), device["user_code"], decision="deny")
    assert poll(metadata, client_id, device["device_code"]) == "access_denied"


def test_codes_of_another_client_and_codes_entered_twice_are_refused(server, metadata):
    client_id = tv_app(server)
    device = start(metadata, client_id)
    other = tv_app(server)
    assert poll(metadata, other, device["device_code"]) == "invalid_grant"
    assert poll(metadata, client_id, "lk_dc_" + "A" * 43) == "invalid_grant"
    enter_code(server, requests.Session(), device["user_code"])
    # The code was entered once; another browser cannot take it over.
    second = requests.Session()
    form = second.get(server.url("/device"), timeout=10)
    again = second.post(server.url("/device"), data={**hidden_fields(form.text), "user_code": device["user_code"]},
                        allow_redirects=False, timeout=10)
    assert again.status_code == 400
    assert "not right, has expired, or was already entered" in again.text


def test_client_not_registered_for_the_grant_is_refused(server, metadata):
    response = requests.post(metadata["device_authorization_endpoint"],
                             data={"client_id": server.dev["client_id"], "scope": "profile"}, timeout=10)
    assert response.status_code == 400
    assert response.json()["error"] == "unauthorized_client"


def test_the_device_page_needs_its_csrf_token(server, metadata):
    client_id = tv_app(server)
    device = start(metadata, client_id)
    forged = requests.post(server.url("/device"), data={"user_code": device["user_code"], "csrf_token": "lk_xs_x"},
                           allow_redirects=False, timeout=10)
    assert forged.status_code == 403
    enter_code(server, requests.Session(), device["user_code"])  # the forged form did not spend it


def test_latchkey_login_device_prints_a_qr_code_a_camera_can_read(server, metadata, tmp_path):
    client_id = tv_app(server)
    process = subprocess.Popen(
        [latchkey_binary(), "login", "--device", "--issuer", server.issuer, "--client-id", client_id,
         "--scope", "profile"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={"XDG_CONFIG_HOME": str(tmp_path / "config"), "PATH": "/usr/bin:/bin"})
    lines = []
    try:
        while not any(line.startswith("Waiting for you") for line in lines):
            line = process.stdout.readline()
            assert line, "login --device ended early: " + process.stderr.read()
            lines.append(line.rstrip("\n"))
        text = "\n".join(lines)
        user_code = re.search(r"^  ([A-Z]{4}-[A-Z]{4})$", text, re.M).group(1)
        assert server.issuer + "/device" in text

        rows = [line for line in lines if line and set(line) <= set("█▀▄ ")]
        image = qr_image(rows)
        decoded = zxingcpp.read_barcodes(image)
        assert [result.text for result in decoded] == [server.issuer + "/device?user_code=" + user_code]

        enter_code(server, requests.Session(), user_code)
        out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, err
    assert "Signed in to " + server.issuer in out
    assert "Granted scopes: profile" in out


def qr_image(rows):
    """The half-block drawing as a picture: each character is one module wide and two tall;
    blocks are light, spaces dark (the code is drawn for light-on-dark terminals). Scaled up, with
    nothing added: the drawing's own quiet zone must do."""
    modules = []
    for row in rows:
        top = [char in "█▀" for char in row]
        bottom = [char in "█▄" for char in row]
        modules += [top, bottom]
    light = numpy.array(modules, dtype=bool)
    pixels = numpy.where(light, 255, 0).astype(numpy.uint8)
    return numpy.kron(pixels, numpy.ones((8, 8), dtype=numpy.uint8))


def test_guessing_user_codes_is_throttled(server, metadata):
    client_id = tv_app(server)
    device = start(metadata, client_id)
    phone = requests.Session()
    form = phone.get(server.url("/device"), timeout=10)
    fields = hidden_fields(form.text)
    statuses = []
    for _ in range(13):
        guess = "".join(secrets.choice("BCDFGHJKLMNPQRSTVWXZ") for _ in range(8))
        statuses.append(phone.post(server.url("/device"), data={**fields, "user_code": guess},
                                   allow_redirects=False, timeout=10).status_code)
    # The limit is 12 entries per address, right or wrong; the tests before this one spent some.
    first = statuses.index(429)
    assert 1 <= first <= 12 and statuses[:first] == [400] * first and set(statuses[first:]) == {429}, statuses
    # Past the limit even the right code is not looked at.
    right = phone.post(server.url("/device"), data={**fields, "user_code": device["user_code"]},
                       allow_redirects=False, timeout=10)
    assert right.status_code == 429
    assert int(right.headers["Retry-After"]) > 0
    after = counters(server)
    assert after[("latchkey_device_user_codes_total", (("result", "throttled"),))] >= 2
    assert after[("latchkey_device_user_codes_total", (("result", "refused"),))] >= 5
