"""Steering from the board (`/steer/`): the Message, Pause and Stop box of an agent or a
session, how many agents an action reaches, and the actions themselves.

The same services as the API's (`dashboard.steering.api`), through the writer, so the board's
cards change for everyone the moment an action commits. An htmx request gets the box's result
line back (a refusal with the service's status and sentence); a plain form post is redirected
back to the board, or gets the box again with the sentence, so it all works without JavaScript.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from asgiref.sync import sync_to_async
from django.contrib import messages
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.template.defaultfilters import pluralize
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_POST

from dashboard.core.audit import via_request
from dashboard.core.errors import ServiceError
from dashboard.core.security import login_required
from dashboard.core.visibility import audience_of
from dashboard.core.writer import write
from dashboard.models import Agent, Session
from dashboard.steering import services
from dashboard.steering.models import MAX_TEXT_CHARS, Pause

ACTIONS = ("message", "pause", "stop")
# Rendering reads the header's count (a query): not on the event loop.
arender = sync_to_async(render)
SCOPE_WORDS = {
    "agent": "This agent",
    "session": "Every running agent of this session",
    "project": "Every running agent of this project",
    "team": "Every running agent of this team",
}


@dataclass(frozen=True)
class Box:
    """What the box is about: a session, and one of its agents or none."""

    session: Session
    agent: Agent | None

    @property
    def scopes(self) -> list[tuple[str, str]]:
        """The scopes that apply, narrowest first."""
        found = [("agent", SCOPE_WORDS["agent"])] if self.agent else []
        found.append(("session", SCOPE_WORDS["session"]))
        if self.session.project_record_id:
            found.append(("project", SCOPE_WORDS["project"]))
        if self.session.team_id:
            found.append(("team", SCOPE_WORDS["team"]))
        return found

    def target(self, scope: str) -> services.Target:
        session = self.session
        if scope == "agent" and self.agent is not None:
            return services.Target(session.session_id, self.agent.agent_id)
        if scope == "project" and session.project_record_id:
            return services.Target(project_pk=session.project_record_id)
        if scope == "team" and session.team_id:
            return services.Target(team_pk=session.team_id)
        if scope == "session":
            return services.Target(session.session_id)
        raise ServiceError(
            "unknown_scope", "Choose who receives it: this agent, the session, project or team."
        )

    @property
    def default_scope(self) -> str:
        return "agent" if self.agent else "session"

    @property
    def who(self) -> str:
        if self.agent is None:
            return f"every running agent of {self.session.project}"
        return (
            "the main agent" if self.agent.is_main else f"{self.agent.label} {self.agent.short_id}"
        )


def _box(user: AbstractBaseUser, session_id: str, agent_id: str) -> Box:
    """The session and agent named, if `user` may steer them: else 404 (not seen) or 403."""
    audience = audience_of(user)
    session = Session.objects.filter(session_id=session_id).first()
    if session is None or not audience.may_see(session):
        raise Http404("There is no such session that you can see.")
    if not audience.is_waited_on_in(session):
        raise PermissionDenied(
            "Only the session's reviewers and its owner can message, pause or stop its agents."
        )
    agent = None
    if agent_id:
        agent = Agent.objects.filter(session=session, agent_id=agent_id).first()
        if agent is None:
            raise Http404("There is no such agent in this session.")
        agent.session = session
    return Box(session, agent)


def _back(request: HttpRequest, box: Box) -> str:
    wanted = request.POST.get("next") or request.GET.get("next") or ""
    if wanted and url_has_allowed_host_and_scheme(
        wanted, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return wanted
    return reverse("session-board", args=[box.session.session_id])


def _count_words(count: int) -> str:
    if not count:
        return "No running agent there would receive it."
    return f"{count} agent{pluralize(count)} will receive it."


def _form_context(request: HttpRequest, box: Box, action: str, **extra: Any) -> dict[str, Any]:
    scope = extra.pop("scope", None) or request.GET.get("scope") or box.default_scope
    if scope not in dict(box.scopes):
        scope = box.default_scope
    open_pause = (
        Pause.objects.filter(agent=box.agent, resumed_at__isnull=True).first()
        if box.agent
        else None
    )
    # Each scope says how many it reaches, so the box tells it without JavaScript too.
    counts = {
        value: services.steerable_count(user=request.user, target=box.target(value))
        for value, _ in box.scopes
    }
    return {
        "box": box,
        "action": action,
        "scope": scope,
        "scopes": [(value, words, counts[value]) for value, words in box.scopes],
        "count_words": _count_words(counts[scope]),
        "max_chars": MAX_TEXT_CHARS,
        "next": _back(request, box),
        "open_pause": open_pause,
        **extra,
    }


def _form(request: HttpRequest, box: Box, action: str, *, status: int = 200, **extra: Any):
    context = _form_context(request, box, action, **extra)
    template = "steering/_box.html" if request.htmx else "steering/page.html"
    return render(request, template, context, status=status)


@login_required
@require_GET
def steer_box(request: HttpRequest, session_id: str, action: str) -> HttpResponse:
    """The box: Message, Pause, Stop or Resume, for `?agent=` or the whole session."""
    if action not in (*ACTIONS, "resume"):
        raise Http404("There is no such action.")
    box = _box(request.user, session_id, request.GET.get("agent", ""))
    return _form(request, box, action)


@login_required
@require_GET
def steer_count(request: HttpRequest, session_id: str) -> HttpResponse:
    """How many agents will receive it, for the scope chosen in the box."""
    box = _box(request.user, session_id, request.GET.get("agent", ""))
    try:
        target = box.target(request.GET.get("scope", box.default_scope))
    except ServiceError as error:
        return HttpResponse(error.message, status=error.status, content_type="text/plain")
    count = services.steerable_count(user=request.user, target=target)
    return HttpResponse(_count_words(count), content_type="text/plain")


def _done_words(action: str, steered: services.Steered) -> str:
    n = steered.agents
    agents = f"{n} agent{pluralize(n)}"
    if action == "message":
        return f"Queued for {agents}; each reads it at its next step."
    if action == "stop":
        return f"Stop queued for {agents}; each ends its turn at its next step."
    if action == "pause":
        already = f" ({steered.unchanged} already paused)" if steered.unchanged else ""
        return f"Paused {agents}{already}." if n else "Those agents were already paused."
    return f"Resumed {agents}."


@login_required
@require_POST
async def steer_act(request: HttpRequest, session_id: str, action: str) -> HttpResponse:
    """Message, pause, stop or resume; answered with one sentence, as the API is."""
    if action not in (*ACTIONS, "resume"):
        raise Http404("There is no such action.")
    user = await request.auser()
    box = await sync_to_async(_box)(user, session_id, request.POST.get("agent", ""))
    scope = request.POST.get("scope") or box.default_scope
    via = via_request(request, "board")
    try:
        target = box.target(scope)
        if action == "message":
            steered = await write(
                services.message_send,
                user=user,
                target=target,
                text=request.POST.get("text", ""),
                via=via,
            )
        elif action == "stop":
            steered = await write(
                services.stop_send,
                user=user,
                target=target,
                reason=request.POST.get("reason", ""),
                via=via,
            )
        elif action == "pause":
            steered = await write(
                services.pause,
                user=user,
                target=target,
                reason=request.POST.get("reason", ""),
                via=via,
            )
        else:
            steered = await write(services.resume, user=user, target=target, via=via)
    except ServiceError as error:
        return await _refused(request, box, action, scope, error)
    words = _done_words(action, steered)
    status = 201 if action == "message" else 200
    if request.htmx and action == "resume":
        # A card's one-click Resume: its page's script says a refusal beside the button.
        return HttpResponse(words, status=status, content_type="text/plain")
    if request.htmx:
        return await arender(request, "steering/_result.html", {"words": words}, status=status)
    await sync_to_async(messages.success)(request, words)
    return HttpResponseRedirect(_back(request, box), status=303)


async def _refused(
    request: HttpRequest, box: Box, action: str, scope: str, error: ServiceError
) -> HttpResponse:
    if request.htmx and action != "resume":
        return await arender(
            request,
            "steering/_result.html",
            {"words": error.message, "refused": True},
            status=error.status,
        )
    if request.htmx:
        return HttpResponse(error.message, status=error.status, content_type="text/plain")
    if scope not in dict(box.scopes):
        scope = ""
    return await sync_to_async(_form)(
        request,
        box,
        action,
        status=error.status,
        error=error.message,
        scope=scope,
        text=request.POST.get("text", ""),
        reason=request.POST.get("reason", ""),
    )
