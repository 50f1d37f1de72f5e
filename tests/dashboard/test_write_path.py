"""The write path: what one write costs, how bursts are coalesced, durability across kill -9."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest
from channels.layers import get_channel_layer
from django.db import connection, transaction
from django.test.signals import template_rendered
from django.test.utils import CaptureQueriesContext

from dashboard.integrations.claude_code.hooks import record_and_enforce
from dashboard.integrations.claude_code.schemas import HookInput
from dashboard.live import publisher as live
from tests.conftest import todo, write_todos, write_todos_live
from todos.models import TodoRevision

pytestmark = pytest.mark.django_db(transaction=True)

SESSION = "sess-write-path"


def step_hook(n: int) -> dict:
    return {
        "session_id": SESSION,
        "hook_event_name": "PostToolUse",
        "cwd": "/src/shop",
        "tool_name": "Read",
        "tool_use_id": f"toolu_{n}",
    }


def test_a_tool_use_of_a_known_agent_costs_two_queries(user):
    write_todos(user, SESSION, SESSION, [todo("Read the code", "in_progress")])
    for n in range(2):  # warm: the agent is known and touched this second
        with transaction.atomic():
            record_and_enforce(owner=user, hook=HookInput(**step_hook(n)), payload=step_hook(n))

    with CaptureQueriesContext(connection) as queries, transaction.atomic():
        record_and_enforce(owner=user, hook=HookInput(**step_hook(9)), payload=step_hook(9))

    # Read (and lock) the agent, its session, its counters and any countdown; count the step.
    # BEGIN and COMMIT are the writer's, once per batch of many writes.
    statements = [
        q["sql"]
        for q in queries.captured_queries
        if q["sql"].split()[0] in {"SELECT", "INSERT", "UPDATE", "DELETE"}
    ]
    assert len(statements) == 2, statements


def test_a_todo_write_costs_the_same_number_of_queries_for_8_or_80_items(user):
    def cost(count: int) -> int:
        items = [todo(f"Task {n}") for n in range(count)]
        write_todos(user, SESSION, SESSION, items)
        with CaptureQueriesContext(connection) as queries:
            write_todos(user, SESSION, SESSION, [{**items[0], "status": "in_progress"}, *items[1:]])
        return len(queries.captured_queries)

    assert cost(8) == cost(80) <= 16


def test_a_flush_costs_the_same_queries_for_one_card_or_five_with_their_history(user):
    """What one live update of a busy session reads, however many of its agents changed: the
    cards, the session's header and overview row, the new history lines."""

    def flush_cost(agents: int) -> tuple[int, set[str]]:
        changed = live.Due()
        for n in range(agents):
            written = write_todos(user, SESSION, f"{SESSION}-sub-{n}", [todo(f"Task {n}")])
            changed.add(written.changes)
        with CaptureQueriesContext(connection) as queries:
            messages = live.render(changed)
        return len(queries.captured_queries), {group for group, _ in messages}

    one, groups = flush_cost(1)
    five, _ = flush_cost(5)
    # (Two of them read the latest step of the cards' agents and of the row's session, one
    # whose overviews show the row (`live.routes_of`), one what the session cost and one what
    # each card's agent cost; three what people told the agents from the board: the cards'
    # pauses and messages, the row's pauses.)
    assert one == five <= 20
    # The session's board, and its row on the admins' overview and on everyone else's (no team
    # owns it), rendered once for both.
    from dashboard.models import Session

    session_pk = Session.objects.get(session_id=SESSION).pk
    assert groups == {f"board.session.{session_pk}", "board.overview", "board.overview.open"}


@pytest.fixture
def watched_session(user):
    """A browser's board socket on the session, as a channel in the session's group."""

    async def open_board():
        await write_todos_live(user, SESSION, SESSION, [todo("Start", "in_progress")])
        await live.settled()
        from dashboard.models import Session

        session = await Session.objects.aget(session_id=SESSION)
        layer = get_channel_layer()
        channel = await layer.new_channel()
        await layer.group_add(live.session_group(session.pk), channel)
        return layer, channel

    return open_board


async def test_a_burst_of_writes_for_one_agent_renders_its_card_once_per_frame(
    user, settings, watched_session
):
    settings.AGENTBOARD_LIVE_FRAME_MS = 300
    layer, board = await watched_session()
    cards: list[str] = []
    lock = threading.Lock()

    def on_render(sender, template, **kwargs):
        if template.name == "dashboard/_agent_card.html":
            with lock:
                cards.append(template.name)

    template_rendered.connect(on_render)
    try:
        await asyncio.sleep(0.35)  # a quiet period: the next change shows at once
        writes = [
            write_todos_live(user, SESSION, SESSION, [todo(f"Step {n}", "in_progress")])
            for n in range(1, 21)
        ]
        await asyncio.gather(*writes)
        await live.settled()
    finally:
        template_rendered.disconnect(on_render)
    messages = []
    while True:
        try:
            messages.append(await asyncio.wait_for(layer.receive(board), 0.2))
        except TimeoutError:
            break
    # At most one render at the start of the burst and one at the end of its frame.
    assert 1 <= len(cards) <= 2
    assert "Step 20" in messages[-1]["html"]
    revisions = await TodoRevision.objects.filter(agent__session__session_id=SESSION).acount()
    assert revisions == 21  # every write was stored; only the rendering was coalesced


async def test_a_write_of_another_agent_in_the_session_shows_without_waiting_for_the_frame(
    user, settings, watched_session
):
    settings.AGENTBOARD_LIVE_FRAME_MS = 5000
    layer, board = await watched_session()  # the main agent's card was just rendered
    loop = asyncio.get_running_loop()
    started = loop.time()

    await write_todos_live(user, SESSION, "subagent-1", [todo("Explore the API", "in_progress")])
    message = await asyncio.wait_for(layer.receive(board), 2.5)

    # The subagent's card has its own frame: it is not held for the main card's five seconds.
    assert "Explore the API" in message["html"]
    assert loop.time() - started < 2.5


async def test_a_session_nobody_watches_costs_no_render(user):
    cards: list[str] = []

    def on_render(sender, template, **kwargs):
        cards.append(template.name)

    template_rendered.connect(on_render)
    try:
        await write_todos_live(user, SESSION, SESSION, [todo("Unwatched", "in_progress")])
        await live.settled()
    finally:
        template_rendered.disconnect(on_render)
    assert "dashboard/_agent_card.html" not in cards


# --- against a real server -------------------------------------------------------------------


def put(server, n: int, session: str = "durable") -> int:
    body = {"todos": [{"content": f"Write {n}", "status": "in_progress", "activeForm": "Writing"}]}
    request = urllib.request.Request(
        f"{server.url}/api/v1/sessions/{session}/agents/agent-{n % 5}/todos",
        data=json.dumps(body).encode(),
        method="PUT",
        headers={"Authorization": f"Bearer {server.token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


@pytest.mark.skipif(
    os.environ.get("DATABASE_URL", "").startswith("postgres"),
    reason="Checks the embedded SQLite file; PostgreSQL's durability is its own.",
)
def test_every_acknowledged_write_survives_kill_9(server_factory):
    server = server_factory()
    with ThreadPoolExecutor(8) as pool:
        statuses = list(pool.map(lambda n: put(server, n), range(40)))
    assert statuses == [200] * 40
    os.kill(server.process.pid, signal.SIGKILL)
    server.process.wait(10)
    server.process = None

    server.start()

    for n in range(5):
        request = urllib.request.Request(
            f"{server.url}/api/v1/sessions/durable/agents/agent-{n}/todos",
            headers={"Authorization": f"Bearer {server.token}"},
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            assert json.loads(response.read())["revision"] == 8  # 40 writes over 5 agents


@pytest.mark.parametrize("spelling", ["default", "url"])
def test_fifty_concurrent_writers_get_no_server_error(server_factory, tmp_path, spelling):
    if os.environ.get("DATABASE_URL", "").startswith("postgres"):
        pytest.skip("The SQLite spellings are checked on the embedded setup.")
    env = {"DATABASE_URL": f"sqlite:///{tmp_path / 'url.sqlite3'}"} if spelling == "url" else {}
    server = server_factory(env=env)
    with ThreadPoolExecutor(50) as pool:
        statuses = list(pool.map(lambda n: put(server, n, session=f"many-{n}"), range(100)))
    assert [status for status in statuses if status >= 500] == []
    assert statuses == [200] * 100


async def test_a_request_that_goes_away_before_its_write_does_not_stop_the_others():
    from dashboard.core.writer import write

    started, release = threading.Event(), threading.Event()

    def slow() -> str:
        started.set()
        release.wait(10)
        return "first"

    first = asyncio.ensure_future(write(slow))
    await asyncio.to_thread(started.wait, 5)
    # Queued behind the slow write: one request goes away, the other waits for its answer.
    gone = asyncio.ensure_future(write(lambda: "gone"))
    waiting = asyncio.ensure_future(write(lambda: "third"))
    await asyncio.sleep(0.05)
    gone.cancel()
    release.set()

    assert await asyncio.wait_for(first, 5) == "first"
    assert await asyncio.wait_for(waiting, 5) == "third"


async def busy_writer() -> tuple[asyncio.Future, threading.Event]:
    """The writer busy with a write until the event is set: what comes meanwhile queues."""
    from dashboard.core.writer import write

    started, release = threading.Event(), threading.Event()

    def hold_the_writer() -> None:
        started.set()
        release.wait(10)

    first = asyncio.ensure_future(write(hold_the_writer))
    await asyncio.to_thread(started.wait, 5)
    return first, release


async def test_writes_that_can_wait_go_behind_the_others_and_all_are_written_in_order():
    from dashboard.core.writer import write, write_behind, writer

    done: list[str] = []

    def record(name: str) -> str:
        done.append(name)
        return name

    first, release = await busy_writer()
    # A burst of held hooks' plans, then an agent's TodoWrite, all queued while the writer works.
    held = [asyncio.ensure_future(write_behind(record, name=f"plan {n}")) for n in range(10)]
    await asyncio.sleep(0.02)
    urgent = asyncio.ensure_future(write(record, name="todo write"))
    await asyncio.sleep(0.02)
    release.set()

    assert await asyncio.wait_for(urgent, 5) == "todo write"
    await asyncio.wait_for(asyncio.gather(first, *held), 5)
    # The TodoWrite went first in the first batch, before any of the plans.
    assert done.index("todo write") == 0
    assert [name for name in done if name != "todo write"] == [f"plan {n}" for n in range(10)]
    writer.drain()


async def test_a_drain_waits_for_the_writes_that_can_wait_too():
    from dashboard.core.writer import write_behind, writer

    done: list[int] = []
    first, release = await busy_writer()
    held = [asyncio.ensure_future(write_behind(lambda n=n: done.append(n))) for n in range(7)]
    await asyncio.sleep(0.02)
    release.set()

    await asyncio.to_thread(writer.drain)

    assert sorted(done) == list(range(7))
    await asyncio.gather(first, *held)


def test_a_write_caught_in_a_deadlock_with_another_process_is_run_again_not_refused(user):
    """Another process's writer holds agent B's row and then wants agent A's, while this
    writer's batch holds A's and wants B's: PostgreSQL ends this write (it waited first). What
    came before it commits, it runs again, and both agents' lists are saved; nothing is
    refused."""
    if connection.vendor != "postgresql":
        pytest.skip("Row locks that can deadlock are PostgreSQL's; SQLite has one writer.")
    from dashboard.core.writer import writer
    from dashboard.models import Agent

    for name in ("agent-a", "agent-b"):
        write_todos(user, "sess-deadlock", name, [todo("First", "pending")])
    a, b = (Agent.objects.get(agent_id=name).pk for name in ("agent-a", "agent-b"))
    # Another process's connection: one of its own (not from this process's pool), in a
    # transaction.
    import psycopg

    database = connection.settings_dict
    other = psycopg.connect(
        dbname=database["NAME"],
        user=database["USER"],
        password=database["PASSWORD"] or None,
        host=database["HOST"] or None,
        port=database["PORT"] or None,
    )
    started, release = threading.Event(), threading.Event()

    def hold() -> None:
        started.set()
        release.wait(10)

    def replace(agent_id: str):
        todos = [todo(f"Second of {agent_id}", "in_progress")]
        return write_todos(user, "sess-deadlock", agent_id, todos)

    try:
        # The other process's transaction holds B's row.
        other.execute("SELECT 1 FROM dashboard_agent WHERE id = %s FOR UPDATE", [b])
        # One batch: A's write (locks A), then B's (waits for the other process).
        blocker = writer.submit(hold, {}, None)
        started.wait(5)
        first = writer.submit(replace, {"agent_id": "agent-a"}, None)
        second = writer.submit(replace, {"agent_id": "agent-b"}, None)
        release.set()
        blocker.result(5)
        # The writer's wait for B's row shows only in PostgreSQL's own view of its sessions.
        waiting = "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
        deadline = time.monotonic() + 5
        while not other.execute(waiting).fetchone()[0]:
            assert time.monotonic() < deadline, "the writer never waited for agent B's row"
            time.sleep(0.02)
        # Now the other process wants A's row: a cycle, which PostgreSQL breaks after a second.
        other.execute("SELECT 1 FROM dashboard_agent WHERE id = %s FOR UPDATE", [a])
        other.commit()
        assert first.result(10).revision == 2
        assert second.result(10).revision == 2
    finally:
        other.close()
    latest = {
        revision.agent.agent_id: revision.new_todos[0]["content"]
        for revision in TodoRevision.objects.filter(number=2).select_related("agent")
    }
    assert latest == {"agent-a": "Second of agent-a", "agent-b": "Second of agent-b"}


async def test_another_write_waits_for_at_most_one_write_that_can_wait(monkeypatch):
    """However slow each held hook's write is, the others never share a batch with them, and
    a write that arrives while they are written waits for the one being written only: their
    batch ends as soon as another write is queued."""
    import time

    from dashboard.core import writer as writing
    from dashboard.core.writer import write, write_behind, writer

    # A slice long enough for all six plans: only the TodoWrite's arrival ends it.
    monkeypatch.setattr(writing, "BEHIND_SLICE", 5.0)
    batches: list[list[str]] = [[]]
    plan_started = asyncio.Event()
    loop = asyncio.get_running_loop()

    def slow_plan(name: str) -> None:
        if name == "plan 1":
            loop.call_soon_threadsafe(plan_started.set)
        time.sleep(0.05)
        batches[-1].append(name)

    def quick_todo(name: str) -> None:
        batches[-1].append(name)

    def batch_ended(_written: object) -> None:
        batches.append([])

    writer.within_batch.append(batch_ended)
    try:
        first, release = await busy_writer()
        held = [asyncio.ensure_future(write_behind(slow_plan, name=f"plan {n}")) for n in range(6)]
        await asyncio.sleep(0.02)
        todos = [asyncio.ensure_future(write(quick_todo, name=f"todo {n}")) for n in range(3)]
        await asyncio.sleep(0.02)
        release.set()
        await asyncio.wait_for(asyncio.gather(*todos), 10)
        # The TodoWrites went first, in a batch of their own; then the plans.
        await asyncio.wait_for(plan_started.wait(), 10)
        late = asyncio.ensure_future(write(quick_todo, name="late todo"))
        await asyncio.wait_for(asyncio.gather(first, *held, late), 10)
    finally:
        writer.within_batch.remove(batch_ended)
    writer.drain()
    written = [batch for batch in batches if batch]
    assert written[0] == ["todo 0", "todo 1", "todo 2"]
    # The late TodoWrite came while plan 1 was written: that batch ended with plan 1, and the
    # late one went alone, before the other plans.
    assert written[1] == ["plan 0", "plan 1"]
    assert written[2] == ["late todo"]
    assert [name for batch in written[3:] for name in batch] == [f"plan {n}" for n in range(2, 6)]


async def test_writes_that_can_wait_go_on_while_other_writes_keep_coming(monkeypatch):
    """Under a stream of other writes that never lets the queue empty, the oldest write that
    can wait still goes once it has waited BEHIND_MAX_WAIT: held hooks are never starved."""
    import time

    from dashboard.core import writer as writing
    from dashboard.core.writer import write_behind, writer

    monkeypatch.setattr(writing, "BEHIND_MAX_WAIT", 0.05)
    stop = threading.Event()

    def stream() -> None:
        # Each write takes a millisecond, and more are queued faster than that.
        while not stop.is_set():
            for _ in range(5):
                writer.submit(lambda: time.sleep(0.001), {}, None)
            time.sleep(0.001)

    pump = threading.Thread(target=stream)
    pump.start()
    try:
        await asyncio.sleep(0.05)
        held = [write_behind(lambda n=n: n) for n in range(3)]
        assert await asyncio.wait_for(asyncio.gather(*held), 5) == [0, 1, 2]
    finally:
        stop.set()
        pump.join()
        await asyncio.to_thread(writer.drain, 30)
