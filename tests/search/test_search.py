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
    assert [h.text().split(" (")[0] for h in only_plans.find_all("h2")] == ["Plans"]
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
    before = sorted(SearchEntry.objects.values_list("kind", "ref", "title", "body"))
    SearchEntry.objects.all().delete()
    call_command("rebuild_search", stdout=open("/dev/null", "w"))
    after = sorted(SearchEntry.objects.values_list("kind", "ref", "title", "body"))
    assert after == before and after


def test_the_api_searches_only_the_tokens_own_sessions(history, agent_api, client, other_user):
    indexed()
    found = agent_api.get("/api/v1/search?q=paginate").json()["results"]
    assert {hit["kind"] for hit in found} >= {"plan", "todos"}
    assert "«pagination»" in next(hit for hit in found if hit["kind"] == "plan")["title"].lower()

    from dashboard.models import AgentToken
    from tests.conftest import AgentApi

    other = AgentApi(client, AgentToken.issue(owner=other_user, label="x")[1])
    assert other.get("/api/v1/search?q=paginate").json() == {"results": []}
    assert agent_api.get("/api/v1/search?q=x&since=soon").status_code == 422
    assert agent_api.get("/api/v1/search?q=x&project=999").status_code == 404


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
