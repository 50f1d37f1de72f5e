"""A permission request is stored redacted, yet recognised, matched and answered by what the
agent sent: identical requests join, the call that ran settles it, team rules see its input."""

from __future__ import annotations

import pytest
from django.db import transaction

from dashboard.core.errors import ServiceError
from dashboard.models import Agent, Session
from planmode.models import RequestStatus, RuleBehavior, TeamRule
from planmode.permissions import (
    agent_moved_on,
    input_key,
    permission_request_open,
    remembered_permissions,
)

pytestmark = pytest.mark.django_db

COMMAND = "PASSWORD=hunter2-Correct-Horse ./deploy.sh"
SUGGESTION = {
    "type": "addRules",
    "rules": [{"toolName": "Bash", "ruleContent": "PASSWORD=hunter2-Correct-Horse ./deploy.sh"}],
    "behavior": "allow",
    "destination": "localSettings",
}


@pytest.fixture
def agent(user) -> Agent:
    session = Session.objects.create(session_id="sess-1", owner=user, cwd="/home/dev/shop")
    return Agent.objects.create(session=session, agent_id="sess-1")


def ask(agent: Agent, command: str = COMMAND):
    with transaction.atomic():
        return permission_request_open(
            agent=agent,
            tool_name="Bash",
            tool_input={"command": command},
            suggestions=[SUGGESTION],
        ).request


def test_the_input_and_suggestions_are_stored_redacted(agent):
    request = ask(agent)
    request.refresh_from_db()

    assert request.tool_input == {"command": "PASSWORD=[redacted:password] ./deploy.sh"}
    assert "hunter2" not in str(request.suggestions)


def test_the_same_request_delivered_twice_joins_the_one_waiting(agent):
    first, second = ask(agent), ask(agent)

    assert first.pk == second.pk


def test_requests_that_differ_only_in_their_secret_are_two_requests(agent):
    assert ask(agent).pk != ask(agent, "PASSWORD=another-Secret-99 ./deploy.sh").pk


def test_the_key_of_a_request_is_not_a_plain_hash_of_its_input(agent):
    import hashlib
    import json

    request = ask(agent)
    plain = json.dumps(["Bash", {"command": COMMAND}], sort_keys=True, ensure_ascii=False)

    assert request.input_key == input_key("Bash", {"command": COMMAND})
    assert request.input_key != hashlib.sha256(plain.encode()).hexdigest()


def test_the_call_that_ran_settles_its_request_though_stored_redacted(agent):
    request = ask(agent)

    with transaction.atomic():
        agent_moved_on(
            agent=agent,
            moved_on=True,
            event="PostToolUse",
            tool_name="Bash",
            tool_input={"command": COMMAND},
        )

    request.refresh_from_db()
    assert request.status == RequestStatus.ANSWERED_IN_TERMINAL


def test_a_team_rule_matches_what_the_agent_will_run(agent, reviewer):
    TeamRule.objects.create(
        rule=f"Bash({COMMAND})", behavior=RuleBehavior.DENY, created_by=reviewer
    )

    request = ask(agent)

    assert request.status == RequestStatus.DENIED


def test_a_suggestion_that_held_a_secret_cannot_be_remembered(agent):
    request = ask(agent)

    with pytest.raises(ServiceError) as refused:
        remembered_permissions(request, choice="suggestion:0")

    assert refused.value.code == "redacted_suggestion"
