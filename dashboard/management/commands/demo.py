"""Drive a running Agentboard with realistic agents, through the real HTTP API, hook endpoint
and agent socket: about a minute of three sessions, one of which asks for a plan review."""

from __future__ import annotations

import asyncio
import json
import secrets
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import websockets
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from dashboard.models import AgentToken, hash_token

TOKEN_FILE = "demo_token"  # noqa: S105 (the name of the file the token is kept in)
SECOND_TOKEN_FILE = "demo_token_ana"  # noqa: S105 (the same, for the second person)
SECOND_PERSON = "ana"


@dataclass
class Script:
    """An agent's list and the order in which it works through it."""

    agent_type: str
    items: list[tuple[str, str]]  # (content, activeForm)
    cancel: set[int] = field(default_factory=set)

    def frames(self) -> list[list[dict]]:
        """Every complete list the agent writes: start each item, then complete (or cancel) it."""
        statuses = ["pending"] * len(self.items)
        writes = [self._write(statuses)]
        for index in range(len(self.items)):
            if index in self.cancel:
                statuses[index] = "cancelled"
                writes.append(self._write(statuses))
                continue
            statuses[index] = "in_progress"
            writes.append(self._write(statuses))
            statuses[index] = "completed"
        writes.append(self._write(statuses))
        return writes

    def _write(self, statuses: list[str]) -> list[dict]:
        return [
            {"content": content, "activeForm": active, "status": status}
            for (content, active), status in zip(self.items, statuses, strict=True)
        ]


SHOP_PROMPT = "Add a dark mode toggle to the settings page"
SHOP_MAIN = Script(
    agent_type="",
    items=[
        ("Add the toggle to the settings page", "Adding the toggle to the settings page"),
        ("Store the theme in the settings context", "Storing the theme in the settings context"),
        ("Update the header template for both themes", "Updating the header template"),
        ("Run the tests and the build", "Running the tests and the build"),
        ("Write the changelog entry", "Writing the changelog entry"),
    ],
)
EXPLORE = Script(
    agent_type="Explore",
    items=[
        ("Search for existing theme handling", "Searching for theme handling"),
        ("Read the settings context processor", "Reading the settings context processor"),
        ("Summarize findings for the main agent", "Summarizing findings"),
    ],
)
REVIEWER = Script(
    agent_type="code-reviewer",
    items=[
        ("Check colour contrast in the dark palette", "Checking colour contrast"),
        ("Audit the legacy stylesheet", "Auditing the legacy stylesheet"),
        ("Review the CSS variables for naming", "Reviewing the CSS variables"),
    ],
    cancel={1},
)
API_MAIN = Script(
    agent_type="",
    items=[
        ("Add cursor paging to the orders endpoint", "Adding cursor paging"),
        ("Index orders by created_at and id", "Indexing orders"),
        ("Document the new query parameters", "Documenting the query parameters"),
    ],
)
DOCS_MAIN = Script(
    agent_type="",
    items=[
        ("Outline the onboarding guide", "Outlining the onboarding guide"),
        ("Write the first-start section", "Writing the first-start section"),
    ],
)
PLAN_REV_1 = """# Dark mode toggle for the settings page

The settings page gets a toggle; the choice is kept per user and applied on every page.

1. Add a `theme` field to the user's settings (`light`, `dark`, `system`)
2. Put the toggle on the settings page, saved with the form
3. Pass the theme to every template through the settings context processor
4. Switch the stylesheet's colours with a `data-theme` attribute on `<html>`

- [ ] check the contrast of both palettes
- [x] read how the header template loads the stylesheet
"""
PLAN_REV_2 = PLAN_REV_1.replace(
    "2. Put the toggle on the settings page, saved with the form",
    "2. Put the toggle on the settings page, saved at once without reloading, and reachable\n"
    "   with the keyboard (`t` toggles it)",
).replace(
    "- [ ] check the contrast of both palettes",
    "- [ ] check the contrast of both palettes (WCAG AA)\n- [ ] follow the system setting "
    "until the user chooses",
)


@dataclass(frozen=True)
class Pace:
    step: float  # seconds between an agent's steps
    intro: float  # before the first agent starts, so the browser can load
    revise_after: float  # how long rev 1 waits before the agent revises it on its own
    decide_wait: float  # how long rev 2 waits for the lead


NORMAL = Pace(step=1.5, intro=4.0, revise_after=12.0, decide_wait=30.0)
FAST = Pace(step=0.05, intro=0.0, revise_after=0.3, decide_wait=0.3)


class Command(BaseCommand):
    help = (
        "Show the board moving for about a minute: three sessions of agents report their "
        "lists, one submits a plan and a revision for you to review, and all of them end."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--url", default="http://127.0.0.1:8000", help="The running server.")
        parser.add_argument(
            "--token",
            default="",
            help="Agent token; by default the demo's own (made once, kept in the data folder).",
        )
        parser.add_argument(
            "--fast", action="store_true", help="Run in seconds, without waiting for anyone."
        )

    def handle(self, *args: object, url: str, token: str, fast: bool, **options: object) -> None:
        if not url.startswith(("http://", "https://")):
            raise CommandError(f"--url must start with http:// or https://, not {url!r}.")
        url = url.rstrip("/")
        # With its own tokens the demo's api session is a second person's; with --token, every
        # session is that token's owner's.
        second = "" if token else self._second_person_token()
        token = token or self._demo_token()
        pace = FAST if fast else NORMAL
        run = secrets.token_hex(3)
        self.stdout.write(f"Open {url}/ now: three sessions start in {pace.intro:g} s.")
        self.stdout.flush()
        try:
            asyncio.run(Demo(self, url, token, run, pace, second_token=second or token).run())
        except (OSError, urllib.error.URLError, websockets.WebSocketException) as error:
            raise CommandError(
                f"Could not reach Agentboard at {url} ({error}); start it with "
                "'python manage.py serve' first."
            ) from None
        self.stdout.write(self.style.SUCCESS("Demo finished: every session has ended."))

    def _demo_token(self) -> str:
        """The demo's own token, made once and kept beside the database, so running the demo
        again does not pile up tokens."""
        path = Path(settings.DATA_DIR) / TOKEN_FILE
        if path.exists():
            raw = path.read_text().strip()
            if AgentToken.objects.active().filter(key_hash=hash_token(raw)).exists():
                self.stdout.write(f"Using the demo token {raw[:10]}… (kept in {path}).")
                return raw
        admin = get_user_model().objects.filter(is_superuser=True).order_by("pk").first()
        if admin is None:
            raise CommandError("No admin account yet: start the server once, or pass --token.")
        raw = AgentToken.issue(owner=admin, label="demo")[1]
        path.write_text(raw)
        path.chmod(0o600)
        self.stdout.write(f"Made a demo token for {admin.get_username()} (kept in {path}).")
        return raw

    def _second_person_token(self) -> str:
        """Ana, the demo's second person (she cannot log in), with a token of her own, made
        once and kept beside the database like the demo's own."""
        path = Path(settings.DATA_DIR) / SECOND_TOKEN_FILE
        if path.exists():
            raw = path.read_text().strip()
            if AgentToken.objects.active().filter(key_hash=hash_token(raw)).exists():
                return raw
        ana, created = get_user_model().objects.get_or_create(
            username=SECOND_PERSON, defaults={"first_name": "Ana", "last_name": "Lima"}
        )
        if created:
            ana.set_unusable_password()
            ana.save()
        raw = AgentToken.issue(owner=ana, label="demo")[1]
        path.write_text(raw)
        path.chmod(0o600)
        return raw


@dataclass(frozen=True)
class Where:
    """Whose a demo session is and where it runs, as the agent's side reports it."""

    token: str
    host: str
    repository: str = ""

    def headers(self) -> dict[str, str]:
        headers = {"Authorization": f"Bearer {self.token}", "X-Agentboard-Host": self.host}
        if self.repository:
            headers["X-Agentboard-Repository"] = self.repository
        return headers


class Demo:
    def __init__(
        self, command: Command, url: str, token: str, run: str, pace: Pace, second_token: str
    ) -> None:
        self.command, self.url, self.token, self.pace = command, url, token, pace
        self.shop, self.api, self.docs = (f"demo-{name}-{run}" for name in ("shop", "api", "docs"))
        # Two people on two machines in two repositories (and a folder outside one).
        self.where = {
            self.shop: Where(token, "dana-laptop", "git@github.com:acme/shop.git"),
            self.api: Where(second_token, "ana-desktop", "https://github.com/acme/api.git"),
            self.docs: Where(token, "dana-laptop"),
        }

    def say(self, text: str) -> None:
        self.command.stdout.write(text)
        self.command.stdout.flush()

    # --- transport ---------------------------------------------------------------------------

    def _call(self, method: str, path: str, body: dict, session_id: str) -> dict:
        request = urllib.request.Request(
            f"{self.url}{path}",
            data=json.dumps(body).encode(),
            method=method,
            headers={**self.where[session_id].headers(), "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.load(response)

    async def hook(self, event: str, session_id: str, cwd: str, **fields: object) -> None:
        """A Claude Code hook, as its HTTP hooks post it."""
        body = {"hook_event_name": event, "session_id": session_id, "cwd": cwd, **fields}
        await asyncio.to_thread(self._call, "POST", "/hooks/claude-code", body, session_id)

    async def put(self, session_id: str, agent_id: str, todos: list, cwd: str) -> None:
        query = urllib.parse.urlencode({"cwd": cwd})
        path = f"/api/v1/sessions/{session_id}/agents/{agent_id}/todos?{query}"
        await asyncio.to_thread(self._call, "PUT", path, {"todos": todos}, session_id)

    async def work(self, session_id: str, agent_id: str, script: Script, cwd: str) -> None:
        for todos in script.frames():
            await self.put(session_id, agent_id, todos, cwd)
            await asyncio.sleep(self.pace.step)

    async def subagent(self, session_id: str, script: Script, pace: float) -> None:
        ws_url = self.url.replace("http", "ws", 1) + "/ws/agent/"
        agent_id = secrets.token_hex(8)
        async with websockets.connect(
            ws_url, additional_headers=self.where[session_id].headers()
        ) as socket:
            for number, todos in enumerate(script.frames()):
                frame = {
                    "type": "todo_write",
                    "id": number,
                    "session_id": session_id,
                    "agent_id": agent_id,
                    "agent_type": script.agent_type,
                    "todos": todos,
                }
                await socket.send(json.dumps(frame))
                reply = json.loads(await socket.recv())
                if reply.get("type") != "ack":
                    raise CommandError(f"The server refused a write: {reply.get('error')}")
                await asyncio.sleep(pace)

    # --- the sessions ------------------------------------------------------------------------

    async def run(self) -> None:
        self.say(f"The plan review happens in {self.url}/sessions/{self.shop}/")
        await asyncio.sleep(self.pace.intro)
        await asyncio.gather(self.shop_session(), self.api_session(), self.docs_session())

    async def docs_session(self) -> None:
        cwd = "/home/dana/docs"
        await self.hook("SessionStart", self.docs, cwd, source="startup")
        await self.hook("UserPromptSubmit", self.docs, cwd, prompt="Start the onboarding guide")
        await self.work(self.docs, self.docs, DOCS_MAIN, cwd)
        await self.hook("SessionEnd", self.docs, cwd, reason="exit")
        self.say("docs: done and ended.")

    async def api_session(self) -> None:
        cwd = "/home/ana/api"
        await self.hook("SessionStart", self.api, cwd, source="startup", git_branch="orders-paging")
        await self.hook("UserPromptSubmit", self.api, cwd, prompt="Paginate the orders endpoint")
        await asyncio.gather(
            self.work(self.api, self.api, API_MAIN, cwd),
            self.subagent(self.api, EXPLORE, self.pace.step * 1.3),
        )
        await self.hook("SessionEnd", self.api, cwd, reason="exit")
        self.say("api: done and ended.")

    async def shop_session(self) -> None:
        cwd = "/home/dana/shop"
        session = self.shop
        await self.hook(
            "SessionStart", session, cwd, source="startup", git_branch="feature/dark-mode"
        )
        await self.hook("UserPromptSubmit", session, cwd, prompt=SHOP_PROMPT)
        await self.subagent(session, EXPLORE, self.pace.step)
        approved = await self.plan_review(session, cwd)
        # Approved on the board, or answered in the terminal: the agent goes on either way.
        mode = "acceptEdits" if approved else "default"
        await self.hook(
            "PostToolUse",
            session,
            cwd,
            permission_mode=mode,
            tool_name="Read",
            tool_use_id=f"toolu_{secrets.token_hex(6)}",
            tool_input={},
            tool_response={},
        )
        await asyncio.gather(
            self.work(session, session, SHOP_MAIN, cwd),
            self.subagent(session, REVIEWER, self.pace.step * 1.4),
        )
        await self.hook("SessionEnd", session, cwd, reason="exit")
        self.say("shop: done and ended.")

    async def plan_review(self, session: str, cwd: str) -> bool:
        """Rev 1 waits for the lead a while; rejected (or not decided in time) the agent sends
        rev 2, which waits longer. Returns whether a plan was approved."""
        ws_url = self.url.replace("http", "ws", 1) + "/ws/agent/"
        async with websockets.connect(
            ws_url, additional_headers=self.where[session].headers()
        ) as socket:
            first = await self.submit(socket, session, PLAN_REV_1, "rev1")
            self.say(f"shop: a plan waits for you at {self.url}/plans/{first['id']}/")
            decided = await self.decision(socket, first["id"], self.pace.revise_after)
            if decided and decided["status"] == "approved":
                return True
            if decided and decided["status"] == "rejected":
                self.say(f"shop: you rejected rev 1 ({decided.get('feedback')}); sending rev 2.")
            else:
                self.say("shop: nobody decided on rev 1 yet; the agent sends a revision.")
            second = await self.submit(socket, session, PLAN_REV_2, "rev2")
            self.say(f"shop: rev 2 waits for you at {self.url}/plans/{second['id']}/")
            decided = await self.decision(socket, second["id"], self.pace.decide_wait)
            if decided is None:
                # Acknowledged before the agent goes on, or its next step would count as the
                # terminal's answer instead.
                await self.send_and_wait(
                    socket, {"type": "expire_plan", "plan_id": second["id"], "id": "expire"}
                )
                self.say("shop: nobody decided on rev 2; the developer answers in the terminal.")
                return False
            return decided["status"] == "approved"

    async def submit(self, socket: object, session: str, plan: str, frame_id: str) -> dict:
        frame = {
            "type": "exit_plan_mode",
            "id": frame_id,
            "session_id": session,
            "agent_id": session,
            "plan": plan,
            "plan_file_path": "/home/dana/.claude/plans/dark-mode.md",
        }
        return await self.send_and_wait(socket, frame)

    async def send_and_wait(self, socket: object, frame: dict) -> dict:
        """Send a frame and return the result the server acknowledged it with."""
        await socket.send(json.dumps(frame))
        while True:
            reply = json.loads(await socket.recv())
            if reply.get("type") == "ack" and reply.get("id") == frame["id"]:
                return reply["result"]
            if reply.get("type") == "error":
                raise CommandError(f"The server refused the {frame['type']}: {reply.get('error')}")

    async def decision(self, socket: object, plan_id: int, wait: float) -> dict | None:
        """The plan's state once decided, or None if nobody decided within `wait` seconds."""
        try:
            async with asyncio.timeout(wait):
                while True:
                    frame = json.loads(await socket.recv())
                    plan = frame.get("plan") or {}
                    if frame.get("type") == "plan_decided" and plan.get("id") == plan_id:
                        return plan
        except TimeoutError:
            return None
