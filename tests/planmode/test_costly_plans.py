"""Plans whose markdown would take seconds to render: the largest the API accepts, in the shapes
that cost markdown-it most. Their review pages show them as text and say so; ordinary plans are
rendered. Timings are the benchmark's (`python -m tests.bench plans`), not asserted here."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.test import Client

from planmode.markdown import plain_title, render_plan, without_title

pytestmark = pytest.mark.django_db

AS_TEXT = "This plan is shown as plain text: rendering it would take too long."
LIMIT = settings.AGENTBOARD_MAX_PLAN_CHARS


def filled(unit: str, *, head: str = "") -> str:
    """`head`, then `unit` repeated up to the largest plan the API accepts."""
    return (head + unit * (LIMIT // len(unit)))[:LIMIT]


def table(columns: int) -> str:
    header = "|" + "|".join("h" for _ in range(columns)) + "|\n"
    rule = "|" + "|".join("-" for _ in range(columns)) + "|\n"
    row = "|" + "|".join("x" for _ in range(columns)) + "|\n"
    return filled(row, head="# Wide\n\n" + header + rule)


COSTLY = {
    "brackets": "[" * LIMIT,
    "link openers": filled("[a]("),
    "emphasis markers": filled("*a"),
    "underscores": filled("_a"),
    "mixed emphasis": filled("**a_"),
    "entities": filled("&#"),
    "a table of 200 columns": table(200),
    "a table of 2 columns": table(2),
    "a list of short items": filled("- a\n"),
}

CHEAP = {
    "backtick runs": "".join("`" * n + " " for n in range(1, 440)),
    "nested quotes": ">" * (LIMIT - 2) + " a",
    "nested lists": "".join("  " * n + "- a\n" for n in range(300)),
    "a heading with many spaces": "# a" + " " * (LIMIT - 4) + "x",
}


@pytest.fixture
def lead(client, reviewer) -> Client:
    client.force_login(reviewer)
    return client


@pytest.mark.parametrize("markdown", COSTLY.values(), ids=COSTLY.keys())
def test_a_plan_too_costly_to_render_is_shown_as_its_text_and_the_page_says_why(
    submit, lead, markdown
):
    plan = submit(plan=markdown)
    response = lead.get(f"/plans/{plan.pk}/")
    page = response.content.decode()
    assert response.status_code == 200
    assert AS_TEXT in page
    assert '<pre class="plan-as-text">' in page


@pytest.mark.parametrize("markdown", CHEAP.values(), ids=CHEAP.keys())
def test_a_pathological_plan_that_is_cheap_to_render_is_rendered(submit, lead, markdown):
    plan = submit(plan=markdown)
    response = lead.get(f"/plans/{plan.pk}/")
    assert response.status_code == 200
    assert AS_TEXT not in response.content.decode()


def test_an_ordinary_plan_is_rendered_and_says_nothing_of_text(submit, lead):
    plan = submit(plan="# Pagination\n\n1. Cursor based *paging*\n- [ ] limit `max` 100\n")
    page = lead.get(f"/plans/{plan.pk}/").content.decode()
    assert AS_TEXT not in page
    assert "<em>paging</em>" in page


def test_a_long_ordinary_plan_is_still_rendered(submit, lead):
    step = "1. Step with `code` and *emphasis* and a [link](https://example.com/a)\n"
    plan = submit(plan=filled(step, head="# Plan\n\n"))
    page = lead.get(f"/plans/{plan.pk}/").content.decode()
    assert AS_TEXT not in page
    assert "<em>emphasis</em>" in page


def test_the_text_shown_for_a_costly_plan_is_escaped(submit, lead):
    plan = submit(plan="<script>window.__pwned=1</script>\n" + "[" * (LIMIT - 40))
    page = lead.get(f"/plans/{plan.pk}/").content.decode()
    assert AS_TEXT in page
    assert "<script>window.__pwned" not in page
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in page


def test_a_costly_revision_is_not_marked_part_by_part_and_is_shown_as_text(submit, lead):
    submit(plan="# Plan\n\n1. Do it\n")
    plan = submit(plan="# Plan\n\n" + "*a" * (LIMIT // 2 - 10))
    page = lead.get(f"/plans/{plan.pk}/").content.decode()
    assert plan.revision == 2
    assert "too large to mark part by part" in page
    assert AS_TEXT in page


def test_the_words_of_a_costly_plan_are_its_text_for_comments():
    markdown = "[" * (LIMIT - 6) + " words"
    assert render_plan(markdown).startswith('<pre class="plan-as-text">')
    assert "words" in render_plan(markdown)


def test_a_title_is_read_from_the_start_of_a_long_line():
    assert plain_title("# *Pagination* " + "[" * LIMIT).startswith("Pagination [[[")
    assert without_title("# Pagination  #\n\nbody", "Pagination") == "\nbody"
