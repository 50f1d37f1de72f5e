from __future__ import annotations

import pytest

from tests.hooks.conftest import FIXTURES, fixture_names, load_fixture

# Held plan requests wait through channels, which needs real commits.
pytestmark = pytest.mark.django_db(transaction=True)

NAMES = fixture_names() or [
    pytest.param("", marks=pytest.mark.skip(reason=f"No Claude Code fixtures in {FIXTURES}."))
]


@pytest.mark.parametrize("name", NAMES)
def test_every_sample_payload_is_answered_with_hook_output(hook, settings, name):
    # A plan nobody reviews in this test is answered "no decision" right away.
    settings.AGENTBOARD_PLAN_HOOK_WAIT_SECONDS = 0.05
    settings.AGENTBOARD_PERMISSION_HOOK_WAIT_SECONDS = 0.05
    if "subagent" in name or "exit_plan_mode" in name:
        hook(load_fixture("session_start.json"))

    response = hook(load_fixture(name))

    assert response.status_code == 200, response.content
    assert isinstance(response.json(), dict)


def test_the_fixture_folder_holds_every_event_this_endpoint_handles():
    names = set(fixture_names())
    if not names:
        pytest.skip(f"No Claude Code fixtures in {FIXTURES}.")
    assert {
        "session_start.json",
        "post_tool_use_todowrite.json",
        "permission_request_exit_plan_mode.json",
    } <= names
