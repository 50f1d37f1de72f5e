"""A card's todo items, made in Python for speed (`dashboard.board.todo_html`): the markup the
board and its scripts read, every text escaped, long texts cut as the template filter did."""

from __future__ import annotations

from django.template.defaultfilters import truncatechars

from dashboard.board.todo_html import ITEM_CHARS, cut, todo_items
from todos.models import Todo


def item(**fields) -> Todo:
    return Todo(**{"position": 0, "content": "Write the tests", "status": "pending", **fields})


def test_each_status_has_its_box_and_a_name_for_screen_readers():
    html = todo_items(
        [
            item(status="completed"),
            item(status="pending", priority="high"),
            item(status="cancelled"),
        ]
    )
    assert html == (
        '<li class="todo is-completed" data-change-key="completed|Write the tests">\n'
        '<span class="box" role="img" aria-label="completed">☒</span>\n'
        '<span class="text">Write the tests</span>\n</li>\n'
        '<li class="todo is-pending" data-change-key="pending|Write the tests">\n'
        '<span class="box" role="img" aria-label="pending">☐</span>\n'
        '<span class="text">Write the tests</span>\n'
        '<span class="priority priority-high">high</span>\n</li>\n'
        '<li class="todo is-cancelled" data-change-key="cancelled|Write the tests">\n'
        '<span class="box" role="img" aria-label="cancelled">⊘</span>\n'
        '<span class="text">Write the tests</span>\n</li>'
    )


def test_the_item_in_progress_shows_what_runs_with_a_spinner_and_its_task_below():
    html = todo_items([item(status="in_progress", active_form="Writing the tests")])
    assert (
        '<span class="text"><strong>Writing the tests…</strong> '
        '<span class="spinner" aria-hidden="true">▶</span>'
        '<span class="subtext">Write the tests</span></span>'
    ) in html
    alone = todo_items([item(status="in_progress")])
    assert "<strong>Write the tests…</strong>" in alone
    assert "subtext" not in alone


def test_markup_from_the_agent_stays_text():
    html = todo_items(
        [item(content='<script>alert("x")</script> & co', status="in_progress", active_form="<b>")]
    )
    assert "<script>" not in html and "<b>" not in html
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; co" in html
    assert "<strong>&lt;b&gt;…</strong>" in html


def test_long_texts_are_cut_as_the_template_filter_cuts_them():
    for text in ("x" * 250, "é" * 250, "e\u0301" * 150, "short é", "x" * ITEM_CHARS):
        assert cut(text) == truncatechars(text, ITEM_CHARS)
    html = todo_items([item(content="y" * 500)])
    assert f'<span class="text">{"y" * (ITEM_CHARS - 1)}…</span>' in html
