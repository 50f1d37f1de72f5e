from __future__ import annotations

import pytest

from dashboard.models import AgentToken
from planmode.models import Plan
from tests.domain import plan_decide

pytestmark = pytest.mark.django_db

PLAN = "# Pagination\n\n1. Cursor based paging\n"
PLANS = "/api/v1/sessions/sess-1/agents/sess-1/plans"
TODOS_BODY = {
    "todos": [{"content": "Add paging", "status": "in_progress", "activeForm": "Adding paging"}]
}


def test_submitting_a_plan_answers_201_with_id_revision_status_and_review_url(agent_api):
    response = agent_api.post(
        PLANS, {"plan": PLAN, "plan_file_path": "/home/dev/.claude/plans/paging.md"}
    )
    assert response.status_code == 201
    plan = Plan.objects.get()
    assert response.json() == {
        "id": plan.pk,
        "revision": 1,
        "status": "pending",
        "review_url": f"http://testserver/plans/{plan.pk}/",
    }
    assert plan.plan_file_path == "/home/dev/.claude/plans/paging.md"
    assert plan.source == "api"


def test_the_review_url_uses_the_public_address_when_one_is_set(agent_api, settings):
    settings.AGENTBOARD_PUBLIC_URL = "https://board.example.com"

    response = agent_api.post(PLANS, {"plan": PLAN})

    plan_id = response.json()["id"]
    assert response.json()["review_url"] == f"https://board.example.com/plans/{plan_id}/"


def test_a_resubmission_is_revision_2_and_withdraws_revision_1(agent_api):
    first = agent_api.post(PLANS, {"plan": PLAN}).json()
    second = agent_api.post(PLANS, {"plan": PLAN + "2. Tests\n"}).json()
    assert second["revision"] == 2
    assert agent_api.get(f"/api/v1/plans/{first['id']}").json()["status"] == "withdrawn"


def test_the_plan_state_tells_the_agent_what_was_decided(agent_api, reviewer):
    plan_id = agent_api.post(PLANS, {"plan": PLAN}).json()["id"]
    waiting = agent_api.get(f"/api/v1/plans/{plan_id}").json()
    assert (waiting["status"], waiting["mode_after"], waiting["decided_by"]) == (
        "pending",
        None,
        None,
    )
    plan_decide(plan_id=plan_id, reviewer=reviewer, approve=True, auto_accept=True)
    state = agent_api.get(f"/api/v1/plans/{plan_id}").json()
    assert state["id"] == plan_id
    assert (state["session_id"], state["agent_id"], state["revision"]) == ("sess-1", "sess-1", 1)
    assert (state["status"], state["mode_after"], state["decided_by"]) == (
        "approved",
        "acceptEdits",
        "lead",
    )
    assert state["decided_at"]
    assert "todo list" in state["message"]


def test_an_unknown_plan_is_404(agent_api):
    response = agent_api.get("/api/v1/plans/12345")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "plan_not_found"


def test_another_users_plan_is_not_found_either(agent_api, other_user, client):
    plan_id = agent_api.post(PLANS, {"plan": PLAN}).json()["id"]
    other_token = AgentToken.issue(owner=other_user)[1]
    response = client.get(
        f"/api/v1/plans/{plan_id}", headers={"Authorization": f"Bearer {other_token}"}
    )
    assert response.status_code == 404


@pytest.mark.parametrize("body", [{"plan": ""}, {"plan": "  \n "}])
def test_an_empty_plan_is_422(agent_api, body):
    response = agent_api.post(PLANS, body)
    assert response.status_code == 422
    assert response.json()["error"]["code"] == "empty_plan"
    assert not Plan.objects.exists()


@pytest.mark.parametrize("body", [{}, {"plan": 3}, {"plan": PLAN, "extra": 1}])
def test_a_malformed_plan_body_is_422_with_details(agent_api, body):
    response = agent_api.post(PLANS, body)
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["code"] == "validation_error"
    assert error["detail"][0]["loc"][0] == "body"


def test_a_plan_over_the_configured_size_is_413(agent_api, settings):
    settings.AGENTBOARD_MAX_PLAN_CHARS = 100
    response = agent_api.post(PLANS, {"plan": "x" * 101})
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "plan_too_large"


def test_malformed_json_is_400(agent_api):
    response = agent_api.post(PLANS, "{not json")
    assert response.status_code == 400


def test_submitting_without_a_token_is_401(client):
    response = client.post(PLANS, data={"plan": PLAN}, content_type="application/json")
    assert response.status_code == 401
    assert not Plan.objects.exists()


def test_a_retry_with_the_same_idempotency_key_returns_the_first_response(agent_api):
    first = agent_api.post(PLANS, {"plan": PLAN}, headers={"Idempotency-Key": "toolu_01"})
    again = agent_api.post(PLANS, {"plan": PLAN}, headers={"Idempotency-Key": "toolu_01"})
    assert again.status_code == 201
    assert again.json() == first.json()
    assert Plan.objects.count() == 1


def test_the_same_idempotency_key_with_another_plan_is_422(agent_api):
    agent_api.post(PLANS, {"plan": PLAN}, headers={"Idempotency-Key": "toolu_01"})
    response = agent_api.post(PLANS, {"plan": "# Other"}, headers={"Idempotency-Key": "toolu_01"})
    assert response.status_code == 422
    assert response.json()["error"]["code"] == "idempotency_key_reused"


def test_todo_writes_are_409_while_the_plan_waits_and_accepted_after_approval(agent_api, reviewer):
    plan_id = agent_api.post(PLANS, {"plan": PLAN}).json()["id"]
    refused = agent_api.put_todos("sess-1", "sess-1", TODOS_BODY)
    assert refused.status_code == 409
    assert refused.json()["error"]["code"] == "plan_mode_active"
    plan_decide(plan_id=plan_id, reviewer=reviewer, approve=True)
    assert agent_api.put_todos("sess-1", "sess-1", TODOS_BODY).status_code == 200


def test_the_openapi_document_describes_the_plan_endpoints(client):
    paths = client.get("/api/v1/openapi.json").json()["paths"]
    assert "post" in paths["/api/v1/sessions/{session_id}/agents/{agent_id}/plans"]
    assert "get" in paths["/api/v1/plans/{plan_id}"]
