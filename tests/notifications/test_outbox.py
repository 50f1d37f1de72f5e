"""The outbox: notifications are written with their cause, once per destination, and writes
with nothing notifiable (or a server without any destination) pay nothing for them."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from dashboard.board.idle import sessions_end_idle
from dashboard.core.changes import Changes
from dashboard.core.writer import write_sync
from dashboard.models import Agent, Session
from dashboard.notifications import outbox
from dashboard.notifications.models import Delivery, Event, PushDevice, WebhookTarget
from planmode import services as plan_services
from planmode.models import PermissionRequest, Plan
from planmode.permissions import permission_request_open
from tests.conftest import todo, write_todos
from todos import enforcer
from todos.models import Continuation

PLAN = "# Pagination <!channel>\n\n1. Cursor based paging\n"
ALL_EVENTS = [choice.value for choice in Event]

pytestmark = pytest.mark.django_db


def target(
    owner: User, *, events=ALL_EVENTS, projects=(), name="chat", unsaved=False
) -> WebhookTarget:
    return (WebhookTarget if unsaved else WebhookTarget.objects.create)(
        owner=owner,
        name=name,
        kind=WebhookTarget.Kind.JSON,
        url="https://hooks.example.com/T1/secret-part",
        secret="s3cret",
        events=list(events),
        projects=list(projects),
        base_url="http://board.test",
    )


def submit(owner: User, session_id: str = "sess-1", cwd: str = "/work/shop") -> Plan:
    return write_sync(
        plan_services.plan_submit,
        owner=owner,
        session_id=session_id,
        agent_id=session_id,
        plan=PLAN,
        plan_file_path=None,
        source=Plan.Source.API,
        cwd=cwd,
    ).plan


def main_agent(owner: User, session_id: str = "sess-1") -> Agent:
    """The main agent of a session in /work/shop with one task to do."""
    write_sync(
        write_todos,
        owner=owner,
        session_id=session_id,
        agent_id=session_id,
        todos=[todo("Write the tests")],
        cwd="/work/shop",
    )
    return Agent.objects.get(agent_id=session_id)


def ask_to_run(agent: Agent, command: str) -> PermissionRequest:
    """A Bash permission request of `agent`, waiting in the inbox."""
    return write_sync(
        permission_request_open,
        agent=agent,
        tool_name="Bash",
        tool_input={"command": command, "description": "Build"},
        suggestions=[],
    ).request


def test_a_new_plan_gives_each_target_one_waiting_notification_with_what_it_wants(user, reviewer):
    chat = target(reviewer)
    plan = submit(user)
    delivery = Delivery.objects.get()
    assert (delivery.target, delivery.event, delivery.status) == (chat, "waiting", "pending")
    payload = delivery.payload
    assert payload["project"] == "shop"
    assert payload["agent"] == "main agent"
    assert payload["title"].startswith("Plan rev 1 waits for review: Pagination")
    assert "Cursor based paging" in payload["excerpt"]
    assert payload["path"] == f"/plans/{plan.pk}/"


def test_the_same_cause_never_gives_a_target_two_notifications(user, reviewer):
    target(reviewer)
    plan = submit(user)
    with transaction.atomic():
        outbox.enqueue(Changes(plans={plan.pk}))
    assert Delivery.objects.count() == 1


def test_a_failed_write_leaves_no_notification(user, reviewer):
    target(reviewer)
    submit(user)
    with pytest.raises(RuntimeError), transaction.atomic():
        plan = Plan.objects.get()
        Plan.objects.filter(pk=plan.pk).update(status="pending")
        outbox.enqueue(Changes(plans={plan.pk}))
        Delivery.objects.all().delete()
        raise RuntimeError("the cause is rolled back")
    assert Delivery.objects.count() == 1


def test_changes_with_nothing_notifiable_cost_no_query(user, reviewer, django_assert_num_queries):
    target(reviewer)
    with transaction.atomic():
        with django_assert_num_queries(0):
            outbox.enqueue(Changes(agents={1: 1}, sessions={1}, revisions=[3], enforcer_events=[4]))


def test_without_any_destination_a_notifiable_write_costs_one_small_query(
    user, django_assert_num_queries
):
    plan = submit(user)
    with transaction.atomic():
        with django_assert_num_queries(1):  # any target or device?
            outbox.enqueue(Changes(plans={plan.pk}))


def test_a_target_added_by_another_process_gets_the_very_next_event(user, reviewer):
    submit(user, "sess-1")
    # Another server process adds the first target: no signal reaches this one.
    WebhookTarget.objects.bulk_create([target(reviewer, unsaved=True)])
    submit(user, "sess-2")
    assert Delivery.objects.count() == 1


def test_notifying_a_plan_costs_a_bounded_number_of_queries(
    user, reviewer, django_assert_max_num_queries
):
    for number in range(5):
        target(reviewer, name=f"chat {number}")
    plans = [submit(user, f"sess-{n}") for n in range(3)]
    Delivery.objects.all().delete()
    # Whether any target exists, the plans, the targets, the devices, who of their people
    # sees what (`dashboard.core.visibility.audiences_of`: three), one insert, and a savepoint
    # (2).
    with transaction.atomic(), django_assert_max_num_queries(10):
        outbox.enqueue(Changes(plans={plan.pk for plan in plans}))
    assert Delivery.objects.count() == 15


def test_a_target_gets_only_its_events_and_projects(user, reviewer):
    decided_only = target(reviewer, events=["decided"], name="decisions")
    api_only = target(reviewer, projects=["api"], name="api")
    everything = target(reviewer, name="all")
    submit(user, "sess-1", cwd="/work/shop")
    submit(user, "sess-2", cwd="/work/api")
    got = {
        t.name: set(Delivery.objects.filter(target=t).values_list("payload__project", flat=True))
        for t in (decided_only, api_only, everything)
    }
    assert got == {"decisions": set(), "api": {"api"}, "all": {"shop", "api"}}


def test_a_watchers_target_hears_only_of_their_own_sessions(user, other_user):
    mine = target(user, name="mine")
    submit(user, "sess-1")
    submit(other_user, "sess-2")
    assert list(
        Delivery.objects.filter(target=mine).values_list("payload__session", flat=True)
    ) == ["sess-1"]


def test_decisions_reach_team_targets_but_not_the_deciders_own(user, reviewer):
    second = User.objects.create_user("mia", password="a-long-password-4")
    from django.contrib.auth.models import Permission

    second.user_permissions.add(Permission.objects.get(codename="review_plan"))
    team = target(reviewer, events=["decided"], name="team")  # a superuser: an admin
    own = target(second, events=["decided"], name="mia's")
    plan = submit(user)
    write_sync(
        plan_services.plan_decide,
        plan_id=plan.pk,
        reviewer=second,
        approve=False,
        feedback="Smaller <b>steps</b>",
    )
    assert list(Delivery.objects.filter(target=own)) == []
    decided = Delivery.objects.get(target=team)
    assert decided.payload["title"].startswith("Plan rev 1 rejected by mia")
    assert decided.payload["excerpt"] == "Smaller <b>steps</b>"


def test_countdowns_agents_stopped_unfinished_and_ended_sessions_notify(user, reviewer, settings):
    chat = target(reviewer)
    agent = main_agent(user)
    write_sync(enforcer.continuation_begin, agent_pk=agent.pk, stop_hook_active=False)
    counting = Continuation.objects.get(status="counting")
    Session.objects.update(enforcer_enabled=False)
    write_sync(enforcer.continuation_begin, agent_pk=agent.pk, stop_hook_active=False)
    skipped = Continuation.objects.get(status="skipped")
    settings.AGENTBOARD_SESSION_IDLE_MINUTES = 1
    Session.objects.update(last_seen_at=timezone.now() - timezone.timedelta(minutes=5))
    write_sync(sessions_end_idle)
    keys = set(Delivery.objects.filter(target=chat).values_list("key", flat=True))
    ended = int(Session.objects.get().ended_at.timestamp())
    assert keys == {
        f"waiting:countdown:{counting.pk}:t{chat.pk}",
        f"stopped_unfinished:stopped:{skipped.pk}:t{chat.pk}",
        f"session_ended:session:{Session.objects.get().pk}:{ended}:t{chat.pk}",
    }
    stopped = Delivery.objects.get(event="stopped_unfinished").payload
    assert stopped["title"] == "Stopped with 1 unfinished task"


def test_phones_are_woken_for_what_waits_on_their_user_only(user, other_user, reviewer):
    def device(owner, name):
        return PushDevice.objects.create(
            user=owner, name=name, endpoint=f"https://push.example.com/{name}", p256dh="k", auth="a"
        )

    device(reviewer, "lead")
    device(user, "dana")
    ana_phone = device(other_user, "ana")
    plan = submit(user)
    write_sync(plan_services.plan_decide, plan_id=plan.pk, reviewer=reviewer, approve=True)
    got = set(Delivery.objects.values_list("device__name", "event"))
    assert got == {("lead", "waiting"), ("dana", "waiting")}
    assert ana_phone.deliveries.count() == 0


def test_the_desktop_feed_lists_requests_and_countdowns_that_wait_on_the_user(
    user, other_user, client
):
    agent = main_agent(user)
    request = ask_to_run(agent, "make <script>alert(1)</script>")
    write_sync(enforcer.continuation_begin, agent_pk=agent.pk, stop_hook_active=False)

    client.force_login(user)
    items = client.get(reverse("notify-waiting")).json()["items"]
    client.force_login(other_user)
    strangers = client.get(reverse("notify-waiting")).json()["items"]

    by_key = {item["key"].split("-")[0]: item for item in items}
    assert set(by_key) == {"permission", "countdown"}
    asks = by_key["permission"]
    assert asks["title"].startswith("shop · main agent")
    assert asks["body"] == "Bash: make <script>alert(1)</script>"
    assert asks["url"] == f"/inbox/requests/{request.pk}/"
    assert by_key["countdown"]["url"] == "/sessions/sess-1/"
    assert strangers == []
