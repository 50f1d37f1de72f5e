"""A scripted stand-in for the Anthropic Messages API, to drive the real Claude Code CLI.

A test hands the server a script: the assistant turns its agents' models should produce, in
order (text, tool calls). Each request of an agent loop (one that offers tools) takes the next
turn meant for it (`Turn.when`, e.g. `started_with(marker)` for a subagent's own loop);
everything else the CLI asks on the side (the session's title, auto mode's safety checks, the
summary for /compact) gets a short answer of its kind and leaves the script alone. When nothing
is left for a request, the model says "Done." and ends its turn.

Like a real model, a turn calling a tool the CLI has deferred (offered by name only, newer
versions) first loads it with ToolSearch; the turn itself follows on the next request.

A held turn (`Turn.hold()`) is a model that stopped answering: the request that takes it gets
nothing back until the test releases it.

Every request body is recorded, so a test can assert what the model received: a tool result,
an injected reminder, a continuation prompt arriving as a user turn.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from tests.held_turn import HeldTurn

Block = dict[str, Any]
# A tool input, or a function building it from the request being answered (e.g. a path the
# CLI named in its system reminder).
ToolInput = dict[str, Any] | Callable[["Request"], dict[str, Any]]
_ids = itertools.count(1)
# The longest a held turn waits for its release (a test that fails first leaves it held).
HOLD_LIMIT = 60


def _new_id(prefix: str) -> str:
    return f"{prefix}_{next(_ids):04d}{time.monotonic_ns() % 10**8:08d}"


@dataclass
class Turn(HeldTurn):
    """One assistant message: text and tool calls, streamed as the real API streams them."""

    blocks: list[Block]
    # Only a request matching this takes the turn (e.g. one from a subagent); others wait.
    when: Callable[[Request], bool] | None = None

    @property
    def tool_names(self) -> list[str]:
        return [b["name"] for b in self.blocks if b["type"] == "tool_use"]

    @property
    def stop_reason(self) -> str:
        return "tool_use" if any(b["type"] == "tool_use" for b in self.blocks) else "end_turn"

    def for_request(self, request: Request) -> Turn:
        """The turn with every tool input that is a function built for this request."""
        blocks = [
            {**b, "input": b["input"](request)} if callable(b.get("input")) else b
            for b in self.blocks
        ]
        return Turn(blocks, self.when, gate=self.gate, taken=self.taken)

    @property
    def tool_use_ids(self) -> list[str]:
        return [b["id"] for b in self.blocks if b["type"] == "tool_use"]


def say(text: str) -> Turn:
    return Turn([{"type": "text", "text": text}])


def tool(name: str, tool_input: ToolInput, *, text: str | None = None) -> Turn:
    """A turn calling one tool (optionally after a sentence of text)."""
    return tools((name, tool_input), text=text)


def tools(*calls: tuple[str, ToolInput], text: str | None = None) -> Turn:
    """A turn calling several tools at once."""
    blocks: list[Block] = [{"type": "text", "text": text}] if text else []
    for name, tool_input in calls:
        blocks.append(
            {"type": "tool_use", "id": _new_id("toolu"), "name": name, "input": tool_input}
        )
    return Turn(blocks)


@dataclass(frozen=True)
class ToolResult:
    text: str
    is_error: bool


@dataclass
class Request:
    """One request the CLI made, as received."""

    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    scripted: bool = False
    answered_with: Turn | None = None

    @property
    def system_text(self) -> str:
        system = self.body.get("system") or ""
        if isinstance(system, list):
            return "\n".join(str(part.get("text", "")) for part in system if isinstance(part, dict))
        return str(system)

    @property
    def tool_names(self) -> list[str]:
        return [t.get("name", "") for t in self.body.get("tools") or [] if isinstance(t, dict)]

    @property
    def messages(self) -> list[dict[str, Any]]:
        return self.body.get("messages") or []

    def texts(self) -> list[str]:
        """Every text in the request: the system prompt and all messages, in order."""
        return [self.system_text] + [
            text for message in self.messages for text in _texts(message.get("content"))
        ]

    def last_user_texts(self) -> list[str]:
        """The texts of the newest user turn: what the CLI added since the model last spoke."""
        last = next((m for m in reversed(self.messages) if m.get("role") == "user"), {})
        return list(_texts(last.get("content")))


def _texts(content: Any) -> Iterator[str]:
    if isinstance(content, str):
        yield content
        return
    for block in content or []:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text":
            yield str(block.get("text", ""))
        elif block.get("type") == "tool_result":
            yield from _texts(block.get("content"))


def started_with(marker: str) -> Callable[[Request], bool]:
    """Requests of the conversation whose first user message contains `marker`: the main
    agent's loop (its prompt) or a subagent's (the prompt it was given)."""

    def matches(request: Request) -> bool:
        first = next((m for m in request.messages if m.get("role") == "user"), None)
        return first is not None and any(marker in text for text in _texts(first.get("content")))

    return matches


def is_agent_loop(body: dict[str, Any]) -> bool:
    """A request of an agent's own loop (main agent or subagent) offers tools and streams.

    Side requests (the session's title, auto mode's safety checks) offer none."""
    return bool(body.get("tools")) and bool(body.get("stream")) and bool(body.get("messages"))


def is_compaction(request: Request) -> bool:
    """/compact asks for a summary with the agent's own tools and history (so it looks like
    the agent loop), its instructions last; both versions ask for a <summary> block."""
    return any("<summary>" in text for text in request.last_user_texts())


# A summary of the shape the CLI asks for: 2.1.330 asks again when the answer lacks it.
COMPACTION_SUMMARY = (
    "<analysis>The conversation was scripted.</analysis>\n"
    "<summary>The user asked for some work; the todo list tracks it.</summary>"
)


@dataclass(frozen=True)
class Usage:
    """The `usage` of the API's answer to one model request."""

    input_tokens: int = 100
    output_tokens: int = 10
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0


@dataclass
class ModelServer:
    host: str = "127.0.0.1"
    script: list[Turn] = field(default_factory=list)
    requests: list[Request] = field(default_factory=list)
    # What every model request is answered with, and each usage handed out so far.
    usage: Usage = field(default_factory=Usage)
    handed_out: list[Usage] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Condition()
        self._httpd: ThreadingHTTPServer | None = None
        self._searched: set[int] = set()

    # --- life -------------------------------------------------------------------------------

    def start(self) -> ModelServer:
        server = self

        class Handler(_Handler):
            model = server

        self._httpd = ThreadingHTTPServer((self.host, 0), Handler)
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    @property
    def url(self) -> str:
        assert self._httpd is not None
        return f"http://{self.host}:{self._httpd.server_address[1]}"

    # --- scripting ----------------------------------------------------------------------------

    def add(self, *turns: Turn) -> None:
        with self._lock:
            self.script.extend(turns)

    def next_turn(self, request: Request) -> Turn:
        with self._lock:
            turn = next((t for t in self.script if t.when is None or t.when(request)), None)
            if turn is None:
                return say("Done.")
            missing = [name for name in turn.tool_names if name not in request.tool_names]
            if missing and "ToolSearch" in request.tool_names and id(turn) not in self._searched:
                # Searched once per turn: if the tool still is not offered, the call itself
                # goes out and the CLI's own error shows what is wrong.
                self._searched.add(id(turn))
                query = "select:" + ",".join(dict.fromkeys(missing))
                return tool("ToolSearch", {"query": query, "max_results": 5})
            self.script.remove(turn)
            turn.taken.set()
            return turn

    # --- what the model received -------------------------------------------------------------

    def record(self, request: Request) -> None:
        with self._lock:
            self.requests.append(request)
            self._lock.notify_all()

    @property
    def loop_requests(self) -> list[Request]:
        with self._lock:
            return [r for r in self.requests if r.scripted]

    def tool_result(self, turn: Turn) -> ToolResult | None:
        """What the CLI sent back for the (first) tool call of one of our turns."""
        tool_use_id = turn.tool_use_ids[0]
        for request in self.loop_requests:
            for message in request.messages:
                content = message.get("content")
                if message.get("role") != "user" or not isinstance(content, list):
                    continue
                for block in content:
                    if (
                        isinstance(block, dict)
                        and block.get("type") == "tool_result"
                        and block.get("tool_use_id") == tool_use_id
                    ):
                        return ToolResult(
                            text="\n".join(_texts(block.get("content"))),
                            is_error=bool(block.get("is_error")),
                        )
        return None

    def received(self, text: str) -> list[Request]:
        """The agent-loop requests in which the model was shown `text` (anywhere)."""
        return [r for r in self.loop_requests if any(text in t for t in r.texts())]

    def wait_for(self, predicate: Callable[[ModelServer], Any], timeout: float, what: str) -> Any:
        """Wait until `predicate(self)` is truthy (checked on every new request) and return it."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while True:
                value = predicate(self)
                if value:
                    return value
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(f"The model server never saw {what} in {timeout} s.")
                self._lock.wait(min(remaining, 0.5))

    def handed_out_total(self) -> Usage:
        """The usage of every model request answered so far, added up."""
        with self._lock:
            given = list(self.handed_out)
        return Usage(
            input_tokens=sum(u.input_tokens for u in given),
            output_tokens=sum(u.output_tokens for u in given),
            cache_read_input_tokens=sum(u.cache_read_input_tokens for u in given),
            cache_creation_input_tokens=sum(u.cache_creation_input_tokens for u in given),
        )

    def log(self) -> str:
        """Every request in one line each, for assertion messages."""
        lines = []
        for index, request in enumerate(self.requests):
            body = request.body
            last = request.messages[-1] if request.messages else {}
            last_text = " | ".join(_texts(last.get("content")))[:160].replace("\n", " ")
            lines.append(
                f"{index:3} {request.method} {request.path} model={body.get('model')} "
                f"tools={len(body.get('tools') or [])} scripted={request.scripted} "
                f"last={last_text!r}"
            )
        return "\n".join(lines)


class _Handler(BaseHTTPRequestHandler):
    model: ModelServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _read_body(self) -> dict[str, Any]:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            body = {"_raw": raw.decode(errors="replace")}
        return body if isinstance(body, dict) else {"_raw": body}

    def do_GET(self) -> None:
        self._record({})
        path = urlsplit(self.path).path
        if path.startswith("/v1/models"):
            self._json(200, {"data": [], "has_more": False, "first_id": None, "last_id": None})
        else:
            self._json(
                404, {"type": "error", "error": {"type": "not_found_error", "message": "no"}}
            )

    def do_POST(self) -> None:
        body = self._read_body()
        path = urlsplit(self.path).path
        request = self._record(body)
        if path == "/v1/messages/count_tokens":
            self._json(200, {"input_tokens": 1000})
            return
        if path != "/v1/messages":
            self._json(200, {})
            return
        if not is_agent_loop(body):
            turn = say("OK")
        elif is_compaction(request):
            turn = say(COMPACTION_SUMMARY)
        else:
            request.scripted = True
            turn = self.model.next_turn(request)
        turn = turn.for_request(request)
        request.answered_with = turn
        if turn.gate is not None:
            turn.gate.wait(HOLD_LIMIT)
        with self.model._lock:
            self.model.handed_out.append(self.model.usage)
        if body.get("stream"):
            self._stream(body, turn, self.model.usage)
        else:
            self._json(200, _message(body, turn, self.model.usage, streamed=False))

    def _record(self, body: dict[str, Any]) -> Request:
        request = Request(
            method=self.command,
            path=self.path,
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
            scripted=False,
        )
        self.model.record(request)
        return request

    def _json(self, status: int, data: Any) -> None:
        raw = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.send_header("request-id", _new_id("req"))
        self.end_headers()
        self.wfile.write(raw)

    def _stream(self, body: dict[str, Any], turn: Turn, usage: Usage) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.send_header("request-id", _new_id("req"))
        self.end_headers()
        self.close_connection = True
        for event, data in _events(body, turn, usage):
            self.wfile.write(f"event: {event}\ndata: {json.dumps(data)}\n\n".encode())
            self.wfile.flush()


def _usage(usage: Usage, *, streamed: bool) -> dict[str, int]:
    """As the API says it: a stream's first event counts one output token so far, its
    `message_delta` the whole output."""
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": 1 if streamed else usage.output_tokens,
        "cache_creation_input_tokens": usage.cache_creation_input_tokens,
        "cache_read_input_tokens": usage.cache_read_input_tokens,
    }


def _message(body: dict[str, Any], turn: Turn, usage: Usage, *, streamed: bool) -> dict[str, Any]:
    return {
        "id": _new_id("msg"),
        "type": "message",
        "role": "assistant",
        "model": body.get("model") or "claude-scripted",
        "content": [] if streamed else turn.blocks,
        "stop_reason": None if streamed else turn.stop_reason,
        "stop_sequence": None,
        "usage": _usage(usage, streamed=streamed),
    }


def _events(body: dict[str, Any], turn: Turn, usage: Usage) -> Iterator[tuple[str, dict[str, Any]]]:
    message = _message(body, turn, usage, streamed=True)
    yield "message_start", {"type": "message_start", "message": message}
    for index, block in enumerate(turn.blocks):
        if block["type"] == "text":
            yield (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "text", "text": ""},
                },
            )
            yield (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "text_delta", "text": block["text"]},
                },
            )
        else:
            yield (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {
                        "type": "tool_use",
                        "id": block["id"],
                        "name": block["name"],
                        "input": {},
                    },
                },
            )
            # Split in two like the real API's partial JSON.
            raw = json.dumps(block["input"])
            middle = len(raw) // 2
            for part in (raw[:middle], raw[middle:]):
                yield (
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": "input_json_delta", "partial_json": part},
                    },
                )
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": turn.stop_reason, "stop_sequence": None},
            "usage": {"output_tokens": usage.output_tokens},
        },
    )
    yield "message_stop", {"type": "message_stop"}
