"""Real local HTTP servers for the notification tests: a webhook receiver that checks the
signature, and a push service that checks the VAPID JWT and decrypts each message."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import http_ece
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature


def verify_signature(secret: str, header: str, body: bytes, tolerance: int = 300) -> bool:
    """How a receiver checks `X-Agentboard-Signature` (the README shows the same lines)."""
    parts = dict(item.split("=", 1) for item in header.split(","))
    timestamp = int(parts["t"])
    expected = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    fresh = abs(time.time() - timestamp) <= tolerance
    return fresh and hmac.compare_digest(expected.hexdigest(), parts["v1"])


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Receiver:
    """Answers each POST with the next scripted status (then 200), and keeps what it got."""

    statuses: list[int] = field(default_factory=list)
    received: list[Received] = field(default_factory=list)
    answer: bytes = b"ok"
    handle: Any = None  # a function (Received) -> (status, body), for the push service
    server: ThreadingHTTPServer | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)
    # Notified each time a request arrives, and again once it has been handled (`handle`
    # included).
    handled: threading.Condition = field(init=False)
    answered: int = 0

    def __post_init__(self) -> None:
        self.handled = threading.Condition(self.lock)

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def start(self) -> Receiver:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                got = Received(self.path, dict(self.headers.items()), self.rfile.read(length))
                with receiver.handled:
                    receiver.received.append(got)
                    status = receiver.statuses.pop(0) if receiver.statuses else 200
                    receiver.handled.notify_all()  # arrived (`wait_for_arrival`)
                body = receiver.answer
                if receiver.handle is not None:
                    status, body = receiver.handle(got)
                with receiver.handled:
                    receiver.answered += 1
                    receiver.handled.notify_all()
                self.send_response(status)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()

    def wait_for_arrival(self, count: int, timeout: float = 20) -> None:
        """Until `count` requests have arrived, answered or not."""
        with self.handled:
            if not self.handled.wait_for(lambda: len(self.received) >= count, timeout):
                raise AssertionError(f"expected {count} requests, got {len(self.received)}")

    def wait_for(self, count: int, timeout: float = 20) -> list[Received]:
        """Every request once `count` have been handled."""
        with self.handled:
            if not self.handled.wait_for(lambda: self.answered >= count, timeout):
                raise AssertionError(f"expected {count} requests, got {len(self.received)}")
            return list(self.received)


# --- a push service stub -----------------------------------------------------------------------


def _b64decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _b64encode(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


@dataclass
class PushBrowser:
    """What a browser holds for one subscription: its key pair and auth secret."""

    private_key: ec.EllipticCurvePrivateKey = field(
        default_factory=lambda: ec.generate_private_key(ec.SECP256R1())
    )
    auth: bytes = field(default_factory=lambda: __import__("os").urandom(16))

    def subscription(self, endpoint: str) -> dict[str, Any]:
        public = self.private_key.public_key().public_bytes(
            serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
        )
        return {
            "endpoint": endpoint,
            "keys": {"p256dh": _b64encode(public), "auth": _b64encode(self.auth)},
        }

    def decrypt(self, body: bytes) -> Any:
        plain = http_ece.decrypt(
            body, private_key=self.private_key, auth_secret=self.auth, version="aes128gcm"
        )
        return json.loads(plain)


def check_vapid(authorization: str, audience: str) -> dict[str, Any]:
    """The claims of a valid `vapid t=<JWT>,k=<key>` header; AssertionError otherwise."""
    scheme, _, rest = authorization.partition(" ")
    assert scheme == "vapid", authorization[:20]
    fields = dict(item.strip().split("=", 1) for item in rest.split(","))
    token, key = fields["t"], _b64decode(fields["k"])
    header_b64, claims_b64, signature_b64 = token.split(".")
    header = json.loads(_b64decode(header_b64))
    assert header["alg"] == "ES256"
    public = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), key)
    raw = _b64decode(signature_b64)
    signature = encode_dss_signature(
        int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big")
    )
    public.verify(signature, f"{header_b64}.{claims_b64}".encode(), ec.ECDSA(hashes.SHA256()))
    claims = json.loads(_b64decode(claims_b64))
    assert claims["aud"] == audience, claims
    assert claims["exp"] > time.time()
    assert claims["sub"].startswith(("mailto:", "https:", "http:"))
    return claims
