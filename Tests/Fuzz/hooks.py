"""Schemathesis hooks for the Latchkey fuzz run: extra checks the OpenAPI description cannot express,
and live tokens mixed into the generated revocation and introspection requests.

Loaded by `schemathesis run` through `hooks = ...` in schemathesis.toml (run_fuzz.py sets the path).
The run's credentials and tokens come from the environment that run_fuzz.py sets:

    LATCHKEY_FUZZ_CLIENT_ID / LATCHKEY_FUZZ_CLIENT_SECRET   the service client used for HTTP Basic
    LATCHKEY_FUZZ_TARGET_CLIENT_ID                          a second service client, for wrong secrets
                                                            (so the throttle never locks out the first)
    LATCHKEY_FUZZ_NATIVE_CLIENT_ID                          the --dev public (native) client
    LATCHKEY_FUZZ_TOKENS                                    JSON list of live tokens (access and refresh)
                                                            that revocation may end
    LATCHKEY_FUZZ_REFRESH_TOKENS                            JSON list of the native client's refresh tokens
                                                            for the token endpoint (one grant each)
    LATCHKEY_FUZZ_OTHER_BEARERS                             JSON list of other values for /userinfo's bearer
    LATCHKEY_FUZZ_GOOD                                      JSON object: "METHOD /path" to a list of known-good
                                                            requests ({"path", "query", "body", "headers"}),
                                                            so that every operation reaches its success path
"""
import base64
import json
import os
import re

import schemathesis
from hypothesis import strategies as st
from schemathesis import GenerationMode

CLIENT_ID = os.environ.get("LATCHKEY_FUZZ_CLIENT_ID", "")
CLIENT_SECRET = os.environ.get("LATCHKEY_FUZZ_CLIENT_SECRET", "")
TARGET_CLIENT_ID = os.environ.get("LATCHKEY_FUZZ_TARGET_CLIENT_ID", "")
NATIVE_CLIENT_ID = os.environ.get("LATCHKEY_FUZZ_NATIVE_CLIENT_ID", "")
LIVE_TOKENS = json.loads(os.environ.get("LATCHKEY_FUZZ_TOKENS", "[]"))
REFRESH_TOKENS = json.loads(os.environ.get("LATCHKEY_FUZZ_REFRESH_TOKENS", "[]"))
OTHER_BEARERS = json.loads(os.environ.get("LATCHKEY_FUZZ_OTHER_BEARERS", "[]"))
GOOD = json.loads(os.environ.get("LATCHKEY_FUZZ_GOOD", "{}"))

CLIENT_ENDPOINTS = {"/oauth2/token", "/oauth2/revoke", "/oauth2/introspect"}
# RFC 6749 §A.7, §A.8 (and RFC 6750 §3): the characters allowed in `error` and `error_description`.
ERROR_TEXT = re.compile(r"[\x20\x21\x23-\x5B\x5D-\x7E]*")
HEX = set("0123456789abcdefABCDEF")


# --- helpers -------------------------------------------------------------------------------------

def _header(headers, name):
    """One response header from Schemathesis' Response (lists of values, lower-case names)."""
    values = headers.get(name.lower())
    if not values:
        return None
    return values[0] if isinstance(values, list) else values


def _media_type(response):
    value = _header(response.headers, "content-type")
    return None if value is None else value.split(";")[0].strip().lower()


def _strict_form(raw):
    """Decodes a form body the way Latchkey does (RFC 6749 App. B): None when it is not strictly valid."""
    if isinstance(raw, str):
        raw = raw.encode()
    pairs = []
    for piece in (raw or b"").split(b"&"):
        if not piece:
            continue
        name, _, value = piece.partition(b"=")
        decoded = []
        for part in (name, value):
            out = bytearray()
            i = 0
            while i < len(part):
                byte = part[i:i + 1]
                if byte == b"+":
                    out += b" "
                elif byte == b"%":
                    digits = part[i + 1:i + 3].decode("latin-1")
                    if len(digits) != 2 or not set(digits) <= HEX:
                        return None
                    out.append(int(digits, 16))
                    i += 2
                else:
                    out += byte
                i += 1
            try:
                decoded.append(out.decode("utf-8"))
            except UnicodeDecodeError:
                return None
        if decoded[0]:
            pairs.append((decoded[0], decoded[1]))
    return pairs


def _service_basic():
    return _basic(CLIENT_ID, CLIENT_SECRET)


def _is_undeclared_method(response, case):
    return (response.request.method or "").upper() != case.operation.method.upper()


# --- checks --------------------------------------------------------------------------------------

@schemathesis.check
def json_bodies_are_json(ctx, response, case):
    """A response labelled application/json carries a JSON text (RFC 8259 §2: an empty body is not one)."""
    if _media_type(response) != "application/json":
        return None
    try:
        json.loads(response.content.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise AssertionError(
            f"{response.status_code} says Content-Type {_header(response.headers, 'content-type')} "
            f"but its {len(response.content)}-byte body is not JSON")
    return None


@schemathesis.check
def oauth_error_bodies(ctx, response, case):
    """Every 4xx/5xx of the token, revocation and introspection endpoints, including the ones the
    description cannot cover (405 for GET), is an RFC 6749 §5.2 JSON error in the allowed charset."""
    if case.operation.path not in CLIENT_ENDPOINTS or response.status_code < 400:
        return None
    if response.status_code == 404 and _is_undeclared_method(response, case):
        return None  # reported by Schemathesis' own unsupported_method check
    if _media_type(response) != "application/json":
        raise AssertionError(f"{response.status_code} error with Content-Type "
                             f"{_header(response.headers, 'content-type')!r}, not application/json")
    try:
        body = json.loads(response.content.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise AssertionError(f"{response.status_code} error body is not JSON: {response.content[:200]!r}")
    if not isinstance(body, dict) or not isinstance(body.get("error"), str) or not body["error"]:
        raise AssertionError(f"{response.status_code} error body has no `error` string: {body!r}")
    for field in ("error", "error_description"):
        value = body.get(field)
        if value is not None and (not isinstance(value, str) or not ERROR_TEXT.fullmatch(value)):
            raise AssertionError(
                f"`{field}` has characters outside %x20-21 / %x23-5B / %x5D-7E (RFC 6749 §5.2): {value!r}")
    if response.status_code == 401 and body["error"] != "invalid_client":
        raise AssertionError(f"401 with error {body['error']!r}; only invalid_client is a 401 (RFC 6749 §5.2)")
    if body["error"] == "invalid_client" and response.status_code != 401:
        raise AssertionError(f"invalid_client answered {response.status_code}, expected 401")
    return None


@schemathesis.check
def basic_challenge_after_basic(ctx, response, case):
    """RFC 6749 §5.2: a client that tried HTTP Basic and failed gets 401 with a Basic challenge."""
    if case.operation.path not in CLIENT_ENDPOINTS or response.status_code != 401:
        return None
    if not response.request.headers.get("Authorization"):
        return None
    challenge = _header(response.headers, "www-authenticate") or ""
    if not challenge.lower().startswith("basic"):
        raise AssertionError(f"401 after an Authorization header without a Basic challenge: {challenge!r}")
    return None


@schemathesis.check
def bearer_challenge(ctx, response, case):
    """RFC 6750 §3: a 401 or 403 from the protected resource carries a Bearer challenge."""
    if case.operation.path != "/userinfo" or response.status_code not in (401, 403):
        return None
    challenge = _header(response.headers, "www-authenticate") or ""
    if not challenge.startswith("Bearer "):
        raise AssertionError(f"{response.status_code} from /userinfo without a Bearer challenge: {challenge!r}")
    return None


@schemathesis.check
def authenticated_lookup_is_answered(ctx, response, case):
    """Revocation and introspection by our service client, authenticated once (HTTP Basic or
    client_secret_post) with a well-formed body that names a token, always answer 200: an unknown
    token or another client's is no error (RFC 7009 §2.2, RFC 7662 §2.2). So does revocation by the
    public native client. Narrower than Schemathesis' positive_data_acceptance, which cannot know
    that a body client_secret next to HTTP Basic, or a body client_id naming another client, is refused."""
    path = case.operation.path
    if path not in ("/oauth2/revoke", "/oauth2/introspect") or _is_undeclared_method(response, case):
        return None
    request = response.request
    if "?" in (request.url or ""):
        return None
    content_type = (request.headers.get("Content-Type") or "").lower()
    if content_type.split(";")[0].strip() != "application/x-www-form-urlencoded" or "charset" in content_type:
        return None
    pairs = _strict_form(request.body)
    if pairs is None or len(pairs) > 256 or len(request.body or b"") > 64 * 1024:
        return None
    if any(len(part.encode()) > 8 * 1024 for pair in pairs for part in pair):
        return None  # a name or value over 8 KiB is invalid_request
    names = [name for name, _ in pairs]
    values = {name: value for name, value in pairs if value}  # an empty value counts as omitted
    if len(names) != len(set(names)) or not values.get("token"):
        return None
    if "client_assertion" in values or "client_assertion_type" in values:
        return None  # an RFC 7523 assertion: the fuzzer's are never valid, and are not modelled here
    authorization = request.headers.get("Authorization")
    basic = (authorization == _service_basic() and "client_secret" not in values
             and values.get("client_id", CLIENT_ID) == CLIENT_ID)
    post = (authorization is None and values.get("client_id") == CLIENT_ID
            and values.get("client_secret") == CLIENT_SECRET)
    public = (path == "/oauth2/revoke" and authorization is None and values.get("client_id") == NATIVE_CLIENT_ID
              and "client_secret" not in values)
    if not (basic or post or public):
        return None
    if response.status_code != 200:
        raise AssertionError(f"well-formed request by an identified client answered {response.status_code}, expected 200")
    return None


# --- generation ----------------------------------------------------------------------------------

# How a positive case at the token, revocation and introspection endpoints identifies its client.
# The configured HTTP Basic credentials of the service client weigh three times as much as each other
# way, so that the paths behind client authentication get most of the budget.
# Wrong secrets go to a second service client: after 20 failures a minute the server refuses that
# client with 429 (also exercised), and the first one must stay usable.
CLIENT_MODES = ["basic"] * 3 + [
    "basic-wrong-secret",    # 401 invalid_client with a Basic challenge, then 429 once throttled
    "basic-unknown-client",  # the same answer as a wrong secret (never throttled: unknown ids are not counted)
    "basic-malformed",       # not base64: 401 with a Basic challenge
    "public",                # no Authorization, client_id of the --dev native client
    "post",                  # client_secret_post with the service client's real secret
    "post-wrong-secret",     # 401 invalid_client, no challenge (no Authorization was sent), then 429
]


def _identify(case, mode):
    headers = dict(case.headers or {})
    body = dict(case.body)
    if mode == "basic":
        body.pop("client_secret", None)  # else 400: two authentication methods
        if body.get("client_id") not in (None, CLIENT_ID):
            del body["client_id"]         # else 400: the body names another client
    elif mode.startswith("basic-"):
        headers["Authorization"] = {
            "basic-wrong-secret": _basic(TARGET_CLIENT_ID, CLIENT_SECRET),
            "basic-unknown-client": _basic("unknown-" + CLIENT_ID, CLIENT_SECRET),
            "basic-malformed": "Basic !" + CLIENT_ID,
        }[mode]
        body.pop("client_secret", None)
        body.pop("client_id", None)
    else:
        headers.pop("Authorization", None)
        if mode == "public":
            body["client_id"] = NATIVE_CLIENT_ID
            body.pop("client_secret", None)
        elif mode == "post":
            body["client_id"] = CLIENT_ID
            body["client_secret"] = CLIENT_SECRET
        else:
            body["client_id"] = TARGET_CLIENT_ID
            body["client_secret"] = CLIENT_SECRET
    case.headers = headers
    case.body = body
    return case


def _basic(client_id, secret):
    return "Basic " + base64.b64encode(f"{client_id}:{secret}".encode()).decode()


@schemathesis.hook
def flatmap_case(context, case):
    """Positive cases only, drawn by Hypothesis (so seeded):

    * at the token, revocation and introspection endpoints, the client identifies in one of the
      CLIENT_MODES (the configured Basic credentials alone would never reach invalid_client, public
      clients or client_secret_post);
    * revocation and introspection often name a live token (the service client's own, a user's token
      of the native client, a refresh token) instead of a random string, and a refresh at the token
      endpoint often presents a real refresh token of the native client, so that the active-token,
      revoke-for-real and rotation paths run too;
    * GET /userinfo, which has no parameters to vary, is sometimes sent another bearer value instead of
      the configured one (POST /userinfo is left as drawn): a token without `profile` (403), a refresh token, a client_credentials
      token (no user), a revoked or malformed one (401)."""
    path = context.operation.path if context.operation is not None else None
    meta = case.meta
    if (meta is None or meta.generation.mode != GenerationMode.POSITIVE
            or any(component.mode.is_negative for component in meta.components.values())):
        return st.just(case)
    good = GOOD.get(f"{context.operation.method.upper()} {path}") if path else None
    if good:
        # Half the positive cases as drawn, half a known-good request with the drawn values under it.
        def with_good(request):
            if request is not None:
                case.path_parameters = {**(case.path_parameters or {}), **request.get("path", {})}
                case.query = {**(case.query or {}), **request.get("query", {})} if "query" in request else case.query
                if "body" in request:
                    case.body = request["body"]
                headers = {**(case.headers or {}), **request.get("headers", {})}
                # A null header is one to leave out (a public client sends no Authorization).
                case.headers = {name: value for name, value in headers.items() if value is not None}
            return case
        return st.sampled_from([None] * len(good) + good).map(with_good)
    if path in CLIENT_ENDPOINTS and isinstance(case.body, dict):
        if path == "/oauth2/token":
            field = "refresh_token" if case.body.get("grant_type") == "refresh_token" else None
            pool = REFRESH_TOKENS
        else:
            field, pool = "token", LIVE_TOKENS

        def apply(choice):
            mode, token = choice
            _identify(case, mode)
            if token is not None and field is not None:
                case.body = {**case.body, field: token}
            return case

        return st.tuples(st.sampled_from(CLIENT_MODES), st.sampled_from([None, *pool])).map(apply)
    if path == "/userinfo" and context.operation.method.upper() == "POST":
        # Left as drawn: its token comes in the body, the header, or both (refused on purpose, see
        # schemathesis.toml), and the body's random tokens already cover the 401s.
        return st.just(case)
    if path == "/userinfo" and OTHER_BEARERS:
        def with_bearer(value):
            if value is not None:
                case.headers = {**(case.headers or {}), "Authorization": value}
            return case
        # The configured token (200) and the one without `profile` (403, listed first by run_fuzz.py)
        # weigh three times as much as each 401 variant.
        return st.sampled_from([None] * 3 + OTHER_BEARERS[:1] * 3 + OTHER_BEARERS[1:]).map(with_bearer)
    return st.just(case)
