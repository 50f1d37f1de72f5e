"""The overview filtered and grouped from its address: by project, person, machine, kind and
state together, grouped by project or person with what waits first."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from dashboard.core.origin import HOST_HEADER, REPOSITORY_HEADER
from dashboard.models import AgentToken, Project
from tests.conftest import AgentApi, parse_html
from tests.hooks.conftest import HOOK_URL, load_fixture

pytestmark = pytest.mark.django_db

SHOP = "git@github.com:acme/shop.git"
API = "git@github.com:acme/api.git"


@pytest.fixture
def team(client, agent_api):
    """Dana (the test user) in shop on her laptop and in notes; Ben in shop and api on his."""
    ben = get_user_model().objects.create_user("ben", first_name="Ben", last_name="Okafor")
    ben_api = AgentApi(client, AgentToken.issue(owner=ben, label="mbp")[1])
    for api, session, repository, host in [
        (agent_api, "dana-shop", SHOP, "dana-laptop"),
        (agent_api, "dana-notes", "", "dana-laptop"),
        (ben_api, "ben-shop", "https://github.com/acme/shop", "ben-mbp"),
        (ben_api, "ben-api", API, "ben-mbp"),
    ]:
        headers = {HOST_HEADER: host} | ({REPOSITORY_HEADER: repository} if repository else {})
        start = load_fixture("session_start.json", session_id=session, cwd=f"/src/{session}")
        assert api.post(HOOK_URL, start, headers=headers).status_code == 200
    # Something waits in Ben's api session.
    assert (
        ben_api.post(
            "/api/v1/sessions/ben-api/agents/ben-api/plans", {"plan": "# Plan"}
        ).status_code
        == 201
    )
    return ben


def listed(client, query: str = "") -> list[str]:
    page = parse_html(client.get("/" + query).content)
    rows = page.find_all("li", cls="session-row")
    return [row.find("a", cls="session-link").attrs["href"].split("/")[2] for row in rows]


def test_filters_narrow_the_list_and_combine(team, client, reviewer):
    client.force_login(reviewer)
    shop = Project.objects.get(key="github.com/acme/shop").pk

    assert sorted(listed(client)) == ["ben-api", "ben-shop", "dana-notes", "dana-shop"]
    assert sorted(listed(client, f"?project={shop}")) == ["ben-shop", "dana-shop"]
    assert sorted(listed(client, "?person=ben")) == ["ben-api", "ben-shop"]
    assert sorted(listed(client, "?machine=dana-laptop")) == ["dana-notes", "dana-shop"]
    assert listed(client, f"?project={shop}&person=ben&machine=ben-mbp") == ["ben-shop"]
    assert listed(client, "?client=codex") == []


def test_the_list_says_its_filters_so_live_rows_are_placed_alike(team, client, reviewer):
    client.force_login(reviewer)
    shop = Project.objects.get(key="github.com/acme/shop").pk
    page = parse_html(client.get(f"/?project={shop}&person=ben").content)

    session_list = page.find("ol", id="session-list")
    assert (session_list.attrs["data-project"], session_list.attrs["data-person"]) == (
        str(shop),
        "ben",
    )
    row = page.find("li", cls="session-row")
    assert (row.attrs["data-project"], row.attrs["data-person"], row.attrs["data-machine"]) == (
        str(shop), "ben", "ben-mbp",
    )  # fmt: skip
    socket = page.find("div", cls="live-region").attrs["ws-connect"]
    assert socket == f"/ws/board/?project={shop}&person=ben"


def test_grouped_by_project_what_waits_comes_first(team, client, reviewer):
    client.force_login(reviewer)
    page = parse_html(client.get("/?group=project").content)

    groups = page.find_all("details", cls="session-group")
    names = [group.find("span", cls="group-name").text() for group in groups]
    assert names == ["api", "shop", "dana-notes"]
    assert "1 waiting on you" in groups[0].find("summary").text()
    assert "2 running" in groups[1].find("summary").text()
    assert [len(group.find_all("li", cls="session-row")) for group in groups] == [1, 2, 1]


def test_grouped_by_person_names_them_in_full(team, client, user):
    user.first_name, user.last_name = "Dana", "Reyes"
    user.save()
    client.force_login(user)
    page = parse_html(client.get("/?group=person").content)

    names = [span.text() for span in page.find_all("span", cls="group-name")]
    # Dana is no reviewer: Ben's plan does not wait on her, so the busiest group leads.
    assert names == ["Ben Okafor", "Dana Reyes"]


def test_the_kind_links_keep_the_other_filters(team, client, reviewer):
    client.force_login(reviewer)
    page = parse_html(client.get("/?person=ben&group=project&state=waiting").content)
    links = {a.text(): a.attrs["href"] for a in page.find("nav", cls="kind-filter").find_all("a")}
    assert links["Codex"] == "/?person=ben&group=project&state=waiting&client=codex"
    assert links["All kinds"] == "/?person=ben&group=project&state=waiting"
    assert page.find("div", cls="live-region").attrs["data-state-filter"] == "waiting"


@pytest.mark.parametrize(
    "query,message",
    [("?project=999", b"There is no such project"), ("?project=abc", b"There is no such project"),
     ("?person=nobody", b"There is nobody with this user name"),
     ("?machine=" + "x" * 300, b"at most 255 characters"), ("?machine=a%00b", b"NUL"),
     ("?person=%00", b"NUL"), ("?group=machine", b"not by"),
     ("?state=sleeping", b"There is no state"), ("?client=cursor", b"There is no agent kind")],
)  # fmt: skip
def test_a_filter_that_names_nothing_is_a_clear_400(team, client, reviewer, query, message):
    client.force_login(reviewer)
    response = client.get("/" + query)
    assert response.status_code == 400
    assert message in response.content


def test_grouping_costs_no_query_per_group(team, client, reviewer, django_assert_max_num_queries):
    client.force_login(reviewer)
    client.get("/?group=project")
    with django_assert_max_num_queries(40) as few:
        client.get("/?group=project")
    queries = len(few.captured_queries)
    with django_assert_max_num_queries(queries):
        client.get("/?group=person")
    with django_assert_max_num_queries(queries):
        client.get("/")
