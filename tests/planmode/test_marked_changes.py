"""Revision N's review page marks what changed since N-1 inside the rendered plan."""

from __future__ import annotations

from planmode.selectors import LINE_BUDGET, plan_marked
from tests.conftest import parse_html

OLD = """# Paging

1. Offset paging
2. Tests

Keep the response shape.

```python
def paginate(query, page): ...
```
"""


def marked(old: str, new: str, title: str = "Paging"):
    return plan_marked(old, new, old_title=title, new_title=title)


def words(html: str, cls: str) -> list[str]:
    return [" ".join(e.text().split()) for e in parse_html(f"<div>{html}</div>").find_all(cls=cls)]


def test_an_inserted_paragraph_is_marked_added_with_a_word():
    result = marked(OLD, OLD + "\nDocument the cursor format.\n")

    assert (result.added, result.removed) == (1, 0)
    assert words(result.html, "change-added") == ["Added Document the cursor format."]
    assert not words(result.html, "change-removed")


def test_a_removed_block_is_shown_in_place_and_marked_removed():
    result = marked(OLD, OLD.replace("Keep the response shape.\n\n", ""))

    assert (result.added, result.removed) == (0, 1)
    assert words(result.html, "change-removed") == ["Removed Keep the response shape."]
    assert result.html.index("Removed") < result.html.index("paginate")


def test_one_changed_step_marks_that_step_and_the_list_numbers_on():
    new = OLD.replace("1. Offset paging", "1. Cursor paging").replace(
        "2. Tests", "2. Tests\n3. Docs"
    )

    result = marked(OLD, new)

    assert words(result.html, "change-removed") == ["Removed Offset paging"]
    assert words(result.html, "change-added") == ["Added Cursor paging", "Added Docs"]
    # One list, not two: "Tests" is not marked, and "Docs" follows it in the same list.
    assert result.html.count("<ol") == 1
    assert "<li>Tests</li>" in result.html


def test_renumbering_a_list_is_not_a_change():
    old = "1. one\n2. two\n"
    new = "3. one\n4. two\n"

    assert not marked(old, new, title="x")


def test_the_same_text_marks_nothing():
    result = marked(OLD, OLD)

    assert not result and result.compared
    assert "change-tag" not in result.html


def test_raw_html_of_a_removed_block_stays_text():
    old = OLD + "\n<script>alert(1)</script>\n\n[x](javascript:alert(1))\n"

    result = marked(old, OLD)

    assert "<script>" not in result.html and 'href="javascript' not in result.html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in result.html
    assert words(result.html, "change-removed")[0].startswith("Removed <script>")


def test_plans_too_large_to_compare_are_not_even_parsed():
    side = int(LINE_BUDGET**0.5) + 10
    old = "\n".join(f"- old {n}" for n in range(side))
    new = "\n".join(f"- new {n}" for n in range(side))

    result = marked(old, new, title="x")

    assert not result.compared and not result and result.html == ""
