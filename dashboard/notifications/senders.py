"""Sending one notification: a Slack-compatible or signed JSON webhook, or a Web Push message.

Each sender returns a `Result` and never raises for what a receiver does: the worker records
it and retries later. HTTP goes out with httpx, redirects not followed (a redirect could point
into the private network the URL check kept us out of).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import logging
import os
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx
from cryptography.hazmat.primitives import serialization
from django.conf import settings
from py_vapid import Vapid
from pywebpush import WebPusher

from dashboard.notifications.messages import json_message, push_message, slack_message
from dashboard.notifications.models import PushDevice, WebhookTarget
from dashboard.notifications.safety import UnsafeURL, check_address, pinned, scrub

logger = logging.getLogger(__name__)

SIGNATURE_HEADER = "X-Agentboard-Signature"
TIMEOUT = httpx.Timeout(10.0, connect=5.0)
BODY_EXCERPT = 300
# Phones that are off get the message for a day, then it is dropped.
PUSH_TTL_SECONDS = 86_400


@dataclass
class Result:
    ok: bool
    status: int | None = None
    body: str = ""
    error: str = ""
    # A push service that says the subscription no longer exists.
    gone: bool = False


def sign(secret: str, body: bytes, timestamp: int) -> str:
    """The signature header's value: `t=<unix time>,v1=<hex HMAC-SHA256 of "<t>.<body>">`."""
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return f"t={timestamp},v1={mac.hexdigest()}"


def new_client() -> httpx.AsyncClient:
    return httpx.AsyncClient(timeout=TIMEOUT, follow_redirects=False)


async def _post(
    client: httpx.AsyncClient, url: str, content: bytes, headers: dict[str, str]
) -> Result:
    try:
        address = await asyncio.to_thread(check_address, url)
    except UnsafeURL as error:
        return Result(ok=False, error=str(error))
    target, extensions = url, {}
    if address is not None:
        target, host, extensions = pinned(url, address)
        headers = {**headers, **host}
    try:
        response = await client.post(
            target, content=content, headers=headers, extensions=extensions
        )
    except httpx.HTTPError as error:
        text = scrub(str(error), url) or type(error).__name__
        return Result(ok=False, error=f"{type(error).__name__}: {text}"[:500])
    body = response.text[:BODY_EXCERPT]
    ok = 200 <= response.status_code < 300
    return Result(
        ok=ok,
        status=response.status_code,
        body=body,
        error="" if ok else f"The receiver answered {response.status_code}.",
        gone=response.status_code in {404, 410},
    )


async def send_webhook(
    client: httpx.AsyncClient, target: WebhookTarget, payload: dict[str, Any], delivery: str
) -> Result:
    if target.kind == WebhookTarget.Kind.SLACK:
        message = slack_message(payload, target.base_url)
    else:
        message = json_message(payload, target.base_url)
    body = json.dumps(message, ensure_ascii=False).encode()
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "Agentboard",
        "X-Agentboard-Event": str(payload.get("event", "")),
        "X-Agentboard-Delivery": delivery,
    }
    if target.kind == WebhookTarget.Kind.JSON:
        headers[SIGNATURE_HEADER] = sign(target.secret, body, int(time.time()))
    result = await _post(client, target.url, body, headers)
    # A webhook that is gone stays: only push subscriptions are dropped for it.
    result.gone = False
    return result


# --- Web Push --------------------------------------------------------------------------------


def _key_file():
    return settings.DATA_DIR / "vapid_private.pem"


_vapid: Vapid | None = None


def vapid() -> Vapid:
    """The server's VAPID key pair: AGENTBOARD_VAPID_PRIVATE_KEY when set, or else made on
    first use and kept in the data dir."""
    global _vapid
    if _vapid is None and settings.AGENTBOARD_VAPID_PRIVATE_KEY:
        _vapid = Vapid.from_pem(settings.AGENTBOARD_VAPID_PRIVATE_KEY)
    if _vapid is None:
        path = _key_file()
        if not path.exists():
            key = Vapid()
            key.generate_keys()
            pem = key.private_key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
            temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
            temporary.write_bytes(pem)
            temporary.chmod(0o600)
            # Two processes starting at once: the first key written wins, both use it.
            try:
                os.link(temporary, path)
            except FileExistsError:
                pass
            finally:
                temporary.unlink(missing_ok=True)
        _vapid = Vapid.from_file(str(path))
    return _vapid


def public_key() -> str:
    """The application server key browsers subscribe with (base64url, uncompressed point)."""
    raw = vapid().public_key.public_bytes(
        serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
    )
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _subject() -> str:
    return (
        settings.AGENTBOARD_VAPID_SUBJECT
        or settings.AGENTBOARD_PUBLIC_URL
        or ("mailto:agentboard@localhost")
    )


def push_request(device: PushDevice, payload: dict[str, Any]) -> tuple[bytes, dict[str, str]]:
    """The encrypted body (aes128gcm) and headers (VAPID, TTL) of one push message."""
    data = json.dumps(push_message(payload, device.base_url), ensure_ascii=False).encode()
    pusher = WebPusher(
        {"endpoint": device.endpoint, "keys": {"p256dh": device.p256dh, "auth": device.auth}}
    )
    body = pusher.encode(data, content_encoding="aes128gcm")["body"]
    parts = urlsplit(device.endpoint)
    claims = {
        "sub": _subject(),
        "aud": f"{parts.scheme}://{parts.netloc}",
        "exp": int(time.time()) + 12 * 3600,
    }
    headers = {
        **vapid().sign(claims),
        "Content-Encoding": "aes128gcm",
        "Content-Type": "application/octet-stream",
        "TTL": str(PUSH_TTL_SECONDS),
        "Urgency": "high",
    }
    return body, headers


async def send_push(
    client: httpx.AsyncClient, device: PushDevice, payload: dict[str, Any]
) -> Result:
    try:
        body, headers = await asyncio.to_thread(push_request, device, payload)
    except Exception as error:
        return Result(ok=False, error=f"The message could not be encrypted: {type(error).__name__}")
    return await _post(client, device.endpoint, body, headers)
