"""The inbox against the real Claude Code CLI: `agentboard install-hooks --approvals` sends
every permission request to the board, and the model reads what the board decided.

The agent runs a script of the project, `./greet.sh <word>` (it prints `hello, <word>`), which
Claude Code does not run without asking in `default` mode (unlike `echo`, which it counts as
read-only and never asks about). Nothing is allowed beforehand.

Each test runs where the CLI sends PermissionRequest hooks: in print mode (`claude -p`, nobody
at a terminal: the case the inbox exists for) on the newest, and in the interactive CLI (tmux) on
both versions. 2.1.197 in print mode never asks the hook (see its own test below).
"""

from __future__ import annotations

import html
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from planmode.models import PermissionRequest, RequestStatus
from planmode.permissions import model_message, stopped_message
from tests.claude_cli.conftest import RUN_TIMEOUT, Lead, Project, poll, wait_until
from tests.claude_cli.install import NEWEST
from tests.claude_cli.model_server import ToolResult, Turn, say, tool

pytestmark = pytest.mark.claude_cli

QUIET = {"AGENTBOARD_ENFORCER_ENABLED": "false"}
# Claude Code's own words when it refuses a command nobody approved (both versions).
REQUIRES_APPROVAL = "This command requires approval"
# What the model reads of a call whose denial interrupted the agent (both versions).
INTERRUPTED = "The user doesn't want to proceed with this tool use."
# The terminal's own permission dialog (both versions).
DIALOG = "Do you want to proceed?"
# What the hooks recorded beside Agentboard's own, to compare with what the board shows.
RECORDED = ("PermissionRequest", "PostToolUse")

PRINT_AND_TERMINAL = [
    pytest.param("2.1.197", "terminal", id="claude-2.1.197-terminal"),
    pytest.param(NEWEST, "print", id=f"claude-{NEWEST}-print"),
    pytest.param(NEWEST, "terminal", id=f"claude-{NEWEST}-terminal"),
]
TERMINAL = [
    pytest.param("2.1.197", id="claude-2.1.197-terminal"),
    pytest.param(NEWEST, id=f"claude-{NEWEST}-terminal"),
]


def greet(word: str) -> Turn:
    return tool("Bash", {"command": f"./greet.sh {word}", "description": f"Greet {word}"})


@dataclass
class Agent:
    """One Claude Code agent of a project connected with `--approvals`, in `default` mode
    with nothing allowed beforehand: in print mode or in the terminal."""

    project: Project
    mode: str
    process: subprocess.Popen[str] | None = None

    def start(self, prompt: str) -> None:
        if self.mode == "print":
            self.process = self.project.start(
                prompt, "--permission-mode", "default", allowed_tools=()
            )
        else:
            self.project.terminal(prompt, "--permission-mode", "default")

    def prompt_again(self, prompt: str) -> None:
        """The developer goes on in the same session: the next prompt in the terminal, or
        `claude -p --resume` in print mode."""
        if self.process is None:
            assert self.project.window is not None
            self.project.window.type(prompt)
        else:
            self.process = self.project.start(
                prompt, "--permission-mode", "default", allowed_tools=(), resume=True
            )

    def finish(self, last_words: str) -> int | None:
        """Wait for the end of the turn: the model's `last_words` in the terminal, or the end
        of `claude -p`, whose exit code it returns."""
        if self.process is None:
            assert self.project.window is not None
            try:
                self.project.window.wait_for(last_words)
            except AssertionError as error:
                raise AssertionError(f"{error}\n{self.project.report()}") from None
            return None
        try:
            stdout, stderr = self.process.communicate(timeout=RUN_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.stop()
            raise AssertionError(f"claude -p ran too long.\n{self.project.report()}") from None
        self.project.outputs.extend([stdout, stderr])
        return self.process.returncode

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.project.outputs.extend(self.process.communicate())


@pytest.fixture
def mode() -> str:
    """How the agent runs, `print` or `terminal`; tests parametrize it."""
    return "terminal"


@pytest.fixture
def board_env() -> dict[str, str]:
    """Settings of the board; tests parametrize it."""
    return {}


@pytest.fixture
def agent(server_factory, connect, mode, board_env) -> Iterator[tuple[Agent, Lead]]:
    """The agent (in the test's `mode`) and the lead on its board."""
    board = server_factory(env=QUIET | board_env)
    project = connect(board, approvals=True, record=RECORDED)
    script = project.directory / "greet.sh"
    script.write_text('#!/bin/sh\necho "hello, $1"\n')
    script.chmod(0o755)
    running = Agent(project, mode)
    yield running, Lead(board)
    running.stop()


def waiting_request(lead: Lead, project: Project) -> int:
    """The one request waiting in the inbox."""
    try:
        ids = wait_until(lead.pending_request_ids, "the request in the inbox")
    except AssertionError as error:
        raise AssertionError(f"{error}\n{project.report()}") from None
    assert len(ids) == 1, ids
    return ids[0]


def stopped_text(call: Turn, message: str) -> str:
    """Word for word what the board hands the model with the prompt after a deny and stop."""
    return stopped_message(
        PermissionRequest(
            tool_name="Bash",
            tool_input=call.blocks[0]["input"],
            status=RequestStatus.DENIED,
            message=message,
            interrupt=True,
        )
    )


def denial_text(message: str) -> str:
    """Word for word what the board tells Claude Code to hand the model with a denial."""
    return model_message(
        PermissionRequest(tool_name="Bash", status=RequestStatus.DENIED, message=message)
    )


# --- a reviewer answers on the board ------------------------------------------------------------


@pytest.mark.parametrize(("claude_code", "mode"), PRINT_AND_TERMINAL, indirect=["claude_code"])
def test_a_request_allowed_once_on_the_board_runs_and_the_model_reads_its_output(agent, mode):
    running, lead = agent
    project, model = running.project, running.project.model
    call = greet("once")
    model.add(call, say("Finished."))

    running.start("Greet once.")
    request_id = waiting_request(lead, project)
    # Held: the model has not been told anything yet, and the command has not run.
    assert model.tool_result(call) is None
    page = html.unescape(lead.get(f"/inbox/requests/{request_id}/"))
    assert "./greet.sh once" in page and "Greet once" in page
    # Claude Code's own "don't ask again" suggestion is offered on the board.
    [asked] = project.recorded("PermissionRequest")
    assert (asked["permission_mode"], asked.get("tool_use_id")) == ("default", None)
    assert asked["permission_suggestions"] == [
        {
            "type": "addRules",
            "rules": [{"toolName": "Bash", "ruleContent": "./greet.sh once *"}],
            "behavior": "allow",
            "destination": "localSettings",
        }
    ]
    assert "Always allow Bash(./greet.sh once *)" in page
    assert lead.decide_request(request_id, "allow") == 200

    result = project.result_of(call)
    assert result == ToolResult(text="hello, once", is_error=False), project.report()
    exit_code = running.finish("Finished.")
    assert exit_code in (None, 0), project.report()
    assert lead.request_status(request_id) == "allowed"
    assert lead.request_ids() == [request_id]
    # PostToolUse carries the very input the request had (the board relies on it to tell a
    # request answered in the terminal).
    [ran] = project.recorded("PostToolUse")
    assert ran["tool_input"] == asked["tool_input"] == call.blocks[0]["input"]
    # Allowed once: nothing was remembered in the project's settings.
    assert not (project.directory / ".claude" / "settings.local.json").exists()


@pytest.mark.parametrize(("claude_code", "mode"), PRINT_AND_TERMINAL, indirect=["claude_code"])
def test_allowed_and_remembered_for_the_session_the_same_call_is_not_asked_again(agent, mode):
    running, lead = agent
    project, model = running.project, running.project.model
    first, second = greet("twice"), greet("twice")
    model.add(first, second, say("Finished."))

    running.start("Greet twice.")
    request_id = waiting_request(lead, project)
    assert (
        lead.decide_request(
            request_id, "remember", remember="custom", pattern="./greet.sh twice", where="session"
        )
        == 200
    )

    assert project.result_of(first).text == "hello, twice", project.report()
    again = project.result_of(second)
    assert (again.text, again.is_error) == ("hello, twice", False), project.report()
    assert running.finish("Finished.") in (None, 0), project.report()
    # Claude Code kept the rule for the session: its second call never reached the board.
    assert len(project.recorded("PostToolUse", 2)) == 2
    assert len(project.hook_inputs("PermissionRequest")) == 1, project.report()
    assert lead.request_ids() == [request_id]
    assert lead.request_status(request_id) == "allowed"
    assert "remembered" in lead.get("/inbox/")
    # For the session only: nothing written to the project's settings.
    assert not (project.directory / ".claude" / "settings.local.json").exists()


@pytest.mark.parametrize(("claude_code", "mode"), PRINT_AND_TERMINAL, indirect=["claude_code"])
def test_a_denial_hands_the_model_the_reviewers_message_and_the_agent_goes_on(agent, mode):
    running, lead = agent
    project, model = running.project, running.project.model
    call = greet("world")
    model.add(call, say("I will greet someone else."))

    running.start("Greet the world.")
    request_id = waiting_request(lead, project)
    message = "Greet the team instead, not the world."
    assert lead.decide_request(request_id, "deny", message=message) == 200

    result = project.result_of(call)
    assert result.is_error, project.report()
    assert result.text == denial_text(message)
    assert message in result.text
    assert running.finish("I will greet someone else.") in (None, 0), project.report()
    assert lead.request_status(request_id) == "denied"
    assert not project.hook_inputs("PostToolUse"), "The denied command ran."


@pytest.mark.parametrize(("claude_code", "mode"), PRINT_AND_TERMINAL, indirect=["claude_code"])
def test_deny_and_stop_ends_the_turn_and_the_message_comes_with_the_next_prompt(agent, mode):
    """Claude Code stops at once but drops the denial's message: the model reads its own stock
    refusal. The board hands the reviewer's message over with the session's next prompt."""
    running, lead = agent
    project, model = running.project, running.project.model
    call = greet("everyone")
    model.add(call)

    running.start("Greet everyone.")
    request_id = waiting_request(lead, project)
    message = "Stop greeting: the release is frozen until Monday."
    assert lead.decide_request(request_id, "stop", message=message) == 200

    if mode == "print":
        # The run ends at once, failing.
        assert running.finish("") == 1, project.report()
        assert "Execution error" in "".join(project.outputs[-2:])
    else:
        terminal = project.window
        assert terminal is not None
        wait_until(lambda: DIALOG not in terminal.screen(), "the dialog to close")
        assert poll(lambda: len(model.loop_requests) > 1, timeout=3) is None, project.report()
    # The turn stopped: the model was asked nothing more, and the command did not run.
    assert len(model.loop_requests) == 1, project.report()
    assert not project.hook_inputs("PostToolUse")
    assert lead.request_status(request_id) == "denied"
    assert "agent stopped" in lead.get("/inbox/")

    model.add(say("Understood: no greetings until Monday."))
    running.prompt_again("Carry on.")

    result = project.result_of(call)
    assert result.is_error, project.report()
    # Claude Code's own words, not the board's: its message never reaches the model this way.
    assert result.text.startswith(INTERRUPTED), project.report()
    assert message not in result.text
    # ... but with the next prompt, as that prompt's context, word for word the board's.
    assert running.finish("Understood: no greetings until Monday.") in (None, 0)
    _, after = model.loop_requests
    assert model.received(message) == [after], project.report()
    assert any(stopped_text(call, message) in text for text in after.texts())


# --- team rules -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("claude_code", "mode"), PRINT_AND_TERMINAL, indirect=["claude_code"])
def test_a_team_rule_answers_at_once_and_the_history_names_it(agent, mode):
    running, lead = agent
    project, model = running.project, running.project.model
    status, page = lead.post("/inbox/rules/", {"behavior": "allow", "rule": "Bash(./greet.sh *)"})
    assert status == 200 and "./greet.sh *" in html.unescape(page)
    call = greet("rule")
    model.add(call, say("Finished."))

    running.start("Greet by the rule.")

    result = project.result_of(call)
    assert (result.text, result.is_error) == ("hello, rule", False), project.report()
    assert running.finish("Finished.") in (None, 0), project.report()
    [request_id] = lead.request_ids()
    assert lead.request_status(request_id) == "allowed"
    page = html.unescape(lead.get(f"/inbox/requests/{request_id}/"))
    assert "by the team rule allow Bash(./greet.sh *)" in page
    assert "by the team rule allow Bash(./greet.sh *)" in html.unescape(lead.get("/inbox/"))
    assert len(project.recorded("PermissionRequest")) == 1


# --- nobody decides in time --------------------------------------------------------------------

SHORT_WAIT = {"AGENTBOARD_PERMISSION_HOOK_WAIT_SECONDS": "2"}


@pytest.mark.parametrize("board_env", [SHORT_WAIT], ids=["wait-2s"])
@pytest.mark.parametrize(
    ("claude_code", "mode"),
    [pytest.param(NEWEST, "print", id=f"claude-{NEWEST}-print")],
    indirect=["claude_code"],
)
def test_nobody_deciding_in_time_print_mode_refuses_and_the_request_expires(agent, mode):
    """The hook answers nothing after the wait; with nobody at a terminal, Claude Code refuses
    the call with its own words and the agent goes on."""
    running, lead = agent
    project, model = running.project, running.project.model
    call = greet("late")
    model.add(call, say("I could not greet."))

    running.start("Greet late.")

    result = project.result_of(call)
    assert (result.text, result.is_error) == (REQUIRES_APPROVAL, True), project.report()
    assert running.finish("I could not greet.") == 0, project.report()
    [request_id] = lead.request_ids()
    assert lead.request_status(request_id) == "expired"
    status, page = lead.post(f"/inbox/requests/{request_id}/decide/", {"action": "allow"})
    assert status == 409 and "the agent's terminal asked instead" in html.unescape(page)
    assert not project.hook_inputs("PostToolUse"), "The refused command ran."


@pytest.mark.parametrize("board_env", [SHORT_WAIT], ids=["wait-2s"])
@pytest.mark.parametrize("claude_code", TERMINAL, indirect=True)
def test_nobody_deciding_in_time_the_terminal_asks_and_the_request_expires(agent):
    """The terminal's own dialog, open since the request came, stays when the hook gives up;
    the developer answers it later."""
    running, lead = agent
    project, model = running.project, running.project.model
    call = greet("late")
    model.add(call, say("Finished."))

    running.start("Greet late.")
    request_id = waiting_request(lead, project)
    wait_until(lambda: lead.request_status(request_id) == "expired", "the request to expire")
    terminal = project.window
    assert terminal is not None and DIALOG in terminal.wait_for(DIALOG)
    assert model.tool_result(call) is None, "Claude Code went on without an answer."

    terminal.answer("Enter", lambda: model.tool_result(call), "the terminal to take the answer")

    assert project.result_of(call) == ToolResult("hello, late", False), project.report()
    running.finish("Finished.")
    # The board keeps saying why the terminal asked: nobody decided in time.
    assert lead.request_status(request_id) == "expired"
    assert lead.decide_request(request_id, "allow") == 409


@pytest.mark.parametrize(
    ("claude_code", "mode"),
    [pytest.param("2.1.197", "print", id="claude-2.1.197-print")],
    indirect=["claude_code"],
)
def test_print_mode_of_2_1_197_refuses_without_asking_the_board(agent, mode):
    """2.1.197 sends no PermissionRequest hook in print mode: it refuses at once, so a
    headless 2.1.197 agent never reaches the inbox."""
    running, lead = agent
    project, model = running.project, running.project.model
    call = greet("headless")
    model.add(call, say("I could not greet."))

    running.start("Greet headless.")

    result = project.result_of(call)
    assert (result.text, result.is_error) == (REQUIRES_APPROVAL, True), project.report()
    assert running.finish("I could not greet.") == 0, project.report()
    assert lead.request_ids() == []
    assert not project.hook_inputs("PermissionRequest")


# --- the developer answers in the terminal first ---------------------------------------------


@pytest.mark.parametrize("claude_code", TERMINAL, indirect=True)
def test_a_request_answered_in_the_terminal_first_is_closed_on_the_board(agent):
    running, lead = agent
    project, model = running.project, running.project.model
    call = greet("terminal")
    model.add(call, say("Finished."))

    running.start("Greet in the terminal.")
    request_id = waiting_request(lead, project)
    terminal = project.window
    assert terminal is not None
    terminal.wait_for(DIALOG)
    terminal.answer("Enter", lambda: model.tool_result(call), "the terminal to take the answer")

    assert project.result_of(call) == ToolResult("hello, terminal", False), project.report()
    wait_until(
        lambda: lead.request_status(request_id) == "answered_in_terminal",
        "the request to show it was answered in the terminal",
        timeout=15,
    )
    status, page = lead.post(
        f"/inbox/requests/{request_id}/decide/", {"action": "deny", "message": "Too late."}
    )
    assert status == 409 and "answered in the agent's terminal" in html.unescape(page)
    running.finish("Finished.")
    assert lead.request_status(request_id) == "answered_in_terminal"
    assert lead.request_ids() == [request_id]


@pytest.mark.parametrize("claude_code", TERMINAL, indirect=True)
def test_a_request_rejected_in_the_terminal_is_let_go_at_once(agent):
    """Escape in the terminal's dialog interrupts the turn, and Claude Code then closes the
    held hook request (unlike an allow there, which leaves it open until the call has run):
    the board stops waiting at once, as for any agent that stops waiting, and refuses a late
    decision."""
    running, lead = agent
    project, model = running.project, running.project.model
    call = greet("nobody")
    model.add(call, say("Finished."))

    running.start("Greet nobody.")
    request_id = waiting_request(lead, project)
    terminal = project.window
    assert terminal is not None
    terminal.wait_for(DIALOG)
    terminal.answer("Escape", lambda: DIALOG not in terminal.screen(), "the dialog to close")

    wait_until(
        lambda: lead.request_status(request_id) == "expired",
        "the board to stop waiting",
        timeout=10,
    )
    assert lead.decide_request(request_id, "allow") == 409
    assert model.tool_result(call) is None, "The model was asked again without a prompt."
    assert not project.hook_inputs("PostToolUse"), "The rejected command ran."
