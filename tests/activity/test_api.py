from __future__ import annotations

import pytest

from dashboard.models import AgentToken
from tests.activity.conftest import SESSION_ID, load_fixture, tool_event
from tests.conftest import AgentApi

pytestmark = pytest.mark.django_db

STEPS = "/api/v1/sessions/api-sess/agents/api-sess/steps"


def report(agent_api, tool_use_id: str, status: str, **fields):
    body = {"tool_use_id": tool_use_id, "tool_name": "Bash", "status": status, **fields}
    return agent_api.post(STEPS, body)


def test_an_api_agent_reports_a_call_starting_and_ending(agent_api):
    started = report(agent_api, "c1", "running", tool_input={"command": "make test"})
    assert started.status_code == 200, started.content
    assert started.json() == {"tool_use_id": "c1", "status": "running"}
    report(agent_api, "c1", "failed", tool_input={"command": "make test"}, error="boom\nmore")

    [step] = agent_api.get("/api/v1/sessions/api-sess/activity").json()["steps"]
    assert step["agent_id"] == "api-sess"
    assert (step["summary"], step["outcome"], step["error"]) == ("make test", "failed", "boom")
    assert step["duration_seconds"] >= 0


def test_a_step_without_a_tool_name_is_refused_with_a_clear_error(agent_api):
    response = agent_api.post(STEPS, {"tool_use_id": "c1", "status": "ok"})
    assert response.status_code == 422
    assert response.json()["error"]["code"] == "validation_error"


def test_the_activity_comes_a_page_at_a_time_in_order(hook, agent_api):
    hook(load_fixture("session_start.json"))
    for n in range(7):
        hook(tool_event("PreToolUse", f"t{n}"))
        hook(tool_event("PostToolUse", f"t{n}"))
    url = f"/api/v1/sessions/{SESSION_ID}/activity?limit=3"

    seen, after = [], ""
    while True:
        page = agent_api.get(url + (f"&after={after}" if after else "")).json()
        seen += [step["tool_use_id"] for step in page["steps"]]
        after = page["next_cursor"]
        if not after:
            break

    assert seen == [f"t{n}" for n in range(7)]


def test_the_activity_filters_by_agent_tool_and_failures(hook, agent_api):
    hook(load_fixture("session_start.json"))
    sub = load_fixture("subagent_start.json")
    hook(sub)
    hook(tool_event("PostToolUse", "ok-1"))
    hook(tool_event("PostToolUseFailure", "bad-1", error="Exit code 2"))
    hook(tool_event("PostToolUse", "read-1", tool_name="Read", tool_input={"file_path": "/a"}))
    hook(tool_event("PostToolUse", "sub-1", agent_id=sub["agent_id"], agent_type="Explore"))
    base = f"/api/v1/sessions/{SESSION_ID}/activity"

    def ids(query: str) -> list[str]:
        return [s["tool_use_id"] for s in agent_api.get(base + query).json()["steps"]]

    assert ids("?failures=true") == ["bad-1"]
    assert ids("?tool=Read") == ["read-1"]
    assert ids(f"?agent_id={sub['agent_id']}") == ["sub-1"]


def test_another_users_session_is_not_found(hook, other_user, client):
    hook(tool_event("PostToolUse", "t1"))
    token = AgentToken.issue(owner=other_user)[1]
    response = AgentApi(client, token).get(f"/api/v1/sessions/{SESSION_ID}/activity")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "session_not_found"


def test_a_cursor_this_server_never_handed_out_is_a_clear_error(hook, agent_api):
    hook(tool_event("PostToolUse", "t1"))
    response = agent_api.get(f"/api/v1/sessions/{SESSION_ID}/activity?after=nonsense")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_cursor"


def test_the_endpoints_are_in_the_openapi_document(agent_api, client):
    paths = client.get("/api/v1/openapi.json").json()["paths"]
    assert "/api/v1/sessions/{session_id}/activity" in paths
    assert "/api/v1/sessions/{session_id}/agents/{agent_id}/steps" in paths
