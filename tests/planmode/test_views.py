from __future__ import annotations

import random
import re
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from planmode.models import Plan
from tests.conftest import parse_html
from tests.domain import plan_decide

pytestmark = pytest.mark.django_db


@pytest.fixture
def lead(client, reviewer) -> Client:
    client.force_login(reviewer)
    return client


@pytest.fixture
def watcher(user) -> Client:
    """A logged-in user without the review permission."""
    client = Client()
    client.force_login(user)
    return client


def post_decision(client: Client, plan: Plan, action: str, text: str = ""):
    return client.post(f"/plans/{plan.pk}/decide/", {"action": action, "text": text})


def test_the_queue_lists_waiting_plans_oldest_first_with_how_long_they_waited(submit, lead):
    older = submit(session_id="api", plan="# Older plan")
    newer = submit(session_id="shop", plan="# Newer plan")
    Plan.objects.filter(pk=older.pk).update(submitted_at=timezone.now() - timedelta(minutes=4))
    page = lead.get("/plans/").content.decode()
    assert page.index("Older plan") < page.index("Newer plan")
    assert re.search(rf'id="plan-row-{older.pk}".*?waiting <time[^>]*>4 min</time>', page, re.S)
    assert f'data-pending-plan="{newer.pk}"' in page


def test_decided_plans_move_to_recently_decided_with_who_decided(submit, lead, reviewer):
    plan = submit()
    plan_decide(plan_id=plan.pk, reviewer=reviewer, approve=False, feedback="Smaller steps.")
    page = lead.get("/plans/").content.decode()
    assert "No plan is waiting" in page
    assert re.search(r"Recently decided.*rejected by lead", page, re.S)


def test_the_header_counts_waiting_plans_in_the_badge_and_the_title(submit, lead):
    submit(session_id="a")
    submit(session_id="b")
    page = lead.get("/plans/").content.decode()
    assert "<title" in page and "(2) Plans · Agentboard" in page
    assert "2 plans waiting" in page
    assert 'href="/plans/"' in page and ">Plans</a>" in page


def test_the_review_page_renders_the_plan_markdown(submit, lead):
    plan = submit(
        plan="# Pagination\n\n- [ ] limit max 100\n\n| a | b |\n|---|---|\n| 1 | 2 |\n",
        plan_file_path="/home/dev/.claude/plans/paging.md",
    )
    page = lead.get(f"/plans/{plan.pk}/").content.decode()
    # The plan's own title is the page's heading, said once; its checkboxes are named.
    assert '<h1 id="plan-title">Pagination</h1>' in page
    assert page.count(">Pagination</h") == 1
    assert '<label><input type="checkbox" disabled=""> limit max 100</label>' in page
    assert "<table>" in page
    assert "/home/dev/.claude/plans/paging.md" in page
    assert "main agent" in page and "Plan rev 1" in page


def test_markup_in_a_plan_is_shown_as_text(submit, lead):
    plan = submit(plan="# Hi\n\n<script>window.__pwned=1</script>\n\n[x](javascript:alert(1))")
    page = lead.get(f"/plans/{plan.pk}/").content.decode()
    assert "<script>window.__pwned" not in page
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in page
    assert 'href="javascript:' not in page


def test_a_reviewer_sees_the_three_actions_and_the_keyboard_shortcuts(submit, lead):
    page = lead.get(f"/plans/{submit().pk}/").content.decode()
    for value, label in [
        ("approve", "Approve"),
        ("approve_auto", "Approve, auto-accept edits"),
        ("reject", "Reject"),
    ]:
        assert re.search(rf'value="{value}"[^>]*>{re.escape(label)} <kbd>', page)
    assert "csrfmiddlewaretoken" in page
    assert "Next / previous waiting plan" in page


def test_a_user_without_the_review_permission_sees_no_buttons(submit, watcher):
    page = watcher.get(f"/plans/{submit().pk}/").content.decode()
    assert '<button type="submit" name="action"' not in page
    assert "Deciding needs the review permission" in page


def test_a_user_without_the_review_permission_cannot_decide(submit, watcher):
    plan = submit()
    response = post_decision(watcher, plan, "approve")
    assert response.status_code == 403
    plan.refresh_from_db()
    assert plan.status == "pending"


def test_a_user_given_the_review_permission_can_decide(submit, second_reviewer, client):
    plan = submit()
    client.force_login(second_reviewer)
    assert post_decision(client, plan, "approve").status_code == 302
    plan.refresh_from_db()
    assert (plan.status, plan.decided_by) == ("approved", second_reviewer)


def test_deciding_needs_the_csrf_token(submit, reviewer):
    plan = submit()
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(reviewer)
    assert post_decision(browser, plan, "approve").status_code == 403
    plan.refresh_from_db()
    assert plan.status == "pending"


def test_deciding_needs_a_login(submit, client):
    plan = submit()
    response = post_decision(client, plan, "approve")
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_deciding_is_post_only(submit, lead):
    assert lead.get(f"/plans/{submit().pk}/decide/").status_code == 405


def test_rejecting_without_feedback_shows_why_and_keeps_the_plan_waiting(submit, lead):
    plan = submit()
    response = post_decision(lead, plan, "reject", "  ")
    assert response.status_code == 422
    assert "a rejection needs it for the agent" in response.content.decode()
    plan.refresh_from_db()
    assert plan.status == "pending"


def test_an_unknown_action_is_refused(submit, lead):
    assert post_decision(lead, submit(), "maybe").status_code == 400


def test_approving_records_the_decision_and_shows_who_when_and_what(submit, lead):
    plan = submit()
    response = post_decision(lead, plan, "approve_auto", "Keep the old endpoint.")
    assert response.status_code == 302 and response["Location"] == f"/plans/{plan.pk}/"
    page = lead.get(response["Location"]).content.decode()
    panel = page[page.index('id="decision-panel"') : page.index("</aside>")]
    assert "Approved" in panel and "<strong>lead</strong>" in panel
    assert "Keep the old endpoint." in panel
    assert "accepted automatically" in panel
    assert "<form" not in panel


def test_the_second_of_two_reviewers_gets_409_and_sees_who_decided(submit, lead, second_reviewer):
    plan = submit()
    late = Client()
    late.force_login(second_reviewer)
    late_page = late.get(f"/plans/{plan.pk}/")
    assert 'value="reject"' in late_page.content.decode()
    assert post_decision(lead, plan, "approve").status_code == 302
    response = post_decision(late, plan, "reject", "Not like this.")
    assert response.status_code == 409
    page = response.content.decode()
    assert "lead already approved this plan" in page
    assert "Approved" in page and 'value="reject"' not in page
    plan.refresh_from_db()
    assert (plan.status, plan.feedback) == ("approved", "")


def test_revision_2_shows_the_diff_and_the_feedback_that_rejected_revision_1(
    submit, lead, reviewer
):
    first = submit(plan="# Paging\n\n1. Offset paging\n2. Tests\n")
    plan_decide(plan_id=first.pk, reviewer=reviewer, approve=False, feedback="Use cursors.")
    second = submit(plan="# Paging\n\n1. Cursor paging\n2. Tests\n")
    page = lead.get(f"/plans/{second.pk}/").content.decode()
    document = parse_html(page)
    # What changed is said at the top and marked inside the plan; the feedback that made the
    # agent revise it is in plain view below, after the decision panel (the reading order).
    summary = document.find("div", id="what-changed")
    assert "What changed since rev 1: 1 part added, 1 removed" in " ".join(summary.text().split())
    body = document.find("article", id="plan-body")
    removed, added = body.find("li", cls="change-removed"), body.find("li", cls="change-added")
    assert " ".join(removed.text().split()) == "Removed Offset paging"
    assert " ".join(added.text().split()) == "Added Cursor paging"
    assert page.index('id="decision-panel"') < page.index('id="plan-changes"')
    changes = document.find("section", id="plan-changes")
    assert "Use cursors." in changes.text()
    # The source diff is one switch away, its changed words marked.
    source = document.find("section", id="plan-source-diff")
    assert "hidden" in source.attrs
    assert "+1 \u22121 lines" in source.find("h2").text()
    removed, added = source.find(cls="is-remove"), source.find(cls="is-add")
    assert removed.find(cls="diff-text").text() == "1. Offset paging"
    assert removed.find("del").text() == "Offset"
    assert added.find(cls="diff-text").text() == "1. Cursor paging"
    assert added.find("ins").text() == "Cursor"
    switched = parse_html(lead.get(f"/plans/{second.pk}/?changes=source").content)
    assert "hidden" in switched.find("article", id="plan-body").attrs
    assert "hidden" not in switched.find("section", id="plan-source-diff").attrs


def words(seed: int, count: int) -> str:
    chosen = random.Random(seed)
    return " ".join(chosen.choice(["cursor", "paging", "the", "of", "a"]) for _ in range(count))


# Each took from half a minute to several minutes of the server's CPU before comparisons had a
# budget; the test's timeout fails it long before that.
@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    "old, new",
    [
        pytest.param(words(1, 19_000), words(2, 19_000), id="one paragraph of 19,000 words"),
        pytest.param(
            "|" + "c|" * 2_000 + "\n|" + "-|" * 2_000 + "\n|" + "a|" * 2_000,
            "|" + "c|" * 2_000 + "\n|" + "-|" * 2_000 + "\n|" + "b|" * 2_000,
            id="a table of 2,000 columns",
        ),
        pytest.param(
            "\n\n".join("x" for _ in range(1_000)),
            "\n\n".join("y" for _ in range(1_000)),
            id="2,000 lines, half of them blank",
        ),
    ],
)
def test_the_largest_plans_review_page_shows_what_changed_at_once(submit, lead, old, new):
    submit(plan=old)
    second = submit(plan=new)

    page = lead.get(f"/plans/{second.pk}/")

    assert page.status_code == 200
    changes = parse_html(page.content).find("section", id="plan-source-diff")
    assert "Source diff since rev 1" in changes.text()


def test_revisions_too_large_to_compare_line_by_line_show_their_sizes(submit, lead):
    old = "\n".join(str(n % 100) for n in range(20_000))
    new = "\n".join(str(n % 100) for n in range(1, 20_002))
    submit(plan=old)
    second = submit(plan=new)

    changes = parse_html(lead.get(f"/plans/{second.pk}/").content).find(
        "section", id="plan-source-diff"
    )

    assert not changes.find_all("div", cls="diff")
    # The plan itself shows as it is, unmarked.
    body = parse_html(lead.get(f"/plans/{second.pk}/").content).find("article", id="plan-body")
    assert "98 99 0 1" in body.text() and not body.find_all(cls="change-tag")
    assert (
        "too large to compare line by line; showing sizes: rev 1 has 20000 lines "
        f"({len(old)} characters), this one 20001 lines ({len(new)} characters)"
    ) in " ".join(changes.text().split())


def test_a_long_comparison_lists_its_first_lines_and_counts_the_rest(submit, lead):
    submit(plan="\n".join(f"old line {n}" for n in range(1_500)))
    second = submit(plan="\n".join(f"new line {n}" for n in range(1_500)))

    changes = parse_html(lead.get(f"/plans/{second.pk}/").content).find(
        "section", id="plan-source-diff"
    )

    assert "+1500 \u22121500 lines" in changes.find("h2").text()
    assert len(changes.find_all(cls="is-add")) + len(changes.find_all(cls="is-remove")) == 2_000
    assert "1000 more lines of the comparison not listed" in changes.text()


def test_the_review_page_lists_the_agents_earlier_revisions_as_history(submit, lead, reviewer):
    first = submit()
    plan_decide(plan_id=first.pk, reviewer=reviewer, approve=False, feedback="Use cursors.")
    second = submit()
    page = lead.get(f"/plans/{second.pk}/").content.decode()
    thread = page[page.index('id="plan-thread"') :]
    assert thread.index("rev 2") < thread.index("rev 1")
    assert "Rejected" in thread or "rejected" in thread


def test_an_unknown_plan_page_is_404(lead):
    assert lead.get("/plans/999/").status_code == 404


def test_the_session_board_shows_plan_mode_and_the_plans_with_their_decisions(
    submit, lead, reviewer
):
    plan = submit()
    plan_decide(plan_id=plan.pk, reviewer=reviewer, approve=False, feedback="Use cursors.")
    submit()
    page = lead.get("/sessions/sess-1/").content.decode()
    assert "plan mode on" in page
    plans = page[page.index('id="session-plans"') :]
    assert "rejected" in plans.lower() and "Use cursors." in plans and "waiting" in plans


def test_the_overview_row_of_a_session_with_a_waiting_plan_is_marked_waiting(submit, lead):
    submit()
    page = lead.get("/").content.decode()
    assert 'data-waiting="true"' in page
    assert "1 plan waiting" in page
    assert "Plan waiting" in page
