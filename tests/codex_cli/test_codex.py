"""The real Codex CLI, connected with `agentboard install-codex`, on a real board.

A scripted model plays the agent; each test checks both ends: what the board shows, and what
the model was told (the continuation prompt, the reviewer's denial).
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import time
from datetime import datetime

import pytest

from dashboard.costs.selectors import SessionUsage
from tests.capturing_server import CapturingServer
from tests.claude_cli.conftest import Lead, board_get, wait_until
from tests.client.conftest import make_repository
from tests.codex_cli.conftest import MODEL
from tests.codex_cli.model_server import plan, say, shell, spawn_agent, wait_agent
from tests.conftest import parse_html
from todos.enforcer import continuation_prompt, reminder_text

pytestmark = pytest.mark.codex_cli

# Boards on which only the feature under test speaks to the model.
QUIET = {"AGENTBOARD_ENFORCER_ENABLED": "false"}


def board_session(board, session_id: str) -> dict:
    return board_get(board, f"/api/v1/sessions/{session_id}")


def shown(board, session_id: str) -> list[tuple[str, str]]:
    todos = board_get(board, f"/api/v1/sessions/{session_id}/agents/{session_id}/todos")
    return [(item["content"], item["status"]) for item in todos["todos"]]


def test_the_plan_is_the_agents_checklist_and_the_session_shows_start_to_end(
    server_factory, connect, model
):
    board = server_factory(env=QUIET)
    project = connect(board)
    model.add(
        plan(("Read the settings page", "in_progress"), ("Store the theme", "pending")),
        shell("ls"),
        plan(
            ("Read the settings page", "completed"),
            ("Store the theme", "in_progress"),
            ("Run the tests", "pending"),
        ),
        say("Pausing here."),
    )

    result = project.run("Add a dark theme to the settings page")

    assert result.returncode == 0, project.report(result)
    session_id = project.session_id()
    assert shown(board, session_id) == [
        ("Read the settings page", "completed"),
        ("Store the theme", "in_progress"),
        ("Run the tests", "pending"),
    ], project.report(result)
    session = board_session(board, session_id)
    assert session["cwd"] == str(project.directory)
    assert (session["progress"]["completed"], session["progress"]["total"]) == (1, 3)
    # `codex exec` ends its session when the turn is over: SessionEnd reached the board.
    assert session.get("ended_at"), project.report(result)
    page = Lead(board).get(f"/sessions/{session_id}/")
    assert "Add a dark theme to the settings page" in page
    assert "Store the theme" in page
    # The model read Codex's own answer to the plan update: the hooks took nothing from it.
    assert "Plan updated" in model.requests[1].outputs().values()
    # Every tool call is a step, from its PreToolUse to its PostToolUse.
    steps = board_get(board, f"/api/v1/sessions/{session_id}/activity")["steps"]
    assert [(s["summary"], s["outcome"]) for s in steps if s["tool_name"] != "update_plan"] == [
        ("ls", "ok")
    ], (steps, project.report(result))
    at = datetime.fromisoformat
    assert all(at(s["ended_at"]) > at(s["started_at"]) for s in steps), steps


def a_stop_with_a_step_left(model) -> list[dict]:
    """The model stops with one step open, then, continued, finishes it; the list it left."""
    model.add(
        plan(("Store the theme", "completed"), ("Run the tests", "in_progress")),
        say("I will stop here for now."),
        # After the continuation: the model finishes the list and stops for good.
        plan(("Store the theme", "completed"), ("Run the tests", "completed")),
        say("Everything is done."),
    )
    return [
        {"content": "Store the theme", "status": "completed"},
        {"content": "Run the tests", "status": "in_progress"},
    ]


def test_every_hook_names_the_repository_without_credentials_and_the_machine(connect, model):
    with CapturingServer() as board:
        project = connect(board)
        make_repository(project.directory, "https://ghp_s3cret@github.com/acme/shop.git")
        model.add(shell("ls"), say("Done."))

        result = project.run("Look around")

    assert result.returncode == 0, project.report(result)
    hooks = [seen for seen in board.requests if seen.path == "/hooks/codex"]
    events = {json.loads(seen.body)["hook_event_name"] for seen in hooks}
    assert {"SessionStart", "PreToolUse", "PostToolUse", "Stop"} <= events, board.log()
    for seen in hooks:
        assert seen.headers["X-Agentboard-Repository"] == "https://github.com/acme/shop.git"
        assert seen.headers["X-Agentboard-Host"] == socket.gethostname()


def test_a_stop_with_open_steps_is_continued_with_the_boards_prompt(server_factory, connect, model):
    board = server_factory(env={"AGENTBOARD_CONTINUATION_COUNTDOWN_SECONDS": "0.5"})
    project = connect(board)
    items = a_stop_with_a_step_left(model)

    result = project.run("Add a dark theme")

    assert result.returncode == 0, project.report(result)
    prompt = continuation_prompt(items)
    continued = model.received(prompt)
    assert continued, project.report(result)
    # Codex hands a Stop hook's reason to the model as the next user message, and only once.
    assert continued[0].user_texts()[-1].endswith(f">{prompt}</hook_prompt>")
    assert sum(prompt in text for text in model.requests[-1].user_texts()) == 1
    session_id = project.session_id()
    page = Lead(board).get(f"/sessions/{session_id}/")
    assert "Continued the agent (1 task left)." in page
    assert "Everything is done." in result.stdout


def test_a_countdown_longer_than_ten_seconds_still_continues_codex(server_factory, connect, model):
    # `agentboard codex-hook` used to give up on the held Stop hook after 10 s.
    board = server_factory(env={"AGENTBOARD_CONTINUATION_COUNTDOWN_SECONDS": "12"})
    project = connect(board)
    items = a_stop_with_a_step_left(model)
    started = time.monotonic()

    result = project.run("Add a dark theme")

    assert result.returncode == 0, project.report(result)
    assert model.received(continuation_prompt(items)), project.report(result)
    assert time.monotonic() - started >= 12
    assert "Everything is done." in result.stdout


def test_a_command_outside_the_sandbox_waits_on_the_inbox_and_a_denial_reaches_the_model(
    server_factory, connect, model
):
    board = server_factory(env=QUIET)
    project = connect(board, approvals=True)
    denied = shell("npm install left-pad", escalate=True, justification="The task needs it.")
    model.add(denied, say("Understood, I will use the vendored copy."))
    lead = Lead(board)

    terminal = project.terminal("Add left-pad")
    request_id = wait_until(lambda: lead.pending_request_ids(), "the request on the inbox")[0]
    page = lead.get(f"/inbox/requests/{request_id}/")
    assert "npm install left-pad" in page
    assert "The task needs it." in page
    message = "Use the vendored copy in third_party/ instead."
    assert lead.decide_request(request_id, "deny", message=message) == 200

    output = wait_until(lambda: model.output_of(denied), "the denial to reach the model")
    assert message in output, project.report()
    assert "The reviewer denied this Bash call on Agentboard" in output
    terminal.wait_for("Understood, I will use the vendored copy.")
    assert lead.request_status(request_id) == "denied"
    assert not (project.directory / "node_modules").exists()


def test_an_allowed_command_runs_outside_the_sandbox(server_factory, connect, model):
    board = server_factory(env=QUIET)
    project = connect(board, approvals=True)
    allowed = shell("touch approved.txt", escalate=True, justification="Mark it approved.")
    model.add(allowed, say("The file is there."))
    lead = Lead(board)

    terminal = project.terminal("Mark it approved")
    request_id = wait_until(lambda: lead.pending_request_ids(), "the request on the inbox")[0]
    assert lead.decide_request(request_id, "allow") == 200

    terminal.wait_for("The file is there.")
    # The read-only sandbox would have refused the write: it ran because the board allowed it.
    assert (project.directory / "approved.txt").exists(), project.report()
    assert lead.request_status(request_id) == "allowed"


def test_a_stale_list_reminder_reaches_the_model_with_the_next_request(
    server_factory, connect, model
):
    board = server_factory(env={"AGENTBOARD_CONTINUATION_COUNTDOWN_SECONDS": "60"})
    project = connect(board)
    steps = [shell(f"echo step {n}") for n in range(7)]
    model.add(
        plan(("Store the theme", "in_progress"), ("Run the tests", "pending")),
        *steps,
        plan(("Store the theme", "completed"), ("Run the tests", "completed")),
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
    # The seventh command without a plan update: its hook answers with the reminder, which
    # Codex hands the model (as a developer message) with the very next request.
    after = [r for r in model.requests if any(reminder in t for t in r.texts())]
    assert after, project.report(result)
    assert after[0] is model.requests[8], project.report(result)


def test_a_subagent_gets_its_own_card_with_its_own_checklist(server_factory, connect, model):
    board = server_factory(env=QUIET)
    project = connect(board)
    task = "Check that the docs mention the dark theme."
    spawned = spawn_agent(task)
    model.add(
        plan(("Delegate the docs check", "in_progress"), ("Store the theme", "pending")),
        spawned,
        wait_agent(spawned),
        say("The docs check is back; pausing here."),
    )
    model.add_subagent(
        task,
        plan(("Read the docs", "in_progress"), ("Report back", "pending")),
        plan(("Read the docs", "completed"), ("Report back", "in_progress")),
        say("The docs mention it."),
    )

    result = project.run("Add a dark theme")

    assert result.returncode == 0, project.report(result)
    session_id = project.session_id()
    agents = {a["agent_id"]: a for a in board_session(board, session_id)["agents"]}
    assert len(agents) == 2, project.report(result)
    [sub_id] = [agent_id for agent_id in agents if agent_id != session_id]
    # Codex names the subagent by its own thread id, with the type it was spawned as; it shows
    # stopped once its work is over (SubagentStop, or at the latest the session's end).
    assert agents[sub_id]["agent_type"] == "default"
    assert agents[sub_id]["status"] == "stopped", project.report(result)
    todos = board_get(board, f"/api/v1/sessions/{session_id}/agents/{sub_id}/todos")
    assert [(i["content"], i["status"]) for i in todos["todos"]] == [
        ("Read the docs", "completed"),
        ("Report back", "in_progress"),
    ]
    assert shown(board, session_id) == [
        ("Delegate the docs check", "in_progress"),
        ("Store the theme", "pending"),
    ]
    page = Lead(board).get(f"/sessions/{session_id}/")
    assert "Report back" in page and "Store the theme" in page


def test_deny_and_stop_ends_the_turn_and_no_continuation_follows(server_factory, connect, model):
    board = server_factory(env={"AGENTBOARD_CONTINUATION_COUNTDOWN_SECONDS": "0.5"})
    project = connect(board, approvals=True)
    denied = shell("git push --force", escalate=True, justification="Publish the branch.")
    model.add(
        plan(("Publish the branch", "in_progress")),
        denied,
        say("Stopping as the reviewer asked."),
    )
    lead = Lead(board)

    terminal = project.terminal("Publish it")
    request_id = wait_until(lambda: lead.pending_request_ids(), "the request on the inbox")[0]
    assert lead.decide_request(request_id, "stop", message="Never force-push main.") == 200

    output = wait_until(lambda: model.output_of(denied), "the denial to reach the model")
    assert "asked you to stop" in output and "Never force-push main." in output
    terminal.wait_for("Stopping as the reviewer asked.")
    session_id = project.session_id()
    # The turn ended with the step still open, and the enforcer stayed out of it, saying why.
    board_page = f"/sessions/{session_id}/"
    wait_until(
        lambda: "Let it stop: a reviewer denied its command" in lead.get(board_page),
        "the board to say why the agent was let stop",
    )
    assert shown(board, session_id) == [("Publish the branch", "in_progress")]
    assert not model.received("your todo list still has unfinished tasks"), project.report()


def trust_all_selected(screen: str) -> bool:
    # Codex marks the selected option with a right-pointing angle quote (U+203A).
    return any(
        line.strip().startswith("\u203a") and "Trust all and continue" in line
        for line in screen.splitlines()
    )


def test_codex_asks_to_trust_the_new_hooks_once_and_then_runs_them(server_factory, connect, model):
    """No bypass: the developer trusts install-codex's hooks when Codex asks, and from then on
    `codex exec` runs them too."""
    board = server_factory(env=QUIET)
    project = connect(board)
    model.add(plan(("Store the theme", "in_progress")), say("Started."))

    terminal = project.terminal("Add a dark theme", trusted=False)
    terminal.wait_for("Hooks need review")
    terminal.wait_for("Trust all and continue")
    # "2" picks "Trust all and continue", Enter confirms. Codex ignores keys for a moment after
    # the dialog opens: press "2" until the option is the selected one (a lost "2" would let
    # Enter open the hooks' review list instead).
    terminal.answer("2", lambda: trust_all_selected(terminal.screen()), "Trust all selected")
    terminal.answer("Enter", lambda: "Hooks need review" not in terminal.screen(), "the trust")
    terminal.wait_for("Started.")
    first = project.session_id()
    assert shown(board, first) == [("Store the theme", "in_progress")], project.report()
    terminal.close()

    model.add(plan(("Run the tests", "in_progress")), say("Running."))
    result = subprocess.run(
        [str(project.codex), "exec", "--skip-git-repo-check", "Run the tests"],
        cwd=project.directory,
        env=project.env,
        capture_output=True,
        text=True,
        timeout=90,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 0, project.report(result)
    second = re.search(r"session id: (\S+)", result.stderr).group(1)
    assert shown(board, second) == [("Run the tests", "in_progress")], project.report(result)


def test_the_board_shows_the_tokens_of_every_response_the_model_gave(
    server_factory, connect, model
):
    board = server_factory(env=QUIET)
    project = connect(board)
    # Codex reads its exporter's token from this variable only, as install-codex says.
    project.env["OTEL_EXPORTER_OTLP_HEADERS"] = f"Authorization=Bearer {board.token}"
    model.input_tokens, model.cached_tokens, model.output_tokens = 1500, 500, 70
    model.add(shell("true"), say("Done."))

    result = project.run("Run true")
    assert result.returncode == 0, project.report(result)

    session_id = project.session_id()
    responses = len(model.requests)
    expected = f"Input {1000 * responses}, output {70 * responses}, cache read {500 * responses},"
    lead = Lead(board)

    def header_usage() -> tuple[str, str] | None:
        usage = parse_html(lead.get(f"/sessions/{session_id}/")).find(cls="usage")
        figures = (usage.attrs.get("title") or "") if usage is not None else ""
        return (figures, usage.text()) if figures.startswith(expected) else None

    try:
        _, text = wait_until(header_usage, f"the tokens of {responses} responses on the board")
    except AssertionError as error:
        rows = board.query("SELECT stream, model, input_tokens, output_tokens FROM costs_usage")
        raise AssertionError(f"{error} Stored: {rows}\n{project.report(result)}") from None
    total = SessionUsage(input_tokens=(1000 + 70 + 500) * responses)
    assert text == f"{total.tokens_text} tokens · no cost reported"


def test_a_budget_of_a_cent_refuses_the_next_command_and_the_model_reads_why(
    server_factory, connect, model
):
    """The lead's own budget: a cent a day, stopping at its limit. Codex reports tokens only,
    so the board prices them from its price table. The first response's usage (two cents)
    reaches the board while its command runs; the next command is refused."""
    board = server_factory(env=QUIET)
    project = connect(board)
    project.env["OTEL_EXPORTER_OTLP_HEADERS"] = f"Authorization=Bearer {board.token}"
    lead = Lead(board)
    # The scripted model's price, as an admin adds it: 2,000 input tokens are $0.02.
    price = {"new-model": MODEL, "new-input": "10", "new-output": "10"}
    price |= {"new-cache_read": "1", "new-cache_write": "1"}
    assert lead.post("/settings/prices/", price)[0] == 200
    ((user_pk,),) = board.query("SELECT id FROM auth_user WHERE username = %s", (board.username,))
    status, _ = lead.post(
        f"/budgets/person/{user_pk}/", {"limit": "0.01", "period": "day", "stop_at_limit": "on"}
    )
    assert status == 200
    model.input_tokens, model.output_tokens = 2000, 0
    # Codex exports its events every second: the first response's end, and so its usage, waits
    # until its command has started, so that the command runs whenever the export comes.
    waiting = shell("sleep 4").hold_end()
    refused = shell("touch refused.txt")
    model.add(waiting, refused, say("Stopped."))

    def sleeping() -> bool:
        # The board stores the step as it answers the command's PreToolUse hook.
        steps = board.query("SELECT COUNT(*) FROM activity_step WHERE summary = 'sleep 4'")
        return steps[0][0] == 1

    running = project.start("Wait, then touch a file")
    try:
        wait_until(sleeping, "the first command to start")
    finally:
        waiting.release_end()
    result = project.finish(running)

    assert result.returncode == 0, project.report(result)
    assert "Process exited with code 0" in (model.output_of(waiting) or ""), project.report(result)
    sentence = (
        f"Agentboard: the budget for {board.username} ($0.01 a day) is spent; a reviewer "
        "must raise it or let this session continue."
    )
    # Codex hands a PreToolUse hook's reason to the model inside a sentence of its own, and
    # ends the reason with its own full stop.
    told = model.output_of(refused) or ""
    assert told.startswith(f"Command blocked by PreToolUse hook: {sentence} Command: "), (
        f"{told}\n{project.report(result)}"
    )
    assert not (project.directory / "refused.txt").exists()
    step = board.query("SELECT outcome FROM activity_step WHERE summary = 'touch refused.txt'")
    assert step == [("denied",)]
    blocked = board.query(
        "SELECT COUNT(*) FROM dashboard_auditentry WHERE action = 'budget.blocked'"
    )
    assert blocked[0][0] >= 1
