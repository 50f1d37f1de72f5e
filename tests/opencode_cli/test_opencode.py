"""The real opencode CLI with the Agentboard plugin (`agentboard install-opencode`) on a real
board, a scripted model playing the agent. Each test checks both ends: what the board shows,
and what the model was told."""

from __future__ import annotations

import json
import shutil
import socket
import time
import urllib.request

import pytest

from dashboard.costs.selectors import SessionUsage
from tests.capturing_server import CapturingServer
from tests.claude_cli.conftest import Lead, board_get, wait_until
from tests.client.conftest import add_worktree, make_repository
from tests.conftest import parse_html
from tests.opencode_cli.conftest import PRICE_IN, PRICE_OUT
from tests.opencode_cli.model_server import say, tool
from todos.enforcer import continuation_prompt

pytestmark = pytest.mark.opencode_cli

QUIET = {"AGENTBOARD_ENFORCER_ENABLED": "false"}


def item(content: str, status: str, priority: str = "medium") -> dict[str, str]:
    return {"content": content, "status": status, "priority": priority}


def board_todos(board, session_id: str, agent_id: str | None = None) -> dict:
    return board_get(board, f"/api/v1/sessions/{session_id}/agents/{agent_id or session_id}/todos")


def all_done(progress: dict, total: int) -> bool:
    return progress["completed"] == progress["total"] == total


def test_todowrite_shows_the_list_with_cancelled_items_and_priorities(
    server_factory, connect, model
):
    board = server_factory(env=QUIET)
    project = connect(board)
    todos = [
        item("Write the parser", "completed", "high"),
        item("Drop the old parser", "cancelled", "low"),
        item("Test the parser", "in_progress"),
        item("Document it", "pending", "low"),
    ]
    write = tool("todowrite", {"todos": todos})
    model.add(write, say("On it."))

    session_id = project.run("Rewrite the parser")

    listed = wait_until(
        lambda: (found := board_todos(board, session_id))["todos"] and found,
        "the list on the board",
    )
    assert [(t["content"], t["status"], t.get("priority")) for t in listed["todos"]] == [
        (t["content"], t["status"], t["priority"]) for t in todos
    ]
    assert listed["progress"] == {
        "completed": 1,
        "in_progress": 1,
        "pending": 1,
        "cancelled": 1,
        "total": 4,
    }
    # The model read back its own list from opencode, untouched by the plugin.
    assert "Drop the old parser" in model.tool_result(write)
    session = board_get(board, f"/api/v1/sessions/{session_id}")
    assert session["cwd"] == str(project.directory)


def test_opencode_carries_on_when_the_board_cannot_be_reached(server_factory, connect, model):
    board = server_factory(env=QUIET)
    project = connect(board)
    project.env["AGENTBOARD_URL"] = "http://127.0.0.1:9"  # nothing listens there
    write = tool("todowrite", {"todos": [item("Write the parser", "in_progress")]})
    model.add(write, say("All good."))

    project.run("Rewrite the parser")

    assert "Write the parser" in model.tool_result(write)
    assert any("All good." in output for output in project.outputs)


def test_every_request_names_the_repository_without_credentials_and_the_machine(
    connect, model, tmp_path
):
    main = make_repository(tmp_path / "shop", "https://ci:glpat-s3cret@gitlab.example/acme/shop")
    add_worktree(main, tmp_path / "shop-fix")
    model.add(tool("todowrite", {"todos": [item("Fix it", "completed")]}), say("Fixed."))
    with CapturingServer() as board:
        project = connect(board)
        # opencode works in a worktree of the repository, with the plugin installed there.
        shutil.copytree(project.directory, tmp_path / "shop-fix", dirs_exist_ok=True)
        project.directory = tmp_path / "shop-fix"

        project.run("Fix the parser")
        seen = list(board.requests)
        project.env["AGENTBOARD_REPORT_ORIGIN"] = "0"
        model.add(say("Nothing to do."))
        project.run("Anything else?")
        quiet = board.requests[len(seen) :]

    assert seen and quiet
    for request in seen:
        # Its events, and the usage of each message the model answered.
        assert request.path in {
            "/hooks/opencode",
            "/hooks/opencode/usage",
            "/hooks/opencode/steering",
        }
        assert request.headers["X-Agentboard-Repository"] == "https://gitlab.example/acme/shop"
        assert request.headers["X-Agentboard-Host"] == socket.gethostname()
    for request in quiet:
        assert "X-Agentboard-Repository" not in request.headers
        assert "X-Agentboard-Host" not in request.headers


# --- under `opencode serve`: the continuation and permission answers land in the session ------


def user_texts(model) -> list[str]:
    return [text for request in model.loop_requests() for text in request.user_texts()]


def test_an_idle_session_with_unfinished_tasks_is_continued_with_the_prompt(
    server_factory, connect, model
):
    board = server_factory(env={"AGENTBOARD_CONTINUATION_COUNTDOWN_SECONDS": "1"})
    project = connect(board)
    todos = [item("Write the parser", "in_progress"), item("Test the parser", "pending")]
    done = [item("Write the parser", "completed"), item("Test the parser", "completed")]
    model.add(
        tool("todowrite", {"todos": todos}),
        say("I will stop here for now."),
        tool("todowrite", {"todos": done}),
        say("Everything is done."),
    )
    project.serve()
    session_id = project.new_session()

    project.prompt(session_id, "Rewrite the parser")

    prompt = continuation_prompt(todos)
    model.wait_for(lambda m: prompt in user_texts(m), 60, "the continuation prompt")
    wait_until(
        lambda: (
            any("Everything is done." in str(r.messages) for r in model.loop_requests())
            or len(model.loop_requests()) >= 4
        ),
        "the agent to carry on after the continuation",
    )
    history = wait_until(
        lambda: (
            (page := Lead(board).get(f"/sessions/{session_id}/"))
            and "Continued the agent" in page
            and page
        ),
        "the continuation in the session's history",
    )
    assert "opencode" in history
    # Everything done: the next idle lets the agent stop, so the prompt came exactly once.
    wait_until(
        lambda: all_done(board_todos(board, session_id)["progress"], 2),
        "the finished list, all done",
    )
    # Each request carries the whole conversation: the newest shows every prompt once.
    assert model.loop_requests()[-1].user_texts().count(prompt) == 1


def test_a_countdown_longer_than_ten_seconds_still_continues_the_session(
    server_factory, connect, model
):
    board = server_factory(env={"AGENTBOARD_CONTINUATION_COUNTDOWN_SECONDS": "12"})
    project = connect(board)
    todos = [item("Write the parser", "in_progress")]
    model.add(
        tool("todowrite", {"todos": todos}),
        say("I will stop here for now."),
        tool("todowrite", {"todos": [item("Write the parser", "completed")]}),
        say("Everything is done."),
    )
    project.serve()
    session_id = project.new_session()
    started = time.monotonic()

    project.prompt(session_id, "Rewrite the parser")

    model.wait_for(lambda m: continuation_prompt(todos) in user_texts(m), 60, "the continuation")
    assert time.monotonic() - started >= 12
    wait_until(
        lambda: all_done(board_todos(board, session_id)["progress"], 1),
        "the finished list, all done",
    )


def test_activity_during_the_countdown_cancels_the_continuation(server_factory, connect, model):
    board = server_factory(env={"AGENTBOARD_CONTINUATION_COUNTDOWN_SECONDS": "30"})
    project = connect(board)
    todos = [item("Write the parser", "in_progress")]
    model.add(tool("todowrite", {"todos": todos}), say("Stopping."), say("Sure, noted."))
    project.serve()
    session_id = project.new_session()
    project.prompt(session_id, "Rewrite the parser")
    lead = Lead(board)
    wait_until(lambda: lead.countdown_ids(session_id), "the countdown on the card")

    project.prompt(session_id, "Also, keep the old parser around.")

    wait_until(
        lambda: (
            "Countdown cancelled: the user sent a new prompt"
            in lead.get(f"/sessions/{session_id}/")
        ),
        "the cancelled countdown in the history",
    )
    assert continuation_prompt(todos) not in user_texts(model)


def test_a_session_driven_by_oh_my_opencode_is_left_to_its_enforcer(server_factory, connect, model):
    board = server_factory(env={"AGENTBOARD_CONTINUATION_COUNTDOWN_SECONDS": "1"})
    project = connect(board)
    todos = [item("Write the parser", "in_progress")]
    model.add(tool("todowrite", {"todos": todos}), say("Stopping."))
    project.serve()
    session_id = project.new_session()

    project.prompt(
        session_id,
        "[SYSTEM DIRECTIVE: OH-MY-OPENCODE - TODO CONTINUATION] Continue with the next task.",
    )

    page = wait_until(
        lambda: (
            (page := Lead(board).get(f"/sessions/{session_id}/"))
            and "Let it stop: oh-my-opencode" in page
            and page
        ),
        "the board to leave the session to oh-my-opencode",
    )
    assert "continues this agent with its own enforcer" in page
    assert continuation_prompt(todos) not in user_texts(model)


def ask_first(project) -> None:
    config = project.directory / "opencode.json"
    settings = json.loads(config.read_text())
    settings["permission"] = {"bash": "ask"}
    config.write_text(json.dumps(settings))


def test_a_bash_permission_denied_on_the_inbox_hands_the_model_the_message(
    server_factory, connect, model
):
    board = server_factory(env=QUIET)
    project = connect(board)
    ask_first(project)
    call = tool("bash", {"command": "touch note.txt", "description": "Create a note"})
    model.add(call, say("Understood, I will not."))
    project.serve()
    session_id = project.new_session()
    project.prompt(session_id, "Make a note")
    lead = Lead(board)
    request_id = wait_until(lead.pending_request_ids, "the request in the inbox")[0]
    assert "touch note.txt" in lead.get(f"/inbox/requests/{request_id}/")

    status = lead.decide_request(request_id, "deny", message="Keep the tree clean for now.")

    assert status == 200
    result = model.wait_for(lambda m: m.tool_result(call), 60, "the tool result")
    assert "Keep the tree clean for now." in result
    assert not (project.directory / "note.txt").exists()


def test_a_bash_permission_allowed_on_the_inbox_runs_the_command(server_factory, connect, model):
    board = server_factory(env=QUIET)
    project = connect(board)
    ask_first(project)
    call = tool("bash", {"command": "touch note.txt", "description": "Create a note"})
    model.add(call, say("Done."))
    project.serve()
    session_id = project.new_session()
    project.prompt(session_id, "Make a note")
    lead = Lead(board)
    request_id = wait_until(lead.pending_request_ids, "the request in the inbox")[0]

    assert lead.decide_request(request_id, "allow") == 200

    model.wait_for(lambda m: m.tool_result(call) is not None, 60, "the tool result")
    wait_until(lambda: (project.directory / "note.txt").exists(), "the command to run")
    assert lead.request_status(request_id) == "allowed"


def test_a_subagent_shows_as_a_card_of_the_session_that_started_it(server_factory, connect, model):
    board = server_factory(env=QUIET)
    project = connect(board)
    model.add(
        tool(
            "task",
            {
                "description": "Find the parser",
                "prompt": "Find where the parser lives and say which file.",
                "subagent_type": "explore",
            },
        ),
        say("The parser is in src/parser.py."),  # the subagent's own turn
        say("Found it."),
    )

    session_id = project.run("Where is the parser?")

    session = wait_until(
        lambda: (
            len((found := board_get(board, f"/api/v1/sessions/{session_id}"))["agents"]) > 1
            and found
        ),
        "the subagent's card",
    )
    subagent = next(agent for agent in session["agents"] if not agent["main"])
    assert subagent["agent_type"] == "Explore"
    assert subagent["agent_id"].startswith("ses_")


def test_every_tool_call_is_a_step_of_the_session(server_factory, connect, model):
    board = server_factory(env=QUIET)
    project = connect(board)
    model.add(
        tool("bash", {"command": "echo ready", "description": "Say ready"}),
        tool("read", {"filePath": str(project.directory / "missing.txt")}),
        tool("bash", {"command": "ls /no/such/dir", "description": "List the build output"}),
        say("Done."),
    )

    session_id = project.run("Check the build")

    def steps() -> list[dict]:
        found = board_get(board, f"/api/v1/sessions/{session_id}/activity")["steps"]
        return found if len(found) == 3 and all(s["ended_at"] for s in found) else []

    ran = wait_until(steps, "the three tool calls on the board")
    assert [(s["tool_name"], s["outcome"]) for s in ran] == [
        ("bash", "ok"),
        ("read", "failed"),
        ("bash", "failed"),  # opencode says "completed": the plugin sends the exit code
    ]
    assert ran[0]["summary"] == "echo ready"
    assert ran[1]["summary"].endswith("missing.txt")
    assert ran[1]["error"]
    assert (ran[2]["summary"], ran[2]["error"]) == ("ls /no/such/dir", "Exit code 2")


def test_the_board_shows_the_tokens_and_cost_of_every_assistant_message(
    server_factory, connect, model
):
    board = server_factory(env=QUIET)
    project = connect(board)
    model.prompt_tokens, model.completion_tokens = 1000, 200
    model.add(tool("bash", {"command": "true", "description": "Do nothing"}), say("Done."))

    session_id = project.run("Run true")

    messages = len(model.loop_usage)
    prompt = sum(p for p, _ in model.loop_usage)
    completion = sum(c for _, c in model.loop_usage)
    cost = SessionUsage(cost_micros=round(prompt * PRICE_IN + completion * PRICE_OUT))
    lead = Lead(board)

    def header_usage() -> tuple[str, str] | None:
        usage = parse_html(lead.get(f"/sessions/{session_id}/")).find(cls="usage")
        if usage is None:
            return None
        figures = usage.attrs.get("title") or ""
        return (figures, usage.text()) if f"Input {prompt}," in figures else None

    try:
        figures, text = wait_until(header_usage, f"the usage of {messages} messages on the board")
    except AssertionError as error:
        rows = board.query(
            "SELECT stream, model, input_tokens, output_tokens, cost_micros FROM costs_usage"
        )
        raise AssertionError(f"{error} Stored: {rows}\n{project.report()}") from None
    assert figures.startswith(f"Input {prompt}, output {completion}, cache read 0,")
    total = SessionUsage(input_tokens=prompt + completion)
    assert text == f"{total.tokens_text} tokens · {cost.cost_text} so far"


def test_a_budget_of_a_few_cents_stops_the_agent_at_its_next_tool_call(
    server_factory, connect, model
):
    """The lead's own budget: a cent a day, stopping at its limit. The first message's cost (far
    more than a cent) reaches the board once its tool call ran; the board's answer gates the
    session, so the next tool call asks first, is refused, and the model reads why."""
    board = server_factory(env=QUIET)
    project = connect(board)
    model.prompt_tokens, model.completion_tokens = 100_000, 100
    first = tool("bash", {"command": "echo first", "description": "Say first"})
    refused = tool("bash", {"command": "touch refused.txt", "description": "Make a file"})
    model.add(first, refused, say("Stopped."))
    ((user_pk,),) = board.query("SELECT id FROM auth_user WHERE username = %s", (board.username,))
    status, _ = Lead(board).post(
        f"/budgets/person/{user_pk}/", {"limit": "0.01", "period": "day", "stop_at_limit": "on"}
    )
    assert status == 200

    project.run("Say first, then make a file")

    assert "first" in (model.tool_result(first) or ""), project.report()
    sentence = (
        f"Agentboard: the budget for {board.username} ($0.01 a day) is spent; a reviewer "
        "must raise it or let this session continue."
    )
    assert sentence in (model.tool_result(refused) or ""), project.report()
    assert not (project.directory / "refused.txt").exists()
    blocked = board.query(
        "SELECT COUNT(*) FROM dashboard_auditentry WHERE action = 'budget.blocked'"
    )
    assert blocked[0][0] == 1


# --- steered from the board: a message, a pause, a stop --------------------------------------


def steer(board, session_id: str, action: str, body: dict | None = None) -> int:
    """The session's owner steers its main agent through the API."""
    request = urllib.request.Request(
        f"{board.url}/api/v1/sessions/{session_id}/agents/{session_id}/{action}",
        data=json.dumps(body or {}).encode(),
        method="POST",
        headers={"Authorization": f"Bearer {board.token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.status


def idle(project, session_id: str) -> bool:
    status = project.call("GET", "/session/status") or {}
    return status.get(session_id, {}).get("type", "idle") == "idle"


def ready_session(project, model) -> str:
    """A session that answered a first prompt and waits, idle, for the next."""
    project.serve()
    session_id = project.new_session()
    project.prompt(session_id, "Get ready")
    model.wait_for(lambda m: len(m.loop_requests()) >= 1, 60, "the first answer")
    wait_until(lambda: idle(project, session_id), "the session to be idle")
    return session_id


def test_a_message_from_the_board_reaches_an_idle_session_once(server_factory, connect, model):
    board = server_factory(env=QUIET)
    project = connect(board)
    model.add(say("Ready."), say("Noted: staging it is."))
    session_id = ready_session(project, model)

    assert steer(board, session_id, "messages", {"text": "Use staging, not production."}) == 201

    text = "Use staging, not production."
    model.wait_for(lambda m: any(text in t for t in user_texts(m)), 30, "the message")
    wait_until(lambda: idle(project, session_id), "the answered session to be idle again")
    time.sleep(2)  # a second delivery would come within a poll's round
    newest = model.loop_requests()[-1].user_texts()
    assert sum(text in t for t in newest) == 1, project.report()
    assert len(model.loop_requests()) == 2
    ((state, via),) = board.query("SELECT state, delivered_via FROM steering_directive")
    assert (state, via) == ("delivered", "opencode plugin")


def test_a_paused_sessions_command_waits_for_the_resume_then_runs(server_factory, connect, model):
    board = server_factory(env=QUIET)
    project = connect(board)
    call = tool("bash", {"command": "touch note.txt", "description": "Make a note"})
    model.add(say("Ready."), call, say("Done."))
    session_id = ready_session(project, model)
    assert steer(board, session_id, "pause", {"reason": "Deploy freeze."}) == 200
    time.sleep(2)  # the plugin's poll hears of the pause within about a second

    project.prompt(session_id, "Make a note")

    model.wait_for(lambda m: len(m.loop_requests()) >= 2, 60, "the tool call")
    time.sleep(3)
    assert not (project.directory / "note.txt").exists()
    assert model.tool_result(call) is None
    assert steer(board, session_id, "resume") == 200
    wait_until(lambda: (project.directory / "note.txt").exists(), "the command to run")
    model.wait_for(lambda m: m.tool_result(call) is not None, 30, "the tool result")


def test_a_stop_from_the_board_aborts_the_turn(server_factory, connect, model):
    board = server_factory(env=QUIET)
    project = connect(board)
    call = tool("bash", {"command": "sleep 20 && touch late.txt", "description": "Wait"})
    model.add(say("Ready."), call, say("Never said."))
    session_id = ready_session(project, model)
    project.prompt(session_id, "Wait a while")
    model.wait_for(lambda m: len(m.loop_requests()) >= 2, 60, "the tool call")
    time.sleep(1)
    started = time.monotonic()

    assert steer(board, session_id, "stop", {"reason": "Runaway loop."}) == 200

    wait_until(lambda: idle(project, session_id), "the aborted session to be idle", timeout=15)
    assert time.monotonic() - started < 15
    time.sleep(1)
    assert len(model.loop_requests()) == 2, project.report()
    assert not (project.directory / "late.txt").exists()
    ((state, via),) = board.query("SELECT state, delivered_via FROM steering_directive")
    assert (state, via) == ("delivered", "opencode plugin")
