"""An agent's card, made in Python for speed (`dashboard.board.agent_card`): what it shows of
the agent, of what waits on a person and of its list, every text escaped, long texts cut as the
template filter did, and the ways a live update places it."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import datetime, timedelta

import pytest
from django.template.defaultfilters import truncatechars
from django.template.loader import render_to_string
from django.utils import timezone

from dashboard.activity.models import Concern, ConcernKind, Step
from dashboard.board import selectors
from dashboard.board.agent_card import agent_card
from dashboard.board.selectors import AgentCard
from dashboard.costs.selectors import AgentUsage
from dashboard.models import Agent, Session
from planmode.models import PermissionRequest, Plan, TerminalWait
from planmode.permissions import input_key
from tests.conftest import Element, parse_html, todo, write_todos
from todos.enforcer import FLAGS
from todos.models import AgentTracking, Continuation, EnforcerEvent, Todo

pytestmark = pytest.mark.django_db

SESSION = "card-1"
HELPER = "a4d2c8e9f01b77"
HOSTILE = '<script>alert("card")</script> & co'


@pytest.fixture
def board(user) -> Session:
    """A session whose main agent works through three items and whose Explore helper has
    finished its one."""
    write_todos(
        user,
        SESSION,
        SESSION,
        [
            todo("Write the card", "completed"),
            todo("Test the card", "in_progress", "Testing the card"),
            todo("Ship it"),
        ],
    )
    write_todos(user, SESSION, HELPER, [todo("Search", "completed")], agent_type="Explore")
    return Session.objects.get(session_id=SESSION)


def agent(agent_id: str = SESSION) -> Agent:
    return Agent.objects.select_related("session").get(
        session__session_id=SESSION, agent_id=agent_id
    )


def card_of(agent_id: str = SESSION) -> AgentCard:
    return selectors.agent_card(agent(agent_id).pk)


def shown(card: AgentCard, **variant) -> Element:
    return parse_html(agent_card(card, **variant)).find("article")


def bash_request(board: Session, by: Agent, command: str, **fields) -> PermissionRequest:
    """A Bash command of `by` waiting for a person."""
    tool_input = {"command": command}
    return PermissionRequest.objects.create(
        session=board,
        agent=by,
        tool_name="Bash",
        tool_input=tool_input,
        input_key=input_key("Bash", tool_input),
        **fields,
    )


def ago(**delta: float) -> datetime:
    return timezone.now() - timedelta(**delta)


def test_a_card_names_its_agent_and_shows_how_far_along_it_is(board):
    main = shown(card_of())

    assert main.attrs["id"] == f"agent-{agent().pk}"
    assert main.attrs["data-collapse-key"] == f"{SESSION}/{SESSION}"
    assert main.find("h2").text() == "main"
    assert main.find(cls="tasks-count").text() == "Tasks (1/3)"
    assert main.find(cls="bar").attrs["aria-valuetext"] == "1 of 3 done"
    assert [item.classes[1] for item in main.find_all("li", cls="todo")] == [
        "is-completed",
        "is-in_progress",
        "is-pending",
    ]
    assert main.find(cls="next").text() == "Next: Ship it"
    assert main.find_all(cls="done-word") == []
    assert main.find("button", cls="collapse-toggle").attrs["aria-label"] == (
        "Collapse the list of main"
    )

    helper = shown(card_of(HELPER))
    assert helper.find("h2").text() == "Explore a4d2c8"
    assert helper.find("code", cls="short-id").attrs["title"] == HELPER


def test_a_stopped_agent_is_dimmed_and_says_so(board):
    Agent.objects.filter(agent_id=HELPER).update(status=Agent.Status.STOPPED)

    helper = shown(card_of(HELPER))

    assert "is-stopped" in helper.classes
    assert helper.find("h2").text() == "Explore a4d2c8 stopped"
    assert "is-stopped" not in shown(card_of()).classes


def test_a_finished_list_says_all_done_and_an_empty_one_that_nothing_is_tracked(board, user):
    helper = shown(card_of(HELPER))
    assert helper.find(cls="all-done").text() == "All 1 task completed."
    assert helper.find(cls="done-word").text() == "✓ done"
    assert helper.find_all("ul", cls="todo-list") == []

    write_todos(user, SESSION, HELPER, [todo("A", "completed"), todo("B", "completed")])
    assert shown(card_of(HELPER)).find(cls="all-done").text() == "All 2 tasks completed."

    write_todos(user, SESSION, "newcomer", [])
    newcomer = shown(card_of("newcomer"))
    assert newcomer.find(cls="no-todos").text() == "No todos currently tracked."
    assert newcomer.find(cls="tasks-count").text() == "Tasks (0/0)"
    assert newcomer.find_all(cls="done-word") == []


def test_a_long_list_shows_its_current_part_and_counts_the_rest(board, user):
    items = [todo(f"Done {n}", "completed") for n in range(10)]
    items += [todo("Now", "in_progress")] + [todo(f"Later {n}") for n in range(29)]
    write_todos(user, SESSION, SESSION, items)
    card = card_of()

    main = shown(card)

    more = [item.text() for item in main.find_all("li", cls="todo-more")]
    assert more == ["⋯ 7 earlier items not shown", "⋯ and 3 more"]
    assert len(main.find_all("li", cls="todo")) == 2 + selectors.CARD_ITEMS
    assert main.find(cls="tasks-count").text() == "Tasks (10/40)"

    counted = shown(replace(card, hidden_before=1, hidden_after=1234))
    more = [item.text() for item in counted.find_all("li", cls="todo-more")]
    assert more == ["⋯ 1 earlier item not shown", "⋯ and 1,234 more"]


def test_what_waits_on_a_person_is_said_with_how_long_it_has_waited(board):
    main, helper = agent(), agent(HELPER)
    plan = Plan.objects.create(
        session=board,
        agent=main,
        revision=1,
        markdown="# Pagination\n\n1. Cursors",
        source="hook",
        submitted_at=ago(minutes=4),
    )
    request = bash_request(board, main, "make release", requested_at=ago(minutes=2))
    Concern.objects.create(
        agent=main,
        session=board,
        kind=ConcernKind.LOOPING,
        since=ago(minutes=3),
        detail="pytest tests/api failed 3 times",
    )
    TerminalWait.objects.create(agent=helper, notification_type="idle_prompt", since=ago(hours=2))
    Continuation.objects.create(
        agent=main, status="counting", unfinished=2, deadline=timezone.now() + timedelta(minutes=1)
    )

    card = shown(card_of())

    assert "is-waiting" in card.classes
    lines = {line.attrs["data-wait"]: line for line in card.find_all("p", cls="card-waiting")}
    assert list(lines) == ["plan", "look", "permission"]  # oldest first; the countdown is a toast
    assert lines["plan"].text() == "Waiting for a review of its plan Pagination · 4 min"
    assert lines["plan"].find("a").attrs["href"] == f"/plans/{plan.pk}/"
    assert lines["plan"].find("time").attrs["title"].startswith("Submitted ")
    assert lines["permission"].text() == "Waiting for you: Bash make release · 2 min"
    assert lines["permission"].find("a").attrs["href"] == f"/inbox/requests/{request.pk}/"
    assert lines["permission"].find("time").attrs["title"].startswith("Asked ")
    assert lines["look"].text() == (
        "⟳ Needs a look — Looping: pytest tests/api failed 3 times · 3 min"
    )
    waiting = shown(card_of(HELPER)).find("p", cls="card-waiting")
    assert waiting.text() == "Waiting for your input in its terminal · 2 h"
    assert waiting.find("time").attrs["title"].startswith("Since ")


def test_the_card_says_what_the_agent_is_doing_when_nothing_waits(board):
    main = agent()
    Step.objects.create(
        agent=main,
        session=board,
        tool_use_id="t-1",
        tool_name="Bash",
        summary="pytest tests/api",
        detail="the API tests",
        started_at=ago(seconds=40),
    )

    now = shown(card_of()).find("p", cls="card-now")

    assert now.text() == "▶ Running pytest tests/api · 40 s"
    assert now.find("span", cls="now").attrs["data-now"] == "running"

    Step.objects.filter(agent=main).update(ended_at=ago(seconds=38), outcome="succeeded")
    thinking = shown(card_of()).find("span", cls="now")
    assert re.fullmatch(r"Thinking · \d+ s", thinking.text())
    assert "data-idle-at" in thinking.attrs

    Agent.objects.filter(pk=main.pk).update(turn_ended_at=timezone.now())
    idle = shown(card_of()).find("span", cls="now")
    assert re.fullmatch(r"Idle · \d+ s", idle.text())
    assert idle.find("time").attrs["title"].startswith("Its turn ended ")

    TerminalWait.objects.create(agent=main, notification_type="idle_prompt")
    assert shown(card_of()).find_all("p", cls="card-now") == []


def test_a_countdown_shows_the_time_left_and_a_button_to_cancel_it(board):
    countdown = Continuation.objects.create(
        agent=agent(),
        status="counting",
        unfinished=2,
        deadline=timezone.now() + timedelta(minutes=10, seconds=30),
    )

    toast = shown(card_of()).find("div", cls="toast")

    assert re.fullmatch(r"Resumes in 10:(30|29) \(2 tasks left\) Cancel", toast.text())
    assert 625 < float(toast.attrs["data-countdown-seconds"]) <= 630
    button = toast.find("button")
    assert button.attrs["hx-post"] == f"/continuations/{countdown.pk}/cancel/"
    assert button.attrs["aria-label"] == "Cancel the continuation of main"

    Continuation.objects.filter(pk=countdown.pk).update(unfinished=1)
    assert "(1 task left)" in shown(card_of()).find("div", cls="toast").text()


def test_another_enforcer_is_noted_on_the_main_card_only(board):
    Session.objects.filter(pk=board.pk).update(other_enforcer="oh-my-opencode")

    assert shown(card_of()).find(cls="card-note").text() == (
        "↻ oh-my-opencode continues this agent with its own enforcer; "
        "Agentboard's stays out of its way."
    )
    assert shown(card_of(HELPER)).find_all(cls="card-note") == []


def test_a_card_shows_its_cost_and_says_when_it_is_the_whole_sessions(board):
    session_wide = AgentUsage(input_tokens=1200, cost_micros=4_120_000, session_wide=True)
    main = shown(replace(card_of(), parts={"usage": session_wide}))
    usage = main.find(cls="card-usage")
    assert usage.text() == "Model usage so far: $4.12 for the session"
    assert usage.attrs["title"].startswith("Reported for the session as a whole")
    assert usage.find("span", title="1.2k tokens; cost reported by the agent").text() == "$4.12"

    # A subagent's own figure never claims the session's.
    helper = shown(replace(card_of(HELPER), parts={"usage": session_wide})).find(cls="card-usage")
    assert helper.text() == "Model usage so far: $4.12"
    assert "title" not in helper.attrs

    estimated = AgentUsage(output_tokens=220, cost_micros=3_500, estimated=True)
    usage = shown(replace(card_of(), parts={"usage": estimated})).find(cls="card-usage")
    assert usage.text() == "Model usage so far: ≈$0.0035"
    assert usage.find("span", title="220 tokens; cost estimated")

    tokens_only = AgentUsage(input_tokens=4_100_000)
    usage = shown(replace(card_of(), parts={"usage": tokens_only})).find(cls="card-usage")
    assert usage.text() == "Model usage so far: 4.1M tokens"
    assert usage.find("span", title="4.1M tokens; no cost reported")

    assert shown(card_of()).find_all(cls="card-usage") == []


def test_flags_show_as_badges_and_their_history_folded_with_when(board):
    main = agent()
    AgentTracking.objects.filter(agent=main).update(current_flags=["no_in_progress"])
    EnforcerEvent.objects.create(
        agent=main, kind="flag", code="stale_list", text="Stale.", created_at=ago(minutes=16)
    )
    EnforcerEvent.objects.create(
        agent=main, kind="flag", code="batch_completion", text="Batch.", created_at=ago(days=3)
    )

    card = shown(card_of())

    badge = card.find("ul", cls="flags").find("li")
    assert badge.attrs["data-flag"] == "no_in_progress"
    assert badge.text() == f"⚑ {FLAGS['no_in_progress']}"
    history = card.find("details", cls="flag-history")
    assert history.find("summary").text() == "Flag history (2)"
    assert [line.text() for line in history.find_all("li")] == [
        "16 minutes ago Stale.",
        "3 days ago Batch.",
    ]
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", history.find("time").attrs["title"])
    assert shown(card_of(HELPER)).find_all("details") == []


def test_text_from_agents_stays_text(board):
    # Ids are checked where agents write; a card escapes them all the same.
    hostile = Agent.objects.create(session=board, agent_id=HOSTILE, agent_type=HOSTILE)
    Todo.objects.bulk_create(
        Todo(agent=hostile, position=n, content=HOSTILE, status="pending") for n in range(2)
    )
    Session.objects.filter(pk=board.pk).update(other_enforcer=HOSTILE)
    bash_request(board, hostile, HOSTILE)
    Plan.objects.create(
        session=board, agent=hostile, revision=1, markdown=f"# `{HOSTILE}`", source="hook"
    )
    Concern.objects.create(
        agent=hostile, session=board, kind=ConcernKind.STUCK, since=ago(minutes=1), detail=HOSTILE
    )
    EnforcerEvent.objects.create(agent=hostile, kind="flag", code="x", text=HOSTILE)
    Step.objects.create(
        agent=agent(),
        session=board,
        tool_use_id="t-1",
        tool_name="Edit",
        summary=HOSTILE,
        detail=HOSTILE,
        started_at=ago(seconds=5),
    )
    card = replace(card_of(HOSTILE), flags=[(HOSTILE, HOSTILE)])

    html = agent_card(card) + agent_card(card_of())
    document = parse_html(html)

    assert document.find_all("script") == []
    assert "&lt;script&gt;alert(&quot;card&quot;)&lt;/script&gt; &amp; co" in html
    article = document.find("article")
    assert article.find(cls="agent-label").text() == HOSTILE
    assert article.find("code", cls="short-id").attrs["title"] == HOSTILE
    assert article.find(cls="tasks-count").text() == "Tasks (0/2)"
    assert article.find("li", cls="todo").find(cls="text").text() == HOSTILE
    assert article.find(cls="next").text() == f"Next: {HOSTILE}"
    waits = {line.attrs["data-wait"]: line for line in article.find_all("p", cls="card-waiting")}
    assert waits["plan"].find("a").text() == HOSTILE
    assert waits["permission"].find("code").text() == HOSTILE
    assert f"Stuck: {HOSTILE} ·" in waits["look"].text()
    assert article.find("li", cls="badge-flag").attrs["data-flag"] == HOSTILE
    assert article.find("li", cls="badge-flag").text() == f"⚑ {HOSTILE}"
    assert article.find("details").find("li").text().endswith(f"ago {HOSTILE}")
    main = document.find_all("article")[1]
    now = main.find("span", cls="now")
    assert now.find("code", cls="now-subject").text() == HOSTILE
    assert now.find("span", cls="meta").text() == HOSTILE
    assert main.find(cls="card-note").text().startswith(f"↻ {HOSTILE} continues this agent")


def test_long_texts_are_cut_as_the_template_filter_cuts_them(board, user):
    long_item = "Rewrite " + "the whole module " * 20
    write_todos(user, SESSION, SESSION, [todo("Now", "in_progress"), todo(long_item)])
    main = agent()
    command = "echo " + "é" * 150
    bash_request(board, main, command)
    detail = "the same command " * 10
    Concern.objects.create(
        agent=main, session=board, kind=ConcernKind.LOOPING, since=ago(minutes=1), detail=detail
    )

    card = shown(card_of())

    assert card.find(cls="next").text() == f"Next: {truncatechars(long_item, 200)}"
    assert card.find(cls="next").text().endswith("…")
    waits = {line.attrs["data-wait"]: line for line in card.find_all("p", cls="card-waiting")}
    assert waits["permission"].find("code").text() == truncatechars(command, 80)
    assert len(waits["permission"].find("code").text()) == 80
    cut = truncatechars(detail, 90).strip()
    assert waits["look"].text() == f"⟳ Needs a look — Looping: {cut} · 1 min"


def test_a_live_update_replaces_the_card_or_goes_in_where_it_is_told(board):
    card = card_of()

    assert "hx-swap-oob" not in agent_card(card)
    replaced = agent_card(card, oob=True)
    assert shown(card, oob=True).attrs["hx-swap-oob"] == "true"
    assert replaced.startswith("\n<article ")
    inserted = agent_card(card, oob=True, oob_insert="beforeend:#cards", flash=True)
    assert inserted.startswith('<div hx-swap-oob="beforeend:#cards">\n<article ')
    assert inserted.endswith("</article></div>")
    article = parse_html(inserted).find("article")
    assert "flash" in article.classes
    assert "hx-swap-oob" not in article.attrs


def test_the_board_and_its_live_updates_render_the_card_made_here(board):
    cards = selectors.board_cards(board)
    live = {"card": cards[0], "oob": True, "oob_insert": "beforeend:#cards", "flash": True}

    assert render_to_string("dashboard/_agent_card.html", live) == (
        agent_card(cards[0], oob=True, oob_insert="beforeend:#cards", flash=True) + "\n"
    )
    page = render_to_string("dashboard/_cards.html", {"cards": cards, "oob": True})
    assert all(agent_card(card) + "\n" in page for card in cards)
