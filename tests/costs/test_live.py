"""What a session costs follows live on the open overview and board."""

from __future__ import annotations

import pytest
from channels.db import database_sync_to_async

from dashboard.core.writer import write
from dashboard.costs.otlp import UsageReport, metrics_usage, report_identity
from dashboard.costs.selectors import usage_by_agent
from dashboard.costs.services import usage_store
from dashboard.live import publisher as live
from dashboard.models import Agent, Client, Session
from tests.conftest import BROWSER_ORIGIN, parse_html, todo, write_todos_live
from tests.costs.conftest import SESSION, usage_metrics

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def browser(open_socket, session_cookie):
    async def open_page(path: str):
        socket, accepted = await open_socket(
            path, {"Origin": BROWSER_ORIGIN, "Cookie": f"sessionid={session_cookie}"}
        )
        assert accepted
        await socket.receive_from(timeout=5)  # the snapshot
        return socket

    return open_page


async def export(user, **figures) -> None:
    """An export as the receiver stores it, through the writer; returns once it is sent."""
    exported = metrics_usage(usage_metrics(**figures))
    await write(usage_store, owner=user, reports=exported.reports, client=exported.client)
    await live.settled()


async def test_an_export_updates_the_overview_row_and_the_board_header(browser, user):
    await write_todos_live(user, SESSION, SESSION, [todo("Run the tests", "in_progress")])
    session_pk = await database_sync_to_async(lambda: Session.objects.get(session_id=SESSION).pk)()
    overview = await browser("/ws/board/")
    board = await browser(f"/ws/board/?session={SESSION}")

    await export(user, tokens={"input": 2000, "output": 100}, cost=2.5)

    row = parse_html(await overview.receive_from(timeout=5)).find(
        "li", id=f"session-row-{session_pk}"
    )
    assert row.find(cls="cost").text() == "$2.50"
    header = parse_html(await board.receive_from(timeout=5)).find(id="session-header")
    assert header.find(cls="usage").text() == "2.1k tokens · $2.50 so far"


def card_in(message: str, agent_pk: int) -> list:
    return parse_html(message).find_all("article", id=f"agent-{agent_pk}")


async def agent_pk(session_id: str, agent_id: str) -> int:
    found = await Agent.objects.aget(session__session_id=session_id, agent_id=agent_id)
    return found.pk


async def test_an_export_shows_the_agents_new_cost_on_its_card_once(browser, user):
    await write_todos_live(user, SESSION, SESSION, [todo("Run the tests", "in_progress")])
    main = await agent_pk(SESSION, SESSION)
    board = await browser(f"/ws/board/?session={SESSION}")

    await export(user, tokens={"input": 2000, "output": 100}, cost=2.5)

    # One export, one update of the card.
    card = (await cards_shown(board, {main}))[main]
    assert card.find(cls="card-usage").text() == "Model usage so far: $2.50"


async def test_a_subagents_own_usage_shows_on_its_card_and_ends_the_main_cards_whole_session(
    browser, user
):
    """opencode reports each agent's messages as its own: once a subagent's arrive, the main
    card's figure is no longer the whole session's."""
    await write_todos_live(user, SESSION, SESSION, [todo("Plan", "in_progress")])
    await write_todos_live(user, SESSION, "ses_child0001", [todo("Look around", "in_progress")])
    main, child = await agent_pk(SESSION, SESSION), await agent_pk(SESSION, "ses_child0001")
    await store_message(user, SESSION, "msg_0001", cost=0.6)
    assert (await database_sync_to_async(usage_by_agent)([main]))[main].session_wide
    board = await browser(f"/ws/board/?session={SESSION}")

    await store_message(user, "ses_child0001", "msg_0002", cost=0.4)

    # The main card was shown a moment ago: it may follow in the next frame.
    cards = await cards_shown(board, {main, child})
    assert cards[child].find(cls="card-usage").text() == "Model usage so far: $0.40"
    assert cards[main].find(cls="card-usage").text() == "Model usage so far: $0.60"


async def cards_shown(board, agent_pks: set[int]) -> dict:
    """The cards of these agents as the board's next messages show them, each exactly once: it
    reads on until the board has sent nothing for a moment. A frame may carry one card, several,
    or only the session's header (each is rendered at most once a frame, so on a busy machine
    the header and a card that changed together can fall in frames of their own)."""
    cards: dict = {}
    while set(cards) != agent_pks or not await board.receive_nothing(timeout=0.3):
        message = await board.receive_from(timeout=5)
        for agent_pk in agent_pks:
            found = card_in(message, agent_pk)
            assert len(found) <= 1 and (not found or agent_pk not in cards), "a card shown twice"
            if found:
                cards[agent_pk] = found[0]
    return cards


async def store_message(user, agent_id: str, message_id: str, *, cost: float) -> None:
    """An assistant message's usage as opencode's plugin reports it, for an agent of SESSION."""
    report = UsageReport(
        session_id=SESSION,
        agent_id=agent_id,
        stream="events",
        identity=report_identity("opencode", message_id),
        model="gpt-5.5",
        observed_ns=1_795_690_876_000_000_000,
        input_tokens=900,
        output_tokens=40,
        cost_micros=round(cost * 1_000_000),
    )
    await write(usage_store, owner=user, reports=[report], client=Client.OPENCODE)
    await live.settled()
