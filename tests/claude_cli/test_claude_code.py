"""The real Claude Code CLI, connected with `agentboard install-hooks`, on a real board.

A scripted model plays the agent; every test runs against each supported Claude Code version
and checks both ends: what the board shows, and what the model was told.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import time
import urllib.error
from datetime import datetime

import pytest

from dashboard.client.cli import main
from tests.capturing_server import CapturingServer
from tests.claude_cli.conftest import Lead, add_reviewer, board_get, wait_until
from tests.claude_cli.model_server import Request, Turn, say, started_with, tool
from tests.client.conftest import make_repository
from tests.conftest import parse_html
from todos.enforcer import compaction_text, continuation_prompt, reminder_text

pytestmark = pytest.mark.claude_cli

# Boards on which only the feature under test speaks to the model.
QUIET = {"AGENTBOARD_ENFORCER_ENABLED": "false"}
TODOWRITE_ENV = {"CLAUDE_CODE_ENABLE_TASKS": "0"}  # TodoWrite instead of the Task tools

PLAN = (
    "# Rename the config loader\n\n"
    "1. Rename `load` to `read_config`.\n"
    "2. Update the callers and the tests.\n"
)
PLAN_FILE = re.compile(r"(/[^\s`'\"]+/\.claude/plans/[^\s`'\"]+\.md)")


def todo(content: str, status: str, active_form: str) -> dict[str, str]:
    return {"content": content, "status": status, "activeForm": active_form}


def board_todos(board, session_id: str, agent_id: str | None = None) -> dict:
    return board_get(board, f"/api/v1/sessions/{session_id}/agents/{agent_id or session_id}/todos")


def shown(items: list[dict]) -> list[tuple[str, str, str | None]]:
    return [(item["content"], item["status"], item.get("activeForm")) for item in items]


def progress(completed: int, in_progress: int, pending: int) -> dict[str, int]:
    total = completed + in_progress + pending
    return {
        "completed": completed,
        "in_progress": in_progress,
        "pending": pending,
        "cancelled": 0,
        "total": total,
    }


def create_task(subject: str, active_form: str) -> Turn:
    return tool(
        "TaskCreate",
        {"subject": subject, "description": f"{subject}.", "activeForm": active_form},
    )


def update_task(model, created: Turn, status: str) -> Turn:
    """TaskUpdate by the id the CLI gave the task (read from TaskCreate's result)."""

    def task_input(request: Request) -> dict[str, str]:
        result = model.tool_result(created)
        assert result is not None, "TaskCreate had no result before the update."
        number = re.search(r"#?(\d+)", result.text)
        assert number, f"No task id in TaskCreate's result: {result.text!r}"
        return {"taskId": number.group(1), "status": status}

    return tool("TaskUpdate", task_input)


def plan_file(request: Request) -> str:
    """The plan file that the CLI's plan-mode reminder asks the model to write."""
    for text in reversed(request.texts()):
        found = PLAN_FILE.search(text)
        if found:
            return found.group(1)
    raise AssertionError("The plan-mode reminder names no plan file.")


def present_plan(model, markdown: str) -> Turn:
    """Script a plan the way both versions ask for it: the plan file first, then ExitPlanMode
    (which reads the file). Returns the ExitPlanMode turn."""
    exit_plan_mode = tool("ExitPlanMode", {})
    model.add(
        tool("Write", lambda request: {"file_path": plan_file(request), "content": markdown}),
        exit_plan_mode,
    )
    return exit_plan_mode


def waiting_plan(lead: Lead) -> int:
    return wait_until(lead.pending_plan_ids, "the plan in the review queue")[0]


def plan_status(board, plan_id: int) -> str:
    return board_get(board, f"/api/v1/plans/{plan_id}")["status"]


def session(board, session_id: str) -> dict:
    return board_get(board, f"/api/v1/sessions/{session_id}")


def todo_history(lead: Lead, session_id: str) -> list[tuple[str, str]]:
    """The lines of the session's history about its todo lists, oldest first, as the board's
    page shows them: (who, what)."""
    page = parse_html(lead.get(f"/sessions/{session_id}/"))
    entries = page.find(id="history").find_all("li", cls="kind-revision")
    return [
        (entry.find("span", cls="who").text(), entry.find("span", cls="what").text())
        for entry in reversed(entries)
    ]


def revisions_of(board, session_id: str, agent_id: str) -> int:
    """How many lists an agent's card has shown: each change of it is a stored revision."""
    [(count,)] = board.query(
        "SELECT COUNT(*) FROM todos_todorevision r JOIN dashboard_agent a ON a.id = r.agent_id "
        "JOIN dashboard_session s ON s.id = a.session_id "
        "WHERE s.session_id = %s AND a.agent_id = %s",
        (session_id, agent_id),
    )
    return count


def poll_session(board, session_id: str) -> dict | None:
    """The session, or None while the board does not know it yet."""
    try:
        return session(board, session_id)
    except urllib.error.HTTPError as error:
        if error.code == 404:
            return None
        raise


# --- todo lists ------------------------------------------------------------------------------


def test_todowrite_list_and_progress_show_on_the_board(server_factory, connect, model):
    board = server_factory(env=QUIET)
    project = connect(board)
    first = [
        todo("Run the tests", "in_progress", "Running the tests"),
        todo("Fix the parser", "pending", "Fixing the parser"),
        todo("Update the docs", "pending", "Updating the docs"),
    ]
    second = [
        todo("Run the tests", "completed", "Running the tests"),
        todo("Fix the parser", "in_progress", "Fixing the parser"),
        todo("Update the docs", "pending", "Updating the docs"),
    ]
    write = tool("TodoWrite", {"todos": first})
    model.add(
        write,
        tool("Bash", {"command": "true", "description": "Run the tests"}),
        tool("TodoWrite", {"todos": second}),
        say("Pausing here."),
    )

    project.run("Fix the parser bug.", env=TODOWRITE_ENV)

    listed = board_todos(board, project.session_id)
    assert shown(listed["todos"]) == shown(second), project.report()
    assert listed["progress"] == progress(1, 1, 1)
    result = model.tool_result(write)
    assert result is not None and not result.is_error, project.report()


def test_task_tools_list_and_progress_show_on_the_board(server_factory, connect, model):
    """The Task tools are what both versions offer by default; on the newest they exist only
    with the todo tools switched on, which install-hooks does in the settings."""
    board = server_factory(env=QUIET)
    project = connect(board)
    tests = create_task("Run the tests", "Running the tests")
    parser = create_task("Fix the parser", "Fixing the parser")
    docs = create_task("Update the docs", "Updating the docs")
    model.add(
        tests,
        parser,
        docs,
        update_task(model, tests, "in_progress"),
        update_task(model, tests, "completed"),
        update_task(model, parser, "in_progress"),
        update_task(model, parser, "completed"),
        update_task(model, docs, "in_progress"),
        create_task("Note it in the changelog", "Noting it in the changelog"),
        say("Pausing here."),
    )

    project.run("Fix the parser bug.")

    listed = board_todos(board, project.session_id)
    assert shown(listed["todos"]) == [
        ("Run the tests", "completed", "Running the tests"),
        ("Fix the parser", "completed", "Fixing the parser"),
        ("Update the docs", "in_progress", "Updating the docs"),
        ("Note it in the changelog", "pending", "Noting it in the changelog"),
    ], project.report()
    assert listed["progress"] == progress(2, 1, 1)
    # Nine tool calls, nine changes in the history: Claude Code reports a TaskCreate (or a
    # completion) with two hooks, which make one line, and none says the list was unchanged.
    assert todo_history(Lead(board), project.session_id) == [
        ("main", "wrote a list of 1 item"),
        ("main", "added 1 item"),
        ("main", "added 1 item"),
        ("main", "started “Run the tests”"),
        ("main", "completed “Run the tests”"),
        ("main", "started “Fix the parser”"),
        ("main", "completed “Fix the parser”"),
        ("main", "started “Update the docs”"),
        ("main", "added 1 item"),
    ], project.report()


@pytest.mark.parametrize("todo_tools", ["TodoWrite", "Task tools"])
def test_a_subagent_gets_its_own_card_with_its_own_list(server_factory, connect, model, todo_tools):
    board = server_factory(env=QUIET)
    project = connect(board)
    subagent = started_with("SUBAGENT-TASK")
    if todo_tools == "TodoWrite":
        subagent_turns = [
            tool(
                "TodoWrite",
                {
                    "todos": [
                        todo("Read the parser", "completed", "Reading the parser"),
                        todo("Write the report", "in_progress", "Writing the report"),
                    ]
                },
            )
        ]
    else:
        read = create_task("Read the parser", "Reading the parser")
        report = create_task("Write the report", "Writing the report")
        subagent_turns = [
            read,
            report,
            update_task(model, read, "completed"),
            update_task(model, report, "in_progress"),
        ]
    launch = tool(
        "Agent",
        {
            "description": "Survey the parser",
            "prompt": "SUBAGENT-TASK: survey the parser and report back.",
            "subagent_type": "general-purpose",
            "run_in_background": False,
        },
    )
    launch.when = started_with("Look into the parser")
    for turn in [*subagent_turns, say("The parser is fine.")]:
        turn.when = subagent
        model.add(turn)
    model.add(launch)

    project.run("Look into the parser.", env=TODOWRITE_ENV if todo_tools == "TodoWrite" else None)

    agents = session(board, project.session_id)["agents"]
    subagents = [agent for agent in agents if not agent["main"]]
    assert len(subagents) == 1, project.report()
    card = subagents[0]
    assert card["agent_type"] == "general-purpose"
    assert shown(card["todos"]) == [
        ("Read the parser", "completed", "Reading the parser"),
        ("Write the report", "in_progress", "Writing the report"),
    ], project.report()
    assert card["progress"] == progress(1, 1, 0)
    main = next(agent for agent in agents if agent["main"])
    assert main["todos"] == [], project.report()
    # Not even for a moment: 2.1.197 names no agent in a subagent's TaskCreated, which comes
    # before the subagent's own hook of the call.
    assert revisions_of(board, project.session_id, project.session_id) == 0, project.report()
    subagent_lines = ["wrote a list of 2 items"]
    if todo_tools == "Task tools":
        subagent_lines = [
            "wrote a list of 1 item",
            "added 1 item",
            "completed “Read the parser”",
            "started “Write the report”",
        ]
    history = todo_history(Lead(board), project.session_id)
    assert [what for _, what in history] == subagent_lines, project.report()


def test_a_stale_list_reminder_reaches_the_model(server_factory, connect, model):
    board = server_factory(
        env={"AGENTBOARD_REMINDER_STEPS_SINCE_WRITE": "2", "AGENTBOARD_REMINDER_STEPS_BETWEEN": "1"}
    )
    project = connect(board)
    working = [
        todo("Run the tests", "in_progress", "Running the tests"),
        todo("Fix the parser", "pending", "Fixing the parser"),
    ]
    step = {"command": "true", "description": "Look around"}
    model.add(
        tool("TodoWrite", {"todos": working}),
        tool("Bash", step),
        tool("Bash", step),
        tool("Bash", step),
        tool(
            "TodoWrite",
            {"todos": [{**item, "status": "completed"} for item in working]},
        ),
        say("Both are done."),
    )

    project.run("Fix the parser bug.", env=TODOWRITE_ENV)

    reminders = [reminder_text(working, steps=steps) for steps in range(1, 5)]
    assert any(model.received(text) for text in reminders), project.report()


def test_a_session_shows_on_the_board_as_soon_as_claude_code_starts(server_factory, connect, model):
    """SessionStart comes from a command hook (Claude Code refuses HTTP hooks there)."""
    board = server_factory(env=QUIET)
    project = connect(board)

    project.terminal(None)

    shown_session = wait_until(
        lambda: poll_session(board, project.session_id), "the session on the board"
    )
    assert [agent["main"] for agent in shown_session["agents"]] == [True]
    assert not model.loop_requests, "The model was asked something before any prompt."


def test_every_hook_names_the_repository_without_credentials_and_the_machine(
    connect, model, monkeypatch
):
    """HTTP hooks carry what install-hooks wrote; SessionStart's command reads them itself."""
    with CapturingServer() as board:
        project = connect(board)
        # install-hooks also writes the user's settings: the project's home, not this machine's.
        monkeypatch.setenv("HOME", str(project.home))
        make_repository(project.directory, "https://oauth2:glpat-s3cret@gitlab.example/acme/shop")
        # Installed again now the project is a repository: its HTTP hooks name its origin.
        main(["install-hooks", "--url", board.url, "--project", str(project.directory)])
        model.add(tool("Bash", {"command": "true", "description": "Check"}), say("Done."))

        project.run("Check the build.")

    hooks = [seen for seen in board.requests if seen.path == "/hooks/claude-code"]
    events = {json.loads(seen.body)["hook_event_name"] for seen in hooks}
    assert {"SessionStart", "PreToolUse", "PostToolUse", "Stop"} <= events, board.log()
    for seen in hooks:
        assert seen.headers["X-Agentboard-Repository"] == "https://gitlab.example/acme/shop"
        assert seen.headers["X-Agentboard-Host"] == socket.gethostname()
    assert "glpat-s3cret" not in (project.directory / ".claude" / "settings.json").read_text()


def test_after_compact_the_list_is_handed_back_and_no_card_appears(server_factory, connect, model):
    board = server_factory(env=QUIET)
    project = connect(board)
    working = [
        todo("Run the tests", "in_progress", "Running the tests"),
        todo("Fix the parser", "pending", "Fixing the parser"),
    ]
    model.add(tool("TodoWrite", {"todos": working}), say("Listed the work."))

    terminal = project.terminal("Fix the parser bug.", env=TODOWRITE_ENV)
    terminal.wait_for("Listed the work.")
    terminal.type("/compact")
    terminal.wait_for("Compacted")
    model.add(say("Picking the tests up again."))
    terminal.type("Carry on.")
    terminal.wait_for("Picking the tests up again.")

    handed_back = model.received(compaction_text(working))
    assert handed_back, project.report()
    agents = session(board, project.session_id)["agents"]
    assert [agent["main"] for agent in agents] == [True], project.report()
    assert shown(agents[0]["todos"]) == shown(working)


# --- plans -----------------------------------------------------------------------------------


def test_an_approved_plan_reaches_the_model_with_the_reviewers_notes(
    server_factory, connect, model
):
    board = server_factory(env=QUIET)
    project = connect(board)
    lead = Lead(board)
    exit_plan_mode = present_plan(model, PLAN)
    model.add(say("Starting on the plan."))

    project.terminal("Plan the config loader rename.", "--permission-mode", "plan")
    plan_id = waiting_plan(lead)
    assert "read_config" in lead.get(f"/plans/{plan_id}/"), "The board shows another plan."
    assert lead.decide(plan_id, "approve", "Keep the old name as an alias.") == 200

    result = project.result_of(exit_plan_mode)
    assert not result.is_error, project.report()
    assert "approved" in result.text.lower() and "read_config" in result.text
    model.wait_for(
        lambda m: m.received("Keep the old name as an alias."), 30, "the reviewer's notes"
    )
    assert plan_status(board, plan_id) == "approved"
    wait_until(
        lambda: session(board, project.session_id)["permission_mode"] == "default",
        "the session to leave plan mode",
    )


def test_a_plan_of_a_project_that_asks_two_reviewers_waits_for_the_second(
    server_factory, connect, model
):
    board = server_factory(env=QUIET)
    project = connect(board)
    lead = Lead(board)
    add_reviewer(board, "mia", "a-long-password-for-mia")
    mia = Lead(board, "mia", "a-long-password-for-mia")
    exit_plan_mode = present_plan(model, PLAN)
    model.add(say("Starting on the plan."))

    project.terminal("Plan the config loader rename.", "--permission-mode", "plan")
    plan_id = waiting_plan(lead)
    ((project_pk,),) = board.query(
        "SELECT project_record_id FROM dashboard_session WHERE session_id = %s",
        (project.session_id,),
    )
    assert lead.post(f"/projects/{project_pk}/approvals/", {"approvals": "2"})[0] == 200

    assert lead.decide(plan_id, "approve", "Keep the old name as an alias.") == 200
    wait_until(
        lambda: "1 of 2 approvals" in mia.get(f"/plans/{plan_id}/"), "the first approval shown"
    )
    assert plan_status(board, plan_id) == "pending"
    assert not model.received("Keep the old name as an alias."), "The first approval was sent."
    assert lead.decide(plan_id, "approve") == 409  # the same reviewer twice

    assert mia.decide(plan_id, "approve", "And note it in the changelog.") == 200
    result = project.result_of(exit_plan_mode)
    assert not result.is_error, project.report()
    assert "approved" in result.text.lower()
    model.wait_for(
        lambda m: (
            m.received("lead: Keep the old name as an alias.")
            and m.received("mia: And note it in the changelog.")
        ),
        30,
        "both reviewers' notes",
    )
    assert plan_status(board, plan_id) == "approved"


def test_a_rejected_plan_reaches_the_model_with_the_feedback(server_factory, connect, model):
    board = server_factory(env=QUIET)
    project = connect(board)
    lead = Lead(board)
    exit_plan_mode = present_plan(model, PLAN)
    model.add(say("I will rework the plan."))

    project.terminal("Plan the config loader rename.", "--permission-mode", "plan")
    plan_id = waiting_plan(lead)
    assert lead.decide(plan_id, "reject", "Add a step that keeps the old name working.") == 200

    result = project.result_of(exit_plan_mode)
    assert result.is_error, project.report()
    # Word for word the board's message for a rejection, which carries the feedback.
    decided = board_get(board, f"/api/v1/plans/{plan_id}")
    assert decided["status"] == "rejected"
    assert result.text == decided["message"]
    assert "Add a step that keeps the old name working." in result.text
    project.window.wait_for("I will rework the plan.")
    assert session(board, project.session_id)["permission_mode"] == "plan"


def test_a_plan_answered_in_the_terminal_is_closed_on_the_board(server_factory, connect, model):
    """The CLI asks in its terminal at the same time as the held hook asks the board; the
    terminal answers first, so the board must show that and refuse a late decision."""
    board = server_factory(env=QUIET)
    project = connect(board)
    lead = Lead(board)
    exit_plan_mode = present_plan(model, PLAN)
    model.add(say("Starting on the plan."))

    terminal = project.terminal("Plan the config loader rename.", "--permission-mode", "plan")
    plan_id = waiting_plan(lead)
    terminal.wait_for("Exit plan mode?", "Would you like to proceed?")
    terminal.answer(
        "Enter", lambda: model.tool_result(exit_plan_mode), "the terminal to take the answer"
    )

    result = project.result_of(exit_plan_mode)
    assert "approved" in result.text.lower(), project.report()
    wait_until(
        lambda: plan_status(board, plan_id) == "answered_in_terminal",
        "the plan to show it was answered in the terminal",
        timeout=15,
    )
    assert lead.decide(plan_id, "approve") == 409
    assert session(board, project.session_id)["permission_mode"] != "plan"


# --- stopping with unfinished tasks ------------------------------------------------------------


def test_an_agent_that_stops_early_is_continued_with_the_prompt(server_factory, connect, model):
    board = server_factory(env={"AGENTBOARD_CONTINUATION_COUNTDOWN_SECONDS": "1"})
    project = connect(board)
    tests = create_task("Run the tests", "Running the tests")
    parser = create_task("Fix the parser", "Fixing the parser")
    model.add(
        tests,
        parser,
        update_task(model, tests, "completed"),
        say("Stopping for now."),
        update_task(model, parser, "completed"),
        say("Both are done."),
    )

    project.run("Fix the parser bug.")

    expected = continuation_prompt(
        [
            {"content": "Run the tests", "status": "completed"},
            {"content": "Fix the parser", "status": "pending"},
        ]
    )
    continued = model.received(expected)
    assert continued, project.report()
    # It arrives as the newest user turn, right after the turn that stopped.
    assert any(expected in text for text in continued[0].last_user_texts()), project.report()
    assert model.loop_requests[-1].answered_with.blocks == say("Both are done.").blocks


def test_a_countdown_longer_than_ten_seconds_still_continues_the_agent(
    server_factory, connect, model, claude_code
):
    # `agentboard hook` used to give up on a held hook after 10 s: the continuation never came.
    board = server_factory(env={"AGENTBOARD_CONTINUATION_COUNTDOWN_SECONDS": "12"})
    project = connect(board, command=claude_code.with_command_hooks)
    tests = create_task("Run the tests", "Running the tests")
    model.add(
        tests,
        say("Stopping for now."),
        update_task(model, tests, "completed"),
        say("All done."),
    )
    started = time.monotonic()

    project.run("Run the tests.")

    expected = continuation_prompt([{"content": "Run the tests", "status": "pending"}])
    assert model.received(expected), project.report()
    assert time.monotonic() - started >= 12
    assert model.loop_requests[-1].answered_with.blocks == say("All done.").blocks


def test_a_subagent_that_stops_early_is_continued_in_its_own_loop(server_factory, connect, model):
    board = server_factory(env={"AGENTBOARD_CONTINUATION_COUNTDOWN_SECONDS": "1"})
    project = connect(board)
    subagent = started_with("SUBAGENT-TASK")
    working = [
        todo("Read the parser", "completed", "Reading the parser"),
        todo("Write the report", "pending", "Writing the report"),
    ]
    subagent_turns = [
        tool("TodoWrite", {"todos": working}),
        say("Stopping early."),
        tool("TodoWrite", {"todos": [{**item, "status": "completed"} for item in working]}),
        say("The parser is fine."),
    ]
    for turn in subagent_turns:
        turn.when = subagent
        model.add(turn)
    model.add(
        tool(
            "Agent",
            {
                "description": "Survey the parser",
                "prompt": "SUBAGENT-TASK: survey the parser and report back.",
                "subagent_type": "general-purpose",
                "run_in_background": False,
            },
        )
    )

    project.run("Look into the parser.", env=TODOWRITE_ENV)

    continued = model.received(continuation_prompt(working))
    assert continued, project.report()
    assert all(subagent(request) for request in continued), "The main agent was continued."
    assert not model.script, f"Turns left unplayed:\n{project.report()}"


def test_a_cancelled_countdown_lets_the_agent_stop(server_factory, connect, model):
    countdown = 60
    board = server_factory(env={"AGENTBOARD_CONTINUATION_COUNTDOWN_SECONDS": str(countdown)})
    project = connect(board)
    lead = Lead(board)
    model.add(
        create_task("Run the tests", "Running the tests"),
        create_task("Fix the parser", "Fixing the parser"),
        say("Stopping for now."),
    )

    running = project.start("Fix the parser bug.")
    try:
        countdown_id = wait_until(
            lambda: lead.countdown_ids(project.session_id), "the countdown on the board"
        )[0]
        cancelled_at = time.monotonic()
        status, _ = lead.post(f"/continuations/{countdown_id}/cancel/", {})
        assert status == 204
        stdout, stderr = running.communicate(timeout=30)
    except (AssertionError, subprocess.TimeoutExpired):
        running.kill()
        project.outputs.extend(running.communicate())
        raise AssertionError(f"The cancelled agent did not stop.\n{project.report()}") from None
    project.outputs.extend([stdout, stderr])

    assert running.returncode == 0, project.report()
    assert time.monotonic() - cancelled_at < countdown / 2
    assert model.loop_requests[-1].answered_with.blocks == say("Stopping for now.").blocks, (
        project.report()
    )


# --- activity ---------------------------------------------------------------------------------


def test_every_tool_call_is_a_step_from_its_start_to_its_end(server_factory, connect, model):
    board = server_factory(env=QUIET)
    project = connect(board)
    model.add(
        tool("Bash", {"command": "echo ready", "description": "Say ready"}),
        tool("Bash", {"command": "exit 3", "description": "Fail on purpose"}),
        say("Done."),
    )

    project.run("Check the build.")

    steps = board_get(board, f"/api/v1/sessions/{project.session_id}/activity")["steps"]
    ran = [(s["tool_name"], s["summary"], s["outcome"]) for s in steps]
    assert ran == [
        ("Bash", "echo ready", "ok"),
        ("Bash", "exit 3", "failed"),
    ], project.report()
    # PreToolUse started each one before it ended.
    at = datetime.fromisoformat
    assert all(at(s["ended_at"]) > at(s["started_at"]) for s in steps), steps
    assert steps[1]["error"], project.report()
    failures = board_get(board, f"/api/v1/sessions/{project.session_id}/activity?failures=true")
    assert [s["summary"] for s in failures["steps"]] == ["exit 3"]
    # The session's timeline draws them on the main agent's lane, the failure named as such.
    timeline = parse_html(Lead(board).get(f"/sessions/{project.session_id}/timeline/"))
    [lane] = timeline.find_all("div", cls="lane")
    marks = [mark.attrs["aria-label"] for mark in lane.find_all("a", cls="mark-link")]
    assert [mark.split(" after ")[0] for mark in marks] == [
        "Bash echo ready: done",
        "Bash exit 3: failed",
    ], marks
