"""Lists that grow with history page with keyset cursors, newest first: every row shows
exactly once paging back and forth, rows added meanwhile shift no page, and a page costs the
same queries after a year as on the first day."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from dashboard.models import Agent, Project, Session
from planmode.models import PermissionRequest, Plan
from tests.conftest import parse_html
from todos.models import EnforcerEvent, TodoRevision

pytestmark = pytest.mark.django_db

LINK = re.compile(r'href="\?([^"]*)" rel="(prev|next)"')


def links(html: str) -> dict[str, str]:
    """The page's Older (next) and Newer (prev) links' queries."""
    return {rel: query.replace("&amp;", "&") for query, rel in LINK.findall(html)}


def walk(client, path: str, rows_of) -> tuple[list, list]:
    """Every page following Older from the newest, then every page following Newer back: the
    rows seen each way, in the order shown."""
    forward, pages = [], []
    html = client.get(path).content.decode()
    while True:
        forward += rows_of(html)
        pages.append(html)
        older = links(html).get("next")
        if not older:
            break
        response = client.get(f"{path}?{older}")
        assert response.status_code == 200
        html = response.content.decode()
    backward = rows_of(html)
    while newer := links(html).get("prev"):
        html = client.get(f"{path}?{newer}").content.decode()
        backward = rows_of(html) + backward
    return forward, backward


def queries(client, path: str) -> int:
    with CaptureQueriesContext(connection) as captured:
        assert client.get(path).status_code == 200
    return len(captured.captured_queries)


# --- a project's sessions -----------------------------------------------------------------------


def sessions_in(project: Project, owner, count: int, *, start: int = 0) -> list[Session]:
    """Sessions started a minute apart, every fifth at the same moment as the one before."""
    now = timezone.now()
    made = []
    for n in range(start, start + count):
        minutes = n - (n % 5 == 4)
        made.append(
            Session(
                session_id=f"s-{n}",
                owner=owner,
                title=f"Session {n}",
                project_record=project,
                project_name=project.name,
                started_at=now - timedelta(days=300) + timedelta(minutes=minutes),
                last_seen_at=now,
                ended_at=now,
            )
        )
    return Session.objects.bulk_create(made)


def project_rows(html: str) -> list[str]:
    table = parse_html(html).find("table")
    return [a.attrs["href"].split("/")[2] for a in table.find_all("a")] if table else []


@pytest.fixture
def project():
    return Project.objects.create(key="github.com/acme/shop", name="shop")


def test_a_projects_sessions_page_back_and_forth_each_shown_once(client, user, project):
    sessions_in(project, user, 123)
    client.force_login(user)
    path = f"/projects/{project.pk}/"

    forward, backward = walk(client, path, project_rows)

    newest_first = [s.session_id for s in Session.objects.order_by("-started_at", "-pk")]
    assert forward == newest_first == backward
    assert len(forward) == 123


def test_sessions_started_meanwhile_shift_no_page(client, user, project):
    sessions_in(project, user, 60)
    client.force_login(user)
    path = f"/projects/{project.pk}/"
    first = client.get(path).content.decode()
    older = links(first)["next"]

    # New sessions start while the lead reads the first page.
    Session.objects.bulk_create(
        [Session(session_id=f"new-{n}", owner=user, project_record=project,
                 started_at=timezone.now()) for n in range(7)]
    )  # fmt: skip

    second = project_rows(client.get(f"{path}?{older}").content.decode())
    assert set(project_rows(first)).isdisjoint(second)
    assert len(project_rows(first)) + len(second) == 60


def test_a_projects_page_costs_the_same_queries_after_a_year(client, user, project):
    sessions_in(project, user, 60)
    client.force_login(user)
    path = f"/projects/{project.pk}/"
    older = links(client.get(path).content.decode())["next"]
    few = queries(client, path), queries(client, f"{path}?{older}")
    sessions_in(project, user, 600, start=60)
    older = links(client.get(path).content.decode())["next"]
    assert (queries(client, path), queries(client, f"{path}?{older}")) == few


def test_a_page_link_not_handed_out_is_a_clear_400(client, user, project):
    client.force_login(user)
    for cursor in ("nonsense", "MjAyNnxhYmM", "%00"):
        response = client.get(f"/projects/{project.pk}/?before={cursor}")
        assert response.status_code == 400
        assert b"start again from the newest" in response.content


# --- a session's history --------------------------------------------------------------------


def history_of(session: Session, revisions: int, events: int) -> None:
    """Todo writes and enforcer lines, some of them at the very same moment."""
    # Two agents taking turns, each numbering its own writes as the write path does.
    helper_writes = (revisions + 2) // 3
    main = Agent.objects.create(
        session=session, agent_id=session.session_id, todo_revision=revisions - helper_writes
    )
    helper = Agent.objects.create(
        session=session, agent_id=f"{session.session_id}-sub", todo_revision=helper_writes
    )
    base = timezone.now() - timedelta(days=200)
    TodoRevision.objects.bulk_create(
        TodoRevision(agent=main if n % 3 else helper, number=n // 3 + 1 if not n % 3 else
                     n - n // 3, new_todos=[{"content": f"Item {n}", "status": "pending"}],
                     source="hook", received_at=base + timedelta(seconds=n - n % 3))
        for n in range(revisions)
    )  # fmt: skip
    EnforcerEvent.objects.bulk_create(
        EnforcerEvent(agent=main, kind="reminder", text=f"Reminder {n}",
                      created_at=base + timedelta(seconds=2 * n))
        for n in range(events)
    )  # fmt: skip


def history_rows(html: str) -> list[str]:
    return re.findall(r'<li class="history-entry[^"]*" id="([^"]+)"', html)


@pytest.fixture
def session(user):
    return Session.objects.create(session_id="busy", owner=user, title="Busy")


def test_a_sessions_history_pages_back_and_forth_each_line_once(client, user, session):
    history_of(session, revisions=95, events=40)
    client.force_login(user)
    board = client.get("/sessions/busy/").content.decode()
    assert len(history_rows(board)) == 30
    older = re.search(r'href="/sessions/busy/history/\?(before=[^"]+)"', board).group(1)

    forward, backward = walk(client, "/sessions/busy/history/", history_rows)

    assert len(forward) == 135 == len(set(forward))
    assert forward == backward
    assert forward[:30] == history_rows(board)
    second = history_rows(client.get(f"/sessions/busy/history/?{older}").content.decode())
    assert second == forward[30:60]
    moments = {
        **{f"revision-{r.pk}": r.received_at for r in TodoRevision.objects.all()},
        **{f"enforcer-{e.pk}": e.created_at for e in EnforcerEvent.objects.all()},
    }
    assert [moments[row] for row in forward] == sorted(moments.values(), reverse=True)


def test_a_history_page_costs_the_same_queries_after_a_year(client, user, session):
    history_of(session, revisions=70, events=10)
    client.force_login(user)
    path = "/sessions/busy/history/"
    older = links(client.get(path).content.decode())["next"]
    few = queries(client, path), queries(client, f"{path}?{older}")
    Session.objects.filter(pk=session.pk).update(session_id="old")
    history_of(Session.objects.create(session_id="busy", owner=user), revisions=900, events=300)
    older = links(client.get(path).content.decode())["next"]
    assert (queries(client, path), queries(client, f"{path}?{older}")) == few
    assert client.get(f"{path}?before=bad").status_code == 400


# --- decided plans and decided permission requests ---------------------------------------------


def decided(session: Session, plans: int, requests: int) -> None:
    """Decisions a minute apart, every fourth at the same moment as the one before."""
    agent, _ = Agent.objects.get_or_create(session=session, agent_id=session.session_id)
    base = timezone.now() - timedelta(days=100)

    def moment(n: int):
        return base + timedelta(minutes=n - (n % 4 == 3))

    Plan.objects.bulk_create(
        Plan(session=session, agent=agent, revision=n + 1, markdown=f"# Plan {n}",
             status="approved" if n % 2 else "rejected", decided_at=moment(n), source="hook")
        for n in range(plans)
    )  # fmt: skip
    PermissionRequest.objects.bulk_create(
        PermissionRequest(session=session, agent=agent, tool_name="Bash",
                          tool_input={"command": f"pytest -k case_{n}"}, input_key=str(n),
                          status="allowed", decided_at=moment(n))
        for n in range(requests)
    )  # fmt: skip


def plan_rows(html: str) -> list[str]:
    return re.findall(r'<li id="plan-row-(\d+)"', html)


def request_rows(html: str) -> list[str]:
    return re.findall(r'<li id="decided-(\d+)"', html)


@pytest.mark.parametrize(
    "path,rows_of,model",
    [("/plans/decided/", plan_rows, Plan), ("/inbox/decided/", request_rows, PermissionRequest)],
)
def test_decided_plans_and_requests_page_back_and_forth_each_once(
    client, reviewer, session, path, rows_of, model
):
    decided(session, plans=112, requests=112)
    client.force_login(reviewer)

    forward, backward = walk(client, path, rows_of)

    latest_first = [str(pk) for pk in model.objects.order_by("-decided_at", "-pk").values_list(
        "pk", flat=True)]  # fmt: skip
    assert forward == latest_first == backward
    assert len(forward) == 112


@pytest.mark.parametrize("path", ["/plans/decided/", "/inbox/decided/"])
def test_a_decided_page_costs_the_same_queries_after_a_year(client, reviewer, session, path):
    decided(session, plans=60, requests=60)
    client.force_login(reviewer)
    older = links(client.get(path).content.decode())["next"]
    few = queries(client, path), queries(client, f"{path}?{older}")
    other = Session.objects.create(session_id="later", owner=reviewer)
    decided(other, plans=700, requests=700)
    older = links(client.get(path).content.decode())["next"]
    assert (queries(client, path), queries(client, f"{path}?{older}")) == few
    assert client.get(f"{path}?after=x").status_code == 400


def test_the_queue_and_the_inbox_link_to_every_decision(client, reviewer, session):
    decided(session, plans=3, requests=3)
    client.force_login(reviewer)
    assert b'href="/plans/decided/"' in client.get("/plans/").content
    assert b'href="/inbox/decided/"' in client.get("/inbox/").content


# --- ended sessions -------------------------------------------------------------------------------


def ended(owner, count: int, *, start: int = 0, project: Project | None = None) -> None:
    now = timezone.now()
    Session.objects.bulk_create(
        Session(session_id=f"e-{n}", owner=owner, title=f"Ended {n}", project_record=project,
                started_at=now - timedelta(days=200), last_seen_at=now - timedelta(hours=n),
                ended_at=now - timedelta(hours=n - (n % 6 == 5)))
        for n in range(start, start + count)
    )  # fmt: skip


def overview_rows(html: str) -> list[str]:
    return re.findall(r'href="/sessions/([^/"]+)/"', html)


def test_the_overview_lists_the_latest_ended_sessions_and_pages_the_rest(client, user):
    Session.objects.create(session_id="running-now", owner=user)
    ended(user, 130)
    client.force_login(user)
    overview = client.get("/").content.decode()
    listed = set(overview_rows(overview))
    assert "running-now" in listed and "e-0" in listed and "e-49" in listed
    assert "e-50" not in listed
    assert 'href="/ended/"' in overview

    forward, backward = walk(client, "/ended/", overview_rows)

    latest_first = list(
        Session.objects.filter(ended_at__isnull=False)
        .order_by("-ended_at", "-pk")
        .values_list("session_id", flat=True)
    )
    assert forward == latest_first == backward
    assert len(forward) == 130


def test_the_ended_pages_keep_the_overviews_filters(client, user, project):
    ended(user, 70, project=project)
    ended(user, 20, start=70)
    client.force_login(user)
    path = f"/ended/?project={project.pk}"
    first = client.get(path).content.decode()
    older = links(first)["next"]
    assert older.startswith(f"project={project.pk}&before=")
    rows = overview_rows(first) + overview_rows(client.get(f"/ended/?{older}").content.decode())
    assert sorted(rows) == sorted(f"e-{n}" for n in range(70))


def test_the_overview_costs_the_same_queries_after_a_year(client, user):
    Session.objects.create(session_id="running-now", owner=user)
    ended(user, 60)
    client.force_login(user)
    few = queries(client, "/"), queries(client, "/ended/")
    ended(user, 900, start=60)
    assert (queries(client, "/"), queries(client, "/ended/")) == few
