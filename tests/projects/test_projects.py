"""Projects: listed with what runs and waits in each, one project's page, renaming."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission

from dashboard.core.origin import HOST_HEADER, REPOSITORY_HEADER
from dashboard.models import Project, Session
from tests.conftest import parse_html
from tests.hooks.conftest import load_fixture

pytestmark = pytest.mark.django_db

SHOP = {REPOSITORY_HEADER: "git@github.com:acme/shop.git", HOST_HEADER: "dana-laptop"}


def start(hook, session_id: str, headers: dict | None = None, **fields) -> Session:
    payload = load_fixture("session_start.json", session_id=session_id, **fields)
    assert hook(payload, headers=headers).status_code == 200
    return Session.objects.get(session_id=session_id)


def rows(client) -> dict[str, list[str]]:
    table = parse_html(client.get("/projects/").content).find("tbody")
    return {
        row.find("th").find("a").text(): [cell.text() for cell in row.find_all("td")]
        for row in table.find_all("tr")
    }


def test_each_project_counts_what_runs_waits_and_who_works_in_it(hook, agent_api, client, user):
    start(hook, "s1", SHOP)
    start(hook, "s2", {REPOSITORY_HEADER: "https://github.com/acme/shop", HOST_HEADER: "ci"})
    start(hook, "s3", cwd="/home/dana/scratch")
    ended = start(hook, "s4", SHOP)
    assert hook(load_fixture("session_end.json", session_id="s4")).status_code == 200
    client.force_login(user)

    found = rows(client)

    assert found == {"shop": ["2", "0", "1", "1"], "scratch": ["1", "0", "0", "1"]}
    assert ended.project == "shop"
    plan = agent_api.post("/api/v1/sessions/s2/agents/s2/plans", {"plan": "# Cursor pagination"})
    assert plan.status_code == 201, plan.content
    assert rows(client)["shop"] == ["2", "1", "1", "1"]
    assert list(rows(client)) == ["shop", "scratch"]  # what waits comes first


def test_the_projects_page_reads_a_bounded_number_of_queries(
    hook, client, user, django_assert_max_num_queries
):
    client.force_login(user)
    for n in range(3):
        start(hook, f"a{n}", {REPOSITORY_HEADER: f"git@github.com:acme/p{n}.git"})
    client.get("/projects/")
    with django_assert_max_num_queries(12) as few:
        client.get("/projects/")
    queries = len(few.captured_queries)
    for n in range(3, 30):
        start(hook, f"a{n}", {REPOSITORY_HEADER: f"git@github.com:acme/p{n}.git"})
    with django_assert_max_num_queries(queries):
        client.get("/projects/")


def test_a_project_page_lists_its_sessions_people_and_machines(hook, client, user):
    user.first_name, user.last_name = "Dana", "Reyes"
    user.save()
    start(hook, "s1", SHOP)
    project = Project.objects.get(key="github.com/acme/shop")
    client.force_login(user)

    page = parse_html(client.get(f"/projects/{project.pk}/").content)

    assert "github.com/acme/shop" in page.find("div", cls="page-head").text()
    assert "Dana Reyes" in page.find("ul", cls="people-list").text()
    session_row = page.find_all("table")[0].find("tbody").find("tr").text()
    assert "Dana Reyes" in session_row and "dana-laptop" in session_row


def test_a_reviewer_renames_a_project_and_every_session_shows_the_new_name(hook, client, reviewer):
    start(hook, "s1", SHOP)
    project = Project.objects.get(key="github.com/acme/shop")
    client.force_login(reviewer)

    response = client.post(f"/projects/{project.pk}/rename/", {"name": "  Web   shop "})

    assert response.status_code == 302
    assert Project.objects.get(pk=project.pk).name == "Web shop"
    assert Session.objects.get(session_id="s1").project == "Web shop"
    assert b"Web shop" in client.get("/").content


@pytest.mark.parametrize(
    "name,message",
    [("   ", b"Give the project a name."), ("x" * 201, b"at most 200 characters"),
     ("bad\x00name", b"without control characters")],
)  # fmt: skip
def test_a_bad_name_is_refused_with_one_sentence_and_nothing_changes(
    hook, client, reviewer, name, message
):
    start(hook, "s1", SHOP)
    project = Project.objects.get(key="github.com/acme/shop")
    client.force_login(reviewer)

    response = client.post(f"/projects/{project.pk}/rename/", {"name": name})

    assert response.status_code == 422
    assert message in response.content
    assert Project.objects.get(pk=project.pk).name == "shop"


def test_markup_in_a_name_is_shown_as_text(hook, client, reviewer):
    start(hook, "s1", SHOP)
    project = Project.objects.get(key="github.com/acme/shop")
    client.force_login(reviewer)
    client.post(f"/projects/{project.pk}/rename/", {"name": "<script>alert(1)</script>"})

    for path in ("/projects/", f"/projects/{project.pk}/", "/"):
        content = client.get(path).content
        assert b"<script>alert(1)" not in content
        assert b"&lt;script&gt;alert(1)" in content


def test_only_a_reviewer_renames(hook, client, user):
    start(hook, "s1", SHOP)
    project = Project.objects.get(key="github.com/acme/shop")
    client.force_login(user)
    assert not user.user_permissions.filter(
        pk__in=Permission.objects.filter(codename="review_plan")
    ).exists()

    response = client.post(f"/projects/{project.pk}/rename/", {"name": "mine"})

    assert response.status_code == 403
    assert Project.objects.get(pk=project.pk).name == "shop"
    assert client.post("/projects/999/rename/", {"name": "x"}).status_code in {403, 404}


def test_the_pages_need_a_login(client):
    assert client.get("/projects/").status_code == 302
    assert client.get("/projects/1/").status_code == 302
