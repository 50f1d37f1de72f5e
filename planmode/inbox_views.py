"""The inbox (`/inbox/`): everything waiting on me, answered in place.

Decisions are async views through the writer, like plan decisions: the held hook hears of a
decision the moment it commits. An htmx request gets the re-rendered list back (with the
refusal as a notice and the refusal's status), a plain form post a redirect or the request's own
page, so the inbox works without JavaScript too.
"""

from __future__ import annotations

from typing import Any

from asgiref.sync import sync_to_async
from django.core.exceptions import BadRequest
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from dashboard.core.audit import Via, via_request
from dashboard.core.errors import ServiceError
from dashboard.core.security import login_required
from dashboard.core.visibility import audience_of
from dashboard.core.writer import write
from planmode import inbox as selectors
from planmode import staged
from planmode.permissions import (
    Answer,
    permission_decide,
    permission_decide_many,
)

ACTIONS = {"allow", "remember", "deny", "stop"}
MAX_BULK = 200


@login_required
def inbox(request: HttpRequest) -> HttpResponse:
    context = selectors.inbox_context(audience_of(request.user))
    if request.htmx:
        return render(request, "planmode/inbox/_list.html", context)
    return render(request, "planmode/inbox/page.html", context)


@login_required
def inbox_decided(request: HttpRequest) -> HttpResponse:
    """Every request decided that the viewer sees, a page at a time (the inbox shows the
    latest few)."""
    try:
        page = selectors.decided_requests(
            audience_of(request.user),
            before=request.GET.get("before"),
            after=request.GET.get("after"),
        )
    except ValueError:
        raise BadRequest(
            "This page link is not one this list handed out; start again from the latest decisions."
        ) from None
    return render(request, "planmode/inbox/decided.html", {"page": page, "decided": page.rows})


def _answer_from(request: HttpRequest) -> Answer:
    action = request.POST.get("action", "")
    if action not in ACTIONS:
        raise ServiceError(
            "unknown_action", "Choose Allow, Always, Deny, or Deny and stop.", status=400
        )
    return Answer(
        allow=action in {"allow", "remember"},
        message=request.POST.get("message", ""),
        interrupt=action == "stop",
        remember=request.POST.get("remember", "") if action == "remember" else "",
        pattern=request.POST.get("pattern", ""),
        where=request.POST.get("where", "session"),
    )


def _list(request: HttpRequest, *, status: int = 200, **extra: Any) -> HttpResponse:
    context = selectors.inbox_context(audience_of(request.user), **extra)
    return render(request, "planmode/inbox/_list.html", context, status=status)


def _detail(request: HttpRequest, request_id: int, *, status: int = 200, **extra: Any):
    item = selectors.request_item(request_id, audience_of(request.user))
    if item is None:
        raise Http404("No such permission request.")
    decided = selectors.DecidedRequest(item.request, item.view).by if item.request else ""
    context = {"item": item, "decided_by": decided, **extra}
    return render(request, "planmode/inbox/detail.html", context, status=status)


@login_required
def request_detail(request: HttpRequest, request_id: int) -> HttpResponse:
    return _detail(request, request_id)


async def _decide(
    *, request_ids: list[int], user: Any, answer: Answer, via: Via, single: bool = False
) -> tuple[int, list[str]]:
    """Answer at once, or hold the answer back for the undo window (then send it from here,
    or from any process's sweep). How many were answered, and why the others were not."""
    seconds = staged.undo_seconds()
    if seconds:
        held = await write(
            staged.permission_stage,
            request_ids=request_ids,
            user=user,
            answer=answer,
            seconds=seconds,
            via=via,
        )
        staged.release_later(held.sends_at)
        return len(held.request_ids), held.missed
    if single:
        await write(permission_decide, request_id=request_ids[0], user=user, answer=answer, via=via)
        return 1, []
    decided = await write(
        permission_decide_many, request_ids=request_ids, user=user, answer=answer, via=via
    )
    return len(decided.decided), decided.missed


@login_required
@require_POST
async def request_undo(request: HttpRequest, request_id: int) -> HttpResponse:
    """Take back an answer in its undo window: the request waits again, on every page."""
    user = await request.auser()
    try:
        await write(
            staged.permission_undo,
            request_id=request_id,
            user=user,
            via=via_request(request, "inbox"),
        )
    except ServiceError as error:
        if error.status == 404:
            raise Http404("No such permission request.") from None
        if request.htmx:
            return await sync_to_async(_list)(request, status=error.status, notice=error.message)
        return await sync_to_async(_detail)(
            request, request_id, status=error.status, error=error.message
        )
    if request.htmx:
        return await sync_to_async(_list)(request)
    return redirect("inbox")


@login_required
@require_POST
async def request_decide(request: HttpRequest, request_id: int) -> HttpResponse:
    user = await request.auser()
    # The board's banner answers in place: it is told only whether it worked (the socket
    # updates the banner), and why not, in one sentence.
    from_board = request.POST.get("from") == "board"
    try:
        answer = _answer_from(request)
        surface = "board" if from_board else "inbox"
        via = via_request(request, surface)
        await _decide(request_ids=[request_id], user=user, answer=answer, via=via, single=True)
    except ServiceError as error:
        if error.status == 404:
            raise Http404("No such permission request.") from None
        if from_board:
            return HttpResponse(error.message, status=error.status, content_type="text/plain")
        if request.htmx:
            return await sync_to_async(_list)(request, status=error.status, notice=error.message)
        return await sync_to_async(_detail)(
            request,
            request_id,
            status=error.status,
            error=error.message,
            message=request.POST.get("message", ""),
        )
    if from_board:
        return HttpResponse(status=204)
    if request.htmx:
        return await sync_to_async(_list)(request)
    return redirect("inbox")


@login_required
@require_POST
async def requests_decide_many(request: HttpRequest) -> HttpResponse:
    """One answer to several identical requests (the bulk bar)."""
    user = await request.auser()
    ids = [int(value) for value in request.POST.getlist("ids") if value.isdigit()][:MAX_BULK]
    notice = ""
    status = 200
    try:
        answer = _answer_from(request)
        via = via_request(request, "inbox, several at once")
        answered, missed = await _decide(request_ids=ids, user=user, answer=answer, via=via)
        if missed:
            notice = f"Answered {answered}; the others were not changed: " + " ".join(missed)
    except ServiceError as error:
        if error.status == 404:
            raise Http404("No such permission request.") from None
        notice, status = error.message, error.status
    if request.htmx:
        return await sync_to_async(_list)(request, status=status, notice=notice)
    if status != 200:
        return await sync_to_async(_list)(request, status=status, notice=notice)
    return redirect("inbox")
