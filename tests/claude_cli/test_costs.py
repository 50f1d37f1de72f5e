"""The real Claude Code exports its tokens and cost over OTLP to a real board, as install-hooks
set it up; the board's figures are what the scripted model handed out."""

from __future__ import annotations

import json
import re
import urllib.request

import pytest

from dashboard.costs.selectors import SessionUsage
from tests.claude_cli.conftest import Lead, wait_until
from tests.claude_cli.model_server import Usage, say, tool
from tests.conftest import parse_html

pytestmark = pytest.mark.claude_cli

FIGURES = Usage(
    input_tokens=1234, output_tokens=56, cache_read_input_tokens=700, cache_creation_input_tokens=89
)
TOKENS = re.compile(r"Input (\d+), output (\d+), cache read (\d+), cache creation (\d+) tokens")


def board_figures(lead: Lead, session_id: str) -> tuple[tuple[int, ...], str, str] | None:
    """The tokens (input, output, cache read, cache creation) and cost the session's board
    header says, and the cost on its overview row; None before the board has any."""
    request = urllib.request.Request(f"{lead.board.url}/sessions/{session_id}/")
    status, body = lead._open(request)
    if status != 200:
        return None
    usage = parse_html(body).find(id="session-header").find(cls="usage")
    if usage is None:
        return None
    tokens = TOKENS.search(usage.attrs.get("title") or "")
    assert tokens, f"The board's usage has no token figures: {usage.attrs}"
    row_cost = ""
    for row in parse_html(lead.get("/")).find_all("li", cls="session-row"):
        if row.find_all("a", href=f"/sessions/{session_id}/"):
            row_cost = row.find(cls="cost").text()
    return tuple(int(n) for n in tokens.groups()), usage.text(), row_cost


@pytest.mark.parametrize("protocol", ["http/protobuf", "http/json"])
def test_the_board_shows_the_tokens_and_cost_the_model_handed_out(
    connect, model, agentboard_server, protocol
):
    model.usage = FIGURES
    model.add(tool("Bash", {"command": "true", "description": "Do nothing"}))
    project = connect(agentboard_server)
    # install-hooks chose protobuf; JSON is the exporter's other encoding.
    user_settings = project.home / ".claude" / "settings.json"
    settings = json.loads(user_settings.read_text())
    assert settings["env"]["OTEL_EXPORTER_OTLP_PROTOCOL"] == "http/protobuf"
    settings["env"]["OTEL_EXPORTER_OTLP_PROTOCOL"] = protocol
    user_settings.write_text(json.dumps(settings))
    lead = Lead(agentboard_server)

    printed = project.run("Run true, then say done.", "--output-format", "json")

    handed_out = model.handed_out_total()
    requests = len(model.handed_out)
    expected = (
        handed_out.input_tokens,
        handed_out.output_tokens,
        handed_out.cache_read_input_tokens,
        handed_out.cache_creation_input_tokens,
    )
    assert requests >= 2  # the tool call and the answer after it
    assert expected == (1234 * requests, 56 * requests, 700 * requests, 89 * requests)
    # What Claude Code itself says the run cost, as the board must show it.
    cost = SessionUsage(cost_micros=round(json.loads(printed)["total_cost_usd"] * 1_000_000))

    def figures_match() -> tuple | None:
        seen = board_figures(lead, project.session_id)
        return seen if seen is not None and seen[0] == expected else None

    try:
        _, header, row_cost = wait_until(figures_match, "the board's usage figures")
    except AssertionError as error:
        seen = board_figures(lead, project.session_id)
        raise AssertionError(
            f"{error} Board shows {seen}, expected {expected}.\n{project.report()}"
        ) from None
    total = sum(expected)
    assert (
        header == f"{SessionUsage(input_tokens=total).tokens_text} tokens · {cost.cost_text} so far"
    )
    assert row_cost == cost.cost_text


def test_a_budget_of_a_few_cents_stops_the_agent_at_its_next_tool_call(
    connect, model, agentboard_server
):
    """The lead's own budget: a cent a day, stopping at its limit. The first request's usage
    (far more than a cent) reaches the board while its tool call runs; the next tool call is
    refused, and the model reads why in its tool result."""
    board = agentboard_server
    model.usage = Usage(input_tokens=20_000, output_tokens=500)
    waiting = tool("Bash", {"command": "sleep 14", "description": "Wait for the export"})
    refused = tool("Bash", {"command": "true", "description": "Do nothing"})
    model.add(waiting, refused, say("Stopped."))
    project = connect(board)
    lead = Lead(board)
    ((user_pk,),) = board.query("SELECT id FROM auth_user WHERE username = %s", (board.username,))
    status, _ = lead.post(
        f"/budgets/person/{user_pk}/",
        {"limit": "0.01", "period": "day", "stop_at_limit": "on"},
    )
    assert status == 200

    project.run("Wait, then run true.")

    first = model.tool_result(waiting)
    assert first is not None and not first.is_error, project.report()
    result = model.tool_result(refused)
    assert result is not None, project.report()
    sentence = (
        f"Agentboard: the budget for {board.username} ($0.01 a day) is spent; a reviewer "
        "must raise it or let this session continue."
    )
    # 2.1.330 leads it with "PreToolUse:Bash hook error: ", 2.1.197 hands it over as is.
    assert result.text.endswith(sentence), f"{result.text}\n{project.report()}"
    blocked = board.query(
        "SELECT COUNT(*) FROM dashboard_auditentry WHERE action = 'budget.blocked'"
    )
    assert blocked[0][0] >= 1
