"""The named pieces of plan markup that pages include and sockets push (htmx out-of-band).

Fragments pushed to many browsers never contain a form: a CSRF token belongs to one browser,
so only the page itself renders the decision form.
"""

from __future__ import annotations

from django.template.loader import render_to_string

from dashboard.core.visibility import Audience
from planmode import selectors, services
from planmode.inbox import InboxItem, staged_in_session, waiting_by_session
from planmode.models import Plan


def queue_context(audience: Audience, *, flash_pks: list[int] | None = None) -> dict:
    """The review queue as the audience sees it (plans of the sessions they see)."""
    return {
        "pending": selectors.pending_plans(audience),
        "staged": selectors.staged_plans(audience),
        "decided": selectors.recently_decided(audience),
        "flash_pks": flash_pks or [],
    }


def render_queue(
    audience: Audience, *, flash_pks: list[int] | None = None, oob: bool = False
) -> str:
    return render_to_string(
        "planmode/_queue.html", {**queue_context(audience, flash_pks=flash_pks), "oob": oob}
    )


def session_plans_context(session_pk: int, *, flash_pks: list[int] | None = None) -> dict:
    return {"session_plans": selectors.session_plans(session_pk), "flash_pks": flash_pks or []}


def render_session_plans(
    session_pk: int, *, flash_pks: list[int] | None = None, oob: bool = False
) -> str:
    context = session_plans_context(session_pk, flash_pks=flash_pks)
    return render_to_string("planmode/_session_plans.html", {**context, "oob": oob})


def render_session_attention(
    session_pk: int, *, oob: bool = False, waits: list[InboxItem] | None = None
) -> str:
    """The board's banner: each thing of the session that waits on a person, with the button
    that answers it (`waits`, when the caller has read them already)."""
    if waits is None:
        waits = waiting_by_session([session_pk]).get(session_pk, [])
    waits = [*waits, *staged_in_session(session_pk)]
    return render_to_string("planmode/_session_attention.html", {"waits": waits, "oob": oob})


def thread_plan_pks(plan: Plan) -> list[int]:
    return [revision.pk for revision in selectors.plan_thread(plan)]


def render_thread(plan: Plan, *, oob: bool = False) -> str:
    return render_to_string(
        "planmode/_thread.html", {"thread": selectors.plan_thread(plan), "oob": oob}
    )


def decision_panel_context(plan: Plan, audience: Audience | None = None) -> dict:
    """With the next plan waiting: among those the audience sees, or, for every browser on the
    page whoever they are (None), among the plans of the same session."""
    if audience is None:
        pending = selectors.session_pending_plans(plan.session_id)
    else:
        pending = selectors.pending_plans(audience)
    return {
        "plan": plan,
        "next_pending": next((other for other in pending if other.pk != plan.pk), None),
    }


def render_decision_panel(plan: Plan) -> str:
    """The recorded decision, for every browser on the page; never the form."""
    assert not plan.is_pending
    return render_to_string(
        "planmode/_decision_panel.html", {**decision_panel_context(plan), "oob": True}
    )


def render_staged_decision(plan: Plan) -> str:
    """A pending plan's decision in its undo window (or nothing, once undone), for every
    browser on its review page; its Undo posts with the page's own CSRF header (htmx)."""
    return render_to_string("planmode/_staged_decision.html", {"plan": plan, "oob": True})


def approvals_context(plan: Plan) -> dict:
    """Who has approved a plan so far, where its project asks for two approvals."""
    return {
        "approvals": list(plan.approvals.all()),
        "approvals_required": services.approvals_required(plan.session),
    }


def render_approvals(plan: Plan) -> str:
    return render_to_string("planmode/_approvals.html", {**approvals_context(plan), "oob": True})


def review_snapshot(plan_pk: int, audience: Audience) -> str:
    """What a review page's socket sends on (re)connect: the state it may have missed."""
    parts = [render_queue(audience, oob=True)]
    plan = selectors.plan_for_review(plan_pk, audience)
    if plan is not None:
        parts.append(render_thread(plan, oob=True))
        parts.append(render_annotations(plan))
        if not plan.is_pending:
            parts.append(render_decision_panel(plan))
        else:
            parts.append(render_staged_decision(plan))
            parts.append(render_approvals(plan))
    return "".join(parts)


def annotations_context(plan: Plan) -> dict:
    return {"plan": plan, "annotations": services.plan_annotations(plan)}


def render_annotations(plan: Plan, *, oob: bool = True) -> str:
    """The list of a plan's annotations, for every browser on its review page. The same for
    all of them: buttons for reviewers are hidden from watchers by the page (and refused by
    the server)."""
    return render_to_string("planmode/_annotations.html", {**annotations_context(plan), "oob": oob})
