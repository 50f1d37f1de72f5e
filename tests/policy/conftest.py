from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from dashboard.models import Agent, Client, Session
from planmode.models import PermissionRequest
from planmode.permissions import Answer, permission_decide, permission_request_open

# Each agent kind's permission requests as they are stored (the integrations' own mapping:
# opencode's `bash` and `edit` arrive as Bash and Edit, Codex asks for Bash, Gemini names its
# own tools).
KINDS = {
    Client.CLAUDE_CODE: ("Bash", "Edit", "mcp__github__create_issue", "WebFetch"),
    Client.CODEX: ("Bash",),
    Client.GEMINI: ("run_shell_command", "write_file", "replace"),
    Client.OPENCODE: ("Bash", "Edit"),
}
CWD = "/home/dev/shop"


def shell(command: str) -> dict:
    return {"command": command, "description": "Run it"}


def edit(path: str, kind: str = Client.CLAUDE_CODE, project: str = "shop") -> dict:
    full = f"/home/dev/{project}/{path}"
    if kind == Client.OPENCODE:
        return {"patterns": [path], "filepath": full, "diff": "-a\n+b"}
    return {"file_path": full, "old_string": "a", "new_string": "b"}


@dataclass
class History:
    """Permission requests decided by people (or rules), made through the request path and
    moved back in time."""

    reviewer: User
    owner: User
    sessions: dict[tuple[str, str], Agent] = field(default_factory=dict)
    numbers: itertools.count = field(default_factory=itertools.count)

    def agent(self, kind: str = Client.CLAUDE_CODE, project: str = "shop", team=None) -> Agent:
        key = (kind, project)
        if key not in self.sessions:
            n = next(self.numbers)
            session = Session.objects.create(
                session_id=f"sess-{n}", owner=self.owner, client=kind,
                cwd=f"/home/dev/{project}", team=team,
            )  # fmt: skip
            self.sessions[key] = Agent.objects.create(session=session, agent_id=f"sess-{n}")
        return self.sessions[key]

    def ask(self, tool: str, tool_input: dict, **where) -> PermissionRequest:
        with transaction.atomic():
            return permission_request_open(
                agent=self.agent(**where), tool_name=tool, tool_input=tool_input, suggestions=[]
            ).request

    def decided(
        self,
        tool: str,
        tool_input: dict,
        *,
        allow: bool = True,
        days_ago: float = 1.0,
        waited: float = 60.0,
        by: User | None = None,
        **where,
    ) -> PermissionRequest:
        request = self.ask(tool, tool_input, **where)
        answer = Answer(allow=allow, message="" if allow else "Not here.")
        permission_decide(request_id=request.pk, user=by or self.reviewer, answer=answer)
        decided_at = timezone.now() - timedelta(days=days_ago)
        PermissionRequest.objects.filter(pk=request.pk).update(
            requested_at=decided_at - timedelta(seconds=waited), decided_at=decided_at
        )
        request.refresh_from_db()
        return request

    def many(self, n: int, tool: str, inputs, **options) -> list[PermissionRequest]:
        """`n` decisions, on the inputs given in turn."""
        inputs = list(inputs) if isinstance(inputs, list) else [inputs]
        return [
            self.decided(tool, inputs[i % len(inputs)], days_ago=1 + i * 0.1, **options)
            for i in range(n)
        ]


@pytest.fixture
def history(reviewer, user) -> History:
    return History(reviewer=reviewer, owner=user)
