"""Each session's tokens and cost so far, on its overview row and its board."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.conftest import parse_html, todo, write_todos
from tests.costs.conftest import SESSION, usage_metrics


@pytest.fixture
def logged_in(client, user):
    client.force_login(user)
    return client


def row_cost(page: bytes, session_id: str) -> str:
    for row in parse_html(page).find_all("li", cls="session-row"):
        if row.find_all("a", href=f"/sessions/{session_id}/"):
            return row.find(cls="cost").text()
    raise AssertionError(f"No overview row for {session_id}.")


def test_the_overview_row_shows_what_the_session_cost(logged_in, export, user):
    write_todos(user, SESSION, SESSION, [todo("Run the tests", "in_progress")])
    export("/v1/metrics", usage_metrics(tokens={"input": 120_000, "output": 3_400}, cost=1.734))

    assert row_cost(logged_in.get("/").content, SESSION) == "$1.73"


def test_a_session_without_usage_shows_no_cost(logged_in, user):
    write_todos(user, SESSION, SESSION, [todo("Run the tests", "in_progress")])

    assert row_cost(logged_in.get("/").content, SESSION) == ""


def test_the_board_says_the_tokens_and_cost_so_far(logged_in, export, user):
    export("/v1/metrics", usage_metrics(tokens={"input": 12_000, "output": 300}, cost=0.42))

    header = parse_html(logged_in.get(f"/sessions/{SESSION}/").content).find(id="session-header")

    assert header.find(cls="usage").text() == "12.3k tokens · $0.42 so far"


def test_the_overview_reads_usage_in_one_query_whatever_the_number_of_rows(
    logged_in, export, user, django_assert_max_num_queries
):
    export("/v1/metrics", usage_metrics(session_id="sess-0"))
    logged_in.get("/")  # warm caches shared by every request
    with CaptureQueriesContext(connection) as queries:
        logged_in.get("/")
    # Counted now: every request the exports make starts a new query log.
    first_page = len(queries)

    for n in range(1, 8):
        export("/v1/metrics", usage_metrics(session_id=f"sess-{n}"))
    with django_assert_max_num_queries(first_page):
        page = logged_in.get("/").content

    assert [row_cost(page, f"sess-{n}") for n in range(8)] == ["$0.0012"] * 8


def test_a_session_reporting_tokens_only_shows_them_and_no_cost(logged_in, export, user):
    export("/v1/metrics", usage_metrics(tokens={"input": 12_000, "output": 300}, cost=0))

    header = parse_html(logged_in.get(f"/sessions/{SESSION}/").content).find(id="session-header")

    assert header.find(cls="usage").text() == "12.3k tokens · no cost reported"
    assert row_cost(logged_in.get("/").content, SESSION) == "12.3k tokens"
