"""Agents that need a look: a loop (the same failing call again and again) is an episode that
joins what waits on a person, notifies once, and ends at the agent's next healthy step."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from django.test import Client
from django.urls import reverse

from dashboard.activity.models import Concern, Step
from dashboard.core.visibility import EVERYONE, audience_of
from dashboard.models import Agent
from planmode.inbox import inbox_count, inbox_items, waiting
from tests.activity.conftest import load_fixture, tool_event
from tests.activity.test_recording import _run_batch, _step_jobs
from tests.conftest import parse_html

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
PYTEST = {"command": "pytest -x", "description": "Run the tests"}


def fail(hook, n: int, tool_input: dict | None = None, **changes):
    call = f"toolu_loop_{n}"
    hook(tool_event("PreToolUse", call, tool_input=tool_input or PYTEST, **changes))
    response = hook(
        tool_event(
            "PostToolUseFailure",
            call,
            tool_input=tool_input or PYTEST,
            error="Exit code 1\n1 failed",
            **changes,
        )
    )
    assert response.status_code == 200


def succeed(hook, call: str, tool_input: dict | None = None):
    hook(tool_event("PreToolUse", call, tool_input=tool_input or PYTEST))
    hook(tool_event("PostToolUse", call, tool_input=tool_input or PYTEST, tool_response={}))


def test_the_same_failing_call_three_times_is_one_loop_that_joins_the_one_count(hook):
    hook(load_fixture("session_start.json"))
    fail(hook, 1)
    fail(hook, 2)
    assert not Concern.objects.exists()

    fail(hook, 3)
    (concern,) = Concern.objects.all()
    assert concern.kind == "looping"
    assert concern.ended_at is None
    assert re.fullmatch(r"“pytest -x” failed 3 times in \d+ s: Exit code 1", concern.detail)

    # Failing again is the same episode, and its line counts every failure.
    fail(hook, 4)
    fail(hook, 5)
    (concern,) = Concern.objects.all()
    assert concern.failures == 5
    assert re.fullmatch(r"“pytest -x” failed 5 times in \d+ s: Exit code 1", concern.detail)

    (wait,) = waiting()
    assert wait.kind == "look"
    count = inbox_count(EVERYONE)
    assert (count.total, count.label) == (1, "1 waiting on you")
    assert count.parts == "1 agent needs a look"
    (item,) = inbox_items(EVERYONE)
    assert item.what == "Looping"
    assert item.summary.startswith("“pytest -x” failed 5 times in ")


def test_the_next_healthy_step_ends_the_episode_and_a_later_loop_is_a_new_one(hook):
    hook(load_fixture("session_start.json"))
    for n in range(3):
        fail(hook, n)
    succeed(hook, "toolu_ok")

    (ended,) = Concern.objects.all()
    assert ended.ended_at is not None
    assert ended.end_reason == "healthy step"
    assert waiting() == []

    for n in range(3, 6):
        fail(hook, n)
    assert Concern.objects.filter(ended_at__isnull=True).count() == 1
    assert Concern.objects.count() == 2


def test_a_different_call_ends_the_loop(hook):
    for n in range(3):
        fail(hook, n)
    hook(tool_event("PreToolUse", "toolu_other", tool_input={"command": "cat pytest.ini"}))

    assert Concern.objects.get().ended_at is not None


def test_the_agent_stopping_ends_the_loop(hook):
    for n in range(3):
        fail(hook, n)
    hook(load_fixture("stop.json"))

    assert Concern.objects.get().end_reason == "agent stopped"


@pytest.mark.parametrize(
    "between",
    ["ok", "other input"],
)
def test_no_loop_without_the_same_failing_call_in_a_row(hook, between):
    fail(hook, 1)
    fail(hook, 2)
    if between == "ok":
        succeed(hook, "toolu_ok")
    else:
        fail(hook, 3, tool_input={"command": "pytest -x tests/api"})
    fail(hook, 4)

    assert not Concern.objects.exists()


def test_the_repeats_are_a_setting(hook, settings):
    settings.AGENTBOARD_LOOP_REPEATS = 5
    for n in range(4):
        fail(hook, n)
    assert not Concern.objects.exists()
    fail(hook, 4)
    assert Concern.objects.count() == 1


def test_a_loop_is_seen_by_its_owner_and_reviewers_only(hook, user, other_user):
    for n in range(3):
        fail(hook, n)

    assert [w.kind for w in waiting(audience_of(user))] == ["look"]
    assert waiting(audience_of(other_user)) == []
    assert inbox_count(audience_of(other_user)).total == 0


# --- no false alarms ------------------------------------------------------------------------


def test_real_client_sessions_replayed_raise_no_concern(hook, agent_api, settings):
    settings.AGENTBOARD_PERMISSION_HOOK_WAIT_SECONDS = 0.05
    settings.AGENTBOARD_PLAN_HOOK_WAIT_SECONDS = 0.05
    claude = sorted((FIXTURES / "claude-code").glob("*.json"))
    order = ["session_start.json", "user_prompt_submit.json"]
    names = order + [p.name for p in claude if p.name not in order and "session_end" not in p.name]
    for name in [*names, "session_end.json"]:
        assert hook(load_fixture(name)).status_code == 200, name
    # The same healthy calls again, as an agent working on does.
    for name in names:
        hook(load_fixture(name))
    for path in sorted((FIXTURES / "codex").glob("*.json")):
        payload = json.loads(path.read_text())
        assert agent_api.post("/hooks/codex", payload).status_code == 200, path.name

    # opencode: the same command run three times, each succeeding, and one that failed once.
    created = {"info": {"id": "ses_ok", "directory": "/work/shop", "title": ""}}
    agent_api.post("/hooks/opencode", {"type": "session.created", "properties": created})
    for n, status in enumerate(["completed", "completed", "error", "completed"]):
        call = {"sessionID": "ses_ok", "callID": f"call_{n}", "tool": "bash"}
        body = {**call, "input": {"command": "pytest -q"}}
        for state in ("running", status):
            props = {**body, "status": state, "error": "1 failed" if state == "error" else None}
            agent_api.post("/hooks/opencode", {"type": "agentboard.tool", "properties": props})

    assert Step.objects.filter(agent__agent_id="ses_ok").count() == 4
    assert not Concern.objects.exists()
    assert all(w.kind != "look" for w in waiting())


def test_a_healthy_step_adds_no_query(hook, user):
    hook(load_fixture("session_start.json"))
    _run_batch(_step_jobs(user, 2, prefix="warm"))  # what is open was read once

    queries = _run_batch(_step_jobs(user, 4, prefix="healthy"))

    assert not [q for q in queries if "activity_concern" in q["sql"]]
    assert len([q for q in queries if "activity_step" in q["sql"]]) == 1


# --- dismissing -----------------------------------------------------------------------------


def _browser(user) -> Client:
    browser = Client()
    browser.force_login(user)
    return browser


def test_the_owner_or_a_reviewer_dismisses_a_loop_and_nobody_else(hook, user, other_user, reviewer):
    for n in range(3):
        fail(hook, n)
    concern = Concern.objects.get()
    url = f"/concerns/{concern.pk}/dismiss/"

    refused = _browser(other_user).post(url)
    assert refused.status_code == 403
    assert b"Only reviewers, or the person whose session it is" in refused.content
    assert Concern.objects.get().ended_at is None

    assert _browser(user).post(url).status_code == 204
    concern.refresh_from_db()
    assert concern.ended_at is not None
    assert concern.end_reason == "dismissed by dana"
    assert waiting() == []

    # Failing once more is not a new loop: it comes back after as many failures again.
    fail(hook, 3)
    assert Concern.objects.count() == 1
    fail(hook, 4)
    fail(hook, 5)
    assert Concern.objects.filter(ended_at__isnull=True).count() == 1

    (open_,) = Concern.objects.filter(ended_at__isnull=True)
    assert _browser(reviewer).post(f"/concerns/{open_.pk}/dismiss/").status_code == 204


def test_a_loop_shows_on_the_board_card_inbox_and_overview(hook, user):
    hook(load_fixture("session_start.json"))
    for n in range(3):
        fail(hook, n)
    agent = Agent.objects.get()
    browser = _browser(user)

    board = browser.get(f"/sessions/{agent.session.session_id}/").content.decode()
    assert 'data-wait="look"' in board
    assert "needs a look" in board
    assert "/dismiss/" in board
    header = parse_html(board).find(id="session-header").text()
    assert "an agent needs a look" in header and "waiting on a person" not in header
    inbox = browser.get("/inbox/").content.decode()
    assert "Looping: “pytest -x” failed 3 times in " in inbox
    overview = browser.get("/").content.decode()
    assert "Needs a look" in overview
    assert "1 waiting on you" in overview


# --- notifications ---------------------------------------------------------------------------


def test_a_loop_notifies_like_a_waiting_plan_once_per_episode(hook, user, reviewer):
    from dashboard.notifications.models import Delivery, Event, WebhookTarget

    WebhookTarget.objects.create(
        owner=reviewer,
        name="chat",
        kind=WebhookTarget.Kind.JSON,
        url="https://hooks.example.com/T1/secret-part",
        secret="s3cret",
        events=[choice.value for choice in Event],
        projects=[],
        base_url="http://board.test",
    )
    hook(load_fixture("session_start.json"))
    for n in range(5):
        fail(hook, n)

    (delivery,) = Delivery.objects.all()
    assert delivery.event == "waiting"
    assert delivery.payload["kind"] == "look"
    assert delivery.payload["title"].startswith(
        "Needs a look — Looping: “pytest -x” failed 3 times in "
    )
    assert delivery.payload["path"] == f"/sessions/{Agent.objects.get().session.session_id}/"

    succeed(hook, "toolu_ok")
    for n in range(5, 8):
        fail(hook, n)
    assert Delivery.objects.count() == 2

    browser = _browser(user)
    (item,) = browser.get(reverse("notify-waiting")).json()["items"]
    assert item["key"].startswith("look-")
    assert item["body"].startswith("Looping: “pytest -x” failed 3 times in ")


def test_a_loop_ends_with_its_session(hook):
    hook(load_fixture("session_start.json"))
    for n in range(3):
        fail(hook, n)
    hook(load_fixture("session_end.json"))

    assert Concern.objects.get().ended_at is not None
