from __future__ import annotations

import io
import json
import shutil
import threading
from datetime import UTC, datetime
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.db import connections

from dashboard.management.commands.import_claude import Command
from dashboard.models import Agent, Session
from planmode.models import Plan
from tests.hooks.conftest import FIXTURES, load_fixture
from todos.models import TodoRevision

pytestmark = pytest.mark.django_db

LEGACY_SESSION = "2fc9b73b-2bd2-497c-a77b-3a272bf84e1f"
SESSION = "9d1c7e52-0b7a-4c55-8f0e-3c1f2a6b7d90"
SUBAGENT = "a71be0c2d4f65e13"
PLAN = "# Plan: search\n\n1. Index the docs.\n2. Add a search box.\n"


def run_import(path: Path, *args: str) -> str:
    out = io.StringIO()
    call_command("import_claude", str(path), *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def record(kind: str, content, *, moment: str, session_id: str = SESSION, **extra) -> dict:
    role = "assistant" if kind == "assistant" else "user"
    return {
        "type": kind,
        "uuid": f"u-{moment}",
        "parentUuid": None,
        "isSidechain": False,
        "sessionId": session_id,
        "cwd": "/home/dev/shop",
        "version": "2.1.0",
        "timestamp": f"2026-03-01T{moment}Z",
        "message": {"role": role, "content": content},
        **extra,
    }


def todo_write(tool_id: str, *items: tuple[str, str], moment: str, **extra) -> dict:
    todos = [{"content": c, "status": s, "activeForm": f"{c}…"} for c, s in items]
    block = {"type": "tool_use", "id": tool_id, "name": "TodoWrite", "input": {"todos": todos}}
    return record("assistant", [block], moment=moment, **extra)


def exit_plan_mode(tool_id: str, plan: str, *, moment: str) -> dict:
    block = {
        "type": "tool_use",
        "id": tool_id,
        "name": "ExitPlanMode",
        "input": {"plan": plan, "planFilePath": "/home/dev/.claude/plans/search.md"},
    }
    return record("assistant", [block], moment=moment)


def tool_result(tool_id: str, text: str, *, moment: str, is_error: bool = False) -> dict:
    block = {"type": "tool_result", "tool_use_id": tool_id, "content": text}
    if is_error:
        block["is_error"] = True
    return record("user", [block], moment=moment)


def write_lines(path: Path, lines: list[dict | str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as file:
        for line in lines:
            file.write((line if isinstance(line, str) else json.dumps(line)) + "\n")


@pytest.fixture
def claude_home(tmp_path: Path, reviewer) -> Path:
    """A ~/.claude with one session, one of its subagents and a legacy todo file."""
    home = tmp_path / ".claude"
    project = home / "projects" / "-home-dev-shop"
    write_lines(
        project / f"{SESSION}.jsonl",
        [
            record("user", "Add a search box", moment="10:00:00", gitBranch="feature/search"),
            todo_write(
                "toolu_main_1",
                ("Index the docs", "in_progress"),
                ("Add a search box", "pending"),
                moment="10:00:05",
            ),
            {"type": "progress", "sessionId": SESSION, "data": {"percent": 50}},
            "this line is not JSON {",
            exit_plan_mode(
                "toolu_plan_rejected", "# Plan: everything at once\n", moment="10:01:00"
            ),
            tool_result(
                "toolu_plan_rejected",
                "The user doesn't want to proceed with this tool use. To tell you how to "
                "proceed, the user said:\nIndex first, then the box.",
                moment="10:02:00",
                is_error=True,
            ),
            exit_plan_mode("toolu_plan_ok", PLAN, moment="10:03:00"),
            tool_result("toolu_plan_ok", "User has approved your plan.", moment="10:04:00"),
            todo_write(
                "toolu_main_2",
                ("Index the docs", "completed"),
                ("Add a search box", "in_progress"),
                moment="10:05:00",
            ),
        ],
    )
    write_lines(
        project / SESSION / "subagents" / f"agent-{SUBAGENT}.jsonl",
        [
            todo_write(
                "toolu_sub_1",
                ("Find the docs folder", "in_progress"),
                moment="10:00:30",
                isSidechain=True,
                agentId=SUBAGENT,
            ),
            todo_write(
                "toolu_sub_2",
                ("Find the docs folder", "completed"),
                ("Count the pages", "in_progress"),
                moment="10:00:40",
                isSidechain=True,
                agentId=SUBAGENT,
            ),
        ],
    )
    legacy = home / "todos"
    legacy.mkdir()
    (
        legacy
        / "0b6c1f2e-1111-4222-8333-444455556666-agent-0b6c1f2e-1111-4222-8333-444455556666.json"
    ).write_text(
        json.dumps(
            [
                {"id": "1", "content": "Old task", "status": "in_progress", "priority": "high"},
            ],
            indent=2,
        )
    )
    (legacy / "3c3c3c3c-agent-3c3c3c3c.json").write_text("[]")
    (legacy / "4d4d4d4d-agent-4d4d4d4d.json").write_text("{ broken")
    return home


def revisions_of(agent_id: str, session_id: str = SESSION) -> list[TodoRevision]:
    return list(
        TodoRevision.objects.filter(agent__session__session_id=session_id, agent__agent_id=agent_id)
    )


def test_the_transcript_fixture_becomes_a_revision_with_its_original_time(tmp_path, reviewer):
    source = FIXTURES / "transcript_legacy_todowrite.jsonl"
    project = tmp_path / "projects" / "-home-dev-parser"
    project.mkdir(parents=True)
    shutil.copy(source, project / f"{LEGACY_SESSION}.jsonl")

    summary = run_import(tmp_path)

    [revision] = revisions_of(LEGACY_SESSION, LEGACY_SESSION)
    assert revision.source == "import"
    assert revision.idempotency_key == "toolu_01YC"
    assert revision.received_at == datetime(2025, 6, 29, 12, 47, 10, 12000, tzinfo=UTC)
    assert [(t["id"], t["priority"]) for t in revision.new_todos] == [
        ("1", "high"),
        ("2", "medium"),
        ("3", "low"),
    ]
    session = Session.objects.get(session_id=LEGACY_SESSION)
    assert (session.cwd, session.owner) == ("/home/dev/parser", reviewer)
    assert session.started_at == datetime(2025, 6, 29, 12, 47, 1, tzinfo=UTC)
    assert session.last_seen_at.year == 2025
    assert "1 todo write(s) imported" in summary

    assert "1 already on the board" in run_import(tmp_path)
    assert len(revisions_of(LEGACY_SESSION, LEGACY_SESSION)) == 1


def test_a_subagent_tree_is_imported_once_however_often_it_runs(claude_home):
    first = run_import(claude_home)
    second = run_import(claude_home)

    main = Agent.objects.get(agent_id=SESSION)
    assert [(t.content, t.status) for t in main.todos.all()] == [
        ("Index the docs", "completed"),
        ("Add a search box", "in_progress"),
    ]
    subagent = Agent.objects.get(agent_id=SUBAGENT)
    assert subagent.parent == main
    assert [(t.content, t.status) for t in subagent.todos.all()] == [
        ("Find the docs folder", "completed"),
        ("Count the pages", "in_progress"),
    ]
    assert [r.idempotency_key for r in revisions_of(SUBAGENT)] == ["toolu_sub_1", "toolu_sub_2"]
    assert len(revisions_of(SESSION)) == 2
    assert Agent.objects.get(agent_id="0b6c1f2e-1111-4222-8333-444455556666").todos.count() == 1
    assert "5 todo write(s) imported; 2 plan(s) imported" in first
    assert "0 " not in first
    assert "imported;" not in second
    assert "7 already on the board" in second
    assert TodoRevision.objects.count() == 5
    assert Plan.objects.count() == 2


def test_plans_take_their_outcome_from_the_tool_result(claude_home, reviewer):
    run_import(claude_home)

    rejected, approved = Plan.objects.order_by("pk")
    assert (rejected.status, rejected.feedback) == ("rejected", "Index first, then the box.")
    assert (approved.status, approved.markdown, approved.source) == ("approved", PLAN, "import")
    assert approved.plan_file_path == "/home/dev/.claude/plans/search.md"
    assert approved.decided_by == reviewer
    assert approved.idempotency_key == "toolu_plan_ok"


def test_a_plan_still_waiting_in_the_terminal_is_imported_once_answered(claude_home):
    transcript = claude_home / "projects" / "-home-dev-shop" / f"{SESSION}.jsonl"
    write_lines(
        transcript,
        [
            exit_plan_mode("toolu_plan_late", "# Plan: later\n", moment="11:00:00"),
        ],
    )

    assert "1 plan(s) still waiting" in run_import(claude_home)
    assert not Plan.objects.filter(markdown="# Plan: later\n").exists()

    write_lines(transcript, [tool_result("toolu_plan_late", "Approved.", moment="11:01:00")])
    run_import(claude_home)

    assert Plan.objects.get(markdown="# Plan: later\n").status == "approved"


def test_unreadable_lines_and_unknown_records_are_counted_not_fatal(claude_home):
    transcript = claude_home / "projects" / "-home-dev-shop" / f"{SESSION}.jsonl"
    with transcript.open("ab") as file:
        file.write(b"\xff\xfe not utf-8\n[1, 2, 3]\n")

    summary = run_import(claude_home)

    assert "4 unreadable lines or files" in summary
    assert "1 records of an unknown type" in summary
    assert len(revisions_of(SESSION)) == 2


def test_a_write_the_hooks_already_reported_is_not_imported_again(claude_home, agent_api):
    hook = load_fixture(
        "post_tool_use_todowrite.json", session_id=SESSION, tool_use_id="toolu_main_1"
    )
    hook["tool_input"]["todos"] = [
        {"content": "Index the docs", "status": "in_progress", "activeForm": "Index the docs…"},
        {"content": "Add a search box", "status": "pending", "activeForm": "Add a search box…"},
    ]
    assert agent_api.post("/hooks/claude-code", hook).status_code == 200

    summary = run_import(claude_home)

    assert [(r.source, r.idempotency_key) for r in revisions_of(SESSION)] == [
        ("hook", "toolu_main_1")
    ]
    assert "1 already on the board" in summary


def test_older_writes_never_turn_a_newer_list_back(claude_home, agent_api):
    newer = load_fixture(
        "post_tool_use_todowrite.json", session_id=SESSION, tool_use_id="toolu_from_today"
    )
    agent_api.post("/hooks/claude-code", newer)

    summary = run_import(claude_home)

    assert "2 older than the list the board already has" in summary
    assert Agent.objects.get(agent_id=SESSION).todos.count() == 3


def test_a_session_of_another_user_is_skipped_with_a_reason(claude_home, other_user):
    Session.objects.create(session_id=SESSION, owner=other_user)
    err = io.StringIO()

    call_command("import_claude", str(claude_home), stdout=io.StringIO(), stderr=err)

    assert "another user's token" in err.getvalue()
    assert revisions_of(SESSION) == []
    assert Agent.objects.filter(agent_id="0b6c1f2e-1111-4222-8333-444455556666").exists()


def test_imported_sessions_belong_to_the_user_named(claude_home, user):
    run_import(claude_home, "--user", user.username)
    assert Session.objects.get(session_id=SESSION).owner == user


def test_an_unknown_user_is_refused_before_anything_is_read(claude_home):
    with pytest.raises(CommandError, match="There is no user 'nobody'"):
        run_import(claude_home, "--user", "nobody")
    assert not Session.objects.exists()


def test_without_a_superuser_it_says_what_to_do(tmp_path, db):
    with pytest.raises(CommandError, match="No superuser exists"):
        run_import(tmp_path)


def test_a_missing_folder_is_a_clear_error(tmp_path, reviewer):
    with pytest.raises(CommandError, match="is not a folder"):
        run_import(tmp_path / "nowhere")


def test_watch_stops_by_itself_after_watch_seconds(claude_home):
    summary = run_import(claude_home, "--watch", "--interval", "0.01", "--watch-seconds", "0.05")
    assert "Stopped watching." in summary


@pytest.mark.django_db(transaction=True)
def test_watch_follows_lines_as_they_are_appended(claude_home):
    command = Command(stdout=io.StringIO(), stderr=io.StringIO())

    def watch() -> None:
        try:
            call_command(command, str(claude_home), watch=True, interval=0.02)
        finally:
            connections.close_all()

    watcher = threading.Thread(target=watch)
    transcript = claude_home / "projects" / "-home-dev-shop" / f"{SESSION}.jsonl"
    watcher.start()
    try:
        until(lambda: len(revisions_of(SESSION)) == 2)
        line = json.dumps(
            todo_write(
                "toolu_main_3",
                ("Index the docs", "completed"),
                ("Add a search box", "completed"),
                moment="10:09:00",
            )
        )
        with transcript.open("a") as file:
            # Half a line first, as a writer in the middle of its write leaves it.
            file.write(line[:40])
            file.flush()
            file.write(line[40:] + "\n")
        until(lambda: len(revisions_of(SESSION)) == 3)
    finally:
        command.stop.set()
        watcher.join(10)
    assert not watcher.is_alive()
    assert revisions_of(SESSION)[-1].idempotency_key == "toolu_main_3"
    assert "New lines: 1 todo write(s) imported." in command.stdout._out.getvalue()


def until(condition, timeout: float = 10) -> None:
    """Wait for a condition another thread makes true, without sleeping blindly."""
    event = threading.Event()
    deadline = datetime.now(UTC).timestamp() + timeout
    while not condition():
        assert datetime.now(UTC).timestamp() < deadline, "the condition never held"
        event.wait(0.01)


def test_an_imported_session_is_named_by_its_first_prompt_and_branch(claude_home):
    run_import(claude_home)

    session = Session.objects.get(session_id=SESSION)
    assert (session.title, session.branch) == ("Add a search box", "feature/search")


def test_a_folder_branch_or_prompt_that_cannot_be_stored_is_left_out_not_fatal(tmp_path, reviewer):
    project = tmp_path / ".claude" / "projects" / "-odd"
    write_lines(
        project / f"{SESSION}.jsonl",
        [
            record("user", "Fix it\x00now", moment="10:00:00", gitBranch="b" * 500),
            todo_write(
                "toolu_odd_1", ("Fix it", "in_progress"), moment="10:00:05", cwd="/src\x00x"
            ),
        ],
    )

    run_import(tmp_path / ".claude")

    session = Session.objects.get(session_id=SESSION)
    assert (session.cwd, session.branch, session.title) == ("", "", "")
    assert [todo.content for todo in session.agents.get().todos.all()] == ["Fix it"]
