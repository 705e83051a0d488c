"""Software authenticators for tests of Latchkey's passkeys, built on python-fido2's CBOR and COSE
encoders (an implementation independent of Latchkey's): each makes what a browser would hand
the page after navigator.credentials.create() or .get(), for an origin the test chooses.

SoftWebauthnDevice (soft-webauthn on PyPI) is the other one the tests use; it tests the user's
presence only. KeyAuthenticator also verifies the user (the UV flag), as a passkey does when used
alone, and holds an ES256, EdDSA or RS256 key.
"""
import hashlib
import json
import os
import struct
from base64 import urlsafe_b64decode, urlsafe_b64encode

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa
from fido2 import cbor
from fido2.cose import EdDSA, ES256, RS256


def b64(data):
    return urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64(text):
    return urlsafe_b64decode(text + "=" * (-len(text) % 4))


def decoded_options(options):
    """The server's JSON options with their byte strings as bytes, as a browser passes them on."""
    key = dict(options["publicKey"])
    key["challenge"] = unb64(key["challenge"])
    if "user" in key:
        key["user"] = {**key["user"], "id": unb64(key["user"]["id"])}
    for name in ("excludeCredentials", "allowCredentials"):
        if name in key:
            key[name] = [{**item, "id": unb64(item["id"])} for item in key[name]]
    return {"publicKey": key}


class KeyAuthenticator:
    """One discoverable credential, with user verification: algorithm "ES256", "EdDSA" or "RS256"."""

    def __init__(self, algorithm="ES256", verifies_user=True, synced=False):
        self.algorithm = algorithm
        self.verifies_user = verifies_user
        self.synced = synced
        self.credential_id = os.urandom(32)
        self.sign_count = 0
        self.user_handle = None
        self.rp_id = None
        if algorithm == "ES256":
            self.private_key = ec.generate_private_key(ec.SECP256R1())
            self.cose = ES256.from_cryptography_key(self.private_key.public_key())
        elif algorithm == "EdDSA":
            self.private_key = ed25519.Ed25519PrivateKey.generate()
            self.cose = EdDSA.from_cryptography_key(self.private_key.public_key())
        else:
            self.private_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
            self.cose = RS256.from_cryptography_key(self.private_key.public_key())

    def _flags(self, attested):
        flags = 0x01 | (0x04 if self.verifies_user else 0) | (0x08 | 0x10 if self.synced else 0)
        return bytes([flags | (0x40 if attested else 0)])

    def _sign(self, data):
        if self.algorithm == "ES256":
            return self.private_key.sign(data, ec.ECDSA(hashes.SHA256()))
        if self.algorithm == "EdDSA":
            return self.private_key.sign(data)
        return self.private_key.sign(data, padding.PKCS1v15(), hashes.SHA256())

    @staticmethod
    def _client_data(kind, challenge, origin):
        return json.dumps({"type": kind, "challenge": b64(challenge), "origin": origin,
                           "crossOrigin": False}).encode()

    def create(self, options, origin):
        key = decoded_options(options)["publicKey"]
        self.rp_id = key["rp"]["id"]
        self.user_handle = key["user"]["id"]
        auth_data = (hashlib.sha256(self.rp_id.encode()).digest() + self._flags(True) + struct.pack(">I", self.sign_count)
                     + b"\0" * 16 + struct.pack(">H", len(self.credential_id)) + self.credential_id
                     + cbor.encode(self.cose))
        return {"client_data": self._client_data("webauthn.create", key["challenge"], origin),
                "attestation_object": cbor.encode({"fmt": "none", "attStmt": {}, "authData": auth_data})}

    def get(self, options, origin):
        key = decoded_options(options)["publicKey"]
        self.sign_count += 1
        client_data = self._client_data("webauthn.get", key["challenge"], origin)
        auth_data = (hashlib.sha256(key["rpId"].encode()).digest() + self._flags(False)
                     + struct.pack(">I", self.sign_count))
        signature = self._sign(auth_data + hashlib.sha256(client_data).digest())
        return {"credential_id": self.credential_id, "client_data": client_data, "authenticator_data": auth_data,
                "signature": signature, "user_handle": self.user_handle}
