"""A scripted stand-in for the OpenAI Responses API, to drive the real Codex CLI.

A test hands the server a script: the assistant turns the model should produce, in order
(a message, function calls). Each request Codex makes for its agent loop takes the next turn;
when nothing is left the model says "Done." and ends its turn. Requests Codex makes on the side
(the interactive CLI asks for a title for the thread, offering no tools) get a short answer and
leave the script alone.

A held turn (`Turn.hold()`) is a model that stopped answering: the request that takes it gets
nothing back until the test releases it. A turn whose end is held (`Turn.hold_end()`) sends its
items and keeps its end, `response.completed` with the response's usage, until the test releases
it: Codex starts a function call as soon as its item is done, so the call runs before Codex
knows (and reports) what the response used.

Every request body is recorded, so a test can assert what the model received: a tool's output
(the reviewer's denial), or a continuation prompt arriving as a user message.
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

from tests.held_turn import HeldTurn

Item = dict[str, Any]
Arguments = dict[str, Any] | Callable[["Request"], dict[str, Any]]
_ids = itertools.count(1)
# The longest a held turn waits for its release (a test that fails first leaves it held).
HOLD_LIMIT = 60


def _new_id(prefix: str) -> str:
    return f"{prefix}_{next(_ids):04d}{time.monotonic_ns() % 10**8:08d}"


@dataclass
class Turn(HeldTurn):
    """One model response: output items (a message and/or function calls)."""

    items: list[Item]
    # Set: the response's end waits until the test releases it (`hold_end`).
    end_gate: threading.Event | None = None

    def hold_end(self) -> Turn:
        self.end_gate = threading.Event()
        return self

    def release_end(self) -> None:
        assert self.end_gate is not None, "Only a turn whose end is held can be released."
        self.end_gate.set()

    @property
    def call_ids(self) -> list[str]:
        return [item["call_id"] for item in self.items if item["type"] == "function_call"]

    def for_request(self, request: Request) -> Turn:
        """The turn with every argument that is a function built for this request."""
        items = []
        for item in self.items:
            if callable(item.get("arguments")):
                item = {**item, "arguments": json.dumps(item["arguments"](request))}
            items.append(item)
        return Turn(items, end_gate=self.end_gate, gate=self.gate, taken=self.taken)


def say(text: str) -> Turn:
    return Turn([_message(text)])


def call(
    name: str, arguments: Arguments, *, text: str | None = None, namespace: str | None = None
) -> Turn:
    """A turn calling one function tool (optionally after a sentence of text). `arguments` may
    be a function of the request being answered (e.g. an id an earlier call returned);
    `namespace` names the group of a namespaced tool (`multi_agent_v1` for subagents)."""
    items = [_message(text)] if text else []
    item = {
        "type": "function_call",
        "id": _new_id("fc"),
        "call_id": _new_id("call"),
        "name": name,
        "arguments": arguments if callable(arguments) else json.dumps(arguments),
        "status": "completed",
    }
    if namespace:
        item["namespace"] = namespace
    items.append(item)
    return Turn(items)


def spawn_agent(message: str) -> Turn:
    """A turn starting a subagent with `message` as its task (its requests start with it)."""
    return call("spawn_agent", {"message": message}, namespace="multi_agent_v1")


def wait_agent(spawned: Turn) -> Turn:
    """A turn waiting for the subagent that `spawned` started (its id is in that call's output)."""

    def arguments(request: Request) -> dict[str, Any]:
        started = json.loads(request.outputs()[spawned.call_ids[0]])
        return {"targets": [started["agent_id"]], "timeout_ms": 60_000}

    return call("wait_agent", arguments, namespace="multi_agent_v1")


def plan(*steps: tuple[str, str], explanation: str | None = None) -> Turn:
    """A turn calling Codex's `update_plan` with (step, status) pairs."""
    arguments: dict[str, Any] = {"plan": [{"step": s, "status": st} for s, st in steps]}
    if explanation:
        arguments["explanation"] = explanation
    return call("update_plan", arguments)


def shell(command: str, *, justification: str | None = None, escalate: bool = False) -> Turn:
    """A turn running a shell command through Codex's `exec_command` tool; `escalate` asks to
    run it outside the sandbox, which is what makes Codex ask for approval."""
    arguments: dict[str, Any] = {"cmd": command}
    if escalate:
        arguments["sandbox_permissions"] = "require_escalated"
        arguments["justification"] = justification or "The test needs it."
    return call("exec_command", arguments)


def _message(text: str) -> Item:
    return {
        "type": "message",
        "id": _new_id("msg"),
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


@dataclass
class Request:
    """One request Codex made, as received."""

    path: str
    body: dict[str, Any]
    answered_with: Turn | None = None

    @property
    def is_agent_loop(self) -> bool:
        """The agent's own requests offer tools; side requests (a title) offer none."""
        return bool(self.body.get("tools"))

    @property
    def input(self) -> list[Item]:
        value = self.body.get("input")
        return value if isinstance(value, list) else []

    @property
    def tool_names(self) -> list[str]:
        names = []
        for tool in self.body.get("tools") or []:
            if isinstance(tool, dict):
                names.append(str(tool.get("name") or tool.get("type") or ""))
        return names

    def user_texts(self) -> list[str]:
        return [
            text
            for item in self.input
            if item.get("type") == "message" and item.get("role") == "user"
            for text in _texts(item.get("content"))
        ]

    def outputs(self) -> dict[str, str]:
        """Function call outputs by call id."""
        found = {}
        for item in self.input:
            if item.get("type") == "function_call_output":
                output = item.get("output")
                if not isinstance(output, str):
                    output = "\n".join(_texts(output))
                found[str(item.get("call_id"))] = output
        return found

    def texts(self) -> list[str]:
        """Every text in the input: messages of any role and tool outputs."""
        found = []
        for item in self.input:
            found += list(_texts(item.get("content")))
            if isinstance(item.get("output"), str):
                found.append(item["output"])
        return found


def _texts(content: Any) -> Iterator[str]:
    if isinstance(content, str):
        yield content
    elif isinstance(content, list):
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                yield part["text"]


@dataclass
class ModelServer:
    turns: list[Turn] = field(default_factory=list)
    requests: list[Request] = field(default_factory=list)
    # A subagent's own turns, by the task it was given (its requests start with it).
    subagent_turns: dict[str, list[Turn]] = field(default_factory=dict)
    # The `usage` of every response (input tokens, the cached part of them, output tokens).
    input_tokens: int = 10
    cached_tokens: int = 0
    output_tokens: int = 5

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    def start(self) -> ModelServer:
        model = self

        class Handler(_Handler):
            server_model = model

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    @property
    def url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def add(self, *turns: Turn) -> None:
        with self._lock:
            self.turns.extend(turns)

    def add_subagent(self, task: str, *turns: Turn) -> None:
        """Turns for the subagent started with `task`, apart from the main agent's."""
        with self._lock:
            self.subagent_turns.setdefault(task, []).extend(turns)

    def answer(self, request: Request) -> Turn:
        with self._lock:
            self.requests.append(request)
            if not request.is_agent_loop:
                # A side request (the interactive CLI's title for the thread): no script.
                request.answered_with = say("Scripted task")
                return request.answered_with
            said = request.user_texts()
            queue = next(
                (
                    turns
                    for task, turns in self.subagent_turns.items()
                    if any(task in text for text in said)
                ),
                self.turns,
            )
            if queue:
                turn = queue.pop(0)
                turn.taken.set()
                turn = turn.for_request(request)
            else:
                turn = say("Done.")
            request.answered_with = turn
            return turn

    def output_of(self, turn: Turn) -> str | None:
        """What the model was told the turn's (first) function call returned."""
        call_id = turn.call_ids[0]
        with self._lock:
            for request in self.requests:
                outputs = request.outputs()
                if call_id in outputs:
                    return outputs[call_id]
        return None

    def received(self, text: str) -> list[Request]:
        with self._lock:
            return [r for r in self.requests if any(text in t for t in r.user_texts())]

    def log(self) -> str:
        with self._lock:
            return "\n".join(
                f"{r.path} users={r.user_texts()[-1:]!r} outputs={r.outputs()!r}"
                for r in self.requests
            )


class _Handler(BaseHTTPRequestHandler):
    server_model: ModelServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            self._json(200, {"object": "list", "data": [], "models": []})
        else:
            self._json(404, {"error": {"message": "not found"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            body = {}
        if not self.path.rstrip("/").endswith("/responses"):
            self._json(404, {"error": {"message": f"no {self.path} here"}})
            return
        turn = self.server_model.answer(Request(self.path, body))
        if turn.gate is not None:
            turn.gate.wait(HOLD_LIMIT)
        self._stream(body, turn, self.server_model)

    def _json(self, status: int, data: Any) -> None:
        payload = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _stream(self, body: dict[str, Any], turn: Turn, model: ModelServer) -> None:
        chunks = [
            f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()
            for name, data in _events(body, turn, model)
        ]
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(sum(map(len, chunks))))
        self.end_headers()
        if turn.end_gate is not None:
            self.wfile.write(b"".join(chunks[:-1]))
            self.wfile.flush()
            turn.end_gate.wait(HOLD_LIMIT)
            chunks = chunks[-1:]
        self.wfile.write(b"".join(chunks))


def _events(
    body: dict[str, Any], turn: Turn, model: ModelServer
) -> Iterator[tuple[str, dict[str, Any]]]:
    response_id = _new_id("resp")
    response = {
        "id": response_id,
        "object": "response",
        "created_at": int(time.time()),
        "status": "in_progress",
        "model": body.get("model", "scripted"),
        "output": [],
    }
    yield "response.created", {"type": "response.created", "response": response}
    for index, item in enumerate(turn.items):
        yield (
            "response.output_item.added",
            {
                "type": "response.output_item.added",
                "output_index": index,
                "item": item,
            },
        )
        yield (
            "response.output_item.done",
            {
                "type": "response.output_item.done",
                "output_index": index,
                "item": item,
            },
        )
    done = {
        **response,
        "status": "completed",
        "output": turn.items,
        "usage": {
            "input_tokens": model.input_tokens,
            "input_tokens_details": {"cached_tokens": model.cached_tokens},
            "output_tokens": model.output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": model.input_tokens + model.output_tokens,
        },
    }
    yield "response.completed", {"type": "response.completed", "response": done}
