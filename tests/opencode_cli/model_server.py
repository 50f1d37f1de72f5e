"""A scripted stand-in for an OpenAI-compatible chat completions API, to drive real opencode.

opencode reaches it through a custom provider (`@ai-sdk/openai-compatible` with `baseURL`).
A test hands the server the assistant turns of the agent's loop, in order (text, tool calls);
a request of the loop (one that offers tools) takes the next turn, anything else opencode asks
on the side (the session's title) gets a short answer and leaves the script alone. When nothing
is left, the model says "Done." and ends its turn.

Every request body is recorded, so a test can assert what the model received: a tool's
result, the continuation prompt, a reviewer's denial message.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_ids = itertools.count(1)


@dataclass
class Turn:
    """One assistant message: some text, or tool calls."""

    text: str = ""
    calls: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)

    @property
    def call_ids(self) -> list[str]:
        return [call_id for call_id, _, _ in self.calls]


def say(text: str) -> Turn:
    return Turn(text=text)


def tool(name: str, arguments: dict[str, Any]) -> Turn:
    return Turn(
        calls=[(f"call_{next(_ids):04d}{time.monotonic_ns() % 10**6:06d}", name, arguments)]
    )


@dataclass
class Request:
    body: dict[str, Any]
    scripted: bool = False

    @property
    def messages(self) -> list[dict[str, Any]]:
        return self.body.get("messages") or []

    def texts(self) -> list[str]:
        return [text for message in self.messages for text in _texts(message.get("content"))]

    def user_texts(self) -> list[str]:
        return [
            text
            for message in self.messages
            if message.get("role") == "user"
            for text in _texts(message.get("content"))
        ]

    def tool_result(self, call_id: str) -> str | None:
        for message in self.messages:
            if message.get("role") == "tool" and message.get("tool_call_id") == call_id:
                return "\n".join(_texts(message.get("content")))
        return None


def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    return [
        str(part.get("text", ""))
        for part in content or []
        if isinstance(part, dict) and part.get("type") == "text"
    ]


@dataclass
class ModelServer:
    script: list[Turn] = field(default_factory=list)
    requests: list[Request] = field(default_factory=list)
    # The `usage` every answer carries (prompt and completion tokens), and those of the agent
    # loop's answers (the ones that make an assistant message) handed out so far.
    prompt_tokens: int = 10
    completion_tokens: int = 5
    loop_usage: list[tuple[int, int]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Condition()
        self._httpd: ThreadingHTTPServer | None = None

    def start(self) -> ModelServer:
        server = self

        class Handler(_Handler):
            model = server

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()

    @property
    def url(self) -> str:
        assert self._httpd is not None
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def add(self, *turns: Turn) -> None:
        with self._lock:
            self.script.extend(turns)

    def answer(self, body: dict[str, Any]) -> Turn:
        with self._lock:
            request = Request(body)
            self.requests.append(request)
            if body.get("tools"):
                self.loop_usage.append((self.prompt_tokens, self.completion_tokens))
            if body.get("tools") and self.script:
                request.scripted = True
                turn = self.script.pop(0)
            elif body.get("tools"):
                turn = say("Done.")
            else:
                turn = say("Scripted session")
            self._lock.notify_all()
            return turn

    def usage(self) -> dict[str, int]:
        prompt, completion = self.prompt_tokens, self.completion_tokens
        return {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }

    def loop_requests(self) -> list[Request]:
        with self._lock:
            return [r for r in self.requests if r.body.get("tools")]

    def wait_for(self, check: Callable[[ModelServer], Any], timeout: float, what: str) -> Any:
        deadline = time.monotonic() + timeout
        with self._lock:
            while True:
                found = check(self)
                if found:
                    return found
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"Gave up after {timeout} s waiting for {what}.")
                self._lock.wait(min(left, 0.5))

    def tool_result(self, turn: Turn) -> str | None:
        for request in reversed(self.requests):
            result = request.tool_result(turn.call_ids[0])
            if result is not None:
                return result
        return None

    def log(self) -> str:
        with self._lock:
            return "\n".join(
                f"{'loop' if r.body.get('tools') else 'side'}: {json.dumps(r.messages[-1:])[:300]}"
                for r in self.requests
            )


class _Handler(BaseHTTPRequestHandler):
    model: ModelServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._json({"object": "list", "data": [{"id": "scripted", "object": "model"}]})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        turn = self.model.answer(body)
        if not body.get("stream"):
            message: dict[str, Any] = {"role": "assistant", "content": turn.text}
            if turn.calls:
                message["tool_calls"] = [
                    {
                        "id": i,
                        "type": "function",
                        "function": {"name": n, "arguments": json.dumps(a)},
                    }
                    for i, n, a in turn.calls
                ]
            self._json(
                {
                    "id": "chatcmpl-scripted",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": body.get("model", "scripted"),
                    "choices": [
                        {
                            "index": 0,
                            "message": message,
                            "finish_reason": "tool_calls" if turn.calls else "stop",
                        }
                    ],
                    "usage": self.model.usage(),
                }
            )
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        model = body.get("model", "scripted")

        def chunk(delta: dict[str, Any], finish: str | None = None, usage: bool = False) -> None:
            data: dict[str, Any] = {
                "id": "chatcmpl-scripted",
                "object": "chat.completion.chunk",
                "created": int(time.time()),
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }
            if usage:
                data["usage"] = self.model.usage()
            self.wfile.write(f"data: {json.dumps(data)}\n\n".encode())
            self.wfile.flush()

        chunk({"role": "assistant", "content": ""})
        if turn.text:
            chunk({"content": turn.text})
        for index, (call_id, name, arguments) in enumerate(turn.calls):
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": index,
                            "id": call_id,
                            "type": "function",
                            "function": {"name": name, "arguments": json.dumps(arguments)},
                        }
                    ]
                }
            )
        chunk({}, finish="tool_calls" if turn.calls else "stop", usage=True)
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()

    def _json(self, data: dict[str, Any]) -> None:
        payload = json.dumps(data).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)
