from __future__ import annotations

import pytest

from dashboard.core.errors import ServiceError
from dashboard.models import Agent, Session
from tests.conftest import todo, write_todos
from todos.models import TodoRevision
from todos.services import progress_of, render_todos, todo_flags, todo_list_read

pytestmark = pytest.mark.django_db

SESSION = "sess-1"


def stored(session_id: str = SESSION, agent_id: str = SESSION) -> list[dict]:
    agent = Agent.objects.get(session__session_id=session_id, agent_id=agent_id)
    return [{"content": t.content, "status": t.status} for t in agent.todos.order_by("position")]


def revision_numbers(session_id: str = SESSION, agent_id: str = SESSION) -> list[int]:
    return list(
        TodoRevision.objects.filter(agent__session__session_id=session_id, agent__agent_id=agent_id)
        .order_by("number")
        .values_list("number", flat=True)
    )


@pytest.fixture
def strict(settings):
    settings.AGENTBOARD_TODO_POLICY = "strict"


def many(count: int) -> list[dict]:
    return [todo(f"Task {n}") for n in range(count)]


# --- writing a list ---------------------------------------------------------------------------


def test_a_first_write_creates_the_session_and_its_main_agent(user):
    result = write_todos(
        user, SESSION, SESSION, [todo("Run tests", "in_progress")], cwd="/src/shop"
    )

    session = Session.objects.get(session_id=SESSION)
    assert session.owner == user
    assert session.project == "shop"
    assert [a.agent_id for a in session.agents.all()] == [SESSION]
    assert result.revision == 1
    assert result.old_todos == []


def test_each_write_replaces_the_whole_list_and_reports_the_old_one(user):
    first = [todo("Run tests", "in_progress"), todo("Fix lint")]
    write_todos(user, SESSION, SESSION, first)

    result = write_todos(user, SESSION, SESSION, [todo("Write docs")])

    assert result.revision == 2
    assert result.old_todos == first
    assert result.new_todos == [todo("Write docs")]
    assert stored() == [{"content": "Write docs", "status": "pending"}]


def test_a_subagent_keeps_its_own_list_under_the_main_agent(user):
    write_todos(user, SESSION, SESSION, [todo("Plan the feature", "in_progress")])
    write_todos(
        user, SESSION, "agent-7", [todo("Search the code", "in_progress")], agent_type="Explore"
    )

    subagent = Agent.objects.get(agent_id="agent-7")
    assert subagent.parent.agent_id == SESSION
    assert subagent.label == "Explore"
    assert stored() == [{"content": "Plan the feature", "status": "in_progress"}]
    assert stored(agent_id="agent-7") == [{"content": "Search the code", "status": "in_progress"}]


def test_it_refuses_to_write_into_another_users_session(user, other_user):
    write_todos(other_user, SESSION, SESSION, [todo("Their task")])

    with pytest.raises(ServiceError) as exc_info:
        write_todos(user, SESSION, SESSION, [todo("My task")])

    assert (exc_info.value.status, exc_info.value.code) == (403, "session_forbidden")
    assert stored() == [{"content": "Their task", "status": "pending"}]


def test_it_records_where_each_write_came_from(user):
    write_todos(user, SESSION, SESSION, [todo("Run tests")], source=TodoRevision.Source.SOCKET)
    assert TodoRevision.objects.get().get_source_display() == "agent socket"


# --- all completed ----------------------------------------------------------------------------


def test_an_all_completed_list_is_not_the_current_one_but_reads_back_as_done(user):
    write_todos(user, SESSION, SESSION, [todo("Fix tests", "in_progress"), todo("Run build")])
    done = [todo("Fix tests", "completed"), todo("Run build", "completed")]

    result = write_todos(user, SESSION, SESSION, done)

    assert stored() == []
    assert result.new_todos == done
    assert result.progress.completed == result.progress.total == 2
    assert result.rendered == "[x] Fix tests\n[x] Run build\n\n(2/2 completed)"
    assert TodoRevision.objects.get(number=2).new_todos == done
    read = todo_list_read(owner=user, session_id=SESSION, agent_id=SESSION)
    assert (read["revision"], read["todos"]) == (2, done)
    assert read["progress"]["completed"] == read["progress"]["total"] == 2


def test_the_write_after_an_all_completed_one_starts_from_an_empty_list(user):
    write_todos(user, SESSION, SESSION, [todo("Fix tests", "completed")])
    result = write_todos(user, SESSION, SESSION, [todo("Next thing")])
    assert result.old_todos == []


# --- policy -----------------------------------------------------------------------------------


def test_the_default_policy_accepts_what_claude_code_accepts(user):
    items = [
        *many(20),
        todo("x" * 501, "in_progress", active_form="y" * 501),
        todo("Also running", "in_progress"),
    ]

    result = write_todos(user, SESSION, SESSION, items)

    assert result.progress.total == 22
    assert result.progress.in_progress == 2


@pytest.mark.parametrize(
    ("items", "code", "words"),
    [
        (many(21), "too_many_todos", "at most 20 items"),
        ([todo("x" * 501)], "todo_text_too_long", "501 characters"),
        ([todo("Run tests", active_form="y" * 501)], "todo_text_too_long", "activeForm"),
        (
            [todo("A", "in_progress"), todo("B"), todo("C", "in_progress")],
            "multiple_in_progress",
            "items 1, 3 are",
        ),
    ],
    ids=["21 items", "501-char content", "501-char activeForm", "two in progress"],
)
def test_the_strict_policy_refuses_a_list_naming_the_rule(user, strict, items, code, words):
    write_todos(user, SESSION, SESSION, [todo("Keep me")])

    with pytest.raises(ServiceError) as exc_info:
        write_todos(user, SESSION, SESSION, items)

    assert (exc_info.value.status, exc_info.value.code) == (422, code)
    assert words in exc_info.value.message
    assert stored() == [{"content": "Keep me", "status": "pending"}]
    assert revision_numbers() == [1]


def test_the_strict_policy_points_at_the_offending_item(user, strict):
    with pytest.raises(ServiceError) as exc_info:
        write_todos(user, SESSION, SESSION, [todo("Fine"), todo("x" * 501)])
    assert exc_info.value.detail[0]["loc"] == ["body", "todos", 1, "content"]


def test_the_strict_policy_accepts_a_list_at_its_limits(user, strict):
    items = [todo("x" * 500, "in_progress", active_form="y" * 500), *many(19)]
    assert write_todos(user, SESSION, SESSION, items).progress.total == 20


@pytest.mark.parametrize(
    ("policy", "statuses", "flags"),
    [
        ("default", ["in_progress", "in_progress", "pending"], ["multiple_in_progress"]),
        ("default", ["completed", "pending", "pending"], ["no_in_progress"]),
        ("strict", ["completed", "pending", "pending"], ["no_in_progress"]),
        ("default", ["completed", "in_progress", "pending"], []),
        ("strict", ["completed", "in_progress", "pending"], []),
        ("default", ["completed", "cancelled"], []),
        ("default", [], []),
    ],
)
def test_a_write_with_a_discipline_problem_is_accepted_but_flagged(
    user, settings, policy, statuses, flags
):
    settings.AGENTBOARD_TODO_POLICY = policy
    items = [todo(f"Task {n}", status) for n, status in enumerate(statuses)]

    write_todos(user, SESSION, SESSION, items)

    assert todo_flags(stored()) == flags


# --- idempotency ------------------------------------------------------------------------------


def test_a_retry_with_the_same_idempotency_key_returns_the_first_result(user):
    items = [todo("Run tests", "in_progress")]
    first = write_todos(user, SESSION, SESSION, items, idempotency_key="toolu_01")
    write_todos(user, SESSION, SESSION, [todo("Something newer")])

    retry = write_todos(user, SESSION, SESSION, items, idempotency_key="toolu_01")

    assert retry == first
    assert revision_numbers() == [1, 2]
    assert stored() == [{"content": "Something newer", "status": "pending"}]


def test_the_same_idempotency_key_with_another_list_is_refused(user):
    write_todos(user, SESSION, SESSION, [todo("Run tests")], idempotency_key="toolu_01")

    with pytest.raises(ServiceError) as exc_info:
        write_todos(user, SESSION, SESSION, [todo("Other")], idempotency_key="toolu_01")

    assert (exc_info.value.status, exc_info.value.code) == (422, "idempotency_key_reused")
    assert stored() == [{"content": "Run tests", "status": "pending"}]
    assert revision_numbers() == [1]


# --- plan mode --------------------------------------------------------------------------------


def test_it_refuses_a_write_while_the_session_is_in_plan_mode(user):
    write_todos(user, SESSION, SESSION, [todo("Research")])
    Session.objects.filter(session_id=SESSION).update(permission_mode="plan")

    with pytest.raises(ServiceError) as exc_info:
        write_todos(user, SESSION, SESSION, [todo("Edit files", "in_progress")])

    assert (exc_info.value.status, exc_info.value.code) == (409, "plan_mode_active")
    assert stored() == [{"content": "Research", "status": "pending"}]
    assert revision_numbers() == [1]


def test_a_write_in_plan_mode_is_taken_when_the_caller_does_not_enforce_it(user):
    write_todos(user, SESSION, SESSION, [todo("Research")])
    Session.objects.filter(session_id=SESSION).update(permission_mode="plan")

    write_todos(user, SESSION, SESSION, [todo("Imported")], enforce_plan_mode=False)

    assert stored() == [{"content": "Imported", "status": "pending"}]


# --- ids --------------------------------------------------------------------------------------


@pytest.mark.parametrize("bad_id", ["", "has space", "-leading-dash", "x" * 201, "../etc"])
def test_it_refuses_an_id_that_is_not_a_plain_token(user, bad_id):
    with pytest.raises(ServiceError) as exc_info:
        write_todos(user, bad_id, bad_id, [todo("Run tests")])
    assert exc_info.value.code == "invalid_id"
    assert not Session.objects.exists()


# --- reading, progress and rendering ----------------------------------------------------------


def test_todo_read_returns_the_current_list_with_its_revision(user):
    write_todos(user, SESSION, SESSION, [todo("Run tests", "in_progress"), todo("Ship")])

    read = todo_list_read(owner=user, session_id=SESSION, agent_id=SESSION)

    assert read["revision"] == 1
    assert read["todos"] == [todo("Run tests", "in_progress"), todo("Ship")]
    assert read["progress"] == {
        "completed": 0,
        "in_progress": 1,
        "pending": 1,
        "cancelled": 0,
        "total": 2,
    }


def test_todo_read_of_an_unknown_agent_is_an_empty_list(user):
    read = todo_list_read(owner=user, session_id="nobody", agent_id="nobody")
    assert (read["revision"], read["todos"], read["progress"]["total"]) == (0, [], 0)


def test_todo_read_of_another_users_session_reads_as_unknown(user, other_user):
    write_todos(other_user, SESSION, SESSION, [todo("Their task")])
    read = todo_list_read(owner=user, session_id=SESSION, agent_id=SESSION)
    assert (read["revision"], read["todos"], read["progress"]["total"]) == (0, [], 0)


def test_progress_counts_every_status():
    items = [
        todo("a", "completed"),
        todo("b", "completed"),
        todo("c", "in_progress"),
        todo("d"),
        todo("e", "cancelled"),
    ]
    assert progress_of(items).model_dump() == {
        "completed": 2,
        "in_progress": 1,
        "pending": 1,
        "cancelled": 1,
        "total": 5,
    }


def test_it_renders_the_list_the_way_the_model_reads_it_back():
    items = [
        {"content": "Fix tests", "status": "completed", "activeForm": "Fixing tests"},
        {"content": "Update docs", "status": "in_progress", "activeForm": "Updating docs"},
        {"content": "Run build", "status": "pending", "activeForm": "Running build"},
    ]
    assert render_todos(items) == (
        "[x] Fix tests\n[>] Update docs <- Updating docs\n[ ] Run build\n\n(1/3 completed)"
    )


def test_it_renders_an_empty_list_as_no_todos():
    assert render_todos([]) == "No todos."


def test_it_renders_cancelled_items_apart_from_the_count():
    items = [
        {"content": "Fix tests", "status": "completed"},
        {"content": "Old idea", "status": "cancelled"},
        {"content": "Run build", "status": "in_progress"},
    ]
    assert render_todos(items) == (
        "[x] Fix tests\n[-] Old idea\n[>] Run build\n\n(1/2 completed, 1 cancelled)"
    )


def test_the_write_result_carries_the_rendered_view(user):
    result = write_todos(
        user,
        SESSION,
        SESSION,
        [
            todo("Fix tests", "completed"),
            todo("Update docs", "in_progress", "Updating docs"),
            todo("Run build"),
        ],
    )
    assert result.rendered == (
        "[x] Fix tests\n[>] Update docs <- Updating docs\n[ ] Run build\n\n(1/3 completed)"
    )
