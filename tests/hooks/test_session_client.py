"""Which kind of agent reports a session: the first integration that names it sticks."""

from __future__ import annotations

import pytest

from dashboard.models import Client, Session
from tests.conftest import todo
from tests.hooks.conftest import SESSION_ID, load_fixture

pytestmark = pytest.mark.django_db


def test_a_session_reported_by_claude_code_hooks_is_named_claude_code(hook):
    assert hook(load_fixture("session_start.json")).status_code == 200

    assert Session.objects.get(session_id=SESSION_ID).client == Client.CLAUDE_CODE


def test_a_session_reported_only_through_the_api_says_api(agent_api):
    agent_api.put_todos("api-only", "api-only", {"todos": [todo("Write it", "in_progress")]})

    assert Session.objects.get(session_id="api-only").client == Client.API


def test_a_hook_names_a_session_that_the_api_reported_first(agent_api, hook):
    agent_api.put_todos(SESSION_ID, SESSION_ID, {"todos": [todo("Write it", "in_progress")]})
    assert hook(load_fixture("post_tool_use_todowrite.json")).status_code == 200
    agent_api.put_todos(SESSION_ID, SESSION_ID, {"todos": [todo("Write it", "completed")]})

    assert Session.objects.get(session_id=SESSION_ID).client == Client.CLAUDE_CODE
