"""The overview and the board name each session's agent kind, and the overview filters by it."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from dashboard.models import Client, Session
from tests.conftest import parse_html, todo, write_todos


@pytest.fixture
def logged_in(client, user):
    client.force_login(user)
    return client


def sessions_of(owner, kinds: dict[str, str]) -> None:
    """One session per id, each with a list, reported by the given kind of agent."""
    for session_id in kinds:
        write_todos(owner, session_id, session_id, [todo(f"Work in {session_id}", "in_progress")])
    for session_id, kind in kinds.items():
        Session.objects.filter(session_id=session_id).update(client=kind)


def rows(response) -> dict[str, str]:
    """Each overview row's session title link text and its kind label."""
    document = parse_html(response.content)
    return {
        row.find("a", cls="session-link").text(): row.find(cls="kind").text()
        for row in document.find_all("li", cls="session-row")
    }


def test_every_overview_row_names_its_agent_kind(logged_in, user):
    sessions_of(
        user,
        {
            "sess-oc": Client.OPENCODE,
            "sess-cc": Client.CLAUDE_CODE,
            "sess-cx": Client.CODEX,
            "sess-api": Client.API,
        },
    )

    shown = rows(logged_in.get("/"))

    assert sorted(shown.values()) == ["API", "Claude Code", "Codex", "opencode"]


def test_the_board_header_names_the_agent_kind(logged_in, user):
    sessions_of(user, {"sess-oc": Client.OPENCODE})

    document = parse_html(logged_in.get("/sessions/sess-oc/").content)

    assert document.find(id="session-header").find(cls="kind").text() == "opencode"


def test_the_overview_filtered_by_kind_lists_only_that_kind(logged_in, user):
    sessions_of(user, {"sess-oc": Client.OPENCODE, "sess-cc": Client.CLAUDE_CODE})

    response = logged_in.get("/?client=opencode")

    assert list(rows(response).values()) == ["opencode"]
    document = parse_html(response.content)
    nav = document.find("nav", cls="kind-filter")
    assert nav.attrs["aria-label"] == "Agent kind"
    current = [a for a in nav.find_all("a") if a.attrs.get("aria-current") == "page"]
    assert [a.text() for a in current] == ["opencode"]
    # Rows arriving live are filtered in the page by the list's kind.
    assert document.find(id="session-list").attrs["data-client"] == "opencode"


def test_a_kind_with_no_sessions_says_so(logged_in, user):
    sessions_of(user, {"sess-cc": Client.CLAUDE_CODE})

    document = parse_html(logged_in.get("/?client=codex").content)

    assert "No Codex sessions yet." in document.find(cls="empty-state").text()


def test_an_unknown_kind_is_a_bad_request(logged_in):
    assert logged_in.get("/?client=emacs").status_code == 400


def test_the_filtered_overview_issues_the_same_number_of_queries_however_many_sessions(
    logged_in, user, django_assert_max_num_queries
):
    sessions_of(user, {"sess-0": Client.OPENCODE, "sess-x": Client.CLAUDE_CODE})
    logged_in.get("/?client=opencode")  # warm caches shared by every request
    with CaptureQueriesContext(connection) as queries:
        logged_in.get("/?client=opencode")

    sessions_of(user, {f"sess-{n}": Client.OPENCODE for n in range(1, 8)})
    with django_assert_max_num_queries(len(queries)):
        response = logged_in.get("/?client=opencode")

    assert len(rows(response)) == 8
