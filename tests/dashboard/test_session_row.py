"""An overview row, made in Python for speed (`dashboard.board.session_row`): what the page's
scripts read from it, every text escaped, and the ways a live update places it."""

from __future__ import annotations

from dataclasses import replace

import pytest

from dashboard.board.selectors import session_summaries
from dashboard.board.session_row import session_row
from dashboard.models import Session
from tests.conftest import parse_html, todo, write_todos

pytestmark = pytest.mark.django_db

HOSTILE = '<img src=x onerror=alert("row")>'


def summary_of(user):
    write_todos(
        user,
        "row-1",
        "row-1",
        [todo("Done", "completed"), todo("Write the row", "in_progress", "Writing the row")],
        cwd="/src/shop",
    )
    Session.objects.filter(session_id="row-1").update(
        branch=HOSTILE, host="build-7", title=HOSTILE, permission_mode="bypassPermissions"
    )
    return session_summaries([Session.objects.select_related("owner").get(session_id="row-1")])[0]


def test_the_row_carries_what_the_overview_filters_and_counts_by(user):
    summary = summary_of(user)

    row = parse_html(session_row(summary)).find("li")

    assert row.attrs["id"] == f"session-row-{summary.session.pk}"
    assert row.attrs["data-active"] == "true"
    assert row.attrs["data-person"] == user.get_username()
    assert row.attrs["data-machine"] == "build-7"
    assert row.attrs["data-waits"] == "0"
    assert row.find(cls="count").text() == "1/2"
    assert row.find(cls="mode").text().endswith("· bypassPermissions")
    assert row.find(cls="session-link").attrs["href"] == "/sessions/row-1/"


def test_text_from_agents_stays_text(user):
    document = parse_html(session_row(summary_of(user)))

    assert document.find_all("img") == []
    assert HOSTILE in document.find(cls="session-link").text()
    assert HOSTILE in document.find(cls="branch").text()


def test_a_live_update_replaces_the_row_or_goes_in_where_it_is_told(user):
    summary = summary_of(user)

    assert 'hx-swap-oob="true"' in session_row(summary, oob=True)
    inserted = session_row(summary, oob=True, oob_insert="afterbegin:#sessions", flash=True)
    assert inserted.startswith('<div hx-swap-oob="afterbegin:#sessions">')
    assert 'class="session-row is-active flash"' in inserted
    assert 'hx-swap-oob="true"' not in inserted


def test_flagged_agents_are_counted_in_words_not_only_in_a_tooltip(user):
    summary = replace(summary_of(user), flag_count=1)

    agents = parse_html(session_row(summary)).find(cls="agents")

    assert " ".join(agents.text().split()) == "1 agent ⚑ 1 flagged"
    assert parse_html(session_row(summary_of(user))).find(cls="agents").text() == "1 agent"
