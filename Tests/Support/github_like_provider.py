"""A stand-in for GitHub's OAuth app endpoints, for tests only: a plain OAuth 2.0 provider (no OpenID
Connect: no discovery, no ID token, no `iss`) with GitHub's shape, which `latchkey providers add NAME
--kind oauth2` signs people in through. It is not GitHub and does not try to be more of it than a
sign-in needs. Standard library only; it runs in a thread of the test process.

    from github_like_provider import GitHubLikeProvider, OMIT

    with GitHubLikeProvider(client_id, client_secret, redirect_uri) as hub:
        hub.authorization_endpoint   # http://127.0.0.1:PORT/login/oauth/authorize
        hub.token_endpoint           # http://127.0.0.1:PORT/login/oauth/access_token
        hub.userinfo_endpoint        # http://127.0.0.1:PORT/user
        hub.set_user(login="octocat-renamed", id=OMIT)  # what /user answers from now on
        hub.stats()                  # counters and what the last requests carried
        hub.log()                    # a line per request, for failure messages

Its one user signs in without a page. What it does, as GitHub does (docs.github.com, "Authorizing
OAuth apps"):

- `GET /login/oauth/authorize?client_id&redirect_uri&state&scope[&code_challenge&code_challenge_method]`:
  an unknown client_id is a 404 page; a redirect_uri that is not exactly the registered one redirects
  to the registered one with `error=redirect_uri_mismatch` (as GitHub does); otherwise a 302 to
  redirect_uri?code=…&state=… at once. PKCE: only S256 (GitHub's one method); the challenge is checked
  at the token endpoint. Codes are 20 hex characters, single use, good for 10 minutes.
- `POST /login/oauth/access_token` (code, redirect_uri, code_verifier, grant_type optional): the
  client authenticates with HTTP Basic or client_id and client_secret in the body. Errors are 200s
  with a JSON `error` (`incorrect_client_credentials`, `bad_verification_code` for a code that is
  unknown, used, expired or whose PKCE verifier does not match, `redirect_uri_mismatch`). The answer
  is JSON only when the request's Accept holds application/json; otherwise a form-encoded body, as
  GitHub's default. `{"access_token": "gho_…", "token_type": "bearer", "scope": "read:user,user:email"}`:
  no expires_in, no refresh_token, no id_token, and the scope comma-separated, as GitHub writes it.
- `GET /user` with `Authorization: Bearer TOKEN` or `token TOKEN`: the user, as GitHub's REST API
  answers it (the members that matter and a few more): `id` a JSON number, `login`, `name`, `email`
  (null when the user keeps it private). 401 `{"message": "Bad credentials"}` for a token it did not
  issue, 401 "Requires authentication" without one; 403 without a User-Agent header, as GitHub's API.

The user's members `id`, `login`, `name` and `email` are set when constructed (`user={...}`) or by
`set_user(...)`; OMIT leaves a member out of the answer.
"""
import base64
import hashlib
import http.server
import json
import secrets
import threading
import time
from urllib.parse import parse_qs, unquote_plus, urlencode, urlsplit

OMIT = object()  # a user member /user leaves out
DEFAULT_USER = {"id": 1234567, "login": "octocat", "name": "The Octocat", "email": None}
CODE_LIFETIME = 600  # seconds
REDIRECT_URI_MISMATCH = "The redirect_uri MUST match the registered callback URL for this application."
API_DOCS = "https://docs.github.com/rest"


class GitHubLikeProvider:
    """The provider, serving from construction until stop() (or the end of a `with` block)."""

    def __init__(self, client_id, client_secret, redirect_uri, user=None):
        self.client_id, self.client_secret, self.redirect_uri = client_id, client_secret, redirect_uri
        self.lock = threading.Lock()
        self.user = {**DEFAULT_USER, **(user or {})}
        self.codes = {}    # code -> {"redirect_uri", "challenge", "scope", "expires"}
        self.tokens = {}   # access token -> scope
        self.counts = {"authorize_requests": 0, "token_requests": 0, "userinfo_requests": 0}
        self.last = {}     # "authorize_query", "token_client_auth", "token_accept", "userinfo_authorization"
        self.lines = []
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.httpd.daemon_threads = True
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.authorization_endpoint = self.base + "/login/oauth/authorize"
        self.token_endpoint = self.base + "/login/oauth/access_token"
        self.userinfo_endpoint = self.base + "/user"
        self.thread = threading.Thread(target=self.httpd.serve_forever, name="github-like-provider", daemon=True)
        self.thread.start()

    def set_user(self, **members):
        """Changes what /user answers from now on (OMIT leaves a member out)."""
        with self.lock:
            self.user.update(members)

    def stats(self):
        with self.lock:
            return {**self.counts, **self.last}

    def log(self):
        with self.lock:
            return "\n".join(self.lines)

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)

    def __enter__(self):
        return self

    def __exit__(self, *exception):
        self.stop()

    # ------------------------------------------------------------------------------------------ endpoints

    def authorize(self, query):
        """(status, headers, body) for GET /login/oauth/authorize."""
        one = {key: values[-1] for key, values in query.items()}
        with self.lock:
            self.counts["authorize_requests"] += 1
            self.last["authorize_query"] = query
        if one.get("client_id") != self.client_id:
            return 404, {"Content-Type": "text/html; charset=utf-8"}, b"<h1>404: no such OAuth app</h1>"
        state = one.get("state", "")
        redirect_uri = one.get("redirect_uri", self.redirect_uri)
        if redirect_uri != self.redirect_uri:
            return _redirect(self.redirect_uri, {
                "error": "redirect_uri_mismatch", "state": state,
                "error_description": REDIRECT_URI_MISMATCH})
        challenge = one.get("code_challenge")
        if challenge is not None and one.get("code_challenge_method", "plain") != "S256":
            return _redirect(redirect_uri, {"error": "invalid_request", "state": state,
                                            "error_description": "code_challenge_method must be S256."})
        code = secrets.token_hex(10)
        with self.lock:
            self.codes[code] = {"redirect_uri": redirect_uri, "challenge": challenge, "scope": one.get("scope", ""),
                                "expires": time.monotonic() + CODE_LIFETIME}
        return _redirect(redirect_uri, {"code": code, "state": state})

    def access_token(self, headers, form):
        """(status, headers, body) for POST /login/oauth/access_token."""
        one = {key: values[-1] for key, values in form.items()}
        client = None
        authorization = headers.get("Authorization", "")
        if authorization[:6].lower() == "basic ":
            try:
                user, _, password = base64.b64decode(authorization[6:].strip(), validate=True).decode().partition(":")
                client = ("basic", unquote_plus(user), unquote_plus(password))
            except ValueError:
                client = ("basic", None, None)
        elif "client_secret" in one:
            client = ("body", one.get("client_id"), one["client_secret"])
        accept = headers.get("Accept", "")
        with self.lock:
            self.counts["token_requests"] += 1
            self.last["token_client_auth"] = client[0] if client else None
            self.last["token_accept"] = accept

        def answer(members):
            if "application/json" in accept:
                return 200, {"Content-Type": "application/json; charset=utf-8"}, json.dumps(members).encode()
            form_type = "application/x-www-form-urlencoded; charset=utf-8"  # GitHub's default
            return 200, {"Content-Type": form_type}, urlencode(members).encode()

        if client is None or client[1] != self.client_id \
                or not secrets.compare_digest((client[2] or "").encode(), self.client_secret.encode()):
            return answer({"error": "incorrect_client_credentials",
                           "error_description": "The client_id and/or client_secret passed are incorrect."})
        if one.get("grant_type", "authorization_code") != "authorization_code":
            return answer({"error": "unsupported_grant_type"})
        bad_code = {"error": "bad_verification_code", "error_description": "The code passed is incorrect or expired."}
        with self.lock:
            grant = self.codes.pop(one.get("code", ""), None)  # single use, whatever follows
        if grant is None or grant["expires"] < time.monotonic():
            return answer(bad_code)
        if one.get("redirect_uri", grant["redirect_uri"]) != grant["redirect_uri"]:
            return answer({"error": "redirect_uri_mismatch",
                           "error_description": REDIRECT_URI_MISMATCH})
        if grant["challenge"] is not None:
            verifier = one.get("code_verifier", "")
            digest = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
            if not verifier or not secrets.compare_digest(digest.encode(), grant["challenge"].encode()):
                return answer(bad_code)
        scope = ",".join(grant["scope"].replace(",", " ").split())
        token = "gho_" + secrets.token_urlsafe(27)[:36]
        with self.lock:
            self.tokens[token] = scope
        return answer({"access_token": token, "token_type": "bearer", "scope": scope})

    def user_answer(self, headers):
        """(status, headers, body) for GET /user."""
        authorization = headers.get("Authorization", "")
        with self.lock:
            self.counts["userinfo_requests"] += 1
            self.last["userinfo_authorization"] = authorization.split(" ", 1)[0] if authorization else None
            self.last["userinfo_user_agent"] = headers.get("User-Agent")
            user = {key: value for key, value in self.user.items() if value is not OMIT}
            scheme, _, token = authorization.partition(" ")
            known = scheme.lower() in ("bearer", "token") and token.strip() in self.tokens
        if not headers.get("User-Agent"):
            return 403, {"Content-Type": "text/plain; charset=utf-8"}, (
                b"Request forbidden by administrative rules. Please make sure your request has a User-Agent header "
                b"(https://docs.github.com/en/rest/overview/resources-in-the-rest-api#user-agent-required).")
        if not authorization:
            return _json(401, {"message": "Requires authentication", "documentation_url": API_DOCS, "status": "401"})
        if not known:
            return _json(401, {"message": "Bad credentials", "documentation_url": API_DOCS, "status": "401"})
        login = user.get("login") or "user"
        return _json(200, {
            **user, "node_id": "MDQ6VXNlcjE=", "avatar_url": f"{self.base}/avatars/{login}",
            "html_url": f"https://github.example/{login}", "type": "User", "site_admin": False,
            "company": None, "blog": "", "location": None, "hireable": None, "bio": None,
            "public_repos": 8, "followers": 20, "following": 0, "created_at": "2011-01-25T18:44:36Z"})


def _redirect(uri, parameters):
    location = uri + ("&" if "?" in uri else "?") + urlencode(parameters)
    return 302, {"Location": location, "Content-Type": "text/html; charset=utf-8"}, \
        f'<html><body>You are being <a href="{location}">redirected</a>.</body></html>'.encode()


def _json(status, members):
    return status, {"Content-Type": "application/json; charset=utf-8"}, json.dumps(members).encode()


def _handler(provider):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self):
            parts = urlsplit(self.path)
            if parts.path == "/login/oauth/authorize":
                self._send(*provider.authorize(parse_qs(parts.query)))
            elif parts.path == "/user":
                self._send(*provider.user_answer(self.headers))
            else:
                self._send(*_json(404, {"message": "Not Found"}))

        def do_POST(self):
            parts = urlsplit(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length).decode("utf-8", "replace") if length else ""
            if parts.path == "/login/oauth/access_token":
                # GitHub reads the parameters from the query string as well as the body.
                form = {**parse_qs(parts.query), **parse_qs(body)}
                self._send(*provider.access_token(self.headers, form))
            else:
                self._send(*_json(404, {"message": "Not Found"}))

        def _send(self, status, headers, body):
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def log_message(self, format, *args):
            with provider.lock:
                provider.lines.append(format % args)

    return Handler
