"""The sweep for agents that need a look without a step saying so: stuck (a task in progress,
no step for long, nothing waiting on a person) and running long (a step past its tool's limit).
Each is one episode, notified once, ended when the agent moves on."""

from __future__ import annotations

import subprocess
import sys
from datetime import timedelta

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import Client
from django.utils import timezone

from dashboard.activity.models import Concern, Step
from dashboard.board.concerns import concerns_sweep
from dashboard.core.visibility import EVERYONE
from dashboard.core.writer import write_sync
from dashboard.models import Agent, Session
from dashboard.settings import step_limits
from planmode.inbox import inbox_items, waiting
from tests.activity.conftest import load_fixture, tool_event
from tests.activity.test_recording import _run_batch, _step_jobs
from tests.liveserver import ROOT, server_env

pytestmark = pytest.mark.django_db


def sweep() -> list[int]:
    return write_sync(concerns_sweep).value


def age(minutes: float) -> None:
    """Everything the agents did happened `minutes` earlier."""
    back = timedelta(minutes=minutes)
    for agent in Agent.objects.all():
        Agent.objects.filter(pk=agent.pk).update(last_seen_at=agent.last_seen_at - back)
    for step in Step.objects.all():
        Step.objects.filter(pk=step.pk).update(
            started_at=step.started_at - back,
            ended_at=step.ended_at - back if step.ended_at else None,
        )
    for concern in Concern.objects.all():
        Concern.objects.filter(pk=concern.pk).update(
            since=concern.since - back,
            ended_at=concern.ended_at - back if concern.ended_at else None,
        )


def working(hook) -> None:
    """An agent with a task in progress ("Store the theme in the settings context")."""
    hook(load_fixture("session_start.json"))
    hook(load_fixture("post_tool_use_todowrite.json"))


def test_an_agent_quiet_for_long_with_a_task_in_progress_is_stuck_once(hook):
    working(hook)
    assert sweep() == []
    age(11)

    assert len(sweep()) == 1
    assert sweep() == []  # the same episode
    (concern,) = Concern.objects.all()
    assert concern.kind == "stuck"
    assert concern.detail == (
        "no step while 'Store the theme in the settings context' is in progress"
    )
    (item,) = inbox_items(EVERYONE)
    assert (item.kind, item.what) == ("look", "Stuck")

    # Its next step ends it at once; a later quiet spell is a new episode.
    hook(tool_event("PreToolUse", "toolu_next"))
    hook(tool_event("PostToolUse", "toolu_next", tool_response={}))
    concern.refresh_from_db()
    assert concern.ended_at is not None
    assert sweep() == []
    age(11)
    assert len(sweep()) == 1
    assert Concern.objects.count() == 2


def test_a_dismissed_episode_is_not_flagged_again_until_the_agent_moves(hook, user, settings):
    settings.AGENTBOARD_STEP_LIMITS = {"Bash": 600.0}
    working(hook)
    hook(load_fixture("session_start.json", session_id="sess-long"))
    hook(tool_event("PreToolUse", "toolu_long", session_id="sess-long"))
    age(11)
    assert len(sweep()) == 2
    browser = Client()
    browser.force_login(user)
    for concern in Concern.objects.all():
        assert browser.post(f"/concerns/{concern.pk}/dismiss/").status_code == 204

    assert sweep() == []
    assert waiting() == []

    # The stuck agent takes a step and goes quiet again: a new episode.
    hook(tool_event("PreToolUse", "toolu_next"))
    hook(tool_event("PostToolUse", "toolu_next", tool_response={}))
    age(11)
    assert [Concern.objects.get(pk=pk).kind for pk in sweep()] == ["stuck"]


def test_the_stuck_minutes_are_a_setting_and_zero_is_off(hook, settings):
    working(hook)
    age(11)
    settings.AGENTBOARD_STUCK_MINUTES = 20
    assert sweep() == []
    settings.AGENTBOARD_STUCK_MINUTES = 0
    age(30)
    assert sweep() == []


def test_not_stuck_while_waiting_on_a_person(hook):
    working(hook)
    hook(load_fixture("notification_idle.json"))  # waiting for its developer in its terminal
    age(30)

    assert sweep() == []
    assert [w.kind for w in waiting()] == ["terminal"]


def test_not_stuck_without_a_task_in_progress_or_once_its_session_ended(hook):
    hook(load_fixture("session_start.json"))
    age(30)
    assert sweep() == []

    hook(load_fixture("post_tool_use_todowrite.json"))
    age(30)
    Session.objects.update(ended_at=timezone.now())
    assert sweep() == []


def test_a_stuck_agent_that_moved_on_otherwise_is_cleared_by_the_next_sweep(hook):
    working(hook)
    age(11)
    sweep()
    hook(load_fixture("notification_idle.json"))  # now a person is asked

    sweep()
    assert Concern.objects.get().end_reason == "moved on"
    assert [w.kind for w in waiting()] == ["terminal"]


def test_a_step_running_past_its_tools_limit_runs_long_once(hook, settings):
    settings.AGENTBOARD_STEP_LIMITS = {"Bash": 600.0}
    hook(load_fixture("session_start.json"))
    hook(tool_event("PreToolUse", "toolu_long"))
    assert sweep() == []
    age(11)

    assert len(sweep()) == 1
    assert sweep() == []
    (concern,) = Concern.objects.all()
    assert concern.kind == "overlong"
    assert concern.detail == (
        "“npm run test -- --watch=false” has run longer than the Bash limit of 10 min"
    )

    # Its end ends the episode at once, without waiting for the next sweep.
    hook(tool_event("PostToolUse", "toolu_long", tool_response={}))
    concern.refresh_from_db()
    assert (concern.ended_at is not None, concern.end_reason) == (True, "step ended")
    assert waiting() == []


def test_other_steps_leave_a_step_running_long_flagged_and_cost_no_query(hook, user, settings):
    settings.AGENTBOARD_STEP_LIMITS = {"Bash": 600.0}
    hook(load_fixture("session_start.json"))
    hook(tool_event("PreToolUse", "toolu_long"))
    age(11)
    sweep()

    queries = _run_batch(_step_jobs(user, 4, prefix="other"))  # other calls start and end

    assert not [q for q in queries if "activity_concern" in q["sql"]]
    assert Concern.objects.get().ended_at is None
    assert [w.kind for w in waiting()] == ["look"]


def test_of_two_long_steps_at_once_the_one_still_running_is_flagged_when_the_first_ends(
    hook, settings
):
    settings.AGENTBOARD_STEP_LIMITS = {"Bash": 600.0}
    hook(load_fixture("session_start.json"))
    hook(tool_event("PreToolUse", "toolu_first"))
    hook(tool_event("PreToolUse", "toolu_second", tool_input={"command": "make e2e"}))
    age(11)
    sweep()
    hook(tool_event("PostToolUse", "toolu_first", tool_response={}))
    assert waiting() == []

    (opened,) = sweep()

    assert Concern.objects.get(pk=opened).detail.startswith("“make e2e” has run longer")


def test_tools_without_a_limit_run_as_long_as_they_like(hook, settings):
    settings.AGENTBOARD_STEP_LIMITS = {"WebFetch": 60.0}
    hook(tool_event("PreToolUse", "toolu_long"))
    age(60)
    assert sweep() == []


def test_step_limits_are_read_and_checked_at_start():
    assert step_limits("Bash=600, WebFetch=120") == {"Bash": 600.0, "WebFetch": 120.0}
    assert step_limits("") == {}
    for wrong in ("Bash", "Bash=soon", "Bash=0", "=60"):
        with pytest.raises(ImproperlyConfigured, match="TOOL=SECONDS"):
            step_limits(wrong)


def test_a_stuck_agent_notifies_once_per_episode(hook, reviewer):
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
    working(hook)
    age(11)
    sweep()
    sweep()

    (delivery,) = Delivery.objects.all()
    assert delivery.payload["title"] == (
        "Needs a look — Stuck: no step while 'Store the theme in the settings context' is in "
        "progress"
    )


@pytest.mark.parametrize("value", ["0", "-1", "soon"])
def test_the_sweep_interval_is_checked_at_start(tmp_path, value):
    env = server_env(tmp_path) | {"AGENTBOARD_CONCERN_SWEEP_SECONDS": value}
    started = subprocess.run(
        [sys.executable, "-c", "import dashboard.settings"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert started.returncode != 0
    assert "AGENTBOARD_CONCERN_SWEEP_SECONDS must be" in started.stderr
