"""Allow once across real `serve` processes of one deployment (PostgreSQL + Redis when
DATABASE_URL and REDIS_URL are set, the shared SQLite file otherwise): the refusal is held by
one process, and the retried call's PreToolUse may reach any of them."""

from __future__ import annotations

import json
import threading
import time
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.hooks.conftest import load_fixture
from tests.liveserver import LiveServer

pytestmark = pytest.mark.timeout(300)

REFUSED = load_fixture(
    "permission_denied.json",
    tool_input={"command": "./deploy.sh --prod", "description": "Deploy to production"},
)


def pre_tool_use(tool_use_id: str, **changes) -> dict:
    call = {key: value for key, value in REFUSED.items() if key != "reason"}
    return call | {"hook_event_name": "PreToolUse", "tool_use_id": tool_use_id, **changes}


def send_hook(server: LiveServer, payload: dict) -> dict:
    request = urllib.request.Request(
        f"{server.url}/hooks/claude-code",
        data=json.dumps(payload).encode(),
        headers={"Authorization": f"Bearer {server.token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())


def post_form(server: LiveServer, path: str, form: dict[str, str]) -> None:
    """A logged-in reviewer's form on `server`."""
    browser = server.log_in()
    request = urllib.request.Request(
        f"{server.url}{path}",
        data=urllib.parse.urlencode(form).encode(),
        headers={"Cookie": browser["cookie"], "X-CSRFToken": browser["csrf"]},
    )
    urllib.request.urlopen(request, timeout=10).close()


def decision(answer: dict) -> str | None:
    return answer.get("hookSpecificOutput", {}).get("permissionDecision")


def refused_and_allowed(holding: LiveServer) -> None:
    """Auto mode refuses the call; the refusal, held by `holding`, is allowed once there."""
    answers: list[dict] = []
    hook = threading.Thread(target=lambda: answers.append(send_hook(holding, REFUSED)))
    hook.start()
    found: list[tuple] = []
    deadline = time.monotonic() + 20
    while not found and time.monotonic() < deadline:
        time.sleep(0.05)
        found = holding.query(
            "SELECT id FROM planmode_permissionrequest WHERE status = 'pending' "
            "AND refused_by_auto_mode"
        )
    assert found, holding.log()

    post_form(holding, f"/inbox/requests/{found[0][0]}/decide/", {"action": "allow"})
    hook.join(timeout=30)
    assert answers == [{"hookSpecificOutput": {"hookEventName": "PermissionDenied", "retry": True}}]


def test_the_retry_is_let_through_once_by_whichever_process_it_reaches(server_factory):
    holding = server_factory()
    other = server_factory(shared_with=holding)
    post_form(holding, "/settings/inbox/", {"auto_mode_refusals": "on"})
    # An earlier call of the session reaches the other process: it knows of no refusal then.
    assert send_hook(other, pre_tool_use("toolu_earlier", tool_input={"command": "ls"})) == {}

    refused_and_allowed(holding)

    assert decision(send_hook(other, pre_tool_use("toolu_retried"))) == "allow"
    assert send_hook(holding, pre_tool_use("toolu_again")) == {}
    assert send_hook(other, pre_tool_use("toolu_and_again")) == {}

    # Refused and allowed again, the retry sent twice at once to the two processes: one of
    # them lets it through.
    refused_and_allowed(holding)
    retry = pre_tool_use("toolu_twice")
    with ThreadPoolExecutor(2) as pool:
        retried = list(pool.map(lambda server: send_hook(server, retry), [other, holding]))
    assert sorted(str(decision(answer)) for answer in retried) == ["None", "allow"], retried
    assert holding.query(
        "SELECT status, once_used_at IS NOT NULL FROM planmode_permissionrequest ORDER BY id"
    ) == [("allowed", True), ("allowed", True)]
