from __future__ import annotations

from html.parser import HTMLParser

import pytest

from planmode.markdown import render_plan, render_plan_page
from planmode.models import Plan


def tags_of(html: str) -> list[tuple[str, dict[str, str | None]]]:
    """Every element as a browser's parser sees it, with its attributes."""
    found: list[tuple[str, dict[str, str | None]]] = []

    class Collector(HTMLParser):
        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            found.append((tag, dict(attrs)))

    Collector().feed(html)
    return found


def test_headings_lists_and_emphasis_render_as_html():
    html = render_plan("# Pagination\n\n1. **Cursor** based\n2. *then* the rest\n\n- a\n- b\n")
    assert "<h1>Pagination</h1>" in html
    assert "<ol>" in html and "<strong>Cursor</strong>" in html and "<em>then</em>" in html
    assert "<ul>" in html


def test_task_list_items_become_disabled_checkboxes():
    html = render_plan("- [ ] limit max 100\n- [x] read the old code\n")
    # Each in a label with its text, so the checkbox has a name.
    assert (
        '<li class="task-list-item"><label><input type="checkbox" disabled=""> limit max 100'
        "</label>" in html
    )
    assert '<label><input type="checkbox" disabled="" checked=""> read the old code' in html


def test_a_checkbox_pattern_outside_a_list_stays_text():
    assert "<input" not in render_plan("[ ] not a list item\n")


def test_tables_render_with_their_alignment():
    html = render_plan("| name | size |\n|:--|--:|\n| a | 1 |\n")
    assert "<table>" in html
    assert '<td class="align-right">1</td>' in html
    assert "style=" not in html


def test_code_blocks_with_a_known_language_are_highlighted():
    html = render_plan('```python\ndef paginate(cursor):\n    return "next"\n```\n')
    assert '<code class="language-python">' in html
    assert '<span class="k">def</span>' in html
    assert '<span class="s2">"next"</span>' in html


def test_code_blocks_in_an_unknown_language_are_plain_escaped_text():
    html = render_plan("```nosuchlang\n<b>x</b>\n```\n")
    assert "&lt;b&gt;x&lt;/b&gt;" in html


@pytest.mark.parametrize(
    "markup",
    [
        "<script>window.__pwned = 1</script>",
        '<img src=x onerror="window.__pwned = 2">',
        '<div onclick="alert(1)">click</div>',
        "<iframe src=https://example.com></iframe>",
        "<style>body{display:none}</style>",
    ],
)
def test_raw_html_in_a_plan_is_shown_as_text_not_markup(markup):
    html = render_plan(f"Before\n\n{markup}\n\nafter `{markup}` too")
    assert {tag for tag, _ in tags_of(html)} == {"p", "code"}
    assert markup.split(">")[0].replace("<", "&lt;") in html


@pytest.mark.parametrize(
    "link",
    [
        "[click](javascript:alert(1))",
        "[click](JaVaScRiPt:alert(1))",
        "[click](  javascript:alert(1))",
        "<javascript:alert(1)>",
        "[click](vbscript:msgbox(1))",
        "[click](data:text/html,<script>alert(1)</script>)",
        '[click](https://example.com "x\\" onmouseover=\\"alert(1)")',
    ],
)
def test_script_links_do_not_survive(link):
    tags = tags_of(render_plan(link))
    # What remains is inert text; the only links left point at web addresses.
    assert [attrs["href"] for tag, attrs in tags if tag == "a"] in ([], ["https://example.com"])
    assert not [name for _, attrs in tags for name in attrs if name.startswith("on")]


def test_web_links_survive_and_do_not_leak_the_referrer():
    html = render_plan("[docs](https://example.com/paging)")
    link = '<a href="https://example.com/paging" rel="noopener noreferrer nofollow">docs</a>'
    assert link in html


def test_images_are_not_loaded_from_addresses_an_agent_chose():
    html = render_plan("![diagram](https://tracker.example/pixel.png)")
    assert "<img" not in html
    assert "diagram" in html


@pytest.mark.parametrize(
    ("markdown", "title"),
    [
        ("# Add `GET /orders` paging\n\nbody", "Add GET /orders paging"),
        ("## **Bold** and _emphasis_ ##\n", "Bold and emphasis"),
        ("# See [the docs](https://example.com) first", "See the docs first"),
        ("Use `<script>` tags\n\n# Later heading", "Later heading"),
        ("- [ ] a first line without heading", "- [ ] a first line without heading"),
        ("# \\*literal\\* stars", "*literal* stars"),
    ],
)
def test_a_plan_title_is_plain_text_without_markdown(markdown, title):
    assert Plan(markdown=markdown).title == title


def test_a_title_with_markup_stays_text_to_escape():
    assert (
        Plan(markdown="# Use `<script>alert(1)</script>`").title == "Use <script>alert(1)</script>"
    )


def test_the_review_page_drops_a_markdown_heading_that_is_its_title():
    plan = Plan(markdown="# Add `GET /orders`\n\nThe body.")
    assert "GET /orders" not in render_plan_page(plan.markdown, title=plan.title)
