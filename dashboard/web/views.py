from __future__ import annotations

import math
from collections.abc import Callable
from datetime import timedelta
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth import views as auth_views
from django.contrib.auth.base_user import AbstractBaseUser
from django.core.exceptions import BadRequest, PermissionDenied
from django.db.models import Exists, OuterRef
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse, QueryDict
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse_lazy
from django.utils import timezone
from django.views.decorators.http import require_POST

from dashboard.activity.concerns import concern_dismiss
from dashboard.activity.models import Concern
from dashboard.board import selectors
from dashboard.core import tokens
from dashboard.core.audit import via_request
from dashboard.core.edge import query_person, query_project, query_text
from dashboard.core.security import login_required
from dashboard.core.visibility import aaudience_of, audience_of, visible_projects, visible_sessions
from dashboard.core.writer import write
from dashboard.models import AgentToken, Client, Session
from dashboard.web.api import configured_waits
from planmode.inbox import staged_in_session
from planmode.models import InboxChoice
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


STATES = ("active", "waiting", "paused", "all")
# Machines offered in the overview's filter: those seen this recently.
MACHINES_SEEN = timedelta(days=30)


def overview_filter(query: QueryDict) -> selectors.OverviewFilter:
    """The overview's filters from its address; a value that names nothing is a clear 400."""
    client = query.get("client", "")
    if client and client not in Client.values:
        raise BadRequest(
            f"There is no agent kind {client!r}; pick one of {', '.join(Client.values)}."
        )
    person = query_person(query)
    machine = query_text(query, "machine", max_length=Session._meta.get_field("host").max_length)
    return selectors.OverviewFilter(
        client=client,
        project=query_project(query),
        person=person[0] if person else "",
        machine=machine,
    )


@login_required
def overview(request: HttpRequest) -> HttpResponse:
    only = overview_filter(request.GET)
    state = request.GET.get("state", "")
    if state and state not in STATES:
        raise BadRequest(f"There is no state {state!r}; pick active, waiting, paused or all.")
    group = request.GET.get("group", "")
    if group and group not in selectors.GROUPINGS:
        raise BadRequest(f"Sessions group by project or by person, not by {group!r}.")
    audience = audience_of(request.user)
    summaries = selectors.overview(audience=audience, only=only)
    # The kind links keep the other filters.
    kept = {
        key: value
        for key, value in request.GET.items()
        if key in {"project", "person", "machine", "group", "state"} and value
    }
    client = only.client
    # The socket sends the same filtered list on every (re)connect.
    socket_query = urlencode(
        {key: value for key, value in request.GET.items() if key in SOCKET_FILTERS and value}
    )
    context = {
        "summaries": summaries,
        "groups": selectors.overview_groups(summaries, by=group, audience=audience)
        if group
        else None,
        "group": group,
        "state": state,
        "only": only,
        "filtered": bool(only.project or only.person or only.machine),
        "socket_query": socket_query,
        "filters_query": urlencode(
            {key: value for key, value in request.GET.items() if key in SOCKET_FILTERS and value}
        ),
        "audience": audience,
        "client": client,
        "client_label": Client(client).label if client else "",
        "kinds": [
            {
                "value": value,
                "label": label,
                "query": urlencode(kept | ({"client": value} if value else {})),
            }
            for value, label in [("", "All kinds"), *Client.choices]
        ],
        # What the filters offer: only what the viewer sees.
        "projects": visible_projects(audience).only("pk", "name"),
        "people": get_user_model()
        .objects.filter(Exists(Session.objects.filter(audience.sees(), owner=OuterRef("pk"))))
        .order_by("username"),
        "machines": Session.objects.filter(
            audience.sees(), last_seen_at__gte=timezone.now() - MACHINES_SEEN
        )
        .exclude(host="")
        .order_by("host")
        .values_list("host", flat=True)
        .distinct(),
    }
    return render(request, "dashboard/overview.html", context)


@login_required
def ended_sessions(request: HttpRequest) -> HttpResponse:
    """The ended sessions, a page at a time (the overview lists the latest few), with the
    overview's filters."""
    only = overview_filter(request.GET)
    try:
        page = selectors.ended_sessions(
            only,
            audience=audience_of(request.user),
            before=request.GET.get("before"),
            after=request.GET.get("after"),
        )
    except ValueError:
        raise BadRequest(
            "This page link is not one this list handed out; start again from the latest sessions."
        ) from None
    kept = {
        key: value
        for key, value in request.GET.items()
        if key in {"client", "project", "person", "machine"} and value
    }
    context = {"page": page, "sessions": page.rows, "filters_query": urlencode(kept)}
    return render(request, "dashboard/ended.html", context)


# The overview's filters the board socket also takes (its snapshot is filtered alike).
SOCKET_FILTERS = ("client", "project", "person", "machine")


@login_required
def session_board(request: HttpRequest, session_id: str) -> HttpResponse:
    session = get_object_or_404(
        visible_sessions(request.user).select_related("owner"), session_id=session_id
    )
    summary = selectors.session_summaries([session])[0]
    history = selectors.session_history_page(session)
    context = {
        "session": session,
        "summary": summary,
        # What waits, and what was just decided and can still be undone.
        "waits": [*summary.waits, *staged_in_session(summary.session.pk)],
        "cards": selectors.board_cards(session, waits=summary.waits),
        "history": history.entries,
        "history_page": history,
        # Its answer buttons are for those whom what waits in it waits on.
        "can_review": audience_of(request.user).is_waited_on_in(session),
    }
    return render(request, "dashboard/board.html", context)


@login_required
def session_history(request: HttpRequest, session_id: str) -> HttpResponse:
    """A session's whole history, a page at a time (the board shows its newest page)."""
    session = get_object_or_404(
        visible_sessions(request.user).select_related("owner"), session_id=session_id
    )
    try:
        page = selectors.session_history_page(
            session, before=request.GET.get("before"), after=request.GET.get("after")
        )
    except ValueError:
        raise BadRequest(
            "This page link is not one this list handed out; start again from the newest lines."
        ) from None
    context = {"session": session, "history": page.entries, "page": page}
    return render(request, "dashboard/history.html", context)


async def _require_lead(request: HttpRequest, session: Session | None) -> AbstractBaseUser:
    """The user, if they see `session` (else it is not found) and decide for it."""
    user = await request.auser()
    audience = await aaudience_of(user)
    if session is None or not audience.may_see(session):
        raise Http404("No such session.")
    if not audience.may_decide(session):
        raise PermissionDenied("Only the session's reviewers can steer its agents.")
    return user


@login_required
@require_POST
async def continuation_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    """The Cancel button on a countdown toast; the held Stop hook may be in another process."""
    countdown = await Continuation.objects.filter(pk=pk).select_related("agent__session").afirst()
    if countdown is None:
        raise Http404("No such countdown.")
    user = await _require_lead(request, countdown.agent.session)
    await write(
        enforcer.continuation_cancel,
        continuation_pk=pk,
        by=user.get_username(),
        actor=user,
        via=via_request(request, "inbox" if request.POST.get("from") == "inbox" else "board"),
    )
    return HttpResponse(status=204)


@login_required
@require_POST
async def concern_dismiss_view(request: HttpRequest, pk: int) -> HttpResponse:
    """Dismiss an agent that needs a look (a loop): for a reviewer or the session's owner, as
    answering one of its permission requests is."""
    user = await request.auser()
    concern = await Concern.objects.filter(pk=pk).select_related("session").afirst()
    audience = await aaudience_of(user)
    if concern is None or not audience.may_see(concern.session):
        raise Http404("No such agent to look at.")
    if not audience.is_waited_on_in(concern.session):
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
    session = await Session.objects.filter(session_id=session_id).afirst()
    user = await _require_lead(request, session)
    assert session is not None
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
# What an account single sign-on made (it has no password here) reads instead of a way to
# change its password.
SIGNS_ON_ELSEWHERE = (
    "You sign in with single sign-on: your password is your identity provider's, changed there."
)


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
        "auto_mode_refusals": InboxChoice.objects.filter(
            user=request.user, auto_mode_refusals=True
        ).exists(),
        "signs_on_elsewhere": SIGNS_ON_ELSEWHERE,
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
def inbox_choices(request: HttpRequest) -> HttpResponse:
    """Whether auto mode's refusals wait in this person's inbox (`auto_mode_refusals`: "on" or
    "off")."""
    wanted = request.POST.get("auto_mode_refusals", "")
    if wanted not in {"on", "off"}:
        raise BadRequest("Say auto_mode_refusals=on or off.")
    InboxChoice.objects.update_or_create(
        user=request.user, defaults={"auto_mode_refusals": wanted == "on"}
    )
    if wanted == "on":
        messages.success(request, "Calls auto mode refuses now wait in your inbox.")
    else:
        messages.success(request, "Calls auto mode refuses no longer wait in your inbox.")
    return redirect("settings")


@login_required
@require_POST
def token_create(request: HttpRequest) -> HttpResponse:
    """A new agent token, shown once on the page this answers with (never stored raw)."""
    label = request.POST.get("label", "").strip()[:TOKEN_LABEL_LENGTH]
    token, raw = tokens.token_issue(
        owner=request.user, label=label, actor=request.user, via=via_request(request, "settings")
    )
    return settings_page(request, new_token=raw, new_token_label=token.label)


@login_required
@require_POST
def token_revoke(request: HttpRequest, pk: int) -> HttpResponse:
    token = get_object_or_404(AgentToken, pk=pk, owner=request.user)
    if tokens.token_revoke(token=token, actor=request.user, via=via_request(request, "settings")):
        messages.success(request, f"Revoked the token {token.hint}…; agents using it stop now.")
    return redirect("settings")


class PasswordChange(auth_views.PasswordChangeView):
    template_name = "registration/password_change_form.html"
    success_url = reverse_lazy("settings")

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        # An account made by single sign-on has no password here to change (its form could
        # never be right); the person is told where theirs is.
        if request.user.is_authenticated and not request.user.has_usable_password():
            messages.info(
                request,
                "Your account has no Agentboard password to change: it signs in with single "
                "sign-on.",
            )
            return redirect("settings")
        return super().dispatch(request, *args, **kwargs)

    def form_valid(self, form: object) -> HttpResponse:
        messages.success(self.request, "Your password was changed.")
        return super().form_valid(form)
