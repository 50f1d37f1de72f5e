from __future__ import annotations

import math
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.contrib.auth.base_user import AbstractBaseUser
from django.core.exceptions import BadRequest, PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse_lazy
from django.utils import timezone
from django.views.decorators.http import require_POST

from dashboard.activity.concerns import concern_dismiss
from dashboard.activity.models import Concern
from dashboard.board import selectors
from dashboard.core.security import login_required
from dashboard.core.writer import write
from dashboard.models import AgentToken, Client, Session
from dashboard.web.api import configured_waits
from planmode.inbox import staged_in_session
from planmode.permissions import audience_of
from todos import enforcer
from todos.models import Continuation


async def healthz(request: HttpRequest) -> JsonResponse:
    """Liveness for load balancers: answers without touching the database."""
    return JsonResponse({"status": "ok"})


def login_locked_out(
    request: HttpRequest,
    original_response: HttpResponse | None = None,
    credentials: dict | None = None,
) -> HttpResponse:
    """The answer to a login while its account or address is locked out (django-axes)."""
    return render(
        request,
        "registration/locked_out.html",
        {"wait": _duration(settings.AXES_COOLOFF_TIME)},
        status=429,
    )


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    """The 400 page, saying what was wrong when a view said it (`BadRequest`); Django's own
    refusals (a suspicious header, too many fields) keep the general sentence."""
    message = str(exception) if type(exception) is BadRequest else ""
    return render(request, "400.html", {"message": message}, status=400)


def _duration(length: timedelta) -> str:
    minutes = math.ceil(length / timedelta(minutes=1))
    if length < timedelta(minutes=1):
        seconds = math.ceil(length.total_seconds())
        return f"{seconds} second{'s' if seconds != 1 else ''}"
    return f"{minutes} minute{'s' if minutes != 1 else ''}"


@login_required
def overview(request: HttpRequest) -> HttpResponse:
    client = request.GET.get("client", "")
    if client and client not in Client.values:
        raise BadRequest(
            f"There is no agent kind {client!r}; pick one of {', '.join(Client.values)}."
        )
    audience = audience_of(request.user)
    context = {
        "summaries": selectors.overview(client=client, audience=audience),
        "audience": audience,
        "client": client,
        "client_label": Client(client).label if client else "",
        "kinds": [{"value": "", "label": "All kinds"}]
        + [{"value": value, "label": label} for value, label in Client.choices],
    }
    return render(request, "dashboard/overview.html", context)


@login_required
def session_board(request: HttpRequest, session_id: str) -> HttpResponse:
    session = get_object_or_404(Session.objects.select_related("owner"), session_id=session_id)
    summary = selectors.session_summaries([session])[0]
    context = {
        "session": session,
        "summary": summary,
        # What waits, and what was just decided and can still be undone.
        "waits": [*summary.waits, *staged_in_session(summary.session.pk)],
        "cards": selectors.board_cards(session),
        "history": selectors.session_history(session),
    }
    return render(request, "dashboard/board.html", context)


async def _require_lead(request: HttpRequest) -> AbstractBaseUser:
    user = await request.auser()
    if not await user.ahas_perm("planmode.review_plan"):
        raise PermissionDenied("Only reviewers can steer agents.")
    return user


@login_required
@require_POST
async def continuation_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    """The Cancel button on a countdown toast; the held Stop hook may be in another process."""
    user = await _require_lead(request)
    if not await Continuation.objects.filter(pk=pk).aexists():
        raise Http404("No such countdown.")
    await write(enforcer.continuation_cancel, continuation_pk=pk, by=user.get_username())
    return HttpResponse(status=204)


@login_required
@require_POST
async def concern_dismiss_view(request: HttpRequest, pk: int) -> HttpResponse:
    """Dismiss an agent that needs a look (a loop): for a reviewer or the session's owner, as
    answering one of its permission requests is."""
    user = await request.auser()
    concern = await Concern.objects.filter(pk=pk).select_related("session").afirst()
    if concern is None:
        raise Http404("No such agent to look at.")
    if concern.session.owner_id != user.pk and not await user.ahas_perm("planmode.review_plan"):
        return HttpResponse(
            "Only reviewers, or the person whose session it is, can dismiss this; "
            "ask an admin for the review permission.",
            status=403,
            content_type="text/plain",
        )
    await write(concern_dismiss, concern_pk=pk, by=user.get_username())
    return HttpResponse(status=204)


@login_required
@require_POST
async def session_enforcer(request: HttpRequest, session_id: str) -> HttpResponse:
    """Switch the continuation enforcer on or off for one session."""
    user = await _require_lead(request)
    session = await Session.objects.filter(session_id=session_id).afirst()
    if session is None:
        raise Http404("No such session.")
    enabled = request.POST.get("enabled")
    if enabled not in {"true", "false"}:
        return HttpResponse("Send enabled=true or enabled=false.", status=400)
    await write(
        enforcer.session_enforcer_switch,
        session=session,
        enabled=enabled == "true",
        by=user.get_username(),
    )
    return HttpResponse(status=204)


TOKEN_LABEL_LENGTH = AgentToken._meta.get_field("label").max_length

# The capability apps' parts of the settings page: each gives the context of its own section
# of the template for a user, and is registered when its app is ready (these pages import none
# of them).
SettingsSection = Callable[[AbstractBaseUser], dict[str, Any]]
SETTINGS_SECTIONS: list[SettingsSection] = []


def settings_page(request: HttpRequest, **extra: object) -> HttpResponse:
    waits = configured_waits()
    context: dict[str, Any] = {
        "tokens": AgentToken.objects.filter(owner=request.user).order_by(
            "revoked_at", "-created_at"
        ),
        "idle_minutes": settings.AGENTBOARD_SESSION_IDLE_MINUTES,
        "hook_wait": _duration(timedelta(seconds=settings.AGENTBOARD_PLAN_HOOK_WAIT_SECONDS)),
        "enforcer_enabled": settings.AGENTBOARD_ENFORCER_ENABLED,
        "countdown": settings.AGENTBOARD_CONTINUATION_COUNTDOWN_SECONDS,
        "stop_timeout": waits.stop_timeout(),
        "permission_timeout": waits.permission_timeout(),
    }
    for section in SETTINGS_SECTIONS:
        context.update(section(request.user))
    context.update(extra)
    return render(request, "dashboard/settings.html", context)


@login_required
def user_settings(request: HttpRequest) -> HttpResponse:
    """The account, its agent tokens, notifications in this browser, and the server's rules."""
    return settings_page(request)


@login_required
@require_POST
def token_create(request: HttpRequest) -> HttpResponse:
    """A new agent token, shown once on the page this answers with (never stored raw)."""
    label = request.POST.get("label", "").strip()[:TOKEN_LABEL_LENGTH]
    token, raw = AgentToken.issue(owner=request.user, label=label)
    return settings_page(request, new_token=raw, new_token_label=token.label)


@login_required
@require_POST
def token_revoke(request: HttpRequest, pk: int) -> HttpResponse:
    token = get_object_or_404(AgentToken, pk=pk, owner=request.user)
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        # Saved, not updated: the save signal closes the agent sockets open with it.
        token.save(update_fields=["revoked_at"])
        messages.success(request, f"Revoked the token {token.hint}…; agents using it stop now.")
    return redirect("settings")


class PasswordChange(auth_views.PasswordChangeView):
    template_name = "registration/password_change_form.html"
    success_url = reverse_lazy("settings")

    def form_valid(self, form: object) -> HttpResponse:
        messages.success(self.request, "Your password was changed.")
        return super().form_valid(form)
