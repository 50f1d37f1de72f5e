"""A realistic board for browser tests and screenshots: sessions of several projects, each with
a main agent and subagents, titled by their first prompt, some on a branch, some ended, and
plans waiting, rejected with feedback and revised. Everything goes through the real HTTP API
and hook endpoint, as agents would send it."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from tests.costs.conftest import usage_metrics
from tests.liveserver import LiveServer

PROJECTS = ["shop", "api", "docs", "admin-ui", "billing"]
OWNERS_CWD = "/home/dana"
PROMPTS = [
    "Add a dark mode toggle to the settings page",
    "Paginate the orders endpoint",
    "Fix the flaky login test",
    "Write the onboarding guide",
    "Move invoices to the new PDF renderer",
    "Add CSV export to the admin tables",
    "Upgrade Django and fix the deprecations",
    "Speed up the product search",
    "Translate the checkout emails",
]
BRANCHES = ["main", "feature/dark-mode", "fix/login-flake", "chore/django-5.2", ""]
SUBAGENTS = ["Explore", "Plan", "code-reviewer", ""]
TASKS = [
    ("Read the current implementation", "Reading the current implementation"),
    ("Write the failing test first", "Writing the failing test"),
    ("Change the view and the template", "Changing the view and the template"),
    ("Run the tests and the linters", "Running the tests and the linters"),
    ("Update the changelog", "Updating the changelog"),
]
PLAN_REV_1 = """# Cursor pagination for the orders API

The orders list loads every order at once; large shops time out.

1. Offset paging with `?page=N` and `?per_page=` (default 50)
2. Keep the response shape, add `next` and `previous` links
3. Index `orders(created_at, id)`

- [ ] limit `per_page` to 100
- [x] read the current handler in `orders/views.py`

```python
def paginate(query, page, per_page=50):
    return query[page * per_page : (page + 1) * per_page]
```
"""
PLAN_REV_2 = PLAN_REV_1.replace(
    "1. Offset paging with `?page=N` and `?per_page=` (default 50)",
    "1. Cursor paging with `?after=<id>` and `?limit=` (default 50): offsets skip rows when\n"
    "   orders arrive while someone pages",
).replace(
    "```python\ndef paginate(query, page, per_page=50):\n"
    "    return query[page * per_page : (page + 1) * per_page]\n```",
    "```python\ndef paginate(query, after=None, limit=50):\n"
    "    if after is not None:\n        query = query.filter(id__gt=after)\n"
    '    return query.order_by("id")[:limit]\n```',
)
PLAN_DOCS = """# Onboarding guide outline

1. Install and first start (`python manage.py serve`)
2. Connecting Claude Code with `agentboard install-hooks`
3. Reviewing a plan: approve, reject, annotate
"""


@dataclass
class Seeded:
    session_ids: list[str] = field(default_factory=list)
    waiting_plans: list[int] = field(default_factory=list)
    revised_plan: int = 0
    first_plan: int = 0
    long_names: LongNames | None = None


def _call(server: LiveServer, method: str, path: str, body: dict) -> dict:
    request = urllib.request.Request(
        f"{server.url}{path}",
        data=json.dumps(body).encode(),
        method=method,
        headers={"Authorization": f"Bearer {server.token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.load(response)


def hook(server: LiveServer, event: str, session_id: str, **fields: object) -> dict:
    payload = {
        "hook_event_name": event,
        "session_id": session_id,
        "cwd": fields.pop("cwd", ""),
        "permission_mode": fields.pop("permission_mode", "default"),
        **fields,
    }
    return _call(server, "POST", "/hooks/claude-code", payload)


def put_todos(server: LiveServer, session_id: str, agent_id: str, todos: list, **query) -> None:
    path = f"/api/v1/sessions/{session_id}/agents/{agent_id}/todos"
    if query:
        path += "?" + "&".join(f"{key}={value}" for key, value in query.items())
    _call(server, "PUT", path, {"todos": todos})


def submit_plan(server: LiveServer, session_id: str, plan: str) -> int:
    path = f"/api/v1/sessions/{session_id}/agents/{session_id}/plans"
    return _call(server, "POST", path, {"plan": plan})["id"]


def _todos(done: int, total: int = 5) -> list[dict]:
    todos = []
    for index, (content, active) in enumerate(TASKS[:total]):
        status = "completed" if index < done else "in_progress" if index == done else "pending"
        todos.append({"content": content, "activeForm": active, "status": status})
    return todos


def seed(server: LiveServer, *, sessions: int = 45, agents: int = 5) -> Seeded:
    seeded = Seeded()
    for number in range(sessions):
        project = PROJECTS[number % len(PROJECTS)]
        session_id = str(uuid.UUID(hashlib.sha256(f"session {number}".encode()).hexdigest()[:32]))
        cwd = f"{OWNERS_CWD}/{project}"
        branch = BRANCHES[number % len(BRANCHES)]
        hook(
            server,
            "SessionStart",
            session_id,
            cwd=cwd,
            source="startup",
            **({"git_branch": branch} if branch else {}),
        )
        hook(server, "UserPromptSubmit", session_id, cwd=cwd, prompt=PROMPTS[number % len(PROMPTS)])
        put_todos(server, session_id, session_id, _todos(number % 6), cwd=cwd)
        for index, agent_type in enumerate(SUBAGENTS[: agents - 1]):
            agent_id = hashlib.sha256(f"agent {number} {index}".encode()).hexdigest()[:16]
            query = {"agent_type": agent_type} if agent_type else {}
            put_todos(server, session_id, agent_id, _todos((number + index) % 4, 3), **query)
        if number % 4 == 3 and number < sessions - 4:
            hook(server, "SessionEnd", session_id, cwd=cwd, reason="exit")
        seeded.session_ids.append(session_id)
    return seeded


def seed_plans(server: LiveServer, seeded: Seeded) -> None:
    """A plan waiting in the oldest session, and a first revision (to be rejected by the
    caller) followed by a second one in another."""
    oldest = seeded.session_ids[-2]
    seeded.waiting_plans.append(submit_plan(server, oldest, PLAN_DOCS))
    revised = seeded.session_ids[-3]
    seeded.first_plan = submit_plan(server, revised, PLAN_REV_1)


def _post_as_reviewer(page, server: LiveServer, path: str, form: dict[str, str]) -> int:
    """A form post from the logged-in browser `page`, with its CSRF token."""
    token = next(c["value"] for c in page.context.cookies() if c["name"] == "csrftoken")
    response = page.request.post(
        f"{server.url}{path}",
        form=form,
        headers={"X-CSRFToken": token, "Referer": f"{server.url}/"},
        max_redirects=0,
    )
    return response.status


def annotate(page, server: LiveServer, plan_id: int, **fields: str) -> int:
    return _post_as_reviewer(page, server, f"/plans/{plan_id}/annotations/", fields)


def decide(page, server: LiveServer, plan_id: int, action: str, text: str = "") -> int:
    return _post_as_reviewer(
        page, server, f"/plans/{plan_id}/decide/", {"action": action, "text": text}
    )


def seed_revision(page, server: LiveServer, seeded: Seeded) -> None:
    """The lead comments on rev 1 and rejects it; the agent sends rev 2, which waits."""
    first = seeded.first_plan
    annotate(
        page,
        server,
        first,
        quote="Offset paging with ?page=N and ?per_page= (default 50)",
        comment="Offsets skip rows when orders arrive while someone pages.",
    )
    annotate(
        page,
        server,
        first,
        quote="limit per_page to 100",
        kind="replace",
        replacement="limit it to 200",
        comment="Exports page through everything.",
    )
    status = decide(page, server, first, "reject", "Use cursor paging; keep the rest.")
    assert status == 302, f"The seeded rejection was refused (HTTP {status})."
    session_id = seeded.session_ids[-3]
    seeded.revised_plan = submit_plan(server, session_id, PLAN_REV_2)
    seeded.waiting_plans.append(seeded.revised_plan)
    annotate(
        page,
        server,
        seeded.revised_plan,
        quote="Index orders(created_at, id)",
        comment="Is there a migration for this?",
    )


# --- long names: what must stay readable and never push a page sideways --------------------

LONG_OWNER = "margarethe.vandenberg"
LONG_BRANCH = "feature/PROJ-4711-move-invoice-rendering-to-the-new-pdf-service"
UNBROKEN = "Supercalifragilisticexpialidocious" * 3
LONG_URL = (
    "https://docs.example.com/orders/pagination/cursor-based-paging-without-offsets"
    "?utm_source=agentboard&utm_medium=plan&utm_campaign=a-very-long-campaign-name"
)
LONG_COMMAND = (
    "pytest tests/api/test_orders.py::TestCursorPagination::"
    "test_cursor_paging_skips_nothing_when_orders_arrive_while_someone_pages --maxfail=1 -q"
)
PLAN_LONG = f"""# Move the invoices to the new PDF renderer ({UNBROKEN})

See {LONG_URL} before starting.

1. Run `{LONG_COMMAND}`
2. Keep `{UNBROKEN}` working

```
{LONG_COMMAND} && {LONG_COMMAND}
```
"""


@dataclass
class LongNames:
    sessions: list[str] = field(default_factory=list)
    plan: int = 0


def add_owner(server: LiveServer, username: str, full_name: str = "") -> str:
    """Another person with an agent token (as `create_token` makes one); returns the token."""
    first, _, last = full_name.partition(" ")
    script = (
        "from django.contrib.auth import get_user_model\n"
        "from dashboard.models import AgentToken\n"
        f"user = get_user_model().objects.create_user({username!r}, password='not-used-here',"
        f" first_name={first!r}, last_name={last!r})\n"
        "print(AgentToken.issue(owner=user, label='laptop')[1])\n"
    )
    done = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", script],
        cwd=Path(__file__).resolve().parents[2],
        env=server.env,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip().splitlines()[-1]


def seed_long_names(server: LiveServer) -> LongNames:
    """Sessions with long project, owner and branch names, a task with a long unbroken word,
    command and address, and a plan full of them: the newest sessions of the overview."""
    seeded = LongNames()
    owners = {"lead": server.token, LONG_OWNER: add_owner(server, LONG_OWNER)}
    sessions = [
        ("analytics-pipeline", LONG_OWNER, LONG_BRANCH, "Backfill the revenue dashboards"),
        ("billing-service-v2", "lead", "fix/rounding-of-partial-refunds", "Fix refund rounding"),
        ("customer-data-platform-ingestion-workers", LONG_OWNER, "main", UNBROKEN),
    ]
    for number, (project, owner, branch, prompt) in enumerate(sessions):
        session_id = str(uuid.UUID(hashlib.sha256(f"long {number}".encode()).hexdigest()[:32]))
        cwd = f"/home/{owner}/src/{project}"
        token = owners[owner]
        _call_as(
            token,
            server,
            "/hooks/claude-code",
            hook_body("SessionStart", session_id, cwd, git_branch=branch, source="startup"),
        )
        _call_as(
            token,
            server,
            "/hooks/claude-code",
            hook_body("UserPromptSubmit", session_id, cwd, prompt=prompt),
        )
        path = f"/api/v1/sessions/{session_id}/agents/{session_id}/todos?cwd={cwd}"
        for todos in _long_todos(done=0), _long_todos(done=2):
            # The second write completes two at once: a discipline flag on the card.
            _call_as(token, server, path, {"todos": todos}, method="PUT")
        seeded.sessions.append(session_id)
    seeded.plan = submit_plan(server, seeded.sessions[1], PLAN_LONG)
    return seeded


def _long_todos(*, done: int) -> list[dict]:
    todos = [
        {"content": f"Read {LONG_URL}", "activeForm": "Reading the docs"},
        {"content": "Check the invoice totals", "activeForm": "Checking the totals"},
        {"content": f"Run {LONG_COMMAND}", "activeForm": f"Running `{LONG_COMMAND}`"},
        {"content": f"Rename {UNBROKEN}", "activeForm": "Renaming"},
    ]
    for index, todo in enumerate(todos):
        todo["status"] = (
            "completed" if index < done else "in_progress" if index == done else "pending"
        )
    return todos


def hook_body(event: str, session_id: str, cwd: str, **fields: object) -> dict:
    return {
        "hook_event_name": event,
        "session_id": session_id,
        "cwd": cwd,
        "permission_mode": "acceptEdits",
        **fields,
    }


def _call_as(token: str, server: LiveServer, path: str, body: dict, method: str = "POST") -> dict:
    request = urllib.request.Request(
        f"{server.url}{path}",
        data=json.dumps(body).encode(),
        method=method,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.load(response)


SUBAGENT = "a7c41e09b2d3"


def seed_steps(server: LiveServer, session_id: str, *, running: bool = True) -> None:
    """A session's recent work: the main agent's tests pass, its build fails twice, a
    subagent it started reads and greps, and one command still runs."""

    def call(tool_use_id: str, tool: str, tool_input: dict, outcome: str = "ok", **extra) -> None:
        hook(server, "PreToolUse", session_id, tool_use_id=tool_use_id, tool_name=tool,
             tool_input=tool_input, **extra)  # fmt: skip
        if outcome == "ok":
            hook(server, "PostToolUse", session_id, tool_use_id=tool_use_id, tool_name=tool,
                 tool_input=tool_input, tool_response={}, **extra)  # fmt: skip
        elif outcome == "failed":
            hook(server, "PostToolUseFailure", session_id, tool_use_id=tool_use_id,
                 tool_name=tool, tool_input=tool_input, error="make: *** [build] Error 2",
                 **extra)  # fmt: skip

    call("s-test", "Bash", {"command": "pytest tests/api -q"})
    call("s-build-1", "Bash", {"command": "make build"}, "failed")
    hook(server, "SubagentStart", session_id, agent_id=SUBAGENT, agent_type="Explore")
    sub = {"agent_id": SUBAGENT, "agent_type": "Explore"}
    call("s-read", "Read", {"file_path": "orders/views.py"}, **sub)
    call("s-grep", "Grep", {"pattern": "def paginate", "path": "orders"}, **sub)
    call("s-edit", "Edit", {"file_path": "orders/views.py", "old_string": "a\n",
                            "new_string": "b\nc\n"})  # fmt: skip
    call("s-build-2", "Bash", {"command": "make build"}, "failed")
    if running:
        call("s-serve", "Bash", {"command": "npm run dev"}, "running")


def hook_from(
    server: LiveServer, token: str, body: dict, *, repository: str = "", host: str = ""
) -> dict:
    """A hook sent as `agentboard hook` sends it from a machine: with its repository and host."""
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    if repository:
        headers["X-Agentboard-Repository"] = repository
    if host:
        headers["X-Agentboard-Host"] = host
    request = urllib.request.Request(
        f"{server.url}/hooks/claude-code", data=json.dumps(body).encode(), method="POST",
        headers=headers,
    )  # fmt: skip
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.load(response)


def seed_usage(server: LiveServer, session_ids: list[str]) -> None:
    """What the sessions cost so far, exported as Claude Code exports it (OTLP protobuf):
    from under a cent to a few dollars, so every row shows a cost of its own."""
    for number, session_id in enumerate(session_ids):
        scale = 10**number
        message = usage_metrics(
            session_id=session_id,
            tokens={"input": 40 * scale, "output": 3 * scale, "cacheRead": 90 * scale},
            cost=0.0004 * scale,
        )
        request = urllib.request.Request(
            f"{server.url}/v1/metrics",
            data=message.SerializeToString(),
            method="POST",
            headers={
                "Authorization": f"Bearer {server.token}",
                "Content-Type": "application/x-protobuf",
            },
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            response.read()
