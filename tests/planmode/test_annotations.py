"""Plan annotations: a reviewer comments on selected words of a plan (or asks for them to be
removed or replaced); the comments go to the agent with the decision and stay with the plan."""

from __future__ import annotations

import pytest
from django.test import Client

from dashboard.core.errors import ServiceError
from planmode import services
from planmode.models import Annotation
from tests.conftest import parse_html
from tests.domain import plan_decide

pytestmark = pytest.mark.django_db

PLAN = """# Pagination for orders

1. Offset paging with `?page=N`
2. Keep the **response shape**

- [ ] limit max 100
"""


@pytest.fixture
def lead(client, reviewer) -> Client:
    client.force_login(reviewer)
    return client


def annotate(client: Client, plan_id: int, **fields: str):
    return client.post(f"/plans/{plan_id}/annotations/", fields)


def test_a_reviewer_comments_on_selected_words_and_sees_them_beside_the_plan(submit, lead):
    plan = submit(plan=PLAN)

    response = annotate(lead, plan.pk, quote="Offset paging with ?page=N", comment="Use cursors.")

    assert response.status_code == 302
    document = parse_html(lead.get(f"/plans/{plan.pk}/").content)
    item = document.find("section", id="annotations").find("li", cls="annotation")
    assert item.attrs["data-quote"] == "Offset paging with ?page=N"
    assert "Comment · lead" in item.find(cls="annotation-kind").text()
    assert item.find(cls="annotation-comment").text() == "Use cursors."


def test_selected_text_across_markup_is_found_as_the_reader_sees_it(submit, lead):
    plan = submit(plan=PLAN)

    response = annotate(
        lead, plan.pk, quote="Keep the response\n shape limit max", kind="delete", comment=""
    )

    assert response.status_code == 302
    assert Annotation.objects.get().quote == "Keep the response shape limit max"


def test_text_that_is_not_in_the_plan_is_refused_with_a_sentence(submit, lead):
    plan = submit(plan=PLAN)

    response = annotate(lead, plan.pk, quote="GraphQL everywhere", comment="?")

    assert response.status_code == 422
    assert "The selected text is not in this plan" in response.content.decode()
    assert not Annotation.objects.exists()


def test_a_replacement_needs_the_new_text(submit, lead):
    plan = submit(plan=PLAN)

    response = annotate(lead, plan.pk, quote="limit max 100", kind="replace", replacement="")

    assert response.status_code == 422
    assert "Write the text that should replace the selection" in response.content.decode()


def test_a_comment_can_be_edited_and_removed_until_the_decision(submit, lead, reviewer):
    plan = submit(plan=PLAN)
    annotate(lead, plan.pk, quote="limit max 100", comment="Why 100?")
    annotation = Annotation.objects.get()

    annotate(
        lead,
        plan.pk,
        annotation=str(annotation.pk),
        quote="limit max 100",
        kind="replace",
        replacement="limit max 500",
        comment="Exports need more.",
    )
    annotation.refresh_from_db()
    assert (annotation.kind, annotation.replacement) == ("replace", "limit max 500")

    assert lead.post(f"/plans/{plan.pk}/annotations/{annotation.pk}/remove/").status_code == 302
    assert not Annotation.objects.exists()

    annotate(lead, plan.pk, quote="limit max 100", comment="Fine.")
    plan_decide(plan_id=plan.pk, reviewer=reviewer, approve=True)
    late = annotate(lead, plan.pk, quote="Offset paging", comment="Too late")
    assert late.status_code == 409
    assert "comments are final" in late.content.decode()
    assert Annotation.objects.count() == 1


def test_a_watcher_cannot_comment(submit, user):
    plan = submit(plan=PLAN)
    watcher = Client()
    watcher.force_login(user)

    response = annotate(watcher, plan.pk, quote="limit max 100", comment="Hm")

    assert response.status_code == 403
    assert not Annotation.objects.exists()


def test_a_rejection_sends_each_comment_quoted_to_the_agent(submit, lead, reviewer):
    plan = submit(plan=PLAN)
    annotate(lead, plan.pk, quote="Offset paging with ?page=N", comment="Offsets skip rows.")
    annotate(lead, plan.pk, quote="limit max 100", kind="replace", replacement="limit max 500")
    annotate(lead, plan.pk, quote="Keep the response shape", kind="delete")

    decided = plan_decide(plan_id=plan.pk, reviewer=reviewer, approve=False, feedback="See below.")

    message = services.plan_state(decided)["message"]
    assert (
        "See below.\n\nComments on parts of the plan:\n"
        '1. On "Offset paging with ?page=N": Offsets skip rows.\n'
        '2. Remove "Keep the response shape"\n'
        '3. Replace "limit max 100" with "limit max 500"'
    ) in message
    assert "Rework the plan" in message


def test_comments_alone_do_not_make_a_rejection(submit, lead, reviewer):
    plan = submit(plan=PLAN)
    annotate(lead, plan.pk, quote="limit max 100", comment="Too low.")

    with pytest.raises(ServiceError) as refused:
        plan_decide(plan_id=plan.pk, reviewer=reviewer, approve=False, feedback="")

    assert refused.value.code == "feedback_required"
    assert "feedback box" in refused.value.message
    plan.refresh_from_db()
    assert plan.status == "pending"


def test_an_approval_passes_comments_on_as_the_notes_the_model_receives(submit, lead, reviewer):
    plan = submit(plan=PLAN)
    annotate(lead, plan.pk, quote="limit max 100", comment="Document the limit.")

    decided = plan_decide(plan_id=plan.pk, reviewer=reviewer, approve=True, feedback="Go ahead.")

    assert decided.notes == (
        'Go ahead.\n\nComments on parts of the plan:\n1. On "limit max 100": Document the limit.'
    )
    assert 'On "limit max 100": Document the limit.' in services.plan_state(decided)["message"]


def test_the_next_revision_shows_the_earlier_comments_next_to_what_changed(submit, lead, reviewer):
    first = submit(plan=PLAN)
    annotate(lead, first.pk, quote="Offset paging with ?page=N", comment="Use cursors.")
    annotate(lead, first.pk, quote="limit max 100", comment="Keep this.")
    plan_decide(plan_id=first.pk, reviewer=reviewer, approve=False, feedback="See the comments.")
    second = submit(plan=PLAN.replace("Offset paging with `?page=N`", "Cursor paging"))

    document = parse_html(lead.get(f"/plans/{second.pk}/").content)

    changes = document.find("section", id="plan-changes")
    earlier = changes.find("ol", cls="earlier-annotations").find_all("li")
    assert "the text changed" in earlier[0].text() and "Use cursors." in earlier[0].text()
    assert "still in this revision" in earlier[1].text()
    # The first revision keeps its comments, read-only.
    first_page = parse_html(lead.get(f"/plans/{first.pk}/").content)
    assert len(first_page.find("section", id="annotations").find_all("li")) == 2
    assert first_page.find_all("button", cls="link-button", hx_post=True) == []
