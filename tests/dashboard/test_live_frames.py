"""Live fragments under the real server (`manage.py serve`): the boards of a process get each
fragment framed once and written to every connection (`dashboard.live.boards`)."""

from __future__ import annotations

import asyncio
import json
import urllib.request

from tests.conftest import parse_html
from tests.e2e import test_board_live as board_live
from tests.liveserver import LiveServer

SESSION = "frames-session"


def put_todos(server: LiveServer, todos: list[dict]) -> None:
    board_live.put_todos(server, SESSION, SESSION, todos)


async def open_boards(server: LiveServer, count: int) -> list:
    browser = server.log_in()
    boards = []
    for _ in range(count):
        board, snapshot = await server.open_board(browser, f"?session={SESSION}")
        assert parse_html(snapshot).find(id="cards") is not None
        boards.append(board)
    return boards


async def first_showing(board, text: str) -> str:
    """The first message the board receives that shows `text` (fragments of earlier writes may
    come first)."""
    async with asyncio.timeout(10):
        while True:
            message = await board.recv()
            if text in message:
                return message


async def test_every_board_gets_the_same_fragment_even_when_one_has_just_closed(
    agentboard_server,
):
    server = agentboard_server
    put_todos(server, [{"content": "Start", "status": "in_progress", "activeForm": "Starting"}])
    boards = await open_boards(server, 4)
    try:
        await boards[1].close()  # a tab closed: the fragment goes on to the others
        hostile = '<script>alert("x")</script> Ship it'
        put_todos(
            server,
            [
                {"content": "Start", "status": "completed", "activeForm": "Starting"},
                {"content": hostile, "status": "in_progress", "activeForm": "Shipping"},
            ],
        )
        shown = [await first_showing(board, "Ship it") for board in boards[:1] + boards[2:]]
    finally:
        await asyncio.gather(*(board.close() for board in boards))

    assert len(set(shown)) == 1
    card = parse_html(shown[0])
    assert "Tasks (1/2)" in card.text()
    assert hostile in card.text()  # shown as text
    assert "<script>" not in shown[0]


async def test_a_large_fragment_in_any_script_arrives_whole_on_every_board(agentboard_server):
    server = agentboard_server
    put_todos(server, [{"content": "Start", "status": "pending"}])
    boards = await open_boards(server, 2)
    todos = [{"content": f"élément {n:03d} " + "ü" * 150, "status": "pending"} for n in range(199)]
    todos.append({"content": "the last item", "status": "in_progress", "activeForm": "Ending"})
    try:
        put_todos(server, todos)
        shown = [await first_showing(board, "the last item") for board in boards]
    finally:
        await asyncio.gather(*(board.close() for board in boards))

    assert len(shown[0].encode()) > 16_384  # many TCP segments, one websocket frame
    assert shown[0] == shown[1]
    items = parse_html(shown[0]).find_all("li", cls="is-pending")
    assert items  # the card's window of a long list
    assert all(item.text().strip().endswith("ü" * 150) for item in items)


def post_hook(server: LiveServer, payload: dict) -> dict:
    request = urllib.request.Request(
        f"{server.url}/hooks/claude-code",
        data=json.dumps(payload).encode(),
        method="POST",
        headers={"Authorization": f"Bearer {server.token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.load(response)


def tool_hook(event: str, **changes) -> dict:
    return {
        "session_id": SESSION,
        "cwd": "/home/dev/shop",
        "hook_event_name": event,
        "tool_name": "Bash",
        "tool_input": {"command": "pytest tests/api"},
        "tool_use_id": "toolu_live_1",
        **changes,
    }


async def test_a_card_and_its_row_show_a_step_starting_and_ending_live(agentboard_server):
    server = agentboard_server
    put_todos(server, [{"content": "Test", "status": "in_progress", "activeForm": "Testing"}])
    [board] = await open_boards(server, 1)
    overview, _ = await server.open_board(server.log_in())
    try:
        post_hook(server, tool_hook("PreToolUse"))
        card = parse_html(await first_showing(board, "pytest tests/api"))
        row = parse_html(await first_showing(overview, "pytest tests/api"))
        post_hook(server, tool_hook("PostToolUse", tool_response={"stdout": "ok"}))
        thinking = parse_html(await first_showing(board, "Thinking"))
    finally:
        await asyncio.gather(board.close(), overview.close())

    now = card.find("article").find(cls="now")
    assert now.attrs["data-now"] == "running"
    assert now.text().startswith("▶ Running pytest tests/api · ")
    assert now.find("code").text() == "pytest tests/api"
    assert row.find("li").find(cls="now").attrs["data-now"] == "running"
    assert thinking.find(cls="now").attrs["data-now"] == "thinking"
