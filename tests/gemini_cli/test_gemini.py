"""The real Gemini CLI, connected with `agentboard install-gemini`, on a real board.

A scripted model plays the agent; each test checks both ends: what the board shows, and what
the model was told (the reviewer's denial, the continuation prompt). Gemini runs
non-interactively (`gemini --prompt`), in yolo mode unless the test says otherwise: nobody is
there to answer its own confirmation, so the board is the only one asked.
"""

from __future__ import annotations

import json

import pytest

from tests.claude_cli.conftest import Lead, board_get, wait_until
from tests.gemini_cli.model_server import say, shell, todos
from todos.enforcer import continuation_prompt, reminder_text

pytestmark = pytest.mark.gemini_cli

# Boards on which only the feature under test speaks to the model.
QUIET = {"AGENTBOARD_ENFORCER_ENABLED": "false"}


def shown(board, session_id: str) -> list[tuple[str, str]]:
    listed = board_get(board, f"/api/v1/sessions/{session_id}/agents/{session_id}/todos")
    return [(item["content"], item["status"]) for item in listed["todos"]]


def texts(value) -> list[str]:
    """Every string inside a JSON value."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list):
        return [text for item in value for text in texts(item)]
    return []


def steps_of(board, session_id: str) -> list[tuple[str, str, str]]:
    steps = board_get(board, f"/api/v1/sessions/{session_id}/activity")["steps"]
    return [(s["tool_name"], s["summary"], s["outcome"]) for s in steps]


def test_write_todos_is_the_checklist_and_each_tool_call_a_step(server_factory, connect, model):
    board = server_factory(env=QUIET)
    project = connect(board)
    model.add(
        todos(("Read the settings page", "in_progress"), ("Store the theme", "pending")),
        shell("echo hello"),
        shell("echo hello"),
        todos(
            ("Read the settings page", "completed"),
            ("Store the theme", "in_progress"),
            ("Run the tests", "blocked"),
        ),
        say("Pausing here."),
    )

    result = project.run("Add a dark theme to the settings page")

    assert result.returncode == 0, project.report(result)
    session_id = project.session_id(result)
    assert shown(board, session_id) == [
        ("Read the settings page", "completed"),
        ("Store the theme", "in_progress"),
        # Gemini's "blocked" stays open on the board.
        ("Run the tests", "pending"),
    ], project.report(result)
    session = board_get(board, f"/api/v1/sessions/{session_id}")
    assert session["cwd"] == str(project.directory)
    assert (session["progress"]["completed"], session["progress"]["total"]) == (1, 3)
    # `gemini --prompt` ends its session when the turn is over: SessionEnd reached the board.
    assert session.get("ended_at"), project.report(result)
    # Every tool call is a step, from its BeforeTool to its AfterTool; the same command run
    # twice is two steps.
    assert steps_of(board, session_id) == [
        ("write_todos", "", "ok"),
        ("run_shell_command", "echo hello", "ok"),
        ("run_shell_command", "echo hello", "ok"),
        ("write_todos", "", "ok"),
    ]
    lead = Lead(board)
    page = lead.get(f"/sessions/{session_id}/")
    assert "Gemini CLI" in page
    assert "Add a dark theme to the settings page" in page
    assert "Store the theme" in page
    assert session_id in lead.get("/?client=gemini&state=all")
    assert session_id not in lead.get("/?client=codex&state=all")
    # The model read Gemini's own answers: the hooks took nothing from them.
    responses = model.streamed()[-1].function_responses()
    assert [r["name"] for r in responses] == [
        "write_todos",
        "run_shell_command",
        "run_shell_command",
        "write_todos",
    ]
    assert "hello" in json.dumps(responses[1])


def test_a_failing_command_is_a_failed_step(server_factory, connect, model):
    board = server_factory(env=QUIET)
    project = connect(board)
    model.add(shell("exit 3"), say("It failed."))

    result = project.run("Try the command")

    assert result.returncode == 0, project.report(result)
    assert steps_of(board, project.session_id(result)) == [
        ("run_shell_command", "exit 3", "failed")
    ], project.report(result)


def test_a_command_waits_on_the_inbox_and_a_denial_reaches_the_model(
    server_factory, connect, model
):
    board = server_factory(env=QUIET)
    project = connect(board, approvals=True)
    model.add(shell("touch denied.txt"), say("Understood, I will not."))
    lead = Lead(board)

    running = project.start("Mark it")
    try:
        request_id = wait_until(lead.pending_request_ids, "the request on the inbox")[0]
        page = lead.get(f"/inbox/requests/{request_id}/")
        assert "touch denied.txt" in page
        # Gemini keeps no rule a hook hands it: no "Always…", and what an allow does is said.
        assert "Always…" not in page
        assert "Allow lets the call go on to Gemini's own approval mode" in page
        message = "Not in this repository."
        assert lead.decide_request(request_id, "deny", message=message) == 200
        stdout, stderr = running.communicate(timeout=120)
    finally:
        running.kill()
    assert running.returncode == 0, (stdout, stderr, project.model.log())
    # The model read the reviewer's words as the command's error.
    denied = [
        response
        for request in model.streamed()
        for response in request.function_responses()
        if response["name"] == "run_shell_command"
    ]
    assert denied, model.log()
    said = json.dumps(denied[-1])
    assert message in said and "The reviewer denied this run_shell_command call" in said
    assert "Understood, I will not." in stdout
    assert not (project.directory / "denied.txt").exists()
    assert lead.request_status(request_id) == "denied"
    session_id = json.loads(stdout)["session_id"]
    assert ("run_shell_command", "touch denied.txt", "ok") not in steps_of(board, session_id)


def test_an_allowed_command_runs(server_factory, connect, model):
    board = server_factory(env=QUIET)
    project = connect(board, approvals=True)
    model.add(shell("touch approved.txt"), todos(("Mark it", "completed")), say("It is there."))
    lead = Lead(board)

    running = project.start("Mark it")
    try:
        request_id = wait_until(lead.pending_request_ids, "the request on the inbox")[0]
        # Nothing ran while the request waited.
        assert not (project.directory / "approved.txt").exists()
        assert lead.decide_request(request_id, "allow") == 200
        stdout, stderr = running.communicate(timeout=120)
    finally:
        running.kill()
    assert running.returncode == 0, (stdout, stderr, project.model.log())
    assert (project.directory / "approved.txt").exists()
    assert lead.request_status(request_id) == "allowed"
    # write_todos is not a tool Gemini asks about: it did not wait on the inbox.
    assert len(lead.request_ids()) == 1


def test_a_stop_with_open_steps_is_continued_with_the_boards_prompt(server_factory, connect, model):
    board = server_factory(env={"AGENTBOARD_CONTINUATION_COUNTDOWN_SECONDS": "0.5"})
    project = connect(board)
    model.add(
        todos(("Store the theme", "completed"), ("Run the tests", "in_progress")),
        say("I will stop here for now."),
        # After the continuation: the model finishes the list and stops for good.
        todos(("Store the theme", "completed"), ("Run the tests", "completed")),
        say("Everything is done."),
    )
    items = [
        {"content": "Store the theme", "status": "completed"},
        {"content": "Run the tests", "status": "in_progress"},
    ]

    result = project.run("Add a dark theme")

    assert result.returncode == 0, project.report(result)
    prompt = continuation_prompt(items)
    continued = model.received(prompt)
    assert continued
    # Gemini sends an AfterAgent hook's reason to the model as the next user message, once.
    assert continued[0].user_texts()[-1] == prompt
    assert sum(prompt in text for text in model.streamed()[-1].user_texts()) == 1
    # Nothing else came with it: Gemini's BeforeAgent for the continuation is not a new prompt
    # (no reminder), and its PreCompress (sent whenever it checks) is not a compaction.
    assert continued[0].contents[-1]["parts"] == [{"text": prompt}]
    session_id = project.session_id(result)
    assert shown(board, session_id) == [
        ("Store the theme", "completed"),
        ("Run the tests", "completed"),
    ]
    page = Lead(board).get(f"/sessions/{session_id}/")
    assert "Continued the agent (1 task left)." in page
    assert "Everything is done." in json.loads(result.stdout)["response"]


def test_a_stale_list_reminder_reaches_the_model_with_a_tool_result(server_factory, connect, model):
    board = server_factory(env={"AGENTBOARD_CONTINUATION_COUNTDOWN_SECONDS": "60"})
    project = connect(board)
    steps = [shell(f"echo step {n}") for n in range(7)]
    model.add(
        todos(("Store the theme", "in_progress"), ("Run the tests", "pending")),
        *steps,
        todos(("Store the theme", "completed"), ("Run the tests", "completed")),
        say("Done with both."),
    )

    result = project.run("Add a dark theme")

    assert result.returncode == 0, project.report(result)
    reminder = reminder_text(
        [
            {"content": "Store the theme", "status": "in_progress"},
            {"content": "Run the tests", "status": "pending"},
        ],
        steps=7,
    )
    # The seventh command without a list update: its AfterTool answers with the reminder,
    # which Gemini appends to that command's result for the model's next request.
    reminded = [
        request
        for request in model.streamed()
        if any(reminder in text for r in request.function_responses()[-1:] for text in texts(r))
    ]
    assert reminded, project.report(result)
    assert reminded[0] is model.streamed()[8], project.report(result)


def test_deny_and_stop_ends_the_agents_loop_and_no_continuation_follows(
    server_factory, connect, model
):
    board = server_factory(env={"AGENTBOARD_CONTINUATION_COUNTDOWN_SECONDS": "0.5"})
    project = connect(board, approvals=True)
    model.add(
        todos(("Clean the build", "in_progress"), ("Ship it", "pending")),
        shell("rm -rf build"),
        say("Carrying on."),
    )
    lead = Lead(board)

    running = project.start("Clean and ship")
    try:
        request_id = wait_until(lead.pending_request_ids, "the request on the inbox")[0]
        message = "Stop, the build folder is shared."
        assert lead.decide_request(request_id, "stop", message=message) == 200
        stdout, stderr = running.communicate(timeout=120)
    finally:
        running.kill()
    # The loop ended with the denied call: the model was not asked again, nor continued.
    requests = model.streamed()
    assert len(requests) == 2, (stdout, stderr, model.log())
    assert not model.received("unfinished tasks"), model.log()
    assert lead.request_status(request_id) == "denied"
    assert "Stop, the build folder is shared." in stdout + stderr, (stdout, stderr)
