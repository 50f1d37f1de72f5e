from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from dashboard.activity import services
from dashboard.activity.models import Step
from dashboard.models import Agent
from tests.activity.conftest import load_fixture, tool_event
from todos.models import TodoRevision

pytestmark = pytest.mark.django_db


def age_steps(days: float) -> None:
    Step.objects.update(started_at=timezone.now() - timedelta(days=days))


def test_the_command_deletes_steps_older_than_the_days_kept_and_keeps_the_rest(hook, capsys):
    hook(load_fixture("post_tool_use_todowrite.json"))
    hook(tool_event("PostToolUse", "old-1"))
    age_steps(31)
    hook(tool_event("PostToolUse", "new-1"))

    call_command("prune_activity")

    assert list(Step.objects.values_list("tool_use_id", flat=True)) == ["new-1"]
    assert "Deleted 2 steps." in capsys.readouterr().out
    # The todo list's history stays.
    assert TodoRevision.objects.count() == 1


def test_the_days_kept_come_from_the_setting_or_the_option(hook, settings):
    hook(tool_event("PostToolUse", "t1"))
    age_steps(3)
    settings.AGENTBOARD_ACTIVITY_DAYS = 5
    call_command("prune_activity")
    assert Step.objects.count() == 1

    call_command("prune_activity", days=2)
    assert Step.objects.count() == 0


def test_many_old_steps_are_deleted_a_chunk_per_write(hook, monkeypatch):
    hook(load_fixture("session_start.json"))
    agent = Agent.objects.get()
    now = timezone.now() - timedelta(days=40)
    Step.objects.bulk_create(
        Step(
            agent=agent,
            session_id=agent.session_id,
            tool_use_id=f"t{n}",
            tool_name="Bash",
            started_at=now,
        )
        for n in range(25)
    )
    monkeypatch.setattr(services, "PRUNE_CHUNK", 10)
    assert services.activity_prune(limit=10) == 10
    assert Step.objects.count() == 15
