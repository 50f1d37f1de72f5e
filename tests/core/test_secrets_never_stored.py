"""Secrets never stored: the corpus of real-format secrets, sent through every way agent text
(and a reviewer's) comes in, is found nowhere after: not in any column of any table, not in
the pages (board, inbox, plans, timeline, search results), not in the activity export, not in
the frames a board's sockets receive, not in what webhooks receive. What is not secret in a
command (the program, its options, the account, the host) stays readable there."""

from __future__ import annotations

import asyncio
import html
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.apps import apps
from django.contrib.auth.models import User
from django.test import AsyncClient, Client

from dashboard.core.writer import writer
from dashboard.live import publisher as live
from dashboard.models import Session
from dashboard.notifications.models import WebhookTarget
from planmode.models import PermissionRequest, Plan
from tests.conftest import BROWSER_ORIGIN
from tests.core.corpus import COMMAND_LINE, SECRETS
from tests.hooks.conftest import WAIT, load_fixture
from tests.notifications.receivers import Receiver
from tests.notifications.test_webhooks import EVENTS, deliver_until_settled

pytestmark = pytest.mark.django_db(transaction=True)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SESSION = "5b3f0c1e-7a7d-4f63-9c8e-2f1d9a0b6c11"
TEXTS = [secret.text for secret in SECRETS]
# Every single-line secret on one line, as a command or a message carries them.
LINE = " ; ".join(text for text in TEXTS if "\n" not in text)
# Each secret's value, line by line (a private key's lines are each a secret).
PIECES = [piece for secret in SECRETS for piece in secret.value.splitlines() if len(piece) >= 8]
PLAN = "# Deploy plan\n\nThe steps:\n\n```\n" + "\n".join(TEXTS) + "\n```\n"


def found_in(text: str) -> list[str]:
    """The secrets (or lines of one) in `text`, read as a person would (HTML unescaped)."""
    text = html.unescape(text)
    return [piece for piece in PIECES if piece in text]


def unreadable_in(text: str) -> list[str]:
    """The parts of the command-line credentials' commands that should show and do not."""
    text = html.unescape(text)
    return [part for secret in COMMAND_LINE for part in secret.kept if part not in text]


def strings_in(value: Any) -> Iterator[str]:
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            yield node
        elif isinstance(node, dict):
            stack.extend(node.keys())
            stack.extend(node.values())
        elif isinstance(node, list | tuple):
            stack.extend(node)


def database_texts() -> Iterator[tuple[str, str]]:
    """Every text in every column of every row of every table (JSON columns read whole)."""
    for model in apps.get_models():
        for row in model.objects.values():
            for column, value in row.items():
                for text in strings_in(value):
                    yield f"{model._meta.db_table}.{column}", text


def codex_fixture(name: str) -> dict:
    return json.loads((FIXTURES / "codex" / name).read_text())


def todos() -> list[dict[str, str]]:
    return [{"content": text, "status": "pending", "activeForm": text} for text in TEXTS]


@pytest.fixture
def receiver(settings):
    settings.AGENTBOARD_WEBHOOK_ALLOW_PRIVATE = True
    settings.AGENTBOARD_NOTIFY_RETRY_SECONDS = 0.05
    settings.AGENTBOARD_NOTIFY_POLL_SECONDS = 0.05
    receiver = Receiver().start()
    yield receiver
    receiver.stop()


class Agent:
    """The agents' side: hooks of Claude Code, Codex and opencode, the API and the socket."""

    def __init__(self, token: str) -> None:
        self.headers = {"Authorization": f"Bearer {token}"}
        self.http = AsyncClient()

    async def post(self, path: str, payload: dict) -> Any:
        response = await self.http.post(
            path, payload, content_type="application/json", headers=self.headers
        )
        assert response.status_code in (200, 201), response.content
        return response.json()

    async def put(self, path: str, payload: dict) -> Any:
        response = await self.http.put(
            path, payload, content_type="application/json", headers=self.headers
        )
        assert response.status_code == 200, response.content
        return response.json()

    def hold(self, path: str, payload: dict) -> asyncio.Task:
        return asyncio.create_task(self.post(path, payload))


async def pending_requests(count: int) -> list[PermissionRequest]:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WAIT
    while await PermissionRequest.objects.filter(status="pending").acount() < count:
        assert loop.time() < deadline, "the permission requests never showed up"
        await asyncio.sleep(0.02)
    return [request async for request in PermissionRequest.objects.filter(status="pending")]


async def pending_plan() -> Plan:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WAIT
    while not await Plan.objects.filter(status="pending", source="hook").aexists():
        assert loop.time() < deadline, "the plan never showed up"
        await asyncio.sleep(0.02)
    return await Plan.objects.aget(status="pending", source="hook")


async def frames_of(socket) -> list[str]:
    """What the socket received until it went quiet."""
    frames = []
    while not await socket.receive_nothing(timeout=0.5):
        frames.append(await socket.receive_from())
    return frames


def import_transcript(tmp_path: Path, user: User) -> None:
    from django.core.management import call_command

    records = [
        json.loads(line)
        for line in (FIXTURES / "claude-code/transcript_legacy_todowrite.jsonl")
        .read_text()
        .splitlines()
        if line.strip()
    ]
    for record in records:
        record["sessionId"] = "imported-session"
        message = record.get("message") or {}
        if isinstance(message.get("content"), str):
            message["content"] = LINE
        for block in message.get("content") or []:
            if isinstance(block, dict) and block.get("name") == "TodoWrite":
                block["input"]["todos"] = [
                    {"id": str(n), "content": text, "status": "pending", "priority": "high"}
                    for n, text in enumerate(TEXTS)
                ]
    folder = tmp_path / "projects" / "-home-dev-parser"
    folder.mkdir(parents=True)
    (folder / "imported-session.jsonl").write_text("\n".join(json.dumps(r) for r in records))
    call_command("import_claude", str(tmp_path), "--user", user.username, stdout=None)


async def test_no_secret_is_stored_shown_broadcast_or_sent(
    user, reviewer, token, open_socket, session_cookie, receiver, tmp_path
):
    for kind in ("json", "slack"):
        await WebhookTarget.objects.acreate(
            owner=reviewer, name=kind, kind=kind, url=receiver.url, events=EVENTS
        )
    agent = Agent(token)
    claude, codex, opencode = "/hooks/claude-code", "/hooks/codex", "/hooks/opencode"
    await agent.post(claude, load_fixture("session_start.json"))
    cookie = {"Origin": BROWSER_ORIGIN, "Cookie": f"sessionid={session_cookie}"}
    overview, accepted = await open_socket("/ws/board/", cookie)
    assert accepted
    board, accepted = await open_socket(f"/ws/board/?session={SESSION}", cookie)
    assert accepted

    # Claude Code: prompts (each names a session), todos, tasks, a terminal wait.
    for number, text in enumerate(TEXTS):
        prompt = load_fixture("user_prompt_submit.json", session_id=f"titled-{number}")
        await agent.post(claude, {**prompt, "prompt": text})
    todo_write = load_fixture("post_tool_use_todowrite.json")
    await agent.post(claude, {**todo_write, "tool_input": {"todos": todos()}})
    for number, text in enumerate(TEXTS[:5]):
        task = load_fixture("post_tool_use_task_create.json", session_id="tasks")
        task.update(tool_use_id=f"toolu_task_{number}")
        task["tool_input"] = {"subject": text, "activeForm": text}
        task["tool_response"] = {"task": {"id": str(number), "subject": text}}
        await agent.post(claude, task)
    update = load_fixture("post_tool_use_task_update.json", session_id="tasks")
    update["tool_input"] = {"taskId": "1", "subject": TEXTS[7], "activeForm": TEXTS[8]}
    await agent.post(claude, update)
    await agent.post(claude, {**load_fixture("notification_idle.json"), "message": LINE})
    # Each credential on a command line, as the Bash call that runs it.
    for number, secret in enumerate(COMMAND_LINE):
        call = load_fixture("permission_request_bash.json", hook_event_name="PreToolUse")
        call.pop("permission_suggestions", None)
        call.update(tool_use_id=f"toolu_cli_{number}", tool_input={"command": secret.text})
        await agent.post(claude, call)

    # The API and the agent socket.
    await agent.put("/api/v1/sessions/api-session/agents/api-session/todos", {"todos": todos()})
    await agent.post("/api/v1/sessions/api-session/agents/planner/plans", {"plan": PLAN})
    socket, accepted = await open_socket("/ws/agent/", {"Authorization": f"Bearer {token}"})
    assert accepted
    await socket.send_json_to(
        {"type": "todo_write", "session_id": "socket", "agent_id": "socket", "todos": todos()}
    )
    assert (await socket.receive_json_from(timeout=5))["type"] != "error"

    # Codex and opencode.
    codex_plan = codex_fixture("post_tool_use_update_plan.json")
    codex_plan["tool_input"] = {"plan": [{"step": t, "status": "pending"} for t in TEXTS]}
    await agent.post(codex, codex_plan)
    opencode_session = {
        "sessionID": "ses_secret",
        "info": {"id": "ses_secret", "directory": "/w", "title": TEXTS[2]},
    }
    await agent.post(opencode, {"type": "session.updated", "properties": opencode_session})
    items = [{"content": t, "status": "pending", "priority": "high"} for t in TEXTS]
    await agent.post(
        opencode,
        {"type": "todo.updated", "properties": {"sessionID": "ses_secret", "todos": items}},
    )

    # Gemini CLI: a prompt, a write_todos call and a shell command.
    gemini = {"session_id": "gemini-secret", "cwd": "/w"}
    await agent.post("/hooks/gemini", {**gemini, "hook_event_name": "BeforeAgent", "prompt": LINE})
    listed = {"todos": [{"description": t, "status": "pending"} for t in TEXTS]}
    for event in ("BeforeTool", "AfterTool"):
        call = {"hook_event_name": event, "tool_name": "write_todos", "tool_input": listed}
        await agent.post("/hooks/gemini", {**gemini, **call})
        shell = {"command": LINE, "description": TEXTS[6]}
        call = {"hook_event_name": event, "tool_name": "run_shell_command", "tool_input": shell}
        await agent.post("/hooks/gemini", {**gemini, **call})

    # The transcript importer.
    await sync_to_async(import_transcript)(tmp_path / "claude", user)

    # Held: permission requests of the three agents and a plan, each answered by a person
    # whose words hold secrets too.
    bash = load_fixture("permission_request_bash.json")
    bash["tool_input"] = {"command": LINE, "description": TEXTS[0], "env": {"PASSWORD": "x1"}}
    bash["permission_suggestions"][0]["rules"][0]["ruleContent"] = TEXTS[1] + ":*"
    write_input = {"file_path": "/srv/.env", "content": "\n".join(TEXTS)}
    write = {**load_fixture("permission_request_bash.json"), "tool_name": "Write"}
    write["tool_input"] = write_input
    codex_bash = codex_fixture("permission_request_bash.json")
    codex_bash["tool_input"] = {"command": LINE, "description": TEXTS[3]}
    asked = {
        "type": "permission.asked",
        "properties": {
            "id": "per_secret",
            "sessionID": "ses_secret",
            "permission": "bash",
            "patterns": [LINE],
            "always": [TEXTS[4]],
            "metadata": {"command": LINE, "description": TEXTS[5]},
            "tool": {"messageID": "msg_1", "callID": "call_1"},
        },
    }
    exit_plan = load_fixture("permission_request_exit_plan_mode.json")
    exit_plan["tool_input"] = {"plan": PLAN, "planFilePath": "/home/dev/.claude/plans/deploy.md"}
    held = {
        "bash": agent.hold(claude, bash),
        "write": agent.hold(claude, write),
        "codex": agent.hold(codex, codex_bash),
        "opencode": agent.hold(opencode, asked),
        "plan": agent.hold(claude, exit_plan),
    }
    person = AsyncClient()
    await person.aforce_login(reviewer)
    for request in await pending_requests(4):
        action = "allow" if request.tool_name == "Write" else "deny"
        answer = {"action": action, "message": LINE if action == "deny" else ""}
        response = await person.post(f"/inbox/requests/{request.pk}/decide/", answer)
        assert response.status_code in (200, 302), response.content
    plan = await pending_plan()
    response = await person.post(
        f"/plans/{plan.pk}/annotations/", {"quote": "Deploy plan", "comment": LINE}
    )
    assert response.status_code in (200, 302), response.content
    response = await person.post(f"/plans/{plan.pk}/decide/", {"action": "reject", "text": LINE})
    assert response.status_code in (200, 302), response.content
    answers = {name: await asyncio.wait_for(task, WAIT) for name, task in held.items()}

    # The agent runs what it asked for: the allow echoes its own input, not the stored one.
    decision = answers["write"]["hookSpecificOutput"]["decision"]
    assert decision == {"behavior": "allow", "updatedInput": write_input}
    assert answers["bash"]["hookSpecificOutput"]["decision"]["behavior"] == "deny"

    await deliver_until_settled()
    await live.settled()
    frames = await frames_of(overview) + await frames_of(board)

    # Nowhere: the database, the pages, the sockets, the webhooks.
    leaks = {
        where: found
        for where, text in await sync_to_async(list)(database_texts())
        if (found := found_in(text))
    }
    assert leaks == {}
    assert await PermissionRequest.objects.filter(status="denied").acount() == 3
    assert await Plan.objects.filter(status="rejected").acount() == 1

    browser = Client()
    await sync_to_async(browser.force_login)(reviewer)
    sessions = [s async for s in Session.objects.values_list("session_id", flat=True)]
    requests = [pk async for pk in PermissionRequest.objects.values_list("pk", flat=True)]
    plans = [pk async for pk in Plan.objects.values_list("pk", flat=True)]
    paths = ["/", "/inbox/", "/plans/"]
    paths += [f"/sessions/{session_id}/" for session_id in sessions]
    paths += [f"/sessions/{session_id}/timeline/" for session_id in sessions]
    paths += [f"/inbox/requests/{pk}/" for pk in requests]
    paths += [f"/plans/{pk}/" for pk in plans]
    for path in paths:
        response = await sync_to_async(browser.get)(path)
        assert response.status_code == 200, path
        assert found_in(response.content.decode()) == [], path

    assert len(frames) > 3
    for frame in frames:
        assert found_in(frame) == []

    received = receiver.wait_for(1)
    assert {got.json().get("event") or "slack" for got in received} >= {"waiting", "slack"}
    for got in received:
        for text in strings_in(got.json()):
            assert found_in(text) == []

    # Search: the index holds no secret (it is a table above), and neither do its results.
    await sync_to_async(writer.drain)()
    for words in ("curl", "mysql", "sshpass", "docker login", "deploy", "redacted"):
        response = await sync_to_async(browser.get)("/search/", {"q": words})
        assert response.status_code == 200, words
        page = response.content.decode()
        assert "search-group" in page, words
        assert found_in(page) == [], words
    for secret in COMMAND_LINE:
        response = await sync_to_async(browser.get)("/search/", {"q": secret.value})
        assert "search-group" not in response.content.decode(), secret.text

    # The activity export, every session's steps.
    exported = []
    for session_id in sessions:
        response = await agent.http.get(
            f"/api/v1/sessions/{session_id}/activity", {"limit": 500}, headers=agent.headers
        )
        if response.status_code == 200:
            exported += response.json()["steps"]
    commands = [step for step in exported if step["tool_use_id"].startswith("toolu_cli_")]
    assert len(commands) == len(COMMAND_LINE)
    for step in exported:
        for text in strings_in(step):
            assert found_in(text) == []

    # What was there shows as redacted, and the rest of a command as it was sent.
    page = (await sync_to_async(browser.get)(f"/sessions/{SESSION}/")).content.decode()
    assert "[redacted:aws-key]" in page
    assert "[redacted:private-key]" in page
    assert "[redacted:password]" in page
    assert unreadable_in(page) == []
    plan_page = (await sync_to_async(browser.get)(f"/plans/{plan.pk}/")).content.decode()
    assert unreadable_in(plan_page) == []
    assert unreadable_in(" ".join(step["summary"] for step in commands)) == []
    timeline = (await sync_to_async(browser.get)(f"/sessions/{SESSION}/timeline/")).content
    assert unreadable_in(timeline.decode()) == []
