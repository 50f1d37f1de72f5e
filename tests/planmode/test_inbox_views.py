"""The inbox page: what it lists for whom, answering from it, bulk."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission, User
from django.utils import timezone

from dashboard.models import Agent, Session
from planmode.models import PermissionRequest, Plan, TerminalWait
from planmode.permissions import input_key
from tests.conftest import parse_html
from todos.models import Continuation

pytestmark = pytest.mark.django_db


def make_session(owner: User, session_id: str = "sess-1", cwd: str = "/home/dev/shop"):
    session = Session.objects.create(session_id=session_id, owner=owner, cwd=cwd)
    agent = Agent.objects.create(session=session, agent_id=session_id)
    return session, agent


def make_request(agent: Agent, tool: str = "Bash", tool_input: dict | None = None, **fields):
    tool_input = tool_input if tool_input is not None else {"command": "make release"}
    return PermissionRequest.objects.create(
        session=agent.session,
        agent=agent,
        tool_name=tool,
        tool_input=tool_input,
        input_key=input_key(tool, tool_input),
        **fields,
    )


def items(response) -> list:
    return parse_html(response.content).find_all("li", cls="inbox-item")


@pytest.fixture
def reviewer_client(client, reviewer):
    client.force_login(reviewer)
    return client


# --- listing ----------------------------------------------------------------------------------


def test_the_inbox_lists_everything_waiting_oldest_first(reviewer_client, user):
    session, agent = make_session(user)
    now = timezone.now()
    make_request(agent, requested_at=now - timezone.timedelta(minutes=2))
    Plan.objects.create(
        session=session,
        agent=agent,
        revision=1,
        markdown="# Pagination\n\n1. Cursors",
        source="hook",
        submitted_at=now - timezone.timedelta(minutes=4),
    )
    _, other = make_session(user, "sess-2", "/home/dev/docs")
    TerminalWait.objects.create(
        agent=other,
        notification_type="idle_prompt",
        message="Claude is waiting for your input",
        since=now - timezone.timedelta(minutes=6),
    )
    Continuation.objects.create(
        agent=agent,
        status="counting",
        unfinished=2,
        deadline=now + timezone.timedelta(seconds=2),
        created_at=now,
    )

    response = reviewer_client.get("/inbox/")

    assert response.status_code == 200
    listed = items(response)
    assert [item.attrs["data-kind"] for item in listed] == [
        "terminal",
        "plan",
        "permission",
        "countdown",
    ]
    texts = [item.text() for item in listed]
    assert "docs" in texts[0] and "Waiting for your input in its terminal" in texts[0]
    assert "Open session" in texts[0]
    assert "Pagination" in texts[1] and "Review" in texts[1]
    assert "make release" in texts[2] and "Bash" in texts[2] and "waiting 2 min" in texts[2]
    assert "Resumes in 0:0" in texts[3] and "2 tasks left" in texts[3]
    page = parse_html(response.content)
    assert page.find(id="plans-waiting").text() == "4 waiting on you"
    assert page.find("title").text().startswith("(4) Inbox")


def test_a_terminal_wait_of_an_agent_whose_request_shows_is_not_listed_twice(reviewer_client, user):
    _, agent = make_session(user)
    make_request(agent)
    TerminalWait.objects.create(agent=agent, notification_type="permission_prompt")

    assert [item.attrs["data-kind"] for item in items(reviewer_client.get("/inbox/"))] == [
        "permission"
    ]


def test_someone_without_the_review_permission_sees_only_their_own_sessions(
    client, user, other_user
):
    _, mine = make_session(user, "mine")
    _, theirs = make_session(other_user, "theirs")
    make_request(mine, tool_input={"command": "echo mine"})
    make_request(theirs, tool_input={"command": "echo theirs"})
    client.force_login(user)

    response = client.get("/inbox/")

    texts = " ".join(item.text() for item in items(response))
    assert "echo mine" in texts and "echo theirs" not in texts
    assert parse_html(response.content).find(id="plans-waiting").text() == "1 waiting on you"


def test_a_reviewer_sees_every_session(reviewer_client, user, other_user):
    make_request(make_session(user, "mine")[1], tool_input={"command": "echo mine"})
    make_request(make_session(other_user, "theirs")[1], tool_input={"command": "echo theirs"})

    texts = " ".join(item.text() for item in items(reviewer_client.get("/inbox/")))

    assert "echo mine" in texts and "echo theirs" in texts


def test_commands_and_diffs_are_shown_as_text_never_as_html(reviewer_client, user):
    _, agent = make_session(user)
    make_request(agent, tool_input={"command": "echo '<script>alert(1)</script>'"})
    make_request(
        agent,
        tool="Edit",
        tool_input={"file_path": "<img src=x>.ts", "old_string": "a", "new_string": "<b>b</b>"},
    )

    response = reviewer_client.get("/inbox/")

    html = response.content.decode()
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<b>b</b>" not in html and "&lt;b&gt;b&lt;/b&gt;" in html
    page = parse_html(response.content)
    assert page.find_all("script", src=None) == []
    diff = page.find("div", cls="diff")
    assert [line.text() for line in diff.find_all("div", cls="diff-line")] == ["- a", "+ <b>b</b>"]


def test_a_subagent_request_says_no_answer_may_mean_a_denial(reviewer_client, user):
    session, _ = make_session(user)
    subagent = Agent.objects.create(session=session, agent_id="a4d2", agent_type="Explore")
    make_request(subagent)

    [item] = items(reviewer_client.get("/inbox/"))

    assert "no answer by the end of the wait counts as a denial" in item.text()


def test_claude_codes_suggestions_are_offered_as_always_allow_choices(reviewer_client, user):
    _, agent = make_session(user)
    make_request(
        agent,
        tool_input={"command": "npm run test"},
        suggestions=[
            {
                "type": "addRules",
                "rules": [{"toolName": "Bash", "ruleContent": "npm run test:*"}],
                "behavior": "allow",
                "destination": "localSettings",
            }
        ],
    )

    [item] = items(reviewer_client.get("/inbox/"))

    choices = item.find_all("input", type="radio", name="remember")
    assert [choice.attrs["value"] for choice in choices] == ["suggestion:0", "custom"]
    assert "Always allow Bash(npm run test:*) in this project (local settings)" in item.text()
    assert item.find("input", name="pattern").attrs["value"] == "npm run test"


# --- answering --------------------------------------------------------------------------------


def decide(client, request: PermissionRequest, htmx: bool = True, **data):
    headers = {"HX-Request": "true"} if htmx else {}
    return client.post(f"/inbox/requests/{request.pk}/decide/", data, headers=headers)


def test_allowing_answers_and_returns_the_list_without_it(reviewer_client, user):
    _, agent = make_session(user)
    request = make_request(agent)

    response = decide(reviewer_client, request, action="allow")

    assert response.status_code == 200
    assert items(response) == []
    request.refresh_from_db()
    assert (request.status, request.decided_by.username) == ("allowed", "lead")
    assert "Recently decided" in response.content.decode()
    assert "Allowed by lead" in parse_html(response.content).find("li", cls="decided-row").text()


def decided_row(client) -> str:
    return parse_html(client.get("/inbox/").content).find("li", cls="decided-row").text()


def test_a_request_its_agent_closed_says_so_rather_than_that_nobody_decided(reviewer_client, user):
    _, agent = make_session(user)
    now = timezone.now()
    make_request(
        agent, status="expired", decided_at=now, held_until=now + timezone.timedelta(minutes=9)
    )

    row = decided_row(reviewer_client)

    assert "Closed by the agent before anyone decided" in row
    assert "nobody decided in time" not in row


def test_a_request_nobody_answered_in_time_says_the_terminal_asked(reviewer_client, user):
    _, agent = make_session(user)
    now = timezone.now()
    make_request(agent, status="expired", decided_at=now, held_until=now)

    row = decided_row(reviewer_client)

    assert "Expired as nobody decided in time; the terminal asked" in row


def test_a_plain_form_post_works_without_javascript(reviewer_client, user):
    _, agent = make_session(user)
    request = make_request(agent)

    response = decide(reviewer_client, request, htmx=False, action="deny", message="Not today.")

    assert response.status_code == 302 and response.url == "/inbox/"
    request.refresh_from_db()
    assert (request.status, request.message) == ("denied", "Not today.")


def test_a_late_decision_is_refused_and_says_who_was_first(reviewer_client, user):
    _, agent = make_session(user)
    request = make_request(agent)
    assert decide(reviewer_client, request, action="allow").status_code == 200

    late = decide(reviewer_client, request, action="deny", message="No.")

    assert late.status_code == 409
    notice = parse_html(late.content).find("p", cls="notice").text()
    assert notice.startswith("lead already allowed this request at ")
    request.refresh_from_db()
    assert request.status == "allowed"


def test_deny_without_a_message_is_refused_and_changes_nothing(reviewer_client, user):
    _, agent = make_session(user)
    request = make_request(agent)

    response = decide(reviewer_client, request, action="deny", message="")

    assert response.status_code == 422
    assert "Say why in the message" in response.content.decode()
    request.refresh_from_db()
    assert request.status == "pending"


def test_an_unknown_action_is_refused(reviewer_client, user):
    request = make_request(make_session(user)[1])
    response = decide(reviewer_client, request, action="maybe")
    assert response.status_code == 400
    assert "Choose Allow, Always, Deny, or Deny and stop." in response.content.decode()


def test_someone_elses_request_is_neither_seen_nor_answered(client, user, other_user):
    request = make_request(make_session(other_user, "theirs")[1])
    client.force_login(user)

    assert client.get(f"/inbox/requests/{request.pk}/").status_code == 404
    response = decide(client, request, action="allow")

    assert response.status_code == 403
    assert "Only reviewers, or the person whose session it is" in response.content.decode()
    request.refresh_from_db()
    assert request.status == "pending"


def test_the_owner_answers_their_own_agent(client, user):
    request = make_request(make_session(user)[1])
    client.force_login(user)

    assert decide(client, request, action="stop").status_code == 200

    request.refresh_from_db()
    assert (request.status, request.interrupt) == ("denied", True)


def test_always_with_an_edited_pattern_is_remembered_for_the_project(reviewer_client, user):
    request = make_request(make_session(user)[1], tool_input={"command": "git status --short"})

    decide(
        reviewer_client,
        request,
        action="remember",
        remember="custom",
        pattern="git status*",
        where="project",
    )

    request.refresh_from_db()
    assert request.updated_permissions == [
        {
            "type": "addRules",
            "rules": [{"toolName": "Bash", "ruleContent": "git status*"}],
            "behavior": "allow",
            "destination": "localSettings",
        }
    ]


def test_an_always_with_a_broken_pattern_is_refused(reviewer_client, user):
    request = make_request(make_session(user)[1])
    response = decide(
        reviewer_client, request, action="remember", remember="custom", pattern="a\nb"
    )
    assert response.status_code == 422
    assert "A rule is one line" in response.content.decode()
    request.refresh_from_db()
    assert request.status == "pending"


def test_a_request_page_shows_one_request_with_its_form(reviewer_client, user):
    request = make_request(make_session(user)[1], tool_input={"command": "make release"})

    response = reviewer_client.get(f"/inbox/requests/{request.pk}/")

    assert response.status_code == 200
    page = parse_html(response.content)
    assert "open" in page.find("details", cls="inbox-details").attrs
    assert page.find("input", name="csrfmiddlewaretoken")
    # A plain post there: the page has no list for htmx to replace.
    assert "hx-post" not in page.find("form", cls="inbox-form").attrs


# --- bulk -------------------------------------------------------------------------------------


def test_identical_requests_of_several_agents_are_answered_at_once(reviewer_client, user):
    requests = [
        make_request(make_session(user, f"sess-{n}")[1], tool_input={"command": "npm ci"})
        for n in range(3)
    ]
    response = reviewer_client.get("/inbox/")
    assert "3 identical: select all" in items(response)[0].text()

    response = reviewer_client.post(
        "/inbox/requests/decide/",
        {"ids": [r.pk for r in requests], "action": "allow"},
        headers={"HX-Request": "true"},
    )

    assert response.status_code == 200
    assert {r.status for r in PermissionRequest.objects.all()} == {"allowed"}


def test_different_requests_cannot_be_answered_together(reviewer_client, user):
    _, agent = make_session(user)
    one = make_request(agent, tool_input={"command": "npm ci"})
    two = make_request(agent, tool_input={"command": "rm -rf /"})

    response = reviewer_client.post(
        "/inbox/requests/decide/",
        {"ids": [one.pk, two.pk], "action": "allow"},
        headers={"HX-Request": "true"},
    )

    assert response.status_code == 422
    assert "Only identical requests" in response.content.decode()
    assert {r.status for r in PermissionRequest.objects.all()} == {"pending"}


def test_bulk_skips_what_was_already_answered_and_says_so(reviewer_client, user):
    first = make_request(make_session(user, "a")[1], tool_input={"command": "npm ci"})
    second = make_request(make_session(user, "b")[1], tool_input={"command": "npm ci"})
    decide(reviewer_client, first, action="allow")

    response = reviewer_client.post(
        "/inbox/requests/decide/",
        {"ids": [first.pk, second.pk], "action": "deny", "message": "Use the lock file."},
        headers={"HX-Request": "true"},
    )

    assert response.status_code == 200
    assert "Answered 1; the others were not changed: lead already allowed" in (
        response.content.decode()
    )
    first.refresh_from_db()
    second.refresh_from_db()
    assert (first.status, second.status) == ("allowed", "denied")


def test_the_review_permission_alone_makes_a_reviewer(client, user, other_user):
    user.user_permissions.add(Permission.objects.get(codename="review_plan"))
    make_request(make_session(other_user, "theirs")[1], tool_input={"command": "echo theirs"})
    client.force_login(user)

    assert "echo theirs" in " ".join(item.text() for item in items(client.get("/inbox/")))


def test_the_inbox_needs_a_login(client):
    response = client.get("/inbox/")
    assert response.status_code == 302 and "/accounts/login/" in response.url
