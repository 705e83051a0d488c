"""A stand-in for the system browser, for `latchkey login` run as $BROWSER: opens the URL it is
given, signs in as demo (password in $LK_PASSWORD), allows the scopes in $LK_GRANT (space-separated;
every scope offered when it is unset), and follows the redirect to the app's loopback receiver."""
import http.cookiejar
import os
import re
import sys
import urllib.error
import urllib.parse
import urllib.request


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


jar = http.cookiejar.CookieJar()
opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar), NoRedirect)


def fetch(url, form=None):
    data = urllib.parse.urlencode(form, doseq=True).encode() if form is not None else None
    try:
        response = opener.open(url, data)
        return response.status, response.headers, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read().decode()


def hidden(page):
    return dict(re.findall(r'name="(csrf_token|request)" value="([^"]*)"', page))


url = sys.argv[1]
base = url.split("/oauth2/")[0]
_, headers, _ = fetch(url)
_, _, page = fetch(base + headers["Location"])
_, headers, _ = fetch(base + "/login", {**hidden(page), "username": "demo", "password": os.environ["LK_PASSWORD"]})
status, headers, page = fetch(base + headers["Location"])
if status == 200:  # the consent page; when consent is remembered it is a redirect to the app already
    offered = re.findall(r'name="scope" value="([^"]*)"', page)
    scopes = os.environ["LK_GRANT"].split() if "LK_GRANT" in os.environ else offered
    _, headers, _ = fetch(base + "/oauth2/authorize", {**hidden(page), "decision": "allow", "scope": scopes})
fetch(headers["Location"])
