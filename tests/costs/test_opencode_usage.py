"""opencode's plugin reports each complete assistant message's tokens and cost."""

from __future__ import annotations

import time

import pytest

from dashboard.core.audit import Via
from dashboard.costs import budgets
from dashboard.costs.budgets import session_continue
from dashboard.costs.models import Budget
from dashboard.costs.selectors import usage_by_session
from dashboard.models import Agent, AuditAction, AuditEntry, Client, Session
from tests.conftest import todo, write_todos

URL = "/hooks/opencode/usage"
SESSION = "ses_main0001"


def message(message_id: str = "msg_0001", session_id: str = SESSION, **fields) -> dict:
    """An assistant message's info as opencode's `message.updated` carries it, as the plugin
    sends it once complete."""
    return {
        "sessionID": session_id,
        "id": message_id,
        "modelID": "gpt-5.5",
        "cost": 0.0123,
        "tokens": {"input": 900, "output": 40, "reasoning": 10, "cache": {"read": 300, "write": 0}},
        "completed": 1_795_690_876_000,
        **fields,
    }


def usage(session_id: str = SESSION):
    session = Session.objects.get(session_id=session_id)
    return usage_by_session([session.pk]).get(session.pk)


def test_a_message_adds_its_tokens_and_cost_to_its_session(agent_api):
    assert agent_api.post(URL, message()).status_code == 200
    assert agent_api.post(URL, message("msg_0002", cost=0.5)).status_code == 200

    got = usage()
    assert (got.input_tokens, got.output_tokens, got.cache_read_tokens) == (1800, 100, 600)
    assert got.cost_text == "$0.51"
    assert Session.objects.get(session_id=SESSION).client == Client.OPENCODE


def test_a_message_sent_again_counts_once(agent_api):
    for _ in range(3):
        agent_api.post(URL, message())

    assert usage().input_tokens == 900


def test_a_subagents_messages_count_for_the_session_that_started_it(agent_api, user):
    write_todos(user, SESSION, SESSION, [todo("Explore", "in_progress")])
    write_todos(user, SESSION, "ses_child0001", [todo("Look around", "in_progress")])

    agent_api.post(URL, message(session_id="ses_child0001"))

    assert usage().input_tokens == 900
    assert not Session.objects.filter(session_id="ses_child0001").exists()
    assert Agent.objects.get(agent_id="ses_child0001").usage.count() == 1


@pytest.mark.parametrize(
    ("change", "where"),
    [
        ({"cost": -1}, "cost"),
        ({"tokens": {"input": "many"}}, "input"),
        ({"sessionID": ""}, "sessionID"),
        ({"id": None}, "id"),
    ],
)
def test_bad_usage_is_refused_with_one_sentence_and_stores_nothing(agent_api, change, where):
    response = agent_api.post(URL, message(**change))

    assert response.status_code == 422
    assert where in response.json()["error"]["message"]
    assert not Session.objects.exists()


def test_usage_needs_the_agent_token(client):
    response = client.post(URL, data=message(), content_type="application/json")

    assert response.status_code == 401


def gate(agent_api, session_id: str = SESSION, call: str = "call_0001"):
    return agent_api.post(
        "/hooks/opencode",
        {"type": "agentboard.gate", "properties": {"sessionID": session_id, "callID": call,
                                                     "tool": "bash"}},
    )  # fmt: skip


@pytest.fixture
def spent_budget(db, user):
    """The user's own budget of a cent a day, stopping at its limit."""
    budgets.forget()
    yield Budget.objects.create(
        scope=Budget.Scope.PERSON, person=user, period=Budget.Period.DAY, limit_micros=10_000,
        stop_at_limit=True,
    )  # fmt: skip
    budgets.forget()


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def test_a_message_that_spends_the_budget_gates_the_session_and_its_tool_calls_are_refused(
    agent_api, user, spent_budget
):

    cheap = agent_api.post(URL, message(cost=0.001, completed=now_ms()))
    assert cheap.json() == {}
    assert gate(agent_api).json() == {}

    answer = agent_api.post(URL, message("msg_0002", cost=0.5, completed=now_ms()))

    assert answer.json() == {"gated": True}
    refused = gate(agent_api)
    assert refused.status_code == 200
    assert refused.json() == {
        "refuse": f"Agentboard: the budget for {user.get_username()} ($0.01 a day) is spent; "
        "a reviewer must raise it or let this session continue."
    }
    assert AuditEntry.objects.filter(action=AuditAction.BUDGET_BLOCKED).count() == 1
    # A reviewer lets it continue: the next call runs, and the plugin stops asking.
    session = Session.objects.get(session_id=SESSION)
    session_continue(session_pk=session.pk, actor=user, via=Via("board"))
    assert gate(agent_api, call="call_0002").json() == {}


@pytest.mark.parametrize(
    "properties",
    [
        {"sessionID": SESSION, "tool": "bash"},
        {"sessionID": SESSION, "callID": "c", "tool": ""},
        {"sessionID": "", "callID": "c", "tool": "bash"},
        {"sessionID": SESSION, "callID": ["c"], "tool": "bash"},
    ],
)
def test_a_malformed_gate_question_gets_one_sentence_and_changes_nothing(agent_api, properties):
    answer = agent_api.post(
        "/hooks/opencode", {"type": "agentboard.gate", "properties": properties}
    )

    assert answer.status_code == 422
    assert answer.json()["error"]["message"]
    assert not Session.objects.exists()
