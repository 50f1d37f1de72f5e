from __future__ import annotations

import asyncio
import threading

import pytest
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.db import transaction
from django.test.signals import template_rendered

from dashboard.core.errors import ServiceError
from dashboard.live import publisher as live
from dashboard.live.boards import Boards
from dashboard.models import Agent, Session
from tests.conftest import BROWSER_ORIGIN, parse_html, todo, write_todos, write_todos_live

pytestmark = pytest.mark.django_db(transaction=True)

SESSION = "sess-live"


@pytest.fixture
def browser(open_socket, session_cookie):
    """A logged-in browser opening the board socket of a page; returns it with its snapshot."""

    async def open_page(path: str = "/ws/board/"):
        socket, accepted = await open_socket(
            path, {"Origin": BROWSER_ORIGIN, "Cookie": f"sessionid={session_cookie}"}
        )
        assert accepted
        snapshot = await socket.receive_from(timeout=5)
        return socket, parse_html(snapshot)

    return open_page


@pytest.fixture
def rendered_templates():
    """Names of the templates rendered from now on, in any thread."""
    names: list[str] = []
    lock = threading.Lock()

    def on_render(sender, template, **kwargs):
        with lock:
            names.append(template.name)

    template_rendered.connect(on_render)
    yield names
    template_rendered.disconnect(on_render)


async def write(*args, **kwargs):
    """A write through the writer; returns once its live update has been sent."""
    result = await write_todos_live(*args, **kwargs)
    await live.settled()
    return result


async def pk_of_agent(agent_id: str) -> int:
    return await database_sync_to_async(
        lambda: Agent.objects.get(session__session_id=SESSION, agent_id=agent_id).pk
    )()


async def pk_of_session(session_id: str = SESSION) -> int:
    return await database_sync_to_async(lambda: Session.objects.get(session_id=session_id).pk)()


# --- who may connect --------------------------------------------------------------------------


async def test_it_closes_the_socket_of_a_browser_that_is_not_logged_in_with_4401(open_socket):
    socket, _ = await open_socket("/ws/board/", {"Origin": BROWSER_ORIGIN})
    assert await socket.receive_output(timeout=2) == {"type": "websocket.close", "code": 4401}


async def test_it_refuses_a_socket_opened_from_a_foreign_origin(open_socket, session_cookie):
    _, accepted = await open_socket(
        "/ws/board/", {"Origin": "https://evil.example", "Cookie": f"sessionid={session_cookie}"}
    )
    assert not accepted


async def test_it_closes_the_socket_of_an_unknown_session_with_4404(open_socket, session_cookie):
    socket, _ = await open_socket(
        "/ws/board/?session=nope",
        {"Origin": BROWSER_ORIGIN, "Cookie": f"sessionid={session_cookie}"},
    )
    assert await socket.receive_output(timeout=2) == {"type": "websocket.close", "code": 4404}


# --- snapshot on (re)connect ------------------------------------------------------------------


async def test_the_overview_socket_starts_with_the_session_list(browser, user):
    await write(
        user, SESSION, SESSION, [todo("Run tests", "completed"), todo("Ship")], cwd="/src/shop"
    )

    _, snapshot = await browser()

    session_list = snapshot.find("ol", id="session-list")
    assert session_list.attrs["hx-swap-oob"] == "true"
    row = session_list.find("li", cls="session-row")
    assert "shop" in row.text()
    assert "1/2" in row.text()


async def test_the_board_socket_starts_with_the_cards_of_the_session(browser, user):
    await write(user, SESSION, SESSION, [todo("Run tests", "in_progress", "Running tests")])
    await write(user, SESSION, "agent-2", [todo("Search code")], agent_type="Explore")

    _, snapshot = await browser(f"/ws/board/?session={SESSION}")

    cards = snapshot.find(id="cards")
    assert cards.attrs["hx-swap-oob"] == "true"
    assert [card.find(cls="agent-label").text() for card in cards.find_all("article")] == [
        "main",
        "Explore",
    ]
    assert "Running tests…" in cards.text()


async def test_a_reconnecting_board_gets_what_happened_while_it_was_away(browser, user):
    await write(user, SESSION, SESSION, [todo("Run tests", "in_progress")])
    socket, _ = await browser(f"/ws/board/?session={SESSION}")
    await socket.disconnect()

    await write(
        user, SESSION, SESSION, [todo("Run tests", "completed"), todo("Ship", "in_progress")]
    )
    _, snapshot = await browser(f"/ws/board/?session={SESSION}")

    assert "Tasks (1/2)" in snapshot.find(id="cards").text()


# --- live updates -----------------------------------------------------------------------------


async def test_a_write_pushes_the_rerendered_card_to_the_sessions_board(browser, user):
    await write(user, SESSION, SESSION, [todo("Run tests", "in_progress"), todo("Ship")])
    socket, _ = await browser(f"/ws/board/?session={SESSION}")

    await write(
        user,
        SESSION,
        SESSION,
        [todo("Run tests", "completed"), todo("Ship", "in_progress", "Shipping")],
    )

    fragment = parse_html(await socket.receive_from(timeout=5))
    card = fragment.find("article", id=f"agent-{await pk_of_agent(SESSION)}")
    assert card.attrs["hx-swap-oob"] == "true"
    assert "Tasks (1/2)" in card.text()
    assert card.find("li", cls="is-completed").text() == "☒ Run tests"
    assert "Shipping…" in card.find("li", cls="is-in_progress").text()
    assert fragment.find(id="session-header").attrs["hx-swap-oob"] == "true"


async def test_a_new_subagents_card_is_appended_to_the_board(browser, user):
    await write(user, SESSION, SESSION, [todo("Plan", "in_progress")])
    socket, _ = await browser(f"/ws/board/?session={SESSION}")

    await write(
        user, SESSION, "agent-2", [todo("Search code", "in_progress")], agent_type="Explore"
    )

    fragment = parse_html(await socket.receive_from(timeout=5))
    inserts = [e for e in fragment.iter() if e.attrs.get("hx-swap-oob") == "beforeend:#cards"]
    assert len(inserts) == 1
    assert inserts[0].find("article").find(cls="agent-label").text() == "Explore"


async def test_a_write_pushes_the_updated_row_to_the_overview(browser, user):
    await write(user, SESSION, SESSION, [todo("Run tests", "in_progress"), todo("Ship")])
    socket, _ = await browser()

    await write(
        user, SESSION, SESSION, [todo("Run tests", "completed"), todo("Ship", "in_progress")]
    )

    fragment = parse_html(await socket.receive_from(timeout=5))
    row = fragment.find("li", id=f"session-row-{await pk_of_session()}")
    assert row.attrs["hx-swap-oob"] == "true"
    assert "1/2" in row.find(cls="count").text()


async def test_a_new_session_is_put_on_top_of_the_overview(browser, user):
    socket, _ = await browser()

    await write(user, "sess-new", "sess-new", [todo("Start")], cwd="/src/brand-new")

    fragment = parse_html(await socket.receive_from(timeout=5))
    inserts = [
        e for e in fragment.iter() if e.attrs.get("hx-swap-oob") == "afterbegin:#session-list"
    ]
    assert len(inserts) == 1
    assert "brand-new" in inserts[0].text()


async def test_a_write_to_another_session_does_not_reach_this_board(browser, user):
    await write(user, SESSION, SESSION, [todo("Run tests")])
    socket, _ = await browser(f"/ws/board/?session={SESSION}")

    await write(user, "sess-other", "sess-other", [todo("Elsewhere")])

    assert await socket.receive_nothing(timeout=0.3)


async def test_a_write_refused_inside_its_transaction_pushes_nothing(browser, user):
    await write(user, SESSION, SESSION, [todo("Run tests")])
    await database_sync_to_async(Session.objects.update)(permission_mode="plan")
    socket, _ = await browser(f"/ws/board/?session={SESSION}")

    with pytest.raises(ServiceError, match="plan mode"):
        await write(user, SESSION, SESSION, [todo("Run tests", "in_progress")])

    assert await socket.receive_nothing(timeout=0.3)


async def test_a_write_rolled_back_with_its_transaction_pushes_nothing(browser, user):
    await write(user, SESSION, SESSION, [todo("Run tests")])
    socket, _ = await browser(f"/ws/board/?session={SESSION}")

    @database_sync_to_async
    def write_then_fail() -> None:
        with transaction.atomic():
            write_todos(user, SESSION, SESSION, [todo("Never stored")])
            raise RuntimeError("the caller failed after writing")

    with pytest.raises(RuntimeError):
        await write_then_fail()

    assert await socket.receive_nothing(timeout=0.3)


async def test_every_browser_gets_the_same_fragment_rendered_once(
    browser, user, rendered_templates
):
    await write(user, SESSION, SESSION, [todo("Run tests", "in_progress"), todo("Ship")])
    first, _ = await browser(f"/ws/board/?session={SESSION}")
    second, _ = await browser(f"/ws/board/?session={SESSION}")
    overview_a, _ = await browser()
    overview_b, _ = await browser()
    rendered_templates.clear()

    await write(
        user, SESSION, SESSION, [todo("Run tests", "completed"), todo("Ship", "in_progress")]
    )

    board_html = await first.receive_from(timeout=5)
    assert await second.receive_from(timeout=5) == board_html
    row_html = await overview_a.receive_from(timeout=5)
    assert await overview_b.receive_from(timeout=5) == row_html
    assert "Tasks (1/2)" in parse_html(board_html).text()
    assert rendered_templates.count("dashboard/_agent_card.html") == 1
    assert rendered_templates.count("dashboard/_session_row.html") == 1


# --- one channel per process ------------------------------------------------------------------


async def members_of(group: str) -> int:
    """How many channels the channel layer holds in `group` (in memory, or in Redis)."""
    layer = get_channel_layer()
    if hasattr(layer, "groups"):
        return len(layer.groups.get(group, {}))
    return await layer.connection(layer.consistent_hash(group)).zcard(layer._group_key(group))


async def test_a_processs_boards_are_one_member_of_their_group_and_all_get_each_fragment(
    browser, user, rendered_templates
):
    await write(user, SESSION, SESSION, [todo("Run tests", "in_progress")])
    group = live.session_group(await pk_of_session())
    sockets = [(await browser(f"/ws/board/?session={SESSION}"))[0] for _ in range(3)]
    assert await members_of(group) == 1

    await write(user, SESSION, SESSION, [todo("Run tests", "completed")])

    fragments = [await socket.receive_from(timeout=5) for socket in sockets]
    assert len(set(fragments)) == 1
    assert "Tasks (1/1)" in parse_html(fragments[0]).text()

    for socket in sockets:
        await socket.disconnect()
    await asyncio.sleep(0.05)  # the group is left in a task of its own
    assert await members_of(group) == 0
    rendered_templates.clear()
    await write(user, SESSION, SESSION, [todo("Run tests", "completed"), todo("Ship")])
    # Nobody watches the session any more: its card is not rendered for nobody.
    assert "dashboard/_agent_card.html" not in rendered_templates


async def test_a_fragment_that_comes_while_the_snapshot_is_read_follows_the_snapshot(
    browser, user, monkeypatch
):
    from dashboard.live.consumers import BoardConsumer

    await write(user, SESSION, SESSION, [todo("Run tests", "in_progress")])
    group = live.session_group(await pk_of_session())
    read_snapshot = database_sync_to_async(BoardConsumer.__dict__["_snapshot"].func)

    async def snapshot_overtaken(consumer: BoardConsumer) -> str:
        html = await read_snapshot(consumer)
        # A newer fragment, rendered after the snapshot was read, arrives before it is sent.
        await get_channel_layer().group_send(
            group, live.fragment(group, '<p id="newer" hx-swap-oob="true">newer</p>')
        )
        await asyncio.sleep(0.05)
        return html

    monkeypatch.setattr(BoardConsumer, "_snapshot", snapshot_overtaken)

    socket, snapshot = await browser(f"/ws/board/?session={SESSION}")

    assert snapshot.find(id="cards") is not None
    assert parse_html(await socket.receive_from(timeout=5)).find(id="newer").text() == "newer"


class Recorder:
    """A board socket that keeps what it is sent (or fails to send, like a broken one)."""

    def __init__(self, broken: bool = False) -> None:
        self.broken = broken
        self.sent: list[str] = []
        self.wire = None

    async def send(self, text_data: str | None = None) -> None:
        if self.broken:
            raise ConnectionResetError("gone")
        self.sent.append(text_data or "")


async def test_a_broken_board_does_not_keep_a_fragment_from_the_others():
    boards = Boards(asyncio.get_running_loop())
    broken, working = Recorder(broken=True), Recorder()
    for socket in (broken, working):
        await boards.join(socket, ["board.test"])
        await boards.snapshot_sent(socket)

    await boards.deliver("board.test", "<p>one</p>")

    assert working.sent == ["<p>one</p>"]
    for socket in (broken, working):
        boards.leave(socket, ["board.test"])
