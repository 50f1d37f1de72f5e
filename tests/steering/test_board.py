"""Steering from the board: Message, Pause or Resume and Stop on a card, the board's header,
its "needs a look" lines and the overview row, for those who may steer; the box and its
count; what a card and a row say of a pause and of each message."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from dashboard.models import Agent, AuditAction, AuditEntry, Session
from dashboard.steering import services
from dashboard.steering.models import Directive, Pause
from tests.conftest import parse_html, todo, write_todos

pytestmark = pytest.mark.django_db(transaction=True)

SESSION = "sess-steer"
SUBAGENT = "sub-7f3a9c"


@pytest.fixture
def session(user) -> Session:
    write_todos(user, SESSION, SESSION, [todo("Write the migration", "in_progress")])
    write_todos(user, SESSION, SUBAGENT, [todo("Search the code", "in_progress")])
    return Session.objects.get(session_id=SESSION)


@pytest.fixture
def as_lead(client, reviewer):
    client.force_login(reviewer)
    return client


@pytest.fixture
def as_owner(client, user):
    client.force_login(user)
    return client


@pytest.fixture
def as_someone_else(client, other_user):
    client.force_login(other_user)
    return client


def board(client):
    response = client.get(f"/sessions/{SESSION}/")
    assert response.status_code == 200
    return parse_html(response.content)


def card(document, agent_id: str):
    return next(
        c
        for c in document.find_all("article", cls="card")
        if agent_id in c.attrs["data-collapse-key"]
    )


def steer_links(element) -> dict[str, str]:
    return {
        a.attrs["data-steer"]: a.attrs["href"]
        for a in element.find_all("a")
        if "data-steer" in a.attrs
    }


def send(client, action: str, data: dict, *, htmx: bool = True):
    headers = {"HX-Request": "true"} if htmx else {}
    return client.post(f"/steer/{SESSION}/{action}/send/", data, headers=headers)


# --- who sees the buttons ------------------------------------------------------------------


@pytest.mark.parametrize("who", ["as_lead", "as_owner"])
def test_the_lead_and_the_owner_see_message_pause_and_stop_on_every_card_and_the_header(
    request, session, who
):
    document = board(request.getfixturevalue(who))

    for agent_id in (SESSION, SUBAGENT):
        links = steer_links(card(document, agent_id))
        assert set(links) == {"message", "pause", "stop"}
        assert links["message"] == f"/steer/{SESSION}/message/?agent={agent_id}"
    header = document.find(id="session-header")
    assert steer_links(header)["message"] == f"/steer/{SESSION}/message/"


def test_someone_who_may_not_steer_sees_no_buttons_and_is_refused(as_someone_else, session):
    document = board(as_someone_else)

    assert not document.find_all(cls="steer-actions")
    assert as_someone_else.get(f"/steer/{SESSION}/message/?agent={SESSION}").status_code == 403
    assert as_someone_else.get(f"/steer/{SESSION}/count/?scope=session").status_code == 403
    response = send(as_someone_else, "message", {"agent": SESSION, "text": "hi"})
    assert response.status_code == 403
    assert not Directive.objects.exists()


def test_an_unknown_session_or_agent_is_not_found(as_lead, session):
    assert as_lead.get("/steer/no-such-session/message/").status_code == 404
    assert as_lead.get(f"/steer/{SESSION}/message/?agent=nobody").status_code == 404
    assert send(as_lead, "pause", {"agent": "nobody"}).status_code == 404


def test_the_overview_row_has_the_buttons_for_the_lead_only(as_lead, client, session, other_user):
    row = parse_html(as_lead.get("/").content).find("li", id=f"session-row-{session.pk}")
    assert set(steer_links(row)) == {"message", "pause", "stop"}

    client.force_login(other_user)
    row = parse_html(client.get("/").content).find("li", id=f"session-row-{session.pk}")
    assert not steer_links(row)


# --- the box -------------------------------------------------------------------------------


def test_the_box_offers_the_scopes_that_apply_and_counts_who_receives_it(as_lead, session):
    response = as_lead.get(
        f"/steer/{SESSION}/message/?agent={SUBAGENT}", headers={"HX-Request": "true"}
    )
    box = parse_html(response.content)

    assert box.find("textarea", name="text").attrs["maxlength"] == "4000"
    scopes = [i.attrs["value"] for i in box.find_all("input", type="radio")]
    assert scopes == ["agent", "session"]  # no project, no team
    assert box.find(id="steer-count").text() == "1 agent will receive it."
    count = as_lead.get(f"/steer/{SESSION}/count/?agent={SUBAGENT}&scope=session")
    assert count.content.decode() == "2 agents will receive it."


def test_the_box_is_a_page_of_its_own_without_javascript(as_lead, session):
    response = as_lead.get(f"/steer/{SESSION}/stop/?agent={SESSION}")

    document = parse_html(response.content)
    form = document.find("form", id="steer-form")
    assert form.attrs["method"] == "post"
    assert form.find("input", name="csrfmiddlewaretoken")
    assert form.find("textarea", name="reason")
    # Without a script to ask again, each scope says how many it reaches.
    choices = [label.text() for label in form.find_all("label", cls="steer-choice")]
    assert choices == [
        "This agent (1 running)",
        "Every running agent of this session (2 running)",
    ]


# --- the actions ---------------------------------------------------------------------------


def test_a_message_is_queued_for_the_agent_and_its_card_says_so(as_lead, session):
    response = send(
        as_lead, "message", {"agent": SUBAGENT, "scope": "agent", "text": "Use staging."}
    )

    assert response.status_code == 201
    assert "Queued for 1 agent" in parse_html(response.content).text()
    directive = Directive.objects.get()
    assert (directive.agent.agent_id, directive.text) == (SUBAGENT, "Use staging.")
    said = card(board(as_lead), SUBAGENT).find("li", cls="steer-said")
    assert said.text().replace(" :", ":") == "✉ lead: Use staging. · queued"
    assert AuditEntry.objects.filter(action=AuditAction.AGENT_MESSAGED).exists()


def test_a_message_to_the_session_reaches_every_running_agent(as_owner, session):
    response = send(as_owner, "message", {"agent": SESSION, "scope": "session", "text": "Wrap up"})

    assert response.status_code == 201
    assert Directive.objects.count() == 2


@pytest.mark.parametrize(
    ("text", "sentence"),
    [
        ("   ", "Write the message first"),
        ("x" * 4001, "keep it to 4,000"),
        ("stop\x07now", "control characters"),
    ],
)
def test_bad_text_is_refused_with_its_sentence_and_nothing_is_queued(
    as_lead, session, text, sentence
):
    response = send(as_lead, "message", {"agent": SESSION, "scope": "agent", "text": text})

    assert response.status_code == 422
    assert sentence in parse_html(response.content).find(cls="form-error").text()
    assert not Directive.objects.exists()


def test_a_refusal_without_javascript_shows_the_box_again_with_the_sentence(as_lead, session):
    response = send(as_lead, "message", {"agent": SESSION, "text": ""}, htmx=False)

    assert response.status_code == 422
    assert "Write the message first" in parse_html(response.content).find(cls="form-error").text()


def test_a_plain_form_post_goes_back_to_the_board(as_lead, session):
    response = send(as_lead, "message", {"agent": SESSION, "text": "Hello"}, htmx=False)

    assert response.status_code == 303
    assert response["Location"] == f"/sessions/{SESSION}/"


def test_a_pause_shows_on_the_card_and_the_row_with_resume_and_resume_lets_it_go(as_lead, session):
    response = send(as_lead, "pause", {"agent": SESSION, "reason": "Deploy in progress"})
    assert response.status_code == 200
    Pause.objects.update(paused_at=timezone.now() - timedelta(minutes=3))

    main = card(board(as_lead), SESSION)
    paused = main.find(cls="steer-paused").text().replace(" :", ":")
    assert paused == "Paused by lead · 3 min: Deploy in progress"
    resume = main.find(cls="steer-actions").find(
        "a", data_steer_resume=f"/steer/{SESSION}/resume/send/?agent={SESSION}"
    )
    assert resume.text() == "Resume"
    assert resume.attrs["href"] == f"/steer/{SESSION}/resume/?agent={SESSION}"
    row = parse_html(as_lead.get("/").content).find("li", id=f"session-row-{session.pk}")
    assert row.attrs["data-paused"] == "true"
    assert "Paused by lead" in row.find(cls="row-status").text()

    resumed = send(as_lead, "resume", {"agent": SESSION})
    assert resumed.status_code == 200
    assert resumed.content.decode() == "Resumed 1 agent."
    assert not Pause.objects.filter(resumed_at__isnull=True).exists()
    assert not card(board(as_lead), SESSION).find_all(cls="steer-paused")
    again = send(as_lead, "resume", {"agent": SESSION})
    assert again.status_code == 409
    assert again.content.decode() == "Nothing there is paused, so nothing was resumed."


def test_a_stop_is_queued_and_the_card_says_stopped_once_delivered(as_lead, session):
    response = send(as_lead, "stop", {"agent": SESSION, "reason": "Wrong branch"})
    assert response.status_code == 200
    said = card(board(as_lead), SESSION).find("li", cls="steer-said").text()
    assert said.replace(" :", ":") == "⊘ Stop asked by lead: Wrong branch · queued"

    agent = Agent.objects.get(agent_id=SESSION)
    services.directives_claim(agent_pk=agent.pk, via="PreToolUse (Claude Code)")
    Directive.objects.update(delivered_at=timezone.now().replace(hour=14, minute=2))

    said = card(board(as_lead), SESSION).find("li", cls="steer-said").text()
    assert said.replace(" :", ":").startswith("⊘ Stopped by lead: Wrong branch · delivered 14:02")
    assert said.endswith("by PreToolUse (Claude Code)")


def test_a_message_of_an_ended_session_says_it_was_not_delivered(as_lead, session):
    send(as_lead, "message", {"agent": SESSION, "text": "Hello"})
    Directive.objects.update(state=Directive.State.UNDELIVERED, delivered_via="the session ended")
    Session.objects.update(ended_at=timezone.now())

    main = card(board(as_lead), SESSION)
    assert main.find("li", cls="steer-said").text().endswith("not delivered: the session ended")
    assert not main.find_all(cls="steer-actions")


# --- bounded reads -------------------------------------------------------------------------


def test_the_board_reads_steering_in_the_same_number_of_queries_however_many_agents(
    as_lead, user, reviewer
):
    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert as_lead.get(f"/sessions/{SESSION}/").status_code == 200
        return len(captured)

    write_todos(user, SESSION, SESSION, [todo("Main task", "in_progress")])
    lead_target = services.Target(SESSION, SESSION)
    services.message_send(user=reviewer, target=lead_target, text="one")
    queries()
    few = queries()

    for n in range(12):
        agent_id = f"sub-{n:04d}"
        write_todos(user, SESSION, agent_id, [todo("Task", "in_progress")])
        target = services.Target(SESSION, agent_id)
        services.message_send(user=reviewer, target=target, text=f"message {n}")
        services.stop_send(user=reviewer, target=target, reason="enough")
        services.pause(user=reviewer, target=target, reason="hold")

    assert queries() <= few


def test_the_timeline_shows_each_message_pause_resume_and_stop(as_lead, session):
    send(as_lead, "message", {"agent": SESSION, "text": "Use staging."})
    send(as_lead, "pause", {"agent": SESSION, "reason": "Deploy"})
    send(as_lead, "resume", {"agent": SESSION})
    send(as_lead, "stop", {"agent": SUBAGENT, "reason": "Enough"})

    response = as_lead.get(f"/sessions/{SESSION}/timeline/")
    events = parse_html(response.content).find_all("li", cls="steer-event")
    kinds = [event.attrs["data-steer-event"] for event in events]
    assert sorted(kinds) == ["message", "pause", "resume", "stop"]
    texts = " | ".join(event.text() for event in events)
    assert "lead messaged main" in texts and "Use staging." in texts
    assert "lead paused main" in texts and "lead resumed main" in texts
    assert "lead stopped" in texts and "Enough" in texts


def test_the_overview_offers_a_paused_filter(as_lead, session):
    document = parse_html(as_lead.get("/?state=paused").content)

    assert document.find("button", data_filter="paused").text() == "Paused"


def test_a_needs_a_look_line_offers_message_pause_and_stop_and_the_failed_steps(as_lead, session):
    from dashboard.activity.models import Concern, ConcernKind

    main = Agent.objects.get(agent_id=SESSION)
    Concern.objects.create(
        agent=main,
        session=session,
        kind=ConcernKind.LOOPING,
        since=timezone.now() - timedelta(minutes=3),
        detail="“pytest tests/api” failed 3 times in a row",
    )

    look = board(as_lead).find(cls="kind-look")
    assert set(steer_links(look)) == {"message", "pause", "stop"}
    assert steer_links(look)["pause"] == f"/steer/{SESSION}/pause/?agent={SESSION}"
    assert look.find("button").text() == "Dismiss"
    failed = look.find("a", href=f"/sessions/{SESSION}/timeline/?agent={SESSION}&failures=1")
    assert failed.text() == "Its failed steps on the timeline"


def test_a_needs_a_look_line_of_a_paused_agent_offers_resume(as_lead, session):
    from dashboard.activity.models import Concern, ConcernKind

    main = Agent.objects.get(agent_id=SESSION)
    Concern.objects.create(
        agent=main,
        session=session,
        kind=ConcernKind.STUCK,
        since=timezone.now() - timedelta(minutes=3),
        detail="no step while “Write the migration” is in progress",
    )
    assert send(as_lead, "pause", {"agent": SESSION, "reason": "Look first"}).status_code == 200

    look = board(as_lead).find(cls="kind-look")

    assert set(steer_links(look)) == {"message", "stop"}
    resume = look.find("a", data_steer_resume=f"/steer/{SESSION}/resume/send/?agent={SESSION}")
    assert resume.text() == "Resume"
