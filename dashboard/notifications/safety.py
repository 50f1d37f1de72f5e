"""Webhook URLs and push endpoints are secrets and untrusted addresses.

Secrets: pages show them masked, logs and error texts never hold them whole. Untrusted: a URL
someone typed (or a browser handed us as a push endpoint) must not make the server call
itself or its private network (SSRF); only public addresses are called unless
AGENTBOARD_WEBHOOK_ALLOW_PRIVATE is on (tests, a team whose chat runs in-house).
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit, urlunsplit

from django.conf import settings


class UnsafeURL(ValueError):
    """The URL is not one the server will call; the message says why, in one sentence."""


def host_of(url: str) -> str:
    """Only the host of an address (its user, path and query can carry credentials)."""
    return urlsplit(url).hostname or "?"


def mask_url(url: str) -> str:
    """`https://hooks.slack.com/…X9aZ`: enough to recognise, never enough to use."""
    parts = urlsplit(url)
    tail = url[-4:] if len(url) > 12 else ""
    return f"{parts.scheme}://{parts.hostname or '?'}/…{tail}"


def scrub(text: str, url: str) -> str:
    """`text` (an error message) with the URL, or its path and query, masked."""
    parts = urlsplit(url)
    for secret in (url, f"{parts.path}?{parts.query}" if parts.query else "", parts.path):
        if secret and len(secret) > 1:
            text = text.replace(secret, "/…")
    return text


def check_form(url: str) -> str:
    url = url.strip()
    parts = urlsplit(url)
    try:
        parts.port  # noqa: B018 - raises on a port that is not a number
    except ValueError:
        raise UnsafeURL("The address has a port that is not a number.") from None
    if parts.scheme not in {"http", "https"} or not parts.hostname:
        raise UnsafeURL("Give an http or https address, such as https://hooks.example.com/….")
    if parts.username or parts.password:
        raise UnsafeURL("Put no user name or password in the address.")
    return url


def check_url(url: str) -> str:
    """The URL, once it is well formed and its host resolves to public addresses only.
    Resolves the host name (blocking: call it off the event loop)."""
    check_address(url)
    return url.strip()


def check_address(url: str) -> str | None:
    """The public address the URL's host resolves to, which the request must then go to (a
    second lookup could answer differently: DNS rebinding); None when private addresses are
    allowed. Raises UnsafeURL."""
    url = check_form(url)
    if settings.AGENTBOARD_WEBHOOK_ALLOW_PRIVATE:
        return None
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        infos = socket.getaddrinfo(host, port, proto=socket.IPPROTO_TCP)
    except (socket.gaierror, UnicodeError):
        raise UnsafeURL(f"The host {host} could not be found; check the address.") from None
    addresses = [ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos]
    for address in addresses:
        if not address.is_global or address.is_multicast:
            raise UnsafeURL(
                f"The host {host} is a loopback, private or link-local address, which this "
                "server does not call (AGENTBOARD_WEBHOOK_ALLOW_PRIVATE allows it)."
            )
    return str(addresses[0])


def pinned(url: str, address: str) -> tuple[str, dict[str, str], dict[str, str]]:
    """The URL with its host replaced by `address`, and the Host header and TLS server name
    that keep the request (and certificate check) about the original host."""
    parts = urlsplit(url)
    host = f"[{address}]" if ":" in address else address
    netloc = f"{host}:{parts.port}" if parts.port else host
    original = parts.netloc.rsplit("@", 1)[-1]
    extensions = {"sni_hostname": parts.hostname or ""} if parts.scheme == "https" else {}
    return urlunsplit(parts._replace(netloc=netloc)), {"Host": original}, extensions
