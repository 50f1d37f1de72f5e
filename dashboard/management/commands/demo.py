"""Drive a running Agentboard with realistic agents, through the real HTTP API and agent socket."""

from __future__ import annotations

import asyncio
import json
import secrets
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field

import websockets
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from dashboard.models import AgentToken


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


MAIN = Script(
    agent_type="",
    items=[
        ("Add a dark mode toggle to the settings page", "Adding a dark mode toggle"),
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


class Command(BaseCommand):
    help = "Show the board moving: a main agent and two subagents report their todo lists."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--url", default="http://127.0.0.1:8000", help="The running server.")
        parser.add_argument(
            "--token", default="", help="Agent token; by default one is made for the first admin."
        )
        parser.add_argument(
            "--pace", type=float, default=0.8, help="Seconds between an agent's steps."
        )

    def handle(self, *args: object, url: str, token: str, pace: float, **options: object) -> None:
        if not url.startswith(("http://", "https://")):
            raise CommandError(f"--url must start with http:// or https://, not {url!r}.")
        token = token or self._local_token()
        session_id = f"demo-{secrets.token_hex(4)}"
        self.stdout.write(f"Watch it at {url.rstrip('/')}/sessions/{session_id}/")
        try:
            asyncio.run(self._run(url.rstrip("/"), token, session_id, pace))
        except (OSError, urllib.error.URLError, websockets.WebSocketException) as error:
            raise CommandError(
                f"Could not reach Agentboard at {url} ({error}); start it with "
                "'python manage.py serve' first."
            ) from None
        self.stdout.write(self.style.SUCCESS("Demo finished: all three agents are done."))

    def _local_token(self) -> str:
        admin = get_user_model().objects.filter(is_superuser=True).order_by("pk").first()
        if admin is None:
            raise CommandError("No admin account yet: start the server once, or pass --token.")
        return AgentToken.issue(owner=admin, label="demo")[1]

    async def _run(self, url: str, token: str, session_id: str, pace: float) -> None:
        main_frames = MAIN.frames()
        # The main agent writes its plan first, then the subagents start beside it.
        await asyncio.to_thread(self._put, url, token, session_id, main_frames[0])
        await asyncio.gather(
            self._main(url, token, session_id, main_frames[1:], pace),
            self._subagent(url, token, session_id, secrets.token_hex(8), EXPLORE, pace * 1.1),
            self._subagent(url, token, session_id, secrets.token_hex(8), REVIEWER, pace * 1.4),
        )

    async def _main(self, url: str, token: str, session_id: str, frames: list, pace: float) -> None:
        for todos in frames:
            await asyncio.sleep(pace)
            await asyncio.to_thread(self._put, url, token, session_id, todos)

    def _put(self, url: str, token: str, session_id: str, todos: list[dict]) -> None:
        query = urllib.parse.urlencode({"cwd": "/home/dana/shop"})
        request = urllib.request.Request(
            f"{url}/api/v1/sessions/{session_id}/agents/{session_id}/todos?{query}",
            data=json.dumps({"todos": todos}).encode(),
            method="PUT",
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            json.load(response)

    async def _subagent(
        self, url: str, token: str, session_id: str, agent_id: str, script: Script, pace: float
    ) -> None:
        ws_url = url.replace("http", "ws", 1) + "/ws/agent/"
        async with websockets.connect(
            ws_url, additional_headers={"Authorization": f"Bearer {token}"}
        ) as socket:
            for number, todos in enumerate(script.frames()):
                await asyncio.sleep(pace)
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
