from __future__ import annotations

from planmode.tool_display import (
    BODY_CHARS,
    DIFF_LINES,
    HEADLINE_CHARS,
    describe,
    describe_suggestion,
)


def test_bash_shows_the_exact_command_and_its_description():
    view = describe("Bash", {"command": "rm -rf build && make release", "description": "Rebuild"})
    assert (view.kind, view.tool, view.headline) == ("bash", "Bash", "rm -rf build && make release")
    assert view.body == "rm -rf build && make release"
    assert view.description == "Rebuild"


def test_a_multi_line_command_shows_its_first_line_loudest_and_all_of_it_below():
    view = describe("Bash", {"command": "set -e\nmake\nmake install"})
    assert view.headline == "set -e…"
    assert view.body == "set -e\nmake\nmake install"


def test_a_huge_command_is_bounded():
    view = describe("Bash", {"command": "x" * (BODY_CHARS + 500)})
    assert len(view.headline) == HEADLINE_CHARS
    assert len(view.body) == BODY_CHARS
    assert view.left_out == 500


def test_an_edit_shows_the_file_and_the_change_as_a_diff():
    view = describe(
        "Edit",
        {"file_path": "/src/theme.ts", "old_string": "a\nb\nc\n", "new_string": "a\nB\nc\nd\n"},
    )
    assert (view.kind, view.tool, view.headline) == ("edit", "Edit", "/src/theme.ts")
    assert [(line.kind, line.text) for line in view.diff] == [
        ("context", "a"),
        ("remove", "b"),
        ("add", "B"),
        ("context", "c"),
        ("add", "d"),
    ]
    assert (view.added, view.removed) == (2, 1)


def test_a_write_shows_every_line_as_added():
    view = describe("Write", {"file_path": "/src/new.py", "content": "one\ntwo\n"})
    assert [line.kind for line in view.diff] == ["add", "add"]
    assert (view.added, view.removed) == (2, 0)


def test_a_multi_edit_shows_each_edit_apart():
    view = describe(
        "MultiEdit",
        {
            "file_path": "/src/a.py",
            "edits": [
                {"old_string": "x", "new_string": "y"},
                {"old_string": "p", "new_string": "q"},
            ],
        },
    )
    assert [line.kind for line in view.diff] == ["remove", "add", "gap", "remove", "add"]


def test_a_notebook_edit_shows_the_new_cell():
    view = describe(
        "NotebookEdit", {"notebook_path": "/n.ipynb", "new_source": "print(1)", "cell_id": "c1"}
    )
    assert (view.headline, [line.text for line in view.diff]) == ("/n.ipynb", ["print(1)"])


def test_a_huge_diff_is_bounded_but_counted_in_full():
    content = "\n".join(f"line {n}" for n in range(DIFF_LINES + 50))
    view = describe("Write", {"file_path": "/big.txt", "content": content})
    assert len(view.diff) == DIFF_LINES
    assert view.diff_lines_left_out == 50
    assert view.added == DIFF_LINES + 50


def test_web_fetch_and_search_show_the_address_and_the_query():
    fetch = describe("WebFetch", {"url": "https://docs.python.org/3/", "prompt": "Summarize"})
    assert (fetch.kind, fetch.headline, fetch.body) == (
        "web",
        "https://docs.python.org/3/",
        "Summarize",
    )
    search = describe("WebSearch", {"query": "django async orm"})
    assert (search.tool, search.headline) == ("WebSearch", "django async orm")


def test_an_mcp_tool_leads_with_the_arguments_that_say_what_it_will_do():
    view = describe(
        "mcp__github__create_pull_request",
        {"draft": False, "body": "Adds cursors.", "repo": "shop", "title": "Cursor paging"},
    )
    assert (view.kind, view.tool) == ("mcp", "MCP github · create_pull_request")
    assert view.headline == "Cursor paging"
    assert view.description == "repo: shop"
    assert view.arguments.splitlines()[:2] == ["title: Cursor paging", "repo: shop"]


def test_mcp_arguments_show_real_line_breaks_indented_never_escapes():
    view = describe(
        "mcp__github__create_issue",
        {"title": "Flicker", "body": "Seen in Safari.\nSteps:\n  1. Reload", "labels": ["bug"]},
    )
    assert "\\n" not in view.arguments
    assert view.arguments == (
        "title: Flicker\nbody:\n  Seen in Safari.\n  Steps:\n    1. Reload\nlabels:\n  - bug"
    )


def test_an_mcp_tool_without_telling_arguments_shows_its_server_and_tool():
    view = describe("mcp__memory__read_graph", {"verbose": True, "nested": {"depth": 2}})
    assert view.headline == "memory · read_graph"
    assert view.description == ""
    assert view.arguments == "verbose: true\nnested:\n  depth: 2"


def test_mcp_arguments_stay_plain_text_and_bounded():
    view = describe(
        "mcp__notes__write",
        {"path": "<img src=x onerror=alert(1)>", "text": "x" * 50_000},
    )
    assert view.headline == "<img src=x onerror=alert(1)>"  # the template escapes it
    assert len(view.arguments) == 10_000
    assert view.left_out > 30_000


def test_any_other_tool_shows_its_input():
    view = describe("Task", {"description": "Review", "prompt": "Look at <b>this</b>"})
    assert (view.kind, view.headline) == ("other", "Task")
    assert '"prompt": "Look at <b>this</b>"' in view.arguments


def test_an_input_of_an_unexpected_shape_shows_as_its_json():
    view = describe("Bash", {"command": ["rm", "-rf"]})
    assert view.kind == "other"
    assert '"rm"' in view.arguments


def test_suggestions_read_as_sentences():
    assert (
        describe_suggestion(
            {
                "type": "addRules",
                "rules": [{"toolName": "Bash", "ruleContent": "npm run test:*"}],
                "behavior": "allow",
                "destination": "localSettings",
            }
        )
        == "Always allow Bash(npm run test:*) in this project (local settings)"
    )
    assert (
        describe_suggestion({"type": "setMode", "mode": "acceptEdits", "destination": "session"})
        == "Switch to acceptEdits mode for this session"
    )
    assert describe_suggestion({"type": "whatever"}) == ""
    assert describe_suggestion("not a dict") == ""


def test_gemini_clis_tools_show_like_claude_codes_under_their_own_names():
    shell = describe("run_shell_command", {"command": "rm -rf build", "description": "Clean."})
    assert (shell.kind, shell.tool, shell.headline, shell.description) == (
        "bash",
        "run_shell_command",
        "rm -rf build",
        "Clean.",
    )
    edit = describe("replace", {"file_path": "/a.py", "old_string": "x = 1", "new_string": "x = 2"})
    assert (edit.kind, edit.tool, edit.headline, edit.added, edit.removed) == (
        "edit",
        "replace",
        "/a.py",
        1,
        1,
    )
    fetch = describe("web_fetch", {"prompt": "Summarise https://example.com/docs"})
    assert (fetch.kind, fetch.headline) == ("web", "Summarise https://example.com/docs")
    # An input of another shape shows as its JSON, under the tool's own name.
    odd = describe("run_shell_command", {"cmd": 3})
    assert (odd.kind, odd.tool, '"cmd": 3' in odd.arguments) == ("other", "run_shell_command", True)
