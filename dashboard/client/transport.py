"""One JSON POST from a hook command to the server, for as little start-up time as it can.

Claude Code waits for its hook commands, and each is a fresh Python process: importing
`urllib.request` (with `http.client`, `email` and `ssl`) costs more than everything else the
command does. A plain `http://` server with no proxy in the way gets one HTTP/1.1 request over
a socket instead, closed after the answer. Anything else (`https://`, or an `http_proxy` to go
through) goes through `urllib.request` as before, which knows TLS, proxies and `no_proxy`.

Either way the answer is `(status, body)`, and a server that cannot be reached raises
`OSError`, whose text says why, as `urllib` reports it (`[Errno 111] Connection refused`,
`timed out`).

The socket is `_socket`'s, the C module under `socket`: importing `socket` itself (its enums
and `selectors`) would cost a hook call about 2 ms of CPU, for names it does not use.
"""

from __future__ import annotations

import _socket
import os

# The most of an answer read: the server's answers to hooks are a few kilobytes at most.
MAX_ANSWER_BYTES = 16 * 1024 * 1024


class NoHttpAnswer(OSError):
    """What came back is not an HTTP answer (something else listens on the port)."""


def post(
    url: str, path: str, body: bytes, headers: dict[str, str], timeout: float
) -> tuple[int, bytes]:
    """POST `body` to `url` + `path`; the answer's status and body. `timeout` bounds the
    connection and each read, as `urllib.request.urlopen`'s does. A header value that cannot
    be sent raises ValueError."""
    scheme, _, rest = url.partition("://")
    if scheme.lower() != "http" or _proxy_for("http"):
        return _post_with_urllib(url + path, body, headers, timeout)
    netloc, slash, prefix = rest.partition("/")
    authority = netloc.rpartition("@")[2]  # a user name in the URL is never sent
    target = f"{slash}{prefix}".rstrip("/") + path
    request = _request_bytes(authority, target, body, headers)
    connection = _connect(*_address(authority), timeout)
    try:
        connection.sendall(request)
        return _read_answer(connection)
    finally:
        connection.close()


def _connect(host: str | bytes, port: int, timeout: float) -> _socket.socket:
    """A connection to the first of the host's addresses that accepts one (what
    `socket.create_connection` does)."""
    failure: OSError | None = None
    for family, kind, protocol, _, address in _socket.getaddrinfo(
        host, port, 0, _socket.SOCK_STREAM
    ):
        connection = _socket.socket(family, kind, protocol)
        try:
            connection.settimeout(timeout)
            connection.connect(address)
        except OSError as error:
            connection.close()
            failure = error
            continue
        return connection
    raise failure or OSError(f"no address found for {host!r}")


def _proxy_for(scheme: str) -> bool:
    """Whether `urllib` would send this scheme's requests through a proxy (it reads the same
    variables; which hosts `no_proxy` exempts is left to it)."""
    return bool(os.environ.get(f"{scheme}_proxy") or os.environ.get(f"{scheme.upper()}_PROXY"))


def _address(authority: str) -> tuple[str | bytes, int]:
    """`host:port` (a bracketed IPv6 address too) as an address; port 80 when none is given.
    An ASCII host goes as bytes: a `str` one makes `getaddrinfo` import the IDNA codec
    (`encodings.idna`, `stringprep`, `unicodedata`), a few milliseconds for nothing."""
    if authority.startswith("["):
        host, _, after = authority[1:].partition("]")
        port_text = after.removeprefix(":")
    else:
        host, _, port_text = authority.partition(":")
    if port_text and not port_text.isdigit():
        raise OSError(f"nonnumeric port: '{port_text}'")
    port = int(port_text) if port_text else 80
    return (host.encode("ascii") if host.isascii() else host), port


def _request_bytes(authority: str, target: str, body: bytes, headers: dict[str, str]) -> bytes:
    lines = [f"POST {target} HTTP/1.1", f"Host: {authority}"]
    fields = {**headers, "Content-Length": str(len(body)), "Connection": "close"}
    for name, value in fields.items():
        if "\r" in value or "\n" in value:
            raise ValueError(f"the {name} header's value has a line break")
        lines.append(f"{name}: {value}")
    # HTTP header values are latin-1 (UnicodeEncodeError, a ValueError, otherwise).
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def _read_answer(connection: _socket.socket) -> tuple[int, bytes]:
    """The status and body of the answer, read until its length (or its last chunk, or the
    connection's end) says it is whole."""
    buffer = bytearray()
    status_line = _line(connection, buffer)
    version, _, rest = status_line.partition(b" ")
    if not version.startswith(b"HTTP/") or not rest[:3].isdigit():
        raise NoHttpAnswer(f"the answer is not HTTP: {status_line[:60]!r}")
    status = int(rest[:3])
    fields: dict[bytes, bytes] = {}
    while line := _line(connection, buffer):
        name, _, value = line.partition(b":")
        fields[name.strip().lower()] = value.strip()
    if fields.get(b"transfer-encoding", b"").lower() == b"chunked":
        body = bytearray()
        while size := _chunk_size(_line(connection, buffer)):
            _fill(connection, buffer, size + 2)
            body += buffer[:size]
            del buffer[: size + 2]
        return status, bytes(body)
    length = fields.get(b"content-length", b"")
    if length.isdigit():
        _fill(connection, buffer, int(length))
        return status, bytes(buffer[: int(length)])
    while _receive(connection, buffer):
        pass
    return status, bytes(buffer)


def _chunk_size(line: bytes) -> int:
    try:
        return int(line.split(b";")[0].strip(), 16)
    except ValueError:
        raise NoHttpAnswer("the answer's chunks are malformed") from None


def _line(connection: _socket.socket, buffer: bytearray) -> bytes:
    """The next line of the answer's head (or of a chunk size), without its CRLF."""
    while (end := buffer.find(b"\r\n")) < 0:
        if not _receive(connection, buffer):
            raise NoHttpAnswer("the server closed the connection before its answer was whole")
    line = bytes(buffer[:end])
    del buffer[: end + 2]
    return line


def _fill(connection: _socket.socket, buffer: bytearray, size: int) -> None:
    while len(buffer) < size:
        if not _receive(connection, buffer):
            raise NoHttpAnswer("the server closed the connection before its answer was whole")


def _receive(connection: _socket.socket, buffer: bytearray) -> bool:
    """Append what arrives; False at the connection's end."""
    data = connection.recv(65536)
    buffer += data
    if len(buffer) > MAX_ANSWER_BYTES:
        raise NoHttpAnswer("the answer is larger than any the server sends")
    return bool(data)


def _post_with_urllib(
    url: str, body: bytes, headers: dict[str, str], timeout: float
) -> tuple[int, bytes]:
    import http.client
    import urllib.error
    import urllib.request

    request = urllib.request.Request(url, data=body, method="POST", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()
    except urllib.error.URLError as error:
        reason = error.reason
        raise (reason if isinstance(reason, OSError) else OSError(str(reason))) from None
    except http.client.HTTPException as error:
        raise NoHttpAnswer(f"the answer is not HTTP ({error!r})") from None
