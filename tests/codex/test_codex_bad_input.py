"""Bad hook input is refused with one clear sentence and a 4xx, and changes nothing."""

from __future__ import annotations

import pytest

from dashboard.models import Session
from planmode.models import PermissionRequest
from tests.codex.conftest import HOOK_URL, SESSION_ID, load_fixture, plan_update
from todos.models import Todo, TodoRevision

pytestmark = pytest.mark.django_db


def refused(response, status: int = 422) -> str:
    assert response.status_code == status, response.content
    message = response.json()["error"]["message"]
    assert message and "\n" not in message
    return message


def nothing_stored() -> None:
    assert not Session.objects.exists()
    assert not Todo.objects.exists()
    assert not TodoRevision.objects.exists()
    assert not PermissionRequest.objects.exists()


@pytest.mark.parametrize(
    ("plan", "where"),
    [
        ("not a list", "plan"),
        ([{"step": "Store it", "status": "done"}], "status"),
        ([{"step": "Store it", "status": "cancelled"}], "status"),
        ([{"status": "pending"}], "step"),
        ([{"step": "   ", "status": "pending"}], "step"),
        ([{"step": 42, "status": "pending"}], "step"),
        ([{"step": "a\x00b", "status": "pending"}], "step"),
    ],
)
def test_a_malformed_plan_is_refused(hook, plan, where):
    payload = plan_update(("Store it", "pending"))
    payload["tool_input"] = {"plan": plan}

    assert where in refused(hook(payload))
    nothing_stored()


def test_a_plan_longer_than_any_todo_list_may_be_is_refused(hook, settings):
    steps = [(f"Step {n}", "pending") for n in range(settings.AGENTBOARD_MAX_TODOS + 1)]

    refused(hook(plan_update(*steps)))
    nothing_stored()


@pytest.mark.parametrize(
    "changes",
    [
        {"session_id": None},
        {"session_id": 7},
        {"hook_event_name": 3},
        {"cwd": ["/home"]},
    ],
)
def test_a_malformed_event_is_refused(hook, changes):
    refused(hook(load_fixture("session_start.json", **changes)))
    nothing_stored()


def test_a_permission_request_without_a_command_object_is_refused(hook):
    refused(hook(load_fixture("permission_request_bash.json", tool_input="rm -rf /")))
    nothing_stored()


def test_input_that_is_not_a_json_object_is_refused(hook):
    refused(hook("not json"), 400)
    refused(hook("[1, 2]"), 400)
    nothing_stored()


def test_a_hook_without_a_valid_token_is_refused(client):
    response = client.post(
        HOOK_URL, data="{}", content_type="application/json", HTTP_AUTHORIZATION="Bearer nope"
    )
    refused(response, 401)
    nothing_stored()


def test_only_post_is_accepted(agent_api):
    refused(agent_api.get(HOOK_URL), 405)


def test_a_valid_update_after_a_refused_one_is_stored(hook):
    bad = plan_update(("Store it", "pending"))
    bad["tool_input"] = {"plan": [{"step": "Store it", "status": "done"}]}
    refused(hook(bad))

    assert hook(plan_update(("Store it", "pending"))).status_code == 200
    assert Session.objects.get(session_id=SESSION_ID).client == "codex"
