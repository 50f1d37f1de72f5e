from __future__ import annotations

import asyncio
import json

import pytest
from channels.layers import get_channel_layer
from django.test import AsyncClient, Client

from dashboard.live import publisher as live
from dashboard.models import Agent, AgentToken, Session
from tests.hooks.conftest import HOOK_URL, SESSION_ID, SUBAGENT_ID, load_fixture
from todos.models import TodoRevision

pytestmark = pytest.mark.django_db


def revisions(agent_id: str = SESSION_ID) -> list[TodoRevision]:
    return list(
        TodoRevision.objects.filter(agent__session__session_id=SESSION_ID, agent__agent_id=agent_id)
    )


def todos_of(agent_id: str = SESSION_ID) -> list[tuple[str, str]]:
    agent = Agent.objects.get(session__session_id=SESSION_ID, agent_id=agent_id)
    return [(todo.content, todo.status) for todo in agent.todos.all()]


# --- lifecycle -------------------------------------------------------------------------------


def test_session_start_puts_the_session_on_the_board(hook, user):
    response = hook(load_fixture("session_start.json"))

    assert response.status_code == 200
    assert response.json() == {}
    session = Session.objects.get(session_id=SESSION_ID)
    assert session.owner == user
    assert session.cwd == "/home/dev/shop"
    assert session.project == "shop"
    assert session.permission_mode == "default"
    assert [agent.label for agent in session.agents.all()] == ["main"]


def test_a_subagent_gets_its_own_card_labelled_with_its_type_and_stops(hook):
    hook(load_fixture("session_start.json"))
    hook(load_fixture("subagent_start.json"))

    subagent = Agent.objects.get(agent_id=SUBAGENT_ID)
    assert subagent.label == "Explore"
    assert subagent.parent.agent_id == SESSION_ID
    assert subagent.status == Agent.Status.RUNNING

    assert hook(load_fixture("subagent_stop.json")).json() == {}
    subagent.refresh_from_db()
    assert subagent.status == Agent.Status.STOPPED
    assert subagent.stopped_at is not None
    assert Agent.objects.get(agent_id=SESSION_ID).status == Agent.Status.RUNNING


def test_the_subagent_stop_sent_by_compact_adds_no_phantom_card(hook):
    hook(load_fixture("session_start.json"))
    # /compact sends a SubagentStop (agent_type "") for a subagent that never started.
    compacting = load_fixture("subagent_stop.json", agent_id="acompact0001", agent_type="")

    assert hook(compacting).json() == {}

    assert list(Agent.objects.values_list("agent_id", flat=True)) == [SESSION_ID]


def test_session_end_ends_the_session_and_a_resume_brings_it_back(hook):
    hook(load_fixture("session_start.json"))
    hook(load_fixture("subagent_start.json"))

    hook(load_fixture("session_end.json"))
    session = Session.objects.get(session_id=SESSION_ID)
    assert session.ended_at is not None
    assert set(session.agents.values_list("status", flat=True)) == {"stopped"}

    hook(load_fixture("session_start.json", source="resume"))
    session.refresh_from_db()
    assert session.is_active
    assert session.agents.get(agent_id=SESSION_ID).status == "running"


def test_the_permission_mode_of_any_event_is_shown(hook):
    hook(load_fixture("user_prompt_submit.json", permission_mode="plan"))
    assert Session.objects.get(session_id=SESSION_ID).permission_mode == "plan"

    hook(load_fixture("post_tool_use_todowrite.json"))
    assert Session.objects.get(session_id=SESSION_ID).permission_mode == "acceptEdits"


def test_an_unknown_permission_mode_is_ignored(hook):
    hook(load_fixture("stop.json", permission_mode="someFutureMode"))
    assert hook(load_fixture("stop.json", permission_mode="someFutureMode")).status_code == 200
    assert Session.objects.get(session_id=SESSION_ID).permission_mode == "default"


@pytest.mark.parametrize(
    "name", ["user_prompt_submit.json", "stop.json", "pre_compact.json", "session_end.json"]
)
def test_activity_events_move_the_last_event_time(hook, name):
    hook(load_fixture("session_start.json"))
    Session.objects.filter(session_id=SESSION_ID).update(last_seen_at="2020-01-01T00:00:00Z")

    assert hook(load_fixture(name)).json() == {}
    assert Session.objects.get(session_id=SESSION_ID).last_seen_at.year > 2020


def test_a_notification_counts_as_activity(hook):
    payload = load_fixture(
        "stop.json", hook_event_name="Notification", message="Claude is waiting for your input"
    )
    assert hook(payload).json() == {}
    assert Session.objects.filter(session_id=SESSION_ID).exists()


# --- TodoWrite -------------------------------------------------------------------------------


def test_a_todowrite_updates_the_main_agents_list(hook):
    assert hook(load_fixture("post_tool_use_todowrite.json")).json() == {}

    assert todos_of() == [
        ("Add a dark mode toggle to Settings", "completed"),
        ("Store the theme in the settings context", "in_progress"),
        ("Run the tests and the build", "pending"),
    ]
    [revision] = revisions()
    assert revision.source == "hook"
    assert revision.idempotency_key == "toolu_01Xq3N5dTodoWrite0001"
    assert revision.new_todos[1]["activeForm"] == "Storing the theme in the settings context"


def test_the_legacy_item_shape_keeps_ids_and_priorities(hook):
    assert hook(load_fixture("post_tool_use_todowrite_legacy.json")).status_code == 200

    agent = Agent.objects.get(agent_id=SESSION_ID)
    assert [(t.external_id, t.priority, t.status) for t in agent.todos.all()] == [
        ("1", "high", "in_progress"),
        ("2", "medium", "pending"),
        ("3", "low", "pending"),
    ]


def test_a_subagents_todowrite_goes_to_its_own_list(hook):
    hook(load_fixture("post_tool_use_todowrite.json"))
    hook(load_fixture("post_tool_use_todowrite_subagent.json"))

    assert todos_of(SUBAGENT_ID) == [
        ("Search for theme handling", "completed"),
        ("Summarize findings", "in_progress"),
    ]
    assert len(todos_of()) == 3
    assert Agent.objects.get(agent_id=SUBAGENT_ID).label == "Explore"


def test_a_hook_delivered_twice_makes_one_revision(hook, client):
    payload = load_fixture("post_tool_use_todowrite.json")
    assert hook(payload).status_code == 200
    assert hook(payload).status_code == 200

    assert len(revisions()) == 1


def test_a_todowrite_is_recorded_even_while_the_session_is_in_plan_mode(hook):
    hook(load_fixture("user_prompt_submit.json", permission_mode="plan"))
    response = hook(load_fixture("post_tool_use_todowrite.json", permission_mode="plan"))

    assert response.status_code == 200
    assert len(todos_of()) == 3


def test_an_invalid_todo_item_is_refused_with_where_it_is(hook):
    payload = load_fixture("post_tool_use_todowrite.json")
    payload["tool_input"]["todos"][1]["status"] = "almost"

    response = hook(payload)

    assert response.status_code == 422
    error = response.json()["error"]
    assert error["code"] == "validation_error"
    assert error["message"].startswith("body.tool_input.todos.1.status:")
    assert not Session.objects.exists()


# --- the Task tools --------------------------------------------------------------------------


def task_update(tool_use_id: str, **tool_input) -> dict:
    return load_fixture(
        "post_tool_use_task_update.json",
        tool_use_id=tool_use_id,
        tool_input={"taskId": "7", **tool_input},
    )


def test_taskcreate_adds_an_item_to_the_checklist(hook):
    hook(load_fixture("post_tool_use_todowrite.json"))

    assert hook(load_fixture("post_tool_use_task_create.json")).json() == {}

    agent = Agent.objects.get(agent_id=SESSION_ID)
    added = agent.todos.last()
    assert (added.content, added.active_form, added.status, added.external_id) == (
        "Wire the toggle into the header",
        "Wiring the toggle into the header",
        "pending",
        "7",
    )
    assert agent.todos.count() == 4
    assert revisions()[-1].idempotency_key == "toolu_01TaskCreate00000005"


def test_taskupdate_changes_status_subject_and_active_form(hook):
    hook(load_fixture("post_tool_use_task_create.json"))

    hook(load_fixture("post_tool_use_task_update.json"))
    assert todos_of() == [("Wire the toggle into the header", "in_progress")]

    hook(
        task_update(
            "toolu_rename",
            subject="Put the toggle in the header",
            activeForm="Putting the toggle in the header",
        )
    )
    todo = Agent.objects.get(agent_id=SESSION_ID).todos.get()
    assert (todo.content, todo.active_form) == (
        "Put the toggle in the header",
        "Putting the toggle in the header",
    )


def test_taskupdate_deleted_removes_the_item(hook):
    hook(load_fixture("post_tool_use_task_create.json"))
    second = load_fixture(
        "post_tool_use_task_create.json",
        tool_use_id="toolu_second",
        tool_input={"subject": "Write the docs", "description": "docs"},
        tool_response={"task": {"id": 8, "subject": "Write the docs"}},
    )
    hook(second)

    hook(task_update("toolu_delete", status="deleted"))

    assert todos_of() == [("Write the docs", "pending")]


def test_task_progress_counts_like_todowrite(hook, client, reviewer):
    hook(load_fixture("post_tool_use_task_create.json"))
    hook(
        load_fixture(
            "post_tool_use_task_create.json",
            tool_use_id="toolu_second",
            tool_input={"subject": "Write the docs"},
            tool_response={"task": {"id": "8"}},
        )
    )
    hook(load_fixture("post_tool_use_task_update.json"))

    client.force_login(reviewer)
    page = client.get(f"/sessions/{SESSION_ID}/").content.decode()
    assert "Tasks (0/2)" in page
    assert "Wiring the toggle into the header…" in page


def test_a_repeated_taskupdate_does_not_undo_a_later_change(hook):
    hook(load_fixture("post_tool_use_task_create.json"))
    started = load_fixture("post_tool_use_task_update.json")
    hook(started)
    hook(task_update("toolu_done", status="completed"))
    hook(
        load_fixture(
            "post_tool_use_task_create.json",
            tool_use_id="toolu_next",
            tool_input={"subject": "Next"},
            tool_response={"task": {"id": "9"}},
        )
    )

    assert hook(started).status_code == 200

    assert todos_of() == [("Next", "pending")]
    assert [r.idempotency_key for r in revisions()] == [
        "toolu_01TaskCreate00000005",
        "toolu_01TaskUpdate00000006",
        "toolu_done",
        "toolu_next",
    ]


def test_task_completed_marks_the_item_done(hook):
    hook(load_fixture("post_tool_use_task_create.json"))
    hook(
        load_fixture(
            "post_tool_use_task_create.json",
            tool_use_id="toolu_other",
            tool_input={"subject": "Other"},
            tool_response={"task": {"id": "8"}},
        )
    )

    assert hook(load_fixture("task_completed.json")).json() == {}
    assert todos_of() == [("Wire the toggle into the header", "completed"), ("Other", "pending")]

    hook(load_fixture("task_completed.json"))
    assert len(revisions()) == 3


@pytest.mark.parametrize("tools", ["TodoWrite", "the Task tools"])
def test_a_list_claude_code_completed_reads_back_all_done_over_the_api(hook, agent_api, tools):
    if tools == "TodoWrite":
        done = load_fixture("post_tool_use_todowrite.json", tool_use_id="toolu_all_done")
        for item in done["tool_input"]["todos"]:
            item["status"] = "completed"
        hook(load_fixture("post_tool_use_todowrite.json"))
        hook(done)
        total = 3
    else:
        hook(load_fixture("post_tool_use_task_create.json"))
        hook(load_fixture("task_completed.json"))
        total = 1

    session = agent_api.get(f"/api/v1/sessions/{SESSION_ID}").json()
    todos = agent_api.get_todos(SESSION_ID, SESSION_ID).json()

    assert [item["status"] for item in todos["todos"]] == ["completed"] * total
    for progress in (session["progress"], todos["progress"]):
        assert (progress["completed"], progress["total"]) == (total, total)


def test_task_created_adds_a_task_once_and_the_tools_own_hook_adds_its_spinner_text(hook):
    # Claude Code sends TaskCreated before the PostToolUse of the TaskCreate that made it.
    created = load_fixture("task_completed.json", hook_event_name="TaskCreated")

    hook(created)
    hook(created)
    assert Agent.objects.get(agent_id=SESSION_ID).todos.get().active_form == ""
    hook(load_fixture("post_tool_use_task_create.json"))

    assert todos_of() == [("Wire the toggle into the header", "pending")]
    todo = Agent.objects.get(agent_id=SESSION_ID).todos.get()
    assert todo.active_form == "Wiring the toggle into the header"
    # One change, one revision: the spinner text completes the one TaskCreated recorded.
    [revision] = revisions()
    assert revision.new_todos[0]["activeForm"] == "Wiring the toggle into the header"
    assert revision.idempotency_key == "toolu_01TaskCreate00000005"


def subagent_task_create(task_id: str = "7", subject: str | None = None) -> dict:
    payload = load_fixture(
        "post_tool_use_task_create.json",
        agent_id=SUBAGENT_ID,
        agent_type="Explore",
        tool_use_id=f"toolu_sub_create_{task_id}",
        tool_response={"task": {"id": task_id}},
    )
    if subject:
        payload["tool_input"] = {"subject": subject}
    return payload


def test_a_subagents_task_events_without_agent_id_go_to_its_own_card(hook):
    """Claude Code 2.1.19x: TaskCreated / TaskCompleted carry no agent_id, even for a
    subagent's tasks; the task id its own TaskCreate reported says whose they are."""
    hook(load_fixture("post_tool_use_todowrite.json"))
    main_before = todos_of()
    hook(subagent_task_create())
    hook(subagent_task_create("8", "Read the routes"))

    hook(load_fixture("task_completed.json"))

    assert todos_of(SUBAGENT_ID) == [
        ("Wire the toggle into the header", "completed"),
        ("Read the routes", "pending"),
    ]
    assert todos_of() == main_before


def test_a_subagents_task_announced_before_its_own_hook_moves_to_its_card(hook):
    hook(load_fixture("post_tool_use_todowrite.json"))
    main_before = todos_of()
    # TaskCreated first, without agent_id: it can only land on the main card...
    hook(load_fixture("task_completed.json", hook_event_name="TaskCreated"))
    assert len(todos_of()) == len(main_before) + 1

    # ...until the subagent's own TaskCreate hook says whose it is.
    hook(subagent_task_create())

    assert todos_of() == main_before
    assert todos_of(SUBAGENT_ID) == [("Wire the toggle into the header", "pending")]
    todo = Agent.objects.get(agent_id=SUBAGENT_ID).todos.get()
    assert todo.active_form == "Wiring the toggle into the header"


def test_an_update_of_an_unknown_task_changes_nothing(hook):
    hook(load_fixture("post_tool_use_task_update.json"))

    assert revisions() == []
    assert Session.objects.filter(session_id=SESSION_ID).exists()


# --- what is ignored and what is refused ------------------------------------------------------


@pytest.mark.parametrize(
    "event", ["Setup", "PostToolBatch", "FileChanged", "PreToolUse", "Elicitation"]
)
def test_unknown_events_answer_nothing_and_store_nothing(hook, event):
    response = hook({"hook_event_name": event, "session_id": SESSION_ID, "whatever": [1, 2]})

    assert response.status_code == 200
    assert response.json() == {}
    assert not Session.objects.exists()


def test_other_tools_answer_nothing_but_count_as_steps_for_reminders(hook):
    from todos.models import AgentTracking

    payload = load_fixture(
        "post_tool_use_todowrite.json", tool_name="Bash", tool_input={"command": "ls"}
    )
    assert hook(payload).json() == {}
    assert hook(payload).json() == {}  # the same delivery twice is one step
    assert AgentTracking.objects.get().steps_since_write == 1


def test_unknown_fields_are_accepted(hook):
    payload = load_fixture("post_tool_use_todowrite.json", brand_new_field={"x": 1}, effort="high")
    payload["tool_input"]["todos"][0]["futureField"] = True
    assert hook(payload).status_code == 200


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ("{not json", 400, "malformed_json"),
        ("[1, 2]", 400, "malformed_json"),
        ('{"hook_event_name": "Stop"}', 422, "validation_error"),
        ('{"hook_event_name": "Stop", "session_id": 42}', 422, "validation_error"),
        ('{"hook_event_name": "Stop", "session_id": "../../etc"}', 422, "invalid_id"),
        (
            '{"hook_event_name": "PostToolUse", "session_id": "s1", "tool_name": "TodoWrite",'
            ' "tool_input": {"todos": "all of them"}}',
            422,
            "validation_error",
        ),
        (
            '{"hook_event_name": "PostToolUse", "session_id": "s1", "tool_name": "TaskCreate",'
            ' "tool_input": {"subject": "x"}}',
            422,
            "validation_error",
        ),
        ('{"hook_event_name": "TaskCompleted", "session_id": "s1"}', 422, "validation_error"),
    ],
)
def test_a_malformed_payload_gets_a_clear_4xx(hook, body, status, code):
    response = hook(body)

    assert response.status_code == status
    error = response.json()["error"]
    assert error["code"] == code
    assert error["message"].endswith(".")


def test_a_missing_field_is_named_in_the_message(hook):
    response = hook({"hook_event_name": "Stop"})
    assert response.json()["error"]["message"] == "body.session_id: Field required."


def test_a_body_over_the_limit_is_refused(hook, settings):
    settings.AGENTBOARD_MAX_BODY_BYTES = 1000
    payload = load_fixture("user_prompt_submit.json", prompt="x" * 2000)

    response = hook(payload)

    assert response.status_code == 413
    assert response.json()["error"]["code"] == "payload_too_large"


@pytest.mark.parametrize("authorization", [None, "Bearer ab_unknown", "Basic abc", "Bearer "])
def test_a_request_without_a_valid_token_is_refused(client, db, authorization):
    headers = {"Authorization": authorization} if authorization else {}
    response = client.post(
        HOOK_URL,
        data=json.dumps(load_fixture("stop.json")),
        content_type="application/json",
        headers=headers,
    )

    assert response.status_code == 401
    assert response.json()["error"]["code"] == "unauthenticated"
    assert not Session.objects.exists()


def test_a_revoked_token_is_refused(hook, token):
    AgentToken.objects.update(revoked_at="2024-01-01T00:00:00Z")
    assert hook(load_fixture("stop.json")).status_code == 401


def test_get_is_refused(agent_api):
    response = agent_api.get(HOOK_URL)
    assert response.status_code == 405
    assert response.json()["error"]["code"] == "method_not_allowed"


def test_no_csrf_token_is_needed_because_the_bearer_token_authenticates(token):
    client = Client(enforce_csrf_checks=True)
    response = client.post(
        HOOK_URL,
        data=json.dumps(load_fixture("stop.json")),
        content_type="application/json",
        headers={"Authorization": f"Bearer {token}"},
    )
    assert response.status_code == 200


def test_a_session_reported_with_another_users_token_is_refused(hook, other_user):
    Session.objects.create(session_id=SESSION_ID, owner=other_user)

    response = hook(load_fixture("post_tool_use_todowrite.json"))

    assert response.status_code == 403
    assert response.json()["error"]["code"] == "session_forbidden"


# --- the live board ----------------------------------------------------------------------------


class AsyncHook:
    """The endpoint driven from async code (AsyncClient drops headers given to its constructor)."""

    def __init__(self, token: str) -> None:
        self.client = AsyncClient()
        self.token = token

    async def post(self, payload: dict):
        return await self.client.post(
            HOOK_URL,
            payload,
            content_type="application/json",
            headers={"Authorization": f"Bearer {self.token}"},
        )


async def receive_fragment(channel: str) -> str:
    message = await asyncio.wait_for(get_channel_layer().receive(channel), timeout=5)
    assert message["type"] == "board.fragment"
    return message["html"]


async def fragment_with(channel: str, text: str) -> str:
    """The first fragment that shows `text` (a session's header may go out a frame before a
    card that changed twice within one)."""
    while text not in (html := await receive_fragment(channel)):
        pass
    return html


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("sync_thread_connections_closed")
async def test_lifecycle_events_reach_the_open_boards_live(token):
    client = AsyncHook(token)
    layer = get_channel_layer()
    overview = await layer.new_channel()
    await layer.group_add(live.OVERVIEW_GROUP, overview)
    await client.post(load_fixture("session_start.json"))
    assert "shop" in await receive_fragment(overview)

    session = await Session.objects.aget(session_id=SESSION_ID)
    board = await layer.new_channel()
    await layer.group_add(live.session_group(session.pk), board)
    response = await client.post(load_fixture("subagent_start.json"))
    assert response.status_code == 200
    # The session's header (from SessionStart, published after its commit) may come first.
    html = await fragment_with(board, "Explore")
    assert 'hx-swap-oob="beforeend:#cards"' in html

    await client.post(load_fixture("subagent_stop.json"))
    assert "stopped" in await fragment_with(board, "stopped")
    await layer.group_discard(live.OVERVIEW_GROUP, overview)
    await layer.group_discard(live.session_group(session.pk), board)


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("sync_thread_connections_closed")
async def test_a_todowrite_hook_reaches_the_open_board_live(token):
    client = AsyncHook(token)
    await client.post(load_fixture("session_start.json"))
    session = await Session.objects.aget(session_id=SESSION_ID)
    layer = get_channel_layer()
    board = await layer.new_channel()
    await layer.group_add(live.session_group(session.pk), board)

    await client.post(load_fixture("post_tool_use_todowrite.json"))

    # The session's header (from SessionStart, published after its commit) may come first.
    await fragment_with(board, "Storing the theme in the settings context…")
    await layer.group_discard(live.session_group(session.pk), board)
