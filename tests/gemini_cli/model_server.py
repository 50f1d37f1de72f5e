"""A scripted stand-in for the Gemini API, to drive the real Gemini CLI.

Gemini CLI reaches it through `GOOGLE_GEMINI_BASE_URL`: the agent loop streams
`POST /v1beta/models/{model}:streamGenerateContent?alt=sse` (server-sent events, each a
`GenerateContentResponse` with candidates and `usageMetadata`), and side requests use
`:generateContent` (a JSON answer) and `:countTokens`.

A test hands the server a script: the model turns of the agent loop, in order (text,
function calls). Each streamed request takes the next turn; when nothing is left the model says
"Done." and ends its turn. A side request (`generateContent`: Gemini asks whether the model
or the user speaks next, or for a summary) gets a short JSON answer and leaves the script alone.

Every request body is recorded, so a test can assert what the model received: a tool's
response (the reviewer's denial) or a continuation prompt arriving as a user message.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.held_turn import HeldTurn

Part = dict[str, Any]
HOLD_LIMIT = 60
USAGE = {"promptTokenCount": 120, "candidatesTokenCount": 12, "totalTokenCount": 132}


@dataclass
class Turn(HeldTurn):
    """One model response: its parts (text and/or function calls)."""

    parts: list[Part]


def say(text: str) -> Turn:
    return Turn([{"text": text}])


def call(name: str, args: dict[str, Any], *, text: str | None = None) -> Turn:
    """A turn calling one function (optionally after a sentence of text)."""
    parts: list[Part] = [{"text": text}] if text else []
    parts.append({"functionCall": {"name": name, "args": args}})
    return Turn(parts)


def todos(*items: tuple[str, str]) -> Turn:
    """A turn calling Gemini's `write_todos` with (description, status) pairs."""
    return call("write_todos", {"todos": [{"description": d, "status": s} for d, s in items]})


def shell(command: str) -> Turn:
    return call("run_shell_command", {"command": command, "description": "Runs it."})


@dataclass
class Request:
    path: str
    body: dict[str, Any]

    @property
    def streamed(self) -> bool:
        return ":streamGenerateContent" in self.path

    @property
    def contents(self) -> list[dict[str, Any]]:
        contents = self.body.get("contents")
        return contents if isinstance(contents, list) else []

    def tool_names(self) -> list[str]:
        names = []
        for tool in self.body.get("tools") or []:
            for declaration in tool.get("functionDeclarations") or []:
                names.append(declaration.get("name"))
        return names

    def user_texts(self) -> list[str]:
        return [
            part["text"]
            for content in self.contents
            if content.get("role") == "user"
            for part in content.get("parts") or []
            if isinstance(part.get("text"), str)
        ]

    def function_responses(self) -> list[dict[str, Any]]:
        return [
            part["functionResponse"]
            for content in self.contents
            for part in content.get("parts") or []
            if isinstance(part.get("functionResponse"), dict)
        ]

    def text(self) -> str:
        return json.dumps(self.body, ensure_ascii=False)


@dataclass
class ModelServer:
    turns: list[Turn] = field(default_factory=list)
    requests: list[Request] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> ModelServer:
        model = self

        class Handler(_Handler):
            server_model = model

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        for turn in self.turns:
            if turn.gate is not None:
                turn.gate.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    def add(self, *turns: Turn) -> None:
        with self.lock:
            self.turns.extend(turns)

    def next_turn(self) -> Turn:
        with self.lock:
            return self.turns.pop(0) if self.turns else say("Done.")

    def streamed(self) -> list[Request]:
        with self.lock:
            return [request for request in self.requests if request.streamed]

    def received(self, text: str) -> list[Request]:
        """The agent-loop requests with a user message holding `text`."""
        return [
            request
            for request in self.streamed()
            if any(text in said for said in request.user_texts())
        ]

    def log(self) -> str:
        with self.lock:
            return "\n".join(f"{r.path} {r.text()[-600:]}" for r in self.requests[-12:])


class _Handler(BaseHTTPRequestHandler):
    server_model: ModelServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._json(404, {"error": {"code": 404, "message": "Not here.", "status": "NOT_FOUND"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            body = {}
        request = Request(self.path, body if isinstance(body, dict) else {})
        model = self.server_model
        with model.lock:
            model.requests.append(request)
        if ":countTokens" in self.path:
            self._json(200, {"totalTokens": 120})
        elif ":streamGenerateContent" in self.path:
            turn = model.next_turn()
            turn.taken.set()
            if turn.gate is not None:
                turn.gate.wait(HOLD_LIMIT)
            self._stream(turn)
        elif ":generateContent" in self.path:
            answer = {"reasoning": "The model finished its turn.", "next_speaker": "user"}
            self._json(200, _response([{"text": json.dumps(answer)}]))
        else:
            self._json(404, {"error": {"code": 404, "message": "Not here.", "status": "NOT_FOUND"}})

    def _json(self, status: int, data: Any) -> None:
        payload = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _stream(self, turn: Turn) -> None:
        chunks = b"".join(
            b"data: " + json.dumps(event).encode() + b"\r\n\r\n" for event in _events(turn)
        )
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(chunks)))
        self.end_headers()
        self.wfile.write(chunks)


def _response(parts: list[Part]) -> dict[str, Any]:
    return {
        "candidates": [
            {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
        ],
        "usageMetadata": USAGE,
        "modelVersion": "gemini-2.5-flash",
    }


def _events(turn: Turn) -> Iterator[dict[str, Any]]:
    """The turn as a stream: each part its own chunk, the last one with the finish reason."""
    *first, last = turn.parts
    for part in first:
        yield {"candidates": [{"content": {"role": "model", "parts": [part]}, "index": 0}]}
    yield _response([last])
