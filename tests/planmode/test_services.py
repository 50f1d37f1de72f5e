from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from dashboard.core.errors import ServiceError
from dashboard.core.writer import write
from dashboard.live.watch import watch_for
from dashboard.models import Session
from planmode import services
from planmode.models import Decision, Plan
from planmode.services import permission_mode_next, plan_state
from tests.domain import plan_decide, plan_expire
from todos.schemas import TodoItem
from todos.services import todo_list_replace

pytestmark = pytest.mark.django_db


def mode_of(session_id: str = "sess-1") -> str:
    return Session.objects.get(session_id=session_id).permission_mode


def write_todo(user, session_id: str = "sess-1"):
    return todo_list_replace(
        owner=user,
        session_id=session_id,
        agent_id=session_id,
        source="api",
        todos=[
            TodoItem(
                content="Add cursor paging", status="in_progress", activeForm="Adding cursor paging"
            )
        ],
    )


def test_the_first_plan_of_an_agent_is_revision_1_and_waits_for_a_reviewer(submit):
    plan = submit(plan_file_path="/home/dev/.claude/plans/paging.md")
    assert (plan.revision, plan.status) == (1, "pending")
    assert plan.plan_file_path == "/home/dev/.claude/plans/paging.md"
    assert plan.title == "Pagination"


def test_each_submission_is_the_next_revision_of_that_agent_only(submit):
    assert [submit().revision for _ in range(3)] == [1, 2, 3]
    assert submit(agent_id="sub-1").revision == 1
    assert submit(session_id="sess-2").revision == 1


def test_a_newer_revision_withdraws_the_older_pending_one(submit):
    first = submit()
    second = submit(plan="# Pagination\n\n1. Offset paging")
    first.refresh_from_db()
    assert first.status == "withdrawn"
    assert second.status == "pending"
    assert first.decision.outcome == "withdrawn" and first.decision.decided_by is None
    assert Plan.objects.filter(status="pending").count() == 1


def test_a_pending_plan_puts_the_session_in_plan_mode(submit):
    submit()
    assert mode_of() == "plan"


def test_approval_ends_plan_mode_back_in_default_mode(submit, reviewer):
    plan = plan_decide(plan_id=submit().pk, reviewer=reviewer, approve=True)
    assert (plan.status, plan.mode_after, plan.decided_by) == ("approved", "default", reviewer)
    assert mode_of() == "default"


def test_a_decision_is_a_few_statements_in_one_transaction_when_no_comment_is_on_the_plan(
    submit, reviewer
):
    """The plan (locked, with whether anyone commented and whether another plan waits), the
    audit chain's head, its update, the decision record, the session's mode, the audit log's
    entry: what a reviewer's
    click waits on, and the waiting agent with it (the writes sent together, one round trip)."""
    plan = submit()
    with CaptureQueriesContext(connection) as queries:
        plan_decide(plan_id=plan.pk, reviewer=reviewer, approve=True)
    statements = [q["sql"].split()[0] for q in queries.captured_queries]
    # (SQLite's BEGIN IMMEDIATE and COMMIT are statements too; PostgreSQL's are not logged.)
    statements = [word for word in statements if word not in {"BEGIN", "COMMIT"}]
    # The audit log's chain: its head read (on PostgreSQL under a transaction lock, a statement
    # of its own) before the entry is hashed and inserted.
    chain = ["SELECT", "SELECT"] if connection.vendor == "postgresql" else ["SELECT"]
    assert statements == ["SELECT", *chain, "UPDATE", "INSERT", "UPDATE", "INSERT"]
    assert mode_of() == "default"
    assert Decision.objects.get(plan=plan).decided_by == reviewer


def test_on_postgresql_a_decision_waits_on_the_database_five_times_and_plans_little(
    submit, reviewer, tmp_path
):
    """BEGIN, the plan read, all four writes together (the audit log's entry among them),
    COMMIT: each wait is a round trip to
    the database's process, which the waiting agent waits for too. Once the connection has
    decided a plan, its statements are prepared: PostgreSQL parses and plans none of them
    again (the read alone costs more to plan than to run)."""
    if connection.vendor != "postgresql":
        pytest.skip("Round trips are PostgreSQL's: SQLite runs in this process.")
    from psycopg import pq

    plan_decide(plan_id=submit().pk, reviewer=reviewer, approve=True)
    plan = submit()
    pgconn = connection.connection.pgconn
    with open(tmp_path / "protocol", "w+") as trace:
        pgconn.trace(trace.fileno())
        pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS)
        try:
            plan_decide(plan_id=plan.pk, reviewer=reviewer, approve=True)
        finally:
            pgconn.untrace()
        trace.seek(0)
        sent = [line.split("\t") for line in trace]
    answers = [line for line in sent if line[0] == "B" and line[2] == "ReadyForQuery"]
    # One more for the audit log's chain: its lock and head read, sent together.
    assert len(answers) == 5
    # Parse is where PostgreSQL plans a statement: the decision's own are only bound and run
    # here, never parsed; the chain's lock and head read (both trivial to plan) are.
    parsed = [line[3] for line in sent if line[0] == "F" and line[2] == "Parse"]
    assert len(parsed) == 2 and "pg_advisory_xact_lock" in parsed[0]
    assert len([line for line in sent if line[0] == "F" and line[2] == "Bind"]) == 7
    assert mode_of() == "default"
    assert Decision.objects.get(plan=plan).decided_by == reviewer


@pytest.mark.parametrize("setting, prepared", [("", 1), ("off", 0)])
def test_behind_a_pooler_prepared_statements_can_be_turned_off(setting, prepared):
    """AGENTBOARD_PREPARED_STATEMENTS=off (a pooler that cannot keep them): nothing is
    prepared, and the hot statements still run."""
    if connection.vendor != "postgresql":
        pytest.skip("Prepared statements are PostgreSQL's.")
    script = (
        "import django; django.setup()\n"
        "from django.db import connection\n"
        "from dashboard.core.sql import any_row\n"
        "assert any_row('SELECT 1 WHERE %s > 0', [1]) and any_row('SELECT 1 WHERE %s > 0', [1])\n"
        "with connection.cursor() as cursor:\n"
        "    cursor.execute('SELECT count(*) FROM pg_prepared_statements')\n"
        "    print(cursor.fetchone()[0])\n"
    )
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "dashboard.settings",
        "AGENTBOARD_PREPARED_STATEMENTS": setting,
    }
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(prepared)]


def test_approval_with_auto_accept_switches_the_session_to_accept_edits(submit, reviewer):
    plan = plan_decide(plan_id=submit().pk, reviewer=reviewer, approve=True, auto_accept=True)
    assert plan.mode_after == "acceptEdits"
    assert mode_of() == "acceptEdits"


def test_rejection_keeps_plan_mode_so_todo_writes_stay_refused(submit, reviewer, user):
    plan = plan_decide(
        plan_id=submit().pk,
        reviewer=reviewer,
        approve=False,
        feedback="Use cursor paging, not offsets.",
    )
    assert (plan.status, plan.mode_after, plan.feedback) == (
        "rejected",
        None,
        "Use cursor paging, not offsets.",
    )
    assert mode_of() == "plan"
    with pytest.raises(ServiceError) as refused:
        write_todo(user)
    assert (refused.value.code, refused.value.status) == ("plan_mode_active", 409)


def test_after_approval_the_agent_can_write_its_todo_list_again(submit, reviewer, user):
    submit()
    with pytest.raises(ServiceError):
        write_todo(user)
    plan_decide(plan_id=Plan.objects.get().pk, reviewer=reviewer, approve=True)
    assert write_todo(user).revision == 1


def test_approval_keeps_plan_mode_while_another_plan_of_the_session_waits(submit, reviewer):
    main_plan = submit()
    submit(agent_id="sub-1", agent_type="Plan")
    plan_decide(plan_id=main_plan.pk, reviewer=reviewer, approve=True)
    assert mode_of() == "plan"


def test_rejecting_without_feedback_is_refused_and_changes_nothing(submit, reviewer):
    plan = submit()
    with pytest.raises(ServiceError) as refused:
        plan_decide(plan_id=plan.pk, reviewer=reviewer, approve=False, feedback="   ")
    assert refused.value.code == "feedback_required"
    plan.refresh_from_db()
    assert plan.status == "pending" and not Decision.objects.exists()


def test_notes_on_an_approval_are_kept_and_reach_the_agent(submit, reviewer):
    plan = plan_decide(
        plan_id=submit().pk,
        reviewer=reviewer,
        approve=True,
        feedback="Keep the old endpoint working.",
    )
    assert plan.notes == "Keep the old endpoint working."
    state = plan_state(plan)
    assert state["feedback"] == "Keep the old endpoint working."
    assert "Keep the old endpoint working." in state["message"]


def test_a_second_decision_is_refused_and_says_who_decided(submit, reviewer, second_reviewer):
    plan = submit()
    plan_decide(plan_id=plan.pk, reviewer=reviewer, approve=True)
    with pytest.raises(ServiceError) as refused:
        plan_decide(plan_id=plan.pk, reviewer=second_reviewer, approve=False, feedback="No.")
    assert (refused.value.code, refused.value.status) == ("already_decided", 409)
    assert "lead already approved" in refused.value.message
    plan.refresh_from_db()
    assert (plan.status, plan.decided_by) == ("approved", reviewer)
    assert Decision.objects.count() == 1


def test_deciding_an_unknown_plan_is_not_found(reviewer):
    with pytest.raises(ServiceError) as refused:
        plan_decide(plan_id=999, reviewer=reviewer, approve=True)
    assert (refused.value.code, refused.value.status) == ("plan_not_found", 404)


@pytest.mark.django_db(transaction=True)
def test_exactly_one_of_many_reviewers_deciding_at_once_wins(submit, reviewer, second_reviewer):
    plan = submit()
    reviewers = [reviewer, second_reviewer] * 3
    start = threading.Barrier(len(reviewers))
    outcomes: list[str] = []

    def decide(index: int) -> None:
        start.wait()
        try:
            plan_decide(
                plan_id=plan.pk,
                reviewer=reviewers[index],
                approve=index % 2 == 0,
                feedback=f"feedback {index}",
            )
            outcomes.append("won")
        except ServiceError as error:
            outcomes.append(error.code)
        finally:
            connection.close()

    threads = [threading.Thread(target=decide, args=(i,)) for i in range(len(reviewers))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["already_decided"] * 5 + ["won"]
    assert Decision.objects.filter(plan=plan).count() == 1
    plan.refresh_from_db()
    assert plan.status == Decision.objects.get().outcome


def test_expiry_ends_a_pending_plan_and_leaves_the_session_in_plan_mode(submit):
    plan = plan_expire(plan_id=submit().pk)
    assert plan.status == "expired"
    assert plan.decision.outcome == "expired"
    assert mode_of() == "plan"


def test_expiry_leaves_a_decided_plan_as_it_was(submit, reviewer):
    plan = submit()
    plan_decide(plan_id=plan.pk, reviewer=reviewer, approve=True)
    assert plan_expire(plan_id=plan.pk).status == "approved"
    assert Decision.objects.get().outcome == "approved"


def test_a_decision_is_a_record_that_cannot_be_edited(submit, reviewer):
    plan_decide(plan_id=submit().pk, reviewer=reviewer, approve=False, feedback="Smaller steps.")
    decision = Decision.objects.get()
    decision.feedback = "something else"
    with pytest.raises(ValueError, match="never changed"):
        decision.save()
    assert Decision.objects.get().feedback == "Smaller steps."


@pytest.mark.parametrize("text", ["", "  \n\t "])
def test_an_empty_plan_is_refused(submit, text):
    with pytest.raises(ServiceError) as refused:
        submit(plan=text)
    assert (refused.value.code, refused.value.status) == ("empty_plan", 422)
    assert not Plan.objects.exists()


def test_a_plan_over_the_size_limit_is_refused_with_413(submit, settings):
    settings.AGENTBOARD_MAX_PLAN_CHARS = 20
    with pytest.raises(ServiceError) as refused:
        submit(plan="x" * 21)
    assert (refused.value.code, refused.value.status) == ("plan_too_large", 413)
    assert submit(plan="x" * 20).revision == 1


def test_a_retry_with_the_same_idempotency_key_returns_the_first_plan(submit):
    first = submit(idempotency_key="toolu_01")
    again = submit(idempotency_key="toolu_01")
    assert again.pk == first.pk
    assert Plan.objects.count() == 1


def test_the_same_idempotency_key_with_another_plan_is_refused(submit):
    submit(idempotency_key="toolu_01")
    with pytest.raises(ServiceError) as refused:
        submit(idempotency_key="toolu_01", plan="# Something else")
    assert refused.value.code == "idempotency_key_reused"


def test_shift_tab_cycles_default_accept_edits_plan_and_back_to_default():
    assert permission_mode_next("default") == "acceptEdits"
    assert permission_mode_next("acceptEdits") == "plan"
    assert permission_mode_next("plan") == "default"


def test_shift_tab_visits_bypass_permissions_only_when_it_is_available():
    assert permission_mode_next("plan", bypass_available=True) == "bypassPermissions"
    assert permission_mode_next("bypassPermissions", bypass_available=True) == "default"
    assert permission_mode_next("dontAsk") == "default"


def test_the_main_agent_is_told_to_start_and_update_its_todo_list_first(submit, reviewer):
    plan = plan_decide(plan_id=submit().pk, reviewer=reviewer, approve=True, auto_accept=True)
    message = plan_state(plan)["message"]
    assert "may start" in message
    assert "todo list" in message
    assert "accepted without asking" in message


def test_a_subagent_is_told_its_plan_is_approved_and_nothing_more_is_needed(submit, reviewer):
    plan = submit(agent_id="agent-a4d2c8", agent_type="Plan")
    message = plan_state(plan_decide(plan_id=plan.pk, reviewer=reviewer, approve=True))["message"]
    assert "approved" in message
    assert "Nothing more is needed" in message
    assert "todo list" not in message


def test_a_rejection_tells_the_agent_it_stays_in_plan_mode_with_the_feedback(submit, reviewer):
    plan = plan_decide(
        plan_id=submit().pk,
        reviewer=reviewer,
        approve=False,
        feedback="Split the migration into two steps.",
    )
    message = plan_state(plan)["message"]
    assert "stay in plan mode" in message
    assert "Split the migration into two steps." in message


def test_plan_state_has_every_documented_field(submit, reviewer):
    plan = plan_decide(plan_id=submit().pk, reviewer=reviewer, approve=False, feedback="No.")
    state = plan_state(plan)
    assert set(state) == {
        "id",
        "session_id",
        "agent_id",
        "revision",
        "status",
        "mode_after",
        "feedback",
        "decided_by",
        "decided_at",
        "message",
    }
    assert state["session_id"] == state["agent_id"] == "sess-1"
    assert (state["status"], state["decided_by"]) == ("rejected", "lead")
    assert state["decided_at"].startswith(str(plan.decided_at.year))


def test_a_decision_reports_the_state_its_waiting_agents_are_told(submit, reviewer):
    plan = submit()

    decided = services.plan_decide(plan_id=plan.pk, reviewer=reviewer, approve=True)

    assert decided.changes.decided_plans == {plan.pk: plan_state(decided.plan)}
    assert decided.changes.decided_plans[plan.pk]["status"] == "approved"
    assert decided.changes.plans == {plan.pk}


@pytest.mark.django_db(transaction=True)
async def test_a_decision_through_the_writer_wakes_waiting_agents_after_commit(
    user, reviewer, settings
):
    settings.AGENTBOARD_DECISION_RESYNC_SECONDS = 60  # only the push can wake it in time
    plan = (
        await write(
            services.plan_submit,
            owner=user,
            session_id="sess-1",
            agent_id="sess-1",
            plan="# Pagination\n",
            plan_file_path=None,
            source="api",
        )
    ).plan
    heard: asyncio.Future = asyncio.get_running_loop().create_future()
    watch = watch_for()
    await watch.add(plan.pk, heard.set_result)
    try:
        await write(services.plan_decide, plan_id=plan.pk, reviewer=reviewer, approve=True)
        state = await asyncio.wait_for(heard, 5)
    finally:
        watch.discard(plan.pk, heard.set_result)

    assert (state["id"], state["status"]) == (plan.pk, "approved")
    assert await Decision.objects.filter(plan=plan).aexists()
