"""Sessions whose agents went quiet end by themselves, and come back when they report again."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from dashboard.board.idle import sessions_end_idle
from dashboard.core.writer import write
from dashboard.models import Session
from tests.conftest import todo, write_todos, write_todos_live
from tests.domain import plan_submit
from tests.hooks.conftest import SESSION_ID, load_fixture
from tests.planmode.test_socket import board_socket, receive_until

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def idle_after_ten_minutes(settings):
    settings.AGENTBOARD_SESSION_IDLE_MINUTES = 10


def quiet_for(session_id: str, minutes: float) -> None:
    Session.objects.filter(session_id=session_id).update(
        last_seen_at=timezone.now() - timedelta(minutes=minutes)
    )


def session(session_id: str) -> Session:
    return Session.objects.get(session_id=session_id)


def test_a_session_quiet_for_longer_than_the_idle_time_ends(user):
    write_todos(user, "sess-quiet", "sess-quiet", [todo("Work", "in_progress")])
    write_todos(user, "sess-busy", "sess-busy", [todo("Work", "in_progress")])
    quiet_for("sess-quiet", 11)
    quiet_for("sess-busy", 9)

    ended = sessions_end_idle().value

    assert ended == [session("sess-quiet").pk]
    assert not session("sess-quiet").is_active and session("sess-quiet").ended_quietly
    assert session("sess-busy").is_active


def test_a_session_whose_plan_waits_for_a_reviewer_is_not_idle(user):
    plan_submit(
        owner=user,
        session_id="sess-plan",
        agent_id="sess-plan",
        plan="# Plan\n",
        plan_file_path=None,
        source="api",
    )
    quiet_for("sess-plan", 60)

    assert sessions_end_idle().value == []
    assert session("sess-plan").is_active


def test_an_idle_time_of_zero_never_ends_a_session(user, settings):
    settings.AGENTBOARD_SESSION_IDLE_MINUTES = 0
    write_todos(user, "sess-quiet", "sess-quiet", [todo("Work")])
    quiet_for("sess-quiet", 60 * 24)

    assert sessions_end_idle().value == []


def test_a_session_that_went_quiet_comes_back_with_its_next_todo_write(user):
    write_todos(user, "sess-back", "sess-back", [todo("Work", "in_progress")])
    quiet_for("sess-back", 30)
    sessions_end_idle()

    write_todos(user, "sess-back", "sess-back", [todo("Work", "completed")])

    assert session("sess-back").is_active and not session("sess-back").ended_quietly


def test_a_session_that_ended_comes_back_with_its_next_hook(hook):
    hook(load_fixture("session_start.json"))
    hook(load_fixture("session_end.json"))
    assert not session(SESSION_ID).is_active

    hook(load_fixture("user_prompt_submit.json"))

    assert session(SESSION_ID).is_active


async def test_an_open_overview_sees_the_session_end_and_come_back(user, reviewer):
    await write_todos_live(user, "sess-live", "sess-live", [todo("Work", "in_progress")])
    browser = await board_socket(reviewer, "")
    await browser.receive_from(timeout=5)
    await Session.objects.filter(session_id="sess-live").aupdate(
        last_seen_at=timezone.now() - timedelta(minutes=30)
    )

    await write(sessions_end_idle)
    ended = await receive_until(browser, 'data-group="ended"')
    assert "went quiet" in ended

    await write_todos_live(user, "sess-live", "sess-live", [todo("Work", "completed")])
    back = await receive_until(browser, 'data-group="active"')
    assert 'data-active="true"' in back
    await browser.disconnect()
