from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_POST

from dashboard import selectors
from dashboard.models import Session
from todos import enforcer
from todos.models import Continuation


@login_required
def overview(request: HttpRequest) -> HttpResponse:
    return render(request, "dashboard/overview.html", {"summaries": selectors.overview()})


@login_required
def session_board(request: HttpRequest, session_id: str) -> HttpResponse:
    session = get_object_or_404(Session.objects.select_related("owner"), session_id=session_id)
    context = {
        "session": session,
        "summary": selectors.session_summaries([session])[0],
        "cards": selectors.board_cards(session),
        "history": selectors.session_history(session),
    }
    return render(request, "dashboard/board.html", context)


def _require_lead(request: HttpRequest) -> None:
    if not request.user.has_perm("planmode.review_plan"):
        raise PermissionDenied("Only reviewers can steer agents.")


@login_required
@require_POST
def continuation_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    """The Cancel button on a countdown toast; the held Stop hook may be in another process."""
    _require_lead(request)
    get_object_or_404(Continuation, pk=pk)
    enforcer.continuation_cancel(continuation_pk=pk, by=request.user.get_username())
    return HttpResponse(status=204)


@login_required
@require_POST
def session_enforcer(request: HttpRequest, session_id: str) -> HttpResponse:
    """Switch the continuation enforcer on or off for one session."""
    _require_lead(request)
    session = get_object_or_404(Session, session_id=session_id)
    enabled = request.POST.get("enabled")
    if enabled not in {"true", "false"}:
        return HttpResponse("Send enabled=true or enabled=false.", status=400)
    enforcer.session_enforcer_switch(
        session=session, enabled=enabled == "true", by=request.user.get_username()
    )
    return HttpResponse(status=204)
