from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from dashboard import selectors
from dashboard.models import Session


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
