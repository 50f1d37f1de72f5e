"""The review queue and the review page, where reviewers approve or reject plans."""

from __future__ import annotations

from asgiref.sync import sync_to_async
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from dashboard.errors import ServiceError
from dashboard.writer import write
from planmode import fragments, selectors, services
from planmode.markdown import render_plan
from planmode.models import Plan

REVIEW_PERMISSION = "planmode.review_plan"
ACTIONS = {
    "approve": {"approve": True, "auto_accept": False},
    "approve_auto": {"approve": True, "auto_accept": True},
    "reject": {"approve": False, "auto_accept": False},
}


@login_required
def plan_queue(request: HttpRequest) -> HttpResponse:
    return render(request, "planmode/queue.html", fragments.queue_context())


def _get_plan(plan_id: int) -> Plan:
    plan = selectors.plan_for_review(plan_id)
    if plan is None:
        raise Http404("No such plan.")
    return plan


def _review_page(
    request: HttpRequest, plan: Plan, *, status: int = 200, **extra: object
) -> HttpResponse:
    previous = selectors.previous_revision(plan)
    context = {
        **fragments.queue_context(),
        **fragments.decision_panel_context(plan),
        "rendered": render_plan(plan.markdown),
        "previous": previous,
        "diff": selectors.plan_diff(previous.markdown, plan.markdown) if previous else [],
        "thread": selectors.plan_thread(plan),
        "can_review": request.user.has_perm(REVIEW_PERMISSION),
        **extra,
    }
    return render(request, "planmode/review.html", context, status=status)


@login_required
def plan_review(request: HttpRequest, plan_id: int) -> HttpResponse:
    return _review_page(request, _get_plan(plan_id))


@login_required
@require_POST
async def plan_decide(request: HttpRequest, plan_id: int) -> HttpResponse:
    """Async, and the decision goes through the writer: the waiting agent hears of it the
    moment it commits, before this answer is even sent."""
    user = await request.auser()
    review_page = sync_to_async(_review_page)
    if not await user.ahas_perm(REVIEW_PERMISSION):
        return await review_page(
            request,
            await sync_to_async(_get_plan)(plan_id),
            status=403,
            notice="Only reviewers can decide on plans; ask an admin for the review permission.",
        )
    action = ACTIONS.get(request.POST.get("action", ""))
    text = request.POST.get("text", "")
    if action is None:
        return await review_page(
            request,
            await sync_to_async(_get_plan)(plan_id),
            status=400,
            text=text,
            error="Choose Approve, Approve and auto-accept edits, or Reject.",
        )
    try:
        await write(services.plan_decide, plan_id=plan_id, reviewer=user, feedback=text, **action)
    except ServiceError as error:
        if error.status == 404:
            raise Http404("No such plan.") from None
        plan = await sync_to_async(_get_plan)(plan_id)
        if error.code == "already_decided":
            # Someone was quicker: show their decision, who made it and when.
            return await review_page(request, plan, status=409, notice=error.message)
        return await review_page(request, plan, status=error.status, text=text, error=error.message)
    return redirect("plan-review", plan_id=plan_id)
