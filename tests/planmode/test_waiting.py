"""The one definition of "waiting on a person": one query finds it, and the header count, the
overview's pinned rows, the boards' banners, the cards and the inbox all read it, for each
viewer as the one visibility rule says (a reviewer: every session; anyone else: their own)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from dashboard.board import selectors
from dashboard.core.visibility import EVERYONE, audience_of
from dashboard.models import Agent, Session
from planmode import inbox
from planmode.inbox import inbox_count, inbox_items, waiting
from planmode.models import Plan, TerminalWait
from tests.conftest import parse_html
from tests.planmode.test_inbox_views import make_request, make_session
from todos.models import Continuation

pytestmark = pytest.mark.django_db


@pytest.fixture
def everything(user, other_user):
    """Of dana's: a plan and a Bash request in one session, a countdown in another, and an
    agent waiting in its terminal; of ana's: an MCP request."""
    now = timezone.now()
    shop, shop_agent = make_session(user, "sess-shop", "/home/dev/shop")
    Plan.objects.create(
        session=shop,
        agent=shop_agent,
        revision=1,
        markdown="# Pagination",
        source="hook",
        submitted_at=now - timezone.timedelta(minutes=9),
    )
    make_request(shop_agent, requested_at=now - timezone.timedelta(minutes=3))
    _, api_agent = make_session(user, "sess-api", "/home/dev/api")
    Continuation.objects.create(
        agent=api_agent,
        status="counting",
        unfinished=2,
        deadline=now + timezone.timedelta(seconds=272),
        created_at=now - timezone.timedelta(seconds=28),
    )
    _, docs_agent = make_session(user, "sess-docs", "/home/dev/docs")
    TerminalWait.objects.create(
        agent=docs_agent,
        notification_type="idle_prompt",
        message="Claude is waiting for your input",
        since=now - timezone.timedelta(minutes=1),
    )
    _, infra_agent = make_session(other_user, "sess-infra", "/home/ana/infra")
    make_request(
        infra_agent,
        tool="mcp__github__create_pull_request",
        tool_input={"repo": "shop", "title": "Cursor pagination"},
        requested_at=now - timezone.timedelta(minutes=5),
    )


def test_one_query_finds_everything_waiting_oldest_first(everything, user):
    with CaptureQueriesContext(connection) as queries:
        found = waiting()
    assert len(queries) == 1
    assert [w.kind for w in found] == ["plan", "permission", "permission", "terminal", "countdown"]
    # dana sees her own four; a reviewer all five.
    assert [w.kind for w in waiting(audience_of(user))] == [
        "plan",
        "permission",
        "terminal",
        "countdown",
    ]
    assert inbox_count(EVERYONE).total == 5 and inbox_count(audience_of(user)).total == 4


def test_compiled_once_per_viewer_it_answers_as_the_orm_for_any_sessions_and_agents(
    everything, user, other_user
):
    """The union is compiled once per viewer and number of ids, then run with other ids: what
    it finds is what the ORM finds, times as the ORM gives them, and what waits after a write."""
    sessions = sorted(Session.objects.values_list("pk", flat=True))
    agents = sorted(Agent.objects.values_list("pk", flat=True))

    def orm(audience, **ids) -> list:
        rows = [inbox.Waiting(*row) for row in inbox._union(audience, ids)]
        return sorted(rows, key=lambda w: (w.since, inbox.KINDS.index(w.kind), w.pk))

    for audience in (EVERYONE, audience_of(user), audience_of(other_user)):
        assert waiting(audience) == orm(audience)
        # The same number of ids each time: each run finds its own sessions' waits.
        for pair in (sessions[:2], sessions[1:3], sessions[2:4]):
            assert waiting(audience, sessions=pair) == orm(audience, sessions=pair)
        for one in agents:
            assert waiting(audience, agents=[one]) == orm(audience, agents=[one])
    found = waiting(EVERYONE)
    assert all(w.since.tzinfo is not None for w in found)
    assert len(found) == 5

    with CaptureQueriesContext(connection) as queries:
        waiting(audience_of(user))
        waiting(EVERYONE, sessions=sessions[:2])
    assert len(queries) == 2  # one each, nothing compiled again (no other query either)
    # The SQL is kept, not the answer: a new plan waits at once.
    _, agent = make_session(user, "sess-new", "/home/dev/new")
    Plan.objects.create(
        session=agent.session, agent=agent, revision=1, markdown="# New", source="hook"
    )
    assert len(waiting(audience_of(user))) == 5 and len(waiting(EVERYONE)) == 6


def test_a_terminal_wait_behind_a_request_of_the_same_agent_is_counted_once(user):
    _, agent = make_session(user)
    make_request(agent)
    TerminalWait.objects.create(agent=agent, notification_type="permission_prompt")
    assert [w.kind for w in waiting()] == ["permission"]


def test_the_overview_pins_what_waits_and_each_row_sums_to_the_header_count(
    everything, user, other_user
):
    summaries = selectors.overview(audience=EVERYONE)
    pinned = [s for s in summaries if s.group == "waiting"]
    assert [s.session.session_id for s in pinned] == [
        "sess-shop",
        "sess-infra",
        "sess-docs",
        "sess-api",
    ]
    assert sum(len(s.waits) for s in pinned) == inbox_count(EVERYONE).total == 5
    # Each viewer's own waits come first: dana's rows before ana's, whose row waits on ana.
    mine = [s.session.session_id for s in selectors.overview(audience=audience_of(user))][:3]
    assert mine == ["sess-shop", "sess-docs", "sess-api"]
    assert (
        selectors.overview(audience=audience_of(other_user))[0].session.session_id == "sess-infra"
    )


def test_overview_rows_and_board_banners_say_what_waits_and_for_how_long(
    everything, client, reviewer
):
    client.force_login(reviewer)
    page = client.get("/").content.decode()
    rows = {row.attrs["id"]: row for row in parse_html(page).find_all("li", cls="session-row")}
    assert len(rows) == 4
    texts = " | ".join(row.text() for row in rows.values())
    assert "Plan waiting 9 min : Pagination" in texts
    assert "and 1 more" in texts
    assert "MCP github · create_pull_request waiting 5 min" in texts
    assert "Resumes in 4:3" in texts and "2 tasks left" in texts
    assert "Terminal waiting 1 min : waiting for your input in its terminal" in texts
    assert sum(int(row.attrs["data-waits"]) for row in rows.values()) == 5

    board = parse_html(client.get("/sessions/sess-shop/").content)
    banner = board.find(id="session-attention")
    assert "hidden" not in banner.attrs
    kinds = [item.attrs["data-wait"] for item in banner.find_all(cls="attention-item")]
    assert kinds == ["plan", "permission"]
    assert banner.find("button", value="allow").text() == "Allow"
    assert banner.find("button", value="deny").text() == "Deny"
    assert "Review the plan" in banner.text()
    card = board.find("article", cls="card")
    assert [p.attrs["data-wait"] for p in card.find_all(cls="card-waiting")] == [
        "plan",
        "permission",
    ]

    countdown = parse_html(client.get("/sessions/sess-api/").content).find(id="session-attention")
    assert "Resumes in 4:3" in countdown.text()
    assert countdown.find("button").text() == "Cancel the continuation"


def test_the_board_answers_a_request_in_place_and_is_told_why_not(
    everything, client, user, other_user
):
    ana_request = next(i for i in inbox_items(EVERYONE) if i.session.session_id == "sess-infra")
    client.force_login(user)
    refused = client.post(
        f"/inbox/requests/{ana_request.pk}/decide/",
        {"action": "deny", "message": "Not on main", "from": "board"},
        headers={"HX-Request": "true"},
    )
    assert refused.status_code == 403
    assert refused["Content-Type"].startswith("text/plain")
    assert "Only reviewers, or the person whose session it is" in refused.content.decode()
    assert inbox_count(EVERYONE).total == 5

    own = next(i for i in inbox_items(audience_of(user)) if i.kind == "permission")
    answered = client.post(
        f"/inbox/requests/{own.pk}/decide/",
        {"action": "allow", "from": "board"},
        headers={"HX-Request": "true"},
    )
    assert answered.status_code == 204
    assert inbox_count(audience_of(user)).total == 3

    # A deny without the reason the agent needs is refused, in one sentence; nothing changes.
    plan_session_request = make_request(own.agent, tool_input={"command": "rm -rf build"})
    unexplained = client.post(
        f"/inbox/requests/{plan_session_request.pk}/decide/",
        {"action": "deny", "from": "board"},
        headers={"HX-Request": "true"},
    )
    assert unexplained.status_code == 422
    assert unexplained.content.decode().startswith("Say why in the message")
    assert inbox_count(audience_of(user)).total == 4
