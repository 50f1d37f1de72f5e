from __future__ import annotations

import time

from dashboard.activity.models import SUMMARY_CHARS
from dashboard.activity.summaries import bounded_text, first_line, input_hash, summarize

M = "\N{MINUS SIGN}"


def test_a_command_is_summarised_as_itself_with_its_description_beside_it():
    summary, detail = summarize("Bash", {"command": "pytest tests/api", "description": "Run"})
    assert (summary, detail) == ("pytest tests/api", "Run")


def test_an_edit_names_the_file_relative_to_the_folder_and_counts_lines_added_and_removed():
    edit = {
        "file_path": "/home/dev/shop/orders/views.py",
        "old_string": "a\n",
        "new_string": "b\nc",
    }
    assert summarize("Edit", edit, cwd="/home/dev/shop") == (
        "orders/views.py",
        f"+2 {M}1",
    )


def test_a_multi_edit_counts_the_lines_of_all_its_edits():
    edits = [{"old_string": "x", "new_string": "y\nz"}, {"old_string": "p\nq", "new_string": ""}]
    assert summarize("MultiEdit", {"file_path": "/a/b.py", "edits": edits}) == (
        "/a/b.py",
        f"+2 {M}3",
    )


def test_a_write_counts_its_lines():
    assert summarize("Write", {"file_path": "/a/new.md", "content": "1\n2\n3\n"}) == (
        "/a/new.md",
        "+3",
    )


def test_a_fetch_names_its_url():
    assert summarize("WebFetch", {"url": "https://example.com/a", "prompt": "x"})[0] == (
        "https://example.com/a"
    )


def test_an_mcp_tool_names_its_server_and_tool_and_its_key_argument():
    summary, detail = summarize("mcp__github__create_issue", {"owner": "dev", "title": "Flicker"})
    assert summary == "github · create_issue"
    assert detail == "Flicker"


def test_opencode_and_codex_names_of_the_same_tools_read_the_same():
    assert summarize("edit", {"filePath": "/w/a.py", "oldString": "a", "newString": "b"}) == (
        "/w/a.py",
        f"+1 {M}1",
    )
    assert summarize("shell", {"command": ["bash", "-lc", "ls src"]})[0] == "bash -lc ls src"


def test_an_unknown_tool_is_summarised_by_its_first_plain_argument():
    assert summarize("Frobnicate", {"nested": {"a": 1}, "level": 3}) == ("3", "")
    assert summarize("Frobnicate", "not an object") == ("", "")


def test_a_five_megabyte_write_is_summarised_within_the_fixed_size_and_quickly():
    content = "x" * 5_000_000 + "\n" + "y" * 5_000_000
    started = time.perf_counter()
    summary, detail = summarize("Write", {"file_path": "/" + "p" * 5_000_000, "content": content})
    assert time.perf_counter() - started < 0.5
    assert len(summary) <= SUMMARY_CHARS and summary.endswith("…")
    assert detail == "+2"


def test_deeply_nested_input_is_summarised_and_hashed_without_failing():
    nested: object = "deep"
    for _ in range(5000):
        nested = {"a": [nested]}
    assert summarize("Frobnicate", {"x": nested}) == ("", "")
    assert len(input_hash("Frobnicate", {"x": nested})) == 32


def test_binary_looking_and_hostile_text_becomes_one_plain_line():
    text = bounded_text("rm -rf /\x00\x1b[31m<script>alert(1)</script>\r\n\ud800tail")
    assert "\x00" not in text and "\x1b" not in text and "\n" not in text
    assert text.startswith("rm -rf / [31m<script>")
    assert "\ud800" not in text
    # Markup stays text: the templates escape it.
    assert "<script>" in text


def test_the_same_call_hashes_the_same_whatever_the_order_of_its_keys():
    assert input_hash("Bash", {"a": 1, "b": 2}) == input_hash("Bash", {"b": 2, "a": 1})
    assert input_hash("Bash", {"a": 1}) != input_hash("Read", {"a": 1})


def test_an_error_is_kept_as_its_first_line():
    assert first_line("\n  \nExit code 1\nTraceback...") == "Exit code 1"
