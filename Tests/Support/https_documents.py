"""A real HTTPS server on loopback for the tests of client metadata documents, with its own
certificate authority, and a log of every request it received.

    from https_documents import TestAuthority, DocumentServer

    authority = TestAuthority(tmp_path)          # authority.ca_file: the PEM to give Latchkey
    with DocumentServer(authority) as docs:      # docs.port, docs.url("/client.json")
        docs.route("/client.json", json_body={...}, headers={"Cache-Control": "max-age=60"})
        docs.route("/moved", status=302, headers={"Location": "https://10.0.0.1/x"})
        docs.route("/big", body=b"{" + b" " * 100_000 + b"}")
        docs.route("/slow", json_body={...}, trickle=0.5)   # one byte every 0.5 s
        docs.requests                            # ["/client.json", ...]: the paths asked, in order

The certificate names `localhost`, `127.0.0.1` and `::1`. Only the standard library and
`cryptography` (which Authlib already needs) are used.
"""
import datetime
import http.server
import ipaddress
import json
import ssl
import threading
import time
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


class TestAuthority:
    """A throwaway CA and a server certificate it signed, written as PEM files into `folder`."""

    __test__ = False  # not a pytest test class, whatever its name

    def __init__(self, folder):
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        now = datetime.datetime.now(datetime.timezone.utc)
        ca_key = ec.generate_private_key(ec.SECP256R1())
        ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Latchkey test CA")])
        ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
              .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
              .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
              .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
              .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
              .sign(ca_key, hashes.SHA256()))
        key = ec.generate_private_key(ec.SECP256R1())
        names = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                 x509.IPAddress(ipaddress.ip_address("::1"))]
        cert = (x509.CertificateBuilder()
                .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
                .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
                .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
                .add_extension(x509.SubjectAlternativeName(names), critical=False)
                .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
                .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                .sign(ca_key, hashes.SHA256()))
        self.ca_file = str(folder / "test-ca.pem")
        self.cert_file = str(folder / "server.pem")
        self.key_file = str(folder / "server.key")
        Path(self.ca_file).write_bytes(ca.public_bytes(serialization.Encoding.PEM))
        Path(self.cert_file).write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        Path(self.key_file).write_bytes(key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))


class DocumentServer:
    """An HTTPS server on 127.0.0.1 (on `port`, or one the OS chooses) answering the routes it is
    given; any other path is 404. `requests` lists every path asked, so a test can prove that a
    refused fetch never reached it; `posts` keeps each POST as (path, headers, body), answered with
    the route's status (its body is not sent)."""

    def __init__(self, authority, host="127.0.0.1", port=0):
        self.routes = {}
        self.requests = []
        self.posts = []
        self._lock = threading.Lock()
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):  # noqa: N802 (the standard library's name)
                with owner._lock:
                    owner.requests.append(self.path)
                route = owner.routes.get(self.path)
                if route is None:
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                body = route["body"]
                self.send_response(route["status"])
                for name, value in route["headers"].items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                try:
                    if route["trickle"]:
                        for byte in body:
                            self.wfile.write(bytes([byte]))
                            self.wfile.flush()
                            time.sleep(route["trickle"])
                    else:
                        self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
                    pass  # the client gave up, as it should

            def do_POST(self):  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                route = owner.routes.get(self.path)
                with owner._lock:
                    owner.requests.append(self.path)
                    owner.posts.append((self.path, dict(self.headers), body))
                self.send_response(route["status"] if route else 404)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer((host, port), Handler)
        self.httpd.daemon_threads = True
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(authority.cert_file, authority.key_file)
        self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._thread.start()

    def url(self, path, host="localhost"):
        return f"https://{host}:{self.port}{path}"

    def route(self, path, json_body=None, body=None, status=200, headers=None, trickle=0.0,
              content_type="application/json"):
        """Answers GET `path` with `json_body` (serialised) or raw `body` bytes."""
        if json_body is not None:
            body = json.dumps(json_body).encode()
        all_headers = {"Content-Type": content_type} if content_type else {}
        all_headers.update(headers or {})
        self.routes[path] = {"body": body or b"", "status": status, "headers": all_headers, "trickle": trickle}

    def count(self, path):
        with self._lock:
            return self.requests.count(path)

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
