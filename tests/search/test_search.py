"""Search: real full-text engines (SQLite FTS5 here, PostgreSQL in the services run) over
everything the agents and reviewers wrote, kept current in the write path, shown grouped by
kind with the matching words marked, and safe whatever is typed."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.db import connection
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dashboard.activity.services import activity_prune
from dashboard.core.writer import write_sync, writer
from dashboard.models import Session
from dashboard.search.models import EntryKind, SearchEntry
from tests.conftest import parse_html
from tests.hooks.conftest import SESSION_ID, load_fixture

pytestmark = pytest.mark.django_db

PLAN = """# Cursor pagination for the orders API

Replace offset paging with cursor pagination so that deep pages stay fast.

1. Add an opaque cursor to `GET /orders`.
2. Keep the old `page` parameter for a release.
"""


@pytest.fixture
def history(hook, agent_api):
    """A session that paginated the orders: a prompt, a todo list, a plan with a comment and a
    rejection, a permission request, tool steps."""
    hook(load_fixture("session_start.json"))
    prompt = load_fixture("user_prompt_submit.json", prompt="Paginate the orders endpoint")
    hook(prompt)
    todos = [
        {
            "content": "Write the paginate helper",
            "status": "in_progress",
            "activeForm": "Writing it",
        },
        {"content": "Document the cursor parameter", "status": "pending"},
    ]
    agent_api.put_todos(SESSION_ID, SESSION_ID, {"todos": todos})
    step = load_fixture("permission_request_bash.json")
    step.pop("permission_suggestions", None)
    for event, call, command in [
        ("PreToolUse", "t1", "npm run test -- orders"),
        ("PostToolUseFailure", "t2", "npm run lint -- --fix"),
    ]:
        hook({**step, "hook_event_name": event, "tool_use_id": call,
              "tool_input": {"command": command}, "error": "eslint: 3 problems"})  # fmt: skip
    # The plan last: a step after it would count as the terminal's answer to it.
    plan = agent_api.post(
        f"/api/v1/sessions/{SESSION_ID}/agents/{SESSION_ID}/plans", {"plan": PLAN}
    )
    assert plan.status_code == 201, plan.content
    return plan.json()["id"]


def indexed() -> None:
    """Wait for the index job that follows the writes made so far (it runs behind them)."""
    writer.drain()


def search(client, query: str) -> dict[str, list[str]]:
    indexed()
    page = parse_html(client.get("/search/", {"q": query}).content)
    return {
        group.find("h2").text().split(" (")[0]: [
            result.find("a", cls="result-title").text() for result in group.find_all("li")
        ]
        for group in page.find_all("section", cls="search-group")
    }


def test_stemming_finds_every_form_of_a_word(history, client, user):
    client.force_login(user)
    found = search(client, "paginate")
    assert set(found) >= {"Sessions", "Todo lists", "Plans"}
    assert found["Plans"] == ["Cursor pagination for the orders API"]
    assert found["Todo lists"] == ["Write the paginate helper"]


def test_a_phrase_in_quotes_is_matched_as_a_phrase(history, client, user):
    client.force_login(user)
    assert "Plans" in search(client, '"cursor pagination"')
    assert search(client, '"pagination cursor"') == {}


def test_matches_are_marked_and_link_to_the_exact_place(history, client, user):
    client.force_login(user)
    indexed()
    page = parse_html(client.get("/search/", {"q": "lint"}).content)
    [result] = page.find("section", cls="search-group").find_all("li")
    link = result.find("a", cls="result-title").attrs["href"]
    step = SearchEntry.objects.get(kind=EntryKind.STEP, body__contains="lint").ref
    assert link == f"/sessions/{SESSION_ID}/timeline/?step={step}"
    assert [mark.text() for mark in result.find_all("mark")][:1] == ["lint"]

    plan_link = parse_html(client.get("/search/", {"q": "deep pages"}).content)
    assert plan_link.find("a", cls="result-title").attrs["href"] == f"/plans/{history}/"


def test_decisions_comments_and_requests_are_found(history, client, reviewer, hook):
    client.force_login(reviewer)
    client.post(
        f"/plans/{history}/annotations/",
        {"quote": "deep pages", "comment": "Measure the keyset index first"},
    )
    client.post(
        f"/plans/{history}/decide/",
        {"action": "reject", "text": "Benchmark against a year of orders"},
    )
    # Held a second at most (its client says it waits 6 s), then stored as it ended.
    hook(load_fixture("permission_request_bash.json"), headers={"X-Agentboard-Hook-Timeout": "6"})

    assert search(client, "keyset index").get("Plan comments")
    assert search(client, "benchmark year").get("Decisions")
    assert search(client, "npm").get("Permission requests")


def test_filters_narrow_by_kind_and_person_and_bad_ones_say_why(history, client, user):
    client.force_login(user)
    indexed()
    only_plans = parse_html(client.get("/search/", {"q": "orders", "kind": "plan"}).content)
    assert [h.text().split(" (")[0] for h in only_plans.find("main").find_all("h2")] == ["Plans"]
    assert client.get("/search/", {"q": "orders", "person": "nobody"}).status_code == 400
    assert b"There is no kind" in client.get("/search/", {"q": "x", "kind": "cats"}).content
    assert b"must be a day" in client.get("/search/", {"q": "x", "since": "yesterday"}).content
    assert b"NUL" in client.get("/search/", {"q": "x", "person": "a\x00"}).content


@pytest.mark.parametrize(
    "query",
    ['"unbalanced', "NEAR(a b)", "a OR", "*", "^start", "col:value", "\x00", "x" * 10_000,
     "<script>alert(1)</script>", "AND AND", "'; DROP TABLE search_searchentry; --", ")(", "-"],
)  # fmt: skip
def test_any_text_answers_200_and_markup_stays_text(history, client, user, query):
    client.force_login(user)
    response = client.get("/search/", {"q": query})
    assert response.status_code == 200
    assert b"<script>alert(1)" not in response.content


def test_the_index_follows_edits_and_pruning(history, client, user, hook):
    client.force_login(user)
    assert search(client, "lint").get("Tool steps")
    write_sync(activity_prune, days=-1)  # every step is older than "tomorrow"
    indexed()
    assert "Tool steps" not in search(client, "lint")
    assert not SearchEntry.objects.filter(kind=EntryKind.STEP).exists()


def test_a_spinner_text_claude_code_sends_after_the_task_is_found(hook, client, user):
    # TaskCreated first, without it; the TaskCreate's own hook adds it to the same revision.
    created = load_fixture("task_completed.json", hook_event_name="TaskCreated")
    hook({**created, "task_subject": "Measure the endpoint"})
    task_create = load_fixture("post_tool_use_task_create.json")
    task_create["tool_input"] = {"subject": "Measure the endpoint", "activeForm": "Benchmarking"}
    hook(task_create)

    client.force_login(user)
    assert search(client, "benchmarking") == {"Todo lists": ["Measure the endpoint"]}


def test_secrets_redacted_before_storage_are_never_indexed(hook, client, user):
    hook(load_fixture("session_start.json"))
    secret = "AKIAIOSFODNN7EXAMPLE"
    step = load_fixture("permission_request_bash.json")
    step.pop("permission_suggestions", None)
    hook({**step, "hook_event_name": "PreToolUse", "tool_use_id": "t9",
          "tool_input": {"command": f"export AWS_ACCESS_KEY_ID={secret}"}})  # fmt: skip
    client.force_login(user)
    indexed()
    assert not any(secret in entry.body + entry.title for entry in SearchEntry.objects.all())
    assert search(client, secret) == {}
    assert search(client, "AWS_ACCESS_KEY_ID").get("Tool steps")


def test_rebuild_makes_the_same_index_again(history):
    indexed()
    fields = ("kind", "ref", "title", "body", "owner_id")
    before = sorted(SearchEntry.objects.values_list(*fields))
    # Each entry carries its session's owner (the person filter reads it).
    assert {owner for *_, owner in before} == set(
        Session.objects.values_list("owner_id", flat=True)
    )
    SearchEntry.objects.all().delete()
    call_command("rebuild_search", stdout=open("/dev/null", "w"))
    after = sorted(SearchEntry.objects.values_list(*fields))
    assert after == before and after


def test_the_api_searches_what_the_tokens_owner_sees(history, agent_api, client, other_user):
    indexed()
    found = agent_api.get("/api/v1/search?q=paginate").json()["results"]
    assert {hit["kind"] for hit in found} >= {"plan", "todos"}
    assert "«pagination»" in next(hit for hit in found if hit["kind"] == "plan")["title"].lower()

    from dashboard.models import AgentToken, Team
    from tests.conftest import AgentApi

    other = AgentApi(client, AgentToken.issue(owner=other_user, label="x")[1])
    # No team owns the project: everyone finds it, as on the search page.
    assert other.get("/api/v1/search?q=paginate").json()["results"]
    # Once a team of which the other person is not a member owns it, they find nothing.
    Session.objects.filter(session_id=SESSION_ID).update(team=Team.objects.create(name="Shop"))
    assert other.get("/api/v1/search?q=paginate").json() == {"results": []}
    assert agent_api.get("/api/v1/search?q=paginate").json()["results"]  # the owner still does
    assert agent_api.get("/api/v1/search?q=x&since=soon").status_code == 422
    assert agent_api.get("/api/v1/search?q=x&project=999").status_code == 404
    # A parameter that takes one value, given twice, is refused rather than read as its last.
    twice = agent_api.get("/api/v1/search?q=x&until=false&until=2026-11-01")
    assert twice.status_code == 422
    assert twice.json()["error"]["message"] == (
        "query.until: Give this parameter once, not several times."
    )


def test_a_session_is_found_by_its_person_and_title(history, client, user):
    user.first_name, user.last_name = "Dana", "Reyes"
    user.save()
    Session.objects.filter(session_id=SESSION_ID).update(title="Orders paging")
    indexed()
    hook_again = SearchEntry.objects.get(kind=EntryKind.SESSION)
    assert hook_again.title  # indexed when it started
    call_command("rebuild_search", stdout=open("/dev/null", "w"))
    client.force_login(user)
    assert search(client, "Reyes")["Sessions"] == ["Orders paging"]


def test_the_engine_is_the_databases_own(history):
    indexed()
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("SELECT count(*) FROM search_fts WHERE search_fts MATCH 'pagin'")
        else:
            query = "to_tsquery('english', 'pagin')"
            sql = f"SELECT count(*) FROM search_searchentry WHERE document @@ {query}"  # noqa: S608
            cursor.execute(sql)
        assert cursor.fetchone()[0] >= 2


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(text=st.text(max_size=300))
def test_no_text_makes_the_engine_fail(history, text):
    """Whatever is typed, in any alphabet, with any operator or quote, the engine answers."""
    from dashboard.search.engines import Filters, engine

    indexed()
    hits = engine().search(text, Filters(), 10)
    assert all("<script" not in hit.snippet for hit in hits)


def test_a_word_found_everywhere_ranks_its_newest_matches_and_a_rare_one_is_still_found(
    user, monkeypatch
):
    """After a year a common word matches a hundred thousand entries: the best of the newest
    CANDIDATES are shown (the cost of a rare word), and an old rare word is still found."""
    from datetime import timedelta

    from django.utils import timezone

    from dashboard.search import engines

    session = Session.objects.create(session_id="year", owner=user)
    start = timezone.now() - timedelta(days=300)
    SearchEntry.objects.create(kind="plan", ref=1, session=session, at=start,
                               title="Rollback plan", body="pagination rollback")  # fmt: skip
    for n in range(2, 12):
        SearchEntry.objects.create(kind="plan", ref=n, session=session,
                                   at=start + timedelta(days=n), title=f"Plan {n}",
                                   body="cursor pagination")  # fmt: skip
    monkeypatch.setattr(engines, "CANDIDATES", 4)

    found = engines.engine().search("pagination", engines.Filters(), 60)
    rare = engines.engine().search("rollback", engines.Filters(), 60)

    assert sorted(hit.ref for hit in found) == [8, 9, 10, 11]
    assert [hit.ref for hit in rare] == [1]


def index_jobs(monkeypatch) -> list[int]:
    """How many things each index job from now on takes, in order."""
    from dashboard.search import indexer

    jobs: list[int] = []
    real_index = indexer._index

    def counted(touched):
        jobs.append(sum(len(keys) for keys in vars(touched).values()))
        real_index(touched)

    monkeypatch.setattr(indexer, "_index", counted)
    return jobs


def test_a_burst_is_indexed_in_short_jobs_and_all_of_it_is_found(client, user, monkeypatch):
    """Hundreds of things stored at once (a team's agents restarting together) are indexed a
    few at a time, each job behind the agents' writes, and every one of them is found."""
    from dashboard.core.changes import Changes
    from dashboard.search import indexer

    monkeypatch.setattr(indexer, "INDEX_CHUNK", 3)
    jobs = index_jobs(monkeypatch)
    sessions = [
        Session.objects.create(session_id=f"burst-{n}", owner=user, branch=f"shard{n}")
        for n in range(8)
    ]
    indexer.index_batch([Changes(created_sessions={session.pk for session in sessions})])
    indexed()

    assert jobs == [3, 3, 2]
    client.force_login(user)
    page = parse_html(client.get("/search/", {"q": "shard5"}).content)
    assert len(page.find_all("a", cls="result-title")) == 1


def test_what_batches_store_within_a_moment_is_indexed_by_one_job(client, user, monkeypatch):
    """Agents writing many times a second cost the writer one index job for what their
    batches stored in a moment, not one job after nearly every batch."""
    from dashboard.core.changes import Changes
    from dashboard.search import indexer

    jobs = index_jobs(monkeypatch)
    for n in range(5):
        session = Session.objects.create(session_id=f"busy-{n}", owner=user, branch=f"lane{n}")
        indexer.index_batch([Changes(created_sessions={session.pk})])
    indexed()

    assert jobs == [5]
    client.force_login(user)
    page = parse_html(client.get("/search/", {"q": "lane3"}).content)
    assert len(page.find_all("a", cls="result-title")) == 1


def test_a_write_is_found_a_moment_later_without_anyone_asking(user):
    """The held-back index job goes on its own once its moment is over."""
    from dashboard.core.changes import Changes
    from dashboard.search import indexer

    session = Session.objects.create(session_id="alone", owner=user, branch="solitary")
    indexer.index_batch([Changes(created_sessions={session.pk})])
    timer = indexer._pending.timer
    assert timer is not None

    # Once its moment is over it queues the job itself: the drain then has nothing of its own
    # to queue, and only waits for that job to be written.
    timer.join(5)
    assert not timer.is_alive() and indexer._pending.timer is None
    indexed()
    assert SearchEntry.objects.filter(session=session).exists()
