"""The review queue and the review page, where reviewers approve or reject plans."""

from __future__ import annotations

from asgiref.sync import sync_to_async
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import BadRequest
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from dashboard.core.audit import via_request
from dashboard.core.errors import ServiceError
from dashboard.core.panels import panels
from dashboard.core.security import login_required
from dashboard.core.visibility import aaudience_of, audience_of
from dashboard.core.writer import write
from planmode import fragments, selectors, services, staged
from planmode.markdown import render_plan_page, renders_as_text
from planmode.models import Plan

ACTIONS = {
    "approve": {"approve": True, "auto_accept": False},
    "approve_auto": {"approve": True, "auto_accept": True},
    "reject": {"approve": False, "auto_accept": False},
}


@login_required
def plan_queue(request: HttpRequest) -> HttpResponse:
    return render(
        request, "planmode/queue.html", fragments.queue_context(audience_of(request.user))
    )


@login_required
def plans_decided(request: HttpRequest) -> HttpResponse:
    """The decided plans the user sees, a page at a time (the queue shows the latest few)."""
    try:
        page = selectors.decided_plans(
            audience_of(request.user),
            before=request.GET.get("before"),
            after=request.GET.get("after"),
        )
    except ValueError:
        raise BadRequest(
            "This page link is not one this list handed out; start again from the latest plans."
        ) from None
    return render(request, "planmode/decided.html", {"page": page, "decided": page.rows})


def _get_plan(plan_id: int, user: AbstractBaseUser) -> Plan:
    """The plan, if the user sees its session (`dashboard.core.visibility`)."""
    plan = selectors.plan_for_review(plan_id, audience_of(user))
    if plan is None:
        raise Http404("No such plan.")
    return plan


def _review_page(
    request: HttpRequest, plan: Plan, *, status: int = 200, **extra: object
) -> HttpResponse:
    previous = selectors.previous_revision(plan)
    # Revision N: the plan with what changed since N-1 marked inside it.
    marked = selectors.plan_marked_since(previous, plan) if previous else None
    rendered = marked.html if marked else render_plan_page(plan.markdown, title=plan.title)
    earlier_annotations = []
    if previous is not None:
        annotations = services.plan_annotations(previous)
        text = services.plan_text(plan) if annotations else ""
        # Each remark on the previous revision, and whether its text is still in this one.
        earlier_annotations = [(annotation, annotation.quote in text) for annotation in annotations]
    audience = audience_of(request.user)
    context = {
        **fragments.queue_context(audience),
        **fragments.decision_panel_context(plan, audience),
        **fragments.annotations_context(plan),
        **fragments.approvals_context(plan),
        "rendered": rendered,
        "as_text": renders_as_text(plan.markdown),
        "marked": marked,
        "previous": previous,
        "source_view": request.GET.get("changes") == "source",
        "diff": selectors.plan_changes_since(previous, plan) if previous else None,
        "earlier_annotations": earlier_annotations,
        "thread": selectors.plan_thread(plan),
        "can_review": audience.may_decide(plan.session),
        # What capabilities add (what an approved plan's work cost since, `dashboard.costs`).
        "panels": panels("plan", request, plan=plan),
        **extra,
    }
    return render(request, "planmode/review.html", context, status=status)


@login_required
def plan_review(request: HttpRequest, plan_id: int) -> HttpResponse:
    return _review_page(request, _get_plan(plan_id, request.user))


@login_required
@require_POST
async def plan_decide(request: HttpRequest, plan_id: int) -> HttpResponse:
    """Async, and the decision goes through the writer: the waiting agent hears of it the
    moment it commits, before this answer is even sent."""
    user = await request.auser()
    review_page = sync_to_async(_review_page)
    if not (await aaudience_of(user)).reviews_anything:
        return await review_page(
            request,
            await sync_to_async(_get_plan)(plan_id, user),
            status=403,
            notice="Only reviewers can decide on plans; ask an admin for the review permission.",
        )
    action = ACTIONS.get(request.POST.get("action", ""))
    text = request.POST.get("text", "")
    if action is None:
        return await review_page(
            request,
            await sync_to_async(_get_plan)(plan_id, user),
            status=400,
            text=text,
            error="Choose Approve, Approve and auto-accept edits, or Reject.",
        )
    seconds = staged.undo_seconds()
    keyboard = request.POST.get("via") == "keyboard"
    via = via_request(request, "keyboard shortcut" if keyboard else "review page")
    try:
        if seconds:
            held = await write(
                staged.plan_stage,
                via=via,
                plan_id=plan_id,
                reviewer=user,
                feedback=text,
                seconds=seconds,
                **action,
            )
            staged.release_later(held.sends_at)
        else:
            await write(
                services.plan_decide,
                plan_id=plan_id,
                reviewer=user,
                feedback=text,
                via=via,
                **action,
            )
    except ServiceError as error:
        if error.status == 404:
            raise Http404("No such plan.") from None
        plan = await sync_to_async(_get_plan)(plan_id, user)
        if error.code == "already_decided":
            # Someone was quicker: show their decision, who made it and when.
            return await review_page(request, plan, status=409, notice=error.message)
        return await review_page(request, plan, status=error.status, text=text, error=error.message)
    return redirect("plan-review", plan_id=plan_id)


@login_required
@require_POST
async def plan_undo(request: HttpRequest, plan_id: int) -> HttpResponse:
    """Take back a decision in its undo window: the plan waits again, on every page."""
    user = await request.auser()
    if not (await aaudience_of(user)).reviews_anything:
        error = "Only reviewers can undo decisions on plans."
        if request.htmx:
            return HttpResponse(error, status=403, content_type="text/plain")
        plan = await sync_to_async(_get_plan)(plan_id, user)
        return await sync_to_async(_review_page)(request, plan, status=403, notice=error)
    try:
        await write(
            staged.plan_undo,
            plan_id=plan_id,
            user=user,
            via=via_request(request, "review page"),
        )
    except ServiceError as error:
        if error.status == 404:
            raise Http404("No such plan.") from None
        if request.htmx:
            return HttpResponse(error.message, status=error.status, content_type="text/plain")
        plan = await sync_to_async(_get_plan)(plan_id, user)
        return await sync_to_async(_review_page)(
            request, plan, status=error.status, notice=error.message
        )
    if request.htmx:
        return HttpResponse(status=204)
    return redirect("plan-review", plan_id=plan_id)


def _annotation_answer(request: HttpRequest, plan_id: int) -> HttpResponse:
    """htmx gets the list back (the page's socket updates everyone else); a plain form post
    goes back to the review page."""
    if request.htmx:
        plan = _get_plan(plan_id, request.user)
        context = {**fragments.annotations_context(plan), "can_review": True}
        return render(request, "planmode/_annotations.html", context)
    return redirect("plan-review", plan_id=plan_id)


async def _annotation_refused(
    request: HttpRequest, plan_id: int, error: ServiceError
) -> HttpResponse:
    if error.status == 404 and error.code == "plan_not_found":
        raise Http404("No such plan.")
    if request.htmx:
        return HttpResponse(error.message, status=error.status, content_type="text/plain")
    plan = await sync_to_async(_get_plan)(plan_id, await request.auser())
    return await sync_to_async(_review_page)(
        request, plan, status=error.status, annotation_error=error.message
    )


@login_required
@require_POST
async def annotation_save(request: HttpRequest, plan_id: int) -> HttpResponse:
    """Add a comment on selected text of a waiting plan, or change one (`annotation`)."""
    user = await request.auser()
    if not (await aaudience_of(user)).reviews_anything:
        # A plan they may not see is not there for them (404), as on every page.
        await sync_to_async(_get_plan)(plan_id, user)
        return HttpResponse(
            "Only reviewers can comment on plans; ask an admin for the review permission.",
            status=403,
            content_type="text/plain",
        )
    annotation_id = request.POST.get("annotation", "")
    try:
        await write(
            services.annotation_save,
            plan_id=plan_id,
            author=user,
            quote=request.POST.get("quote", ""),
            kind=request.POST.get("kind", "comment"),
            comment=request.POST.get("comment", ""),
            replacement=request.POST.get("replacement", ""),
            annotation_id=int(annotation_id) if annotation_id.isdigit() else None,
        )
    except ServiceError as error:
        return await _annotation_refused(request, plan_id, error)
    return await sync_to_async(_annotation_answer)(request, plan_id)


@login_required
@require_POST
async def annotation_remove(request: HttpRequest, plan_id: int, annotation_id: int) -> HttpResponse:
    user = await request.auser()
    if not (await aaudience_of(user)).reviews_anything:
        await sync_to_async(_get_plan)(plan_id, user)
        return HttpResponse(
            "Only reviewers can remove comments on plans.", status=403, content_type="text/plain"
        )
    try:
        await write(
            services.annotation_remove, plan_id=plan_id, annotation_id=annotation_id, user=user
        )
    except ServiceError as error:
        return await _annotation_refused(request, plan_id, error)
    return await sync_to_async(_annotation_answer)(request, plan_id)
