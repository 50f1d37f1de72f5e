"""A stand-in for the board that answers every POST with `{}` and refuses every GET (such as
an agent socket's handshake), after writing down each request's method, path, headers and body: for
tests of what the agents' side sends, without a real server."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes = b""


@dataclass
class CapturingServer:
    url: str = ""
    # The agents' side wants a token; this server takes any.
    token: str = "ab_capturing"
    requests: list[Seen] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None

    def __enter__(self) -> CapturingServer:
        captured = self

        class Handler(BaseHTTPRequestHandler):
            def _record(self, body: bytes = b"") -> None:
                headers = dict(self.headers.items())
                captured.requests.append(Seen(self.command, self.path, headers, body))

            def do_POST(self) -> None:
                self._record(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            def do_GET(self) -> None:
                self._record()
                self.send_error(404)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_port}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()

    def log(self) -> str:
        """What came, for a failing test's report."""
        return "\n".join(f"{seen.method} {seen.path} {seen.headers}" for seen in self.requests)
