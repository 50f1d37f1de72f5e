"""A huge list is bounded twice: at the edge (a clear 422 over AGENTBOARD_MAX_TODOS items) and
on the board, where a card shows a bounded part of any list so that its fragment always fits
in one socket message and every board watching the session keeps getting it."""

from __future__ import annotations

import json

import pytest
from django.conf import settings

from dashboard.live import publisher as live
from tests.conftest import BROWSER_ORIGIN, parse_html, todo, write_todos
from tests.hardening.conftest import stored_state
from tests.hooks.conftest import SESSION_ID, load_fixture

pytestmark = pytest.mark.django_db

SESSION = "sess-huge"
# Daphne closes a socket (1011) rather than send a message larger than this.
SOCKET_MESSAGE_LIMIT = 1024 * 1024
MAX_TODOS = settings.AGENTBOARD_MAX_TODOS


def numbered(count: int, *, in_progress: int | None = None, text: str = "Task") -> list[dict]:
    return [
        {
            "content": f"{text} {number}",
            "status": "completed"
            if in_progress is not None and number < in_progress
            else "in_progress"
            if number == in_progress
            else "pending",
        }
        for number in range(count)
    ]


# --- at the edge ----------------------------------------------------------------------------------


def test_a_list_over_the_maximum_is_refused_with_a_clear_422(agent_api):
    response = agent_api.put_todos(SESSION, SESSION, {"todos": numbered(MAX_TODOS + 1)})

    assert response.status_code == 422
    error = response.json()["error"]
    assert error["code"] == "validation_error"
    assert error["message"] == (
        f"body.todos: List should have at most {MAX_TODOS} items after validation, "
        f"not {MAX_TODOS + 1}."
    )
    assert stored_state()[0] == []


def test_a_list_of_the_maximum_is_accepted(agent_api):
    response = agent_api.put_todos(SESSION, SESSION, {"todos": numbered(MAX_TODOS)})

    assert response.status_code == 200
    assert response.json()["progress"]["total"] == MAX_TODOS


def test_a_hook_over_the_maximum_is_refused_and_a_task_cannot_grow_a_full_list(hook, user):
    too_long = load_fixture(
        "post_tool_use_todowrite.json", tool_input={"todos": numbered(MAX_TODOS + 1)}
    )
    assert hook(too_long).status_code == 422

    write_todos(user, SESSION_ID, SESSION_ID, numbered(MAX_TODOS))
    before = stored_state()
    response = hook(load_fixture("post_tool_use_task_create.json"))

    assert response.status_code == 422
    assert f"at most {MAX_TODOS} items" in response.json()["error"]["message"]
    assert stored_state() == before


async def test_a_frame_over_the_maximum_is_refused(agent_socket):
    frame = {"type": "todo_write", "id": 1, "session_id": SESSION, "agent_id": SESSION}
    await agent_socket.send_json_to({**frame, "todos": numbered(MAX_TODOS + 1)})

    reply = await agent_socket.receive_json_from(timeout=10)

    assert reply["error"]["code"] == "validation_error"
    assert reply["error"]["detail"][0]["loc"] == ["todos"]


# --- on the board ---------------------------------------------------------------------------------


def card_of(client, user) -> object:
    client.force_login(user)
    page = parse_html(client.get(f"/sessions/{SESSION}/").content)
    return page.find("article", cls="card")


def test_a_short_list_is_shown_whole(client, user):
    write_todos(user, SESSION, SESSION, numbered(30, in_progress=12))

    card = card_of(client, user)

    assert len(card.find_all("li", cls="todo")) == 30
    assert "more" not in card.find("ul", cls="todo-list").text()


def test_a_long_list_shows_the_current_item_and_the_next_ones_with_exact_counts(client, user):
    write_todos(user, SESSION, SESSION, numbered(500, in_progress=200))

    card = card_of(client, user)

    items = [li.text() for li in card.find_all("li", cls="todo")]
    assert items[0] == "⋯ 197 earlier items not shown"
    assert items[1] == "☒ Task 197"
    assert items[4].startswith("☐ Task 200…")  # the item in progress
    assert items[5] == "☐ Task 201"
    assert items[-1] == "⋯ and 273 more"
    assert len(items) == 2 + 30
    assert "Tasks (200/500)" in card.text()
    assert "Next: Task 201" in card.text()


def test_a_long_list_with_nothing_started_shows_its_beginning(client, user):
    write_todos(user, SESSION, SESSION, numbered(100))

    items = [li.text() for li in card_of(client, user).find_all("li", cls="todo")]

    assert items[0] == "☐ Task 0"
    assert items[-1] == "⋯ and 70 more"


def test_a_long_text_is_cut_on_the_card(client, user):
    write_todos(user, SESSION, SESSION, [todo("x" * 5000, "in_progress", "y" * 5000)])

    text = card_of(client, user).find("li", cls="todo").text()

    assert len(text) < 500
    assert "…" in text


def test_a_write_that_changes_many_items_gets_a_short_history_line(user):
    from dashboard.board.selectors import describe_revision

    old = numbered(1000, text="x" * 300)
    new = [{**item, "status": "completed"} for item in old]

    line = "; ".join(describe_revision(old, new))

    assert line.endswith("changed 996 more items; all done")
    assert len(line) < 1000


def hostile_list(count: int) -> list[dict]:
    """As big as a frame may be, of text that HTML escaping makes six times longer."""
    items = [{"content": "'" * 200, "status": "pending"} for _ in range(count)]
    items[count // 2]["status"] = "in_progress"
    return items


async def test_a_huge_list_still_shows_live_on_a_watching_board(
    open_socket, session_cookie, agent_socket, user
):
    await agent_socket.send_json_to(
        {"type": "todo_write", "session_id": SESSION, "agent_id": SESSION, "todos": []}
    )
    assert (await agent_socket.receive_json_from(timeout=5))["type"] == "ack"
    await live.settled()
    board, accepted = await open_socket(
        f"/ws/board/?session={SESSION}",
        {"Origin": BROWSER_ORIGIN, "Cookie": f"sessionid={session_cookie}"},
    )
    assert accepted
    await board.receive_from(timeout=5)  # the snapshot

    frame = {"type": "todo_write", "session_id": SESSION, "agent_id": SESSION}
    text = json.dumps({**frame, "todos": hostile_list(MAX_TODOS)})
    assert len(text.encode()) <= settings.AGENTBOARD_MAX_BODY_BYTES
    await agent_socket.send_to(text_data=text)
    assert (await agent_socket.receive_json_from(timeout=10))["type"] == "ack"

    message = await board.receive_from(timeout=10)
    assert len(message.encode()) < SOCKET_MESSAGE_LIMIT / 8
    card = parse_html(message).find("article", cls="card")
    assert f"Tasks (0/{MAX_TODOS})" in card.text()
    assert card.find("li", cls="is-in_progress")
    # 30 items from 3 before the one in progress (at the middle) on; the rest are counted.
    hidden_after = MAX_TODOS - (MAX_TODOS // 2 - 3) - 30
    assert card.find_all("li", cls="todo")[-1].text() == f"⋯ and {hidden_after:,} more"

    # A board opened now gets the whole session in one message too.
    again, _ = await open_socket(
        f"/ws/board/?session={SESSION}",
        {"Origin": BROWSER_ORIGIN, "Cookie": f"sessionid={session_cookie}"},
    )
    snapshot = await again.receive_from(timeout=10)
    assert len(snapshot.encode()) < SOCKET_MESSAGE_LIMIT / 8
    assert f"Tasks (0/{MAX_TODOS})" in parse_html(snapshot).find(id="cards").text()
