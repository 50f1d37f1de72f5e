"""Budgets that act: at 80% the session's reviewers and owner are told once a period; at 100%
the session waits on a person as over budget and, if the budget says so, its agent's next
tool call is refused until a reviewer raises the budget or lets the session continue."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from dashboard.activity.models import Concern, ConcernKind
from dashboard.core.visibility import audience_of
from dashboard.costs import budgets
from dashboard.costs.models import Budget, BudgetHold, Usage
from dashboard.models import AuditAction, AuditEntry, Project, Session
from dashboard.notifications.models import Delivery, WebhookTarget
from planmode.inbox import inbox_count
from tests.conftest import parse_html
from tests.costs.conftest import request_events, usage_metrics
from tests.costs.test_panels import place

pytestmark = pytest.mark.django_db

SESSION = "0b5e2c61-3f4e-4c8a-9d55-2a7f1e9b7c10"
REFUSAL = (
    "Agentboard: the budget for project shop ($1.00 a day) is spent; a reviewer must raise it "
    "or let this session continue."
)


@pytest.fixture(autouse=True)
def budgets_read_again():
    budgets.forget()
    yield
    budgets.forget()


@pytest.fixture
def hook(agent_api):
    """POST a payload to the hook endpoint as Claude Code's HTTP hook does."""
    return lambda payload: agent_api.post("/hooks/claude-code", payload)


@pytest.fixture
def admin(db) -> User:
    return User.objects.create_superuser("root", password="pw-root-1234")


@pytest.fixture
def shop(db) -> Project:
    return Project.objects.create(key="github.com/acme/shop", name="shop")


@pytest.fixture
def session(user, shop) -> Session:
    return place(user, SESSION, shop)[0]


def set_budget(client, who: User, project: Project, limit="1", period="day", stop=False):
    client.force_login(who)
    data = {"limit": limit, "period": period}
    if stop:
        data["stop_at_limit"] = "on"
    return client.post(f"/budgets/project/{project.pk}/", data)


def spend(export, dollars: float, n: int = 0):
    """One delta export of the session's cost (each a point of its own)."""
    message = usage_metrics(
        session_id=SESSION, cost=dollars, tokens={"input": 1000}, start=1_000 + n, end=2_000 + n
    )
    # Observed now, so that it counts today.
    import time

    now = time.time_ns()
    for metric in message.resource_metrics[0].scope_metrics[0].metrics:
        for point in metric.sum.data_points:
            point.start_time_unix_nano = now - 1_000 + n
            point.time_unix_nano = now + n
    assert export("/v1/metrics", message).status_code == 200


def pre_tool_use(hook, n: int = 1):
    payload = {
        "session_id": SESSION,
        "transcript_path": f"/home/dev/.claude/projects/shop/{SESSION}.jsonl",
        "cwd": "/home/dev/shop",
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": f"ls {n}"},
        "tool_use_id": f"toolu_{n:04d}",
    }
    answer = hook(payload)
    assert answer.status_code == 200, answer.content
    return answer.json()


def concerns(kind: str) -> list[Concern]:
    return list(Concern.objects.filter(kind=kind, ended_at__isnull=True))


def test_at_80_percent_the_reviewers_and_owner_are_told_once_a_period(
    client, export, admin, user, reviewer, shop, session
):
    shop.reviewers.add(reviewer)
    WebhookTarget.objects.create(
        owner=reviewer, name="chat", url="https://chat.example/hook", events=["waiting"],
        kind="json",
    )  # fmt: skip
    assert set_budget(client, admin, shop).status_code == 302

    spend(export, 0.50, 1)
    assert not concerns(ConcernKind.BUDGET_WARNING)
    spend(export, 0.35, 2)  # 85%
    spend(export, 0.05, 3)  # 90%: told already

    warned = concerns(ConcernKind.BUDGET_WARNING)
    assert len(warned) == 1
    assert "$0.85 of the budget for project shop ($1.00 a day) spent (85%)" in warned[0].detail
    deliveries = Delivery.objects.filter(key__startswith=f"waiting:concern:{warned[0].pk}")
    assert deliveries.count() == 1
    # Dismissed, it is not told again in the same day.
    Concern.objects.update(ended_at=warned[0].since)
    spend(export, 0.01, 4)
    assert not concerns(ConcernKind.BUDGET_WARNING)


def test_at_100_percent_the_session_waits_on_a_person_as_over_budget(
    client, export, admin, user, shop, session
):
    set_budget(client, admin, shop)

    spend(export, 1.20, 1)

    over = concerns(ConcernKind.OVER_BUDGET)
    assert [c.session_id for c in over] == [session.pk]
    assert over[0].detail == "the budget for project shop ($1.00 a day) is spent ($1.20)"
    assert inbox_count(audience_of(user)).looks == 1
    client.force_login(user)
    inbox = parse_html(client.get("/inbox/").content)
    assert "Over budget" in inbox.text()


def test_a_budget_that_does_not_stop_lets_the_tool_calls_run(
    client, export, hook, admin, shop, session
):
    set_budget(client, admin, shop, stop=False)
    spend(export, 2.0)

    assert pre_tool_use(hook) == {}


def test_a_spent_budget_that_stops_refuses_the_next_tool_call(
    client, export, hook, admin, shop, session
):
    assert pre_tool_use(hook, 1) == {}
    set_budget(client, admin, shop, stop=True)
    spend(export, 1.0)

    answer = pre_tool_use(hook, 2)

    assert answer["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert answer["hookSpecificOutput"]["permissionDecisionReason"] == REFUSAL
    blocked = AuditEntry.objects.filter(action=AuditAction.BUDGET_BLOCKED)
    assert blocked.count() == 1 and blocked.get().session_id == session.pk
    assert pre_tool_use(hook, 3)["hookSpecificOutput"]["permissionDecision"] == "deny"


def test_letting_it_continue_once_runs_it_until_the_period_ends(
    client, export, hook, admin, reviewer, user, shop, session
):
    shop.reviewers.add(reviewer)
    set_budget(client, admin, shop, stop=True)
    spend(export, 1.5, 1)
    assert pre_tool_use(hook, 1)["hookSpecificOutput"]["permissionDecision"] == "deny"

    client.force_login(user)  # the owner, not a reviewer of the project
    assert client.post(f"/budgets/sessions/{session.pk}/continue/").status_code == 403
    client.force_login(reviewer)
    assert client.post(f"/budgets/sessions/{session.pk}/continue/").status_code == 302

    assert pre_tool_use(hook, 2) == {}
    assert not concerns(ConcernKind.OVER_BUDGET)
    entry = AuditEntry.objects.get(action=AuditAction.BUDGET_CONTINUED)
    assert entry.actor == reviewer and entry.session_id == session.pk
    spend(export, 1.0, 2)  # more spending the same day holds it no more
    assert pre_tool_use(hook, 3) == {}


def test_raising_the_budget_lets_the_session_run_again(
    client, export, hook, admin, reviewer, shop, session
):
    shop.reviewers.add(reviewer)
    set_budget(client, admin, shop, stop=True)
    spend(export, 1.5)
    assert pre_tool_use(hook, 1)["hookSpecificOutput"]["permissionDecision"] == "deny"

    assert set_budget(client, reviewer, shop, limit="5", stop=True).status_code == 302

    assert pre_tool_use(hook, 2) == {}
    assert not concerns(ConcernKind.OVER_BUDGET)
    changed = AuditEntry.objects.filter(action=AuditAction.BUDGET_CHANGED).order_by("pk")
    assert [e.actor for e in changed] == [admin, reviewer]
    assert "set the budget of project shop ($5.00 a day)" in changed.last().summary
    assert "(was $1.00 (stops))" in changed.last().summary


def test_raising_it_too_little_keeps_it_held(client, export, hook, admin, shop, session):
    set_budget(client, admin, shop, stop=True)
    spend(export, 1.5)

    set_budget(client, admin, shop, limit="1.25", stop=True)

    assert pre_tool_use(hook)["hookSpecificOutput"]["permissionDecision"] == "deny"


def test_a_budget_set_under_what_is_spent_holds_the_running_session_at_once(
    client, export, hook, admin, user, shop, session
):
    """No usage report comes between the budget and the agent's next tool call: what the
    session spent today already counts."""
    spend(export, 1.5)
    assert pre_tool_use(hook, 1) == {}

    set_at = set_budget(client, admin, shop, limit="1", stop=True)

    assert set_at.status_code == 302
    page = parse_html(client.get(set_at.url).content)
    assert (
        "Budget set: project shop ($1.00 a day). It is spent already: 1 running session waits "
        "on a reviewer, its tool calls refused." in page.text()
    )
    answer = pre_tool_use(hook, 2)
    assert answer["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert answer["hookSpecificOutput"]["permissionDecisionReason"] == REFUSAL
    over = concerns(ConcernKind.OVER_BUDGET)
    assert [c.session_id for c in over] == [session.pk]
    assert over[0].detail == (
        "the budget for project shop ($1.00 a day) is spent ($1.50); its tool calls are refused"
    )
    assert inbox_count(audience_of(user)).looks == 1


def test_a_budget_set_near_what_is_spent_warns_at_once(client, export, admin, shop, session):
    spend(export, 0.9)

    set_budget(client, admin, shop, limit="1")

    warned = concerns(ConcernKind.BUDGET_WARNING)
    assert [c.session_id for c in warned] == [session.pk]
    assert not concerns(ConcernKind.OVER_BUDGET)


def test_a_budget_set_under_what_is_spent_leaves_ended_sessions_alone(
    client, export, hook, admin, shop, session
):
    spend(export, 1.5)
    Session.objects.filter(pk=session.pk).update(ended_at=timezone.now())

    set_budget(client, admin, shop, limit="1", stop=True)

    assert not concerns(ConcernKind.OVER_BUDGET)
    assert not BudgetHold.objects.exists()


@pytest.mark.parametrize(
    ("limit", "period", "sentence"),
    [
        ("lots", "day", "A budget is a number of dollars, like 5 or 12.50; 'lots' is not one."),
        ("", "day", "is not one"),
        ("0", "day", "A budget is at least $0.01 and at most $1,000,000."),
        ("-5", "month", "at least $0.01"),
        ("1e12", "month", "at most $1,000,000"),
        ("nan", "day", "is not one"),
        ("5", "week", "A budget is for a day or for a month."),
    ],
)
def test_a_bad_budget_is_refused_and_nothing_changes(client, admin, shop, limit, period, sentence):
    answer = set_budget(client, admin, shop, limit=limit, period=period)

    assert answer.status_code == 422
    assert sentence in parse_html(answer.content).find(cls="form-error").text()
    assert not Budget.objects.exists()
    assert not AuditEntry.objects.filter(action=AuditAction.BUDGET_CHANGED).exists()


def test_only_the_projects_reviewers_and_admins_set_its_budget(client, user, other_user, shop):
    assert set_budget(client, user, shop).status_code == 403
    assert not Budget.objects.exists()


def test_only_admins_set_a_persons_budget(client, admin, user, other_user):
    client.force_login(user)
    assert (
        client.post(
            f"/budgets/person/{other_user.pk}/", {"limit": "5", "period": "month"}
        ).status_code
        == 403
    )
    client.force_login(admin)
    answer = client.post(f"/budgets/person/{other_user.pk}/", {"limit": "5", "period": "month"})
    assert answer.status_code == 302
    budget = Budget.objects.get()
    assert (budget.scope, budget.person, budget.limit_micros) == ("person", other_user, 5_000_000)


def test_a_persons_budget_holds_their_sessions(client, export, hook, admin, user, session):
    client.force_login(admin)
    client.post(
        f"/budgets/person/{user.pk}/", {"limit": "2", "period": "month", "stop_at_limit": "on"}
    )
    spend(export, 2.5)

    reason = pre_tool_use(hook)["hookSpecificOutput"]["permissionDecisionReason"]
    assert reason.startswith(f"Agentboard: the budget for {user.username} ($2.00 a month) is spent")


def test_the_project_page_shows_its_budgets_and_spending(client, export, admin, shop, session):
    set_budget(client, admin, shop, limit="2")
    spend(export, 0.5)

    page = parse_html(client.get(f"/projects/{shop.pk}/").content)

    assert "$2.00 a day: $0.50 spent (25%)" in page.find("ul", cls="budget-list").text()


def test_removing_a_budget_releases_its_sessions(client, export, hook, admin, shop, session):
    set_budget(client, admin, shop, stop=True)
    spend(export, 1.5)
    client.post(f"/budgets/project/{shop.pk}/", {"period": "day", "remove": "1"})

    assert not Budget.objects.exists()
    assert not BudgetHold.objects.exists()
    assert pre_tool_use(hook) == {}


def test_a_new_period_ends_the_wait_and_the_stop_of_the_last(
    client, export, hook, admin, shop, session
):
    set_budget(client, admin, shop, stop=True)
    spend(export, 1.5, 1)
    assert concerns(ConcernKind.OVER_BUDGET)
    # The day is over: its hold lapses; the next day's spending starts from nothing.
    BudgetHold.objects.update(until=timezone.now() - timedelta(seconds=1))
    Usage.objects.update(observed_ns=0)
    budgets.forget()

    assert pre_tool_use(hook) == {}
    spend(export, 0.10, 2)
    assert not concerns(ConcernKind.OVER_BUDGET)


def export_now(export, session_id: str, dollars: float, *, start: int, cumulative=False):
    """One export of a session's cost counter observed now, of the series that began at
    `start` (nanoseconds since the epoch): the same series exported again replaces its value."""
    message = usage_metrics(
        session_id=session_id, cost=dollars, tokens={"input": 10}, cumulative=cumulative,
        start=start, end=time.time_ns(),
    )  # fmt: skip
    assert export("/v1/metrics", message).status_code == 200


def test_a_budget_counts_each_session_once_however_its_exporter_repeats_itself(
    client, export, admin, user, shop, session
):
    """The budget's figure is what its sessions' one stream says they cost in the period: a
    cumulative counter exported again replaces itself, a session's events give way to its
    metrics, spending from before the budget was set counts, another project's does not."""
    other = "6f1d0c3e-8b2a-4e1f-9c7d-5a4b3c2d1e0f"
    place(user, other, shop)
    elsewhere = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"
    place(user, elsewhere, Project.objects.create(key="github.com/acme/ops", name="ops"))
    # Before any budget: $0.20 as events, which the session's metrics will replace.
    events = request_events({"cost_usd": 0.20, "input_tokens": 10}, session_id=other)
    events.resource_logs[0].scope_logs[0].log_records[1].time_unix_nano = time.time_ns()
    assert export("/v1/logs", events).status_code == 200
    began = time.time_ns()
    export_now(export, elsewhere, 5.00, start=began)

    assert set_budget(client, admin, shop, limit="100").status_code == 302
    budget = Budget.objects.get()
    period = budgets.period_of(budget.period)
    assert budgets.spent_micros(budget, period) == 200_000

    export_now(export, SESSION, 0.30, start=began + 1, cumulative=True)
    export_now(export, SESSION, 0.50, start=began + 1, cumulative=True)  # the same series, later
    assert budgets.spent_micros(budget, period) == 700_000
    export_now(export, other, 0.05, start=began + 2)  # its metrics: its events no longer count
    assert budgets.spent_micros(budget, period) == 550_000
    export_now(export, elsewhere, 1.00, start=began + 3)
    assert budgets.spent_micros(budget, period) == 550_000
