"""What a notification says, built in the transaction of its cause and rendered per destination.

Everything an agent wrote (project folder, plan, command) is untrusted: payloads keep it as
plain text, cut to a sensible length; each destination escapes it its own way (Slack mrkdwn
here, HTML by the browser's notification API, which shows text only).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.urls import reverse
from django.utils import timezone

from dashboard.activity.models import Concern
from dashboard.models import Agent, Session
from dashboard.notifications.models import Event
from planmode.inbox import CONCERN_WORDS
from planmode.models import PermissionRequest, Plan
from planmode.tool_display import describe
from todos.models import Continuation

TITLE_CHARS = 120
EXCERPT_CHARS = 300


def cut(text: str, limit: int) -> str:
    """At most `limit` characters, on one line's worth of whitespace, with an ellipsis if cut."""
    text = re.sub(r"[ \t\r\f\v]+", " ", text).strip()
    text = re.sub(r"\n{3,}", "\n\n", text)
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


@dataclass(frozen=True)
class Notice:
    """One cause of notifications: what happened to which object, and who may hear of it."""

    event: str
    # What it is about, e.g. "plan:12": with the event, the same cause always has the same key.
    about: str
    session: Session
    # The person who decided (never told about their own decision).
    decided_by_id: int | None
    payload: dict[str, Any]

    @property
    def key(self) -> str:
        return f"{self.event}:{self.about}"


def _agent_words(agent: Agent) -> str:
    return "main agent" if agent.is_main else f"{agent.label} agent {agent.short_id}"


def _payload(
    *,
    event: str,
    kind: str,
    pk: int,
    session: Session,
    agent: Agent | None,
    title: str,
    excerpt: str = "",
    path: str,
    **extra: Any,
) -> dict[str, Any]:
    return {
        "event": event,
        "kind": kind,
        "id": pk,
        "project": cut(session.project, 100),
        "session": session.session_id,
        "agent": _agent_words(agent) if agent else "",
        "title": cut(title, TITLE_CHARS),
        "excerpt": cut(excerpt, EXCERPT_CHARS),
        "path": path,
        "at": timezone.now().isoformat(),
        **extra,
    }


def plan_notice(plan: Plan) -> Notice | None:
    path = reverse("plan-review", args=[plan.pk])
    common = {"kind": "plan", "pk": plan.pk, "session": plan.session, "agent": plan.agent}
    if plan.status == "pending":
        payload = _payload(
            event=Event.WAITING,
            title=f"Plan rev {plan.revision} waits for review: {plan.title}",
            excerpt=plan.markdown,
            path=path,
            **common,
        )
        return Notice(Event.WAITING, f"plan:{plan.pk}", plan.session, None, payload)
    if plan.status in {"approved", "rejected"} and plan.decided_by_id is not None:
        who = plan.decided_by.get_username() if plan.decided_by else "someone"
        payload = _payload(
            event=Event.DECIDED,
            title=f"Plan rev {plan.revision} {plan.status} by {who}: {plan.title}",
            excerpt=plan.feedback or plan.notes,
            path=path,
            outcome=plan.status,
            decided_by=who,
            **common,
        )
        return Notice(Event.DECIDED, f"plan:{plan.pk}", plan.session, plan.decided_by_id, payload)
    return None


def permission_notice(request: PermissionRequest) -> Notice | None:
    view = describe(request.tool_name, request.tool_input)
    excerpt = view.body or view.arguments or view.headline
    path = reverse("inbox-request", args=[request.pk])
    common = {
        "kind": "permission",
        "pk": request.pk,
        "session": request.session,
        "agent": request.agent,
    }
    if request.status == "pending":
        payload = _payload(
            event=Event.WAITING,
            title=f"Asks to use {view.tool}: {view.headline}",
            excerpt=excerpt,
            path=path,
            **common,
        )
        return Notice(Event.WAITING, f"permission:{request.pk}", request.session, None, payload)
    if request.status in {"allowed", "denied"} and request.decided_by_id is not None:
        who = request.decided_by.get_username() if request.decided_by else "someone"
        payload = _payload(
            event=Event.DECIDED,
            title=f"{view.tool} {request.status} by {who}: {view.headline}",
            excerpt=excerpt,
            path=path,
            outcome=request.status,
            decided_by=who,
            **common,
        )
        return Notice(
            Event.DECIDED,
            f"permission:{request.pk}",
            request.session,
            request.decided_by_id,
            payload,
        )
    return None


def concern_notice(concern: Concern) -> Notice:
    """An agent needs a look (a loop): notified once per episode, like a waiting plan."""
    what = CONCERN_WORDS.get(concern.kind, concern.kind)
    payload = _payload(
        event=Event.WAITING,
        kind="look",
        pk=concern.pk,
        session=concern.session,
        agent=concern.agent,
        title=f"Needs a look — {what}: {concern.detail}",
        excerpt=concern.detail,
        path=reverse("session-board", args=[concern.session.session_id]),
        concern=concern.kind,
    )
    return Notice(Event.WAITING, f"concern:{concern.pk}", concern.session, None, payload)


def continuation_notice(continuation: Continuation) -> Notice:
    agent = continuation.agent
    session = agent.session
    path = reverse("session-board", args=[session.session_id])
    tasks = (
        f"{continuation.unfinished} unfinished task{'s' if continuation.unfinished != 1 else ''}"
    )
    if continuation.status == Continuation.Status.COUNTING:
        seconds = settings.AGENTBOARD_CONTINUATION_COUNTDOWN_SECONDS
        payload = _payload(
            event=Event.WAITING,
            kind="countdown",
            pk=continuation.pk,
            session=session,
            agent=agent,
            title=f"Continues in {seconds:g} s with {tasks} unless you cancel",
            path=path,
        )
        return Notice(Event.WAITING, f"countdown:{continuation.pk}", session, None, payload)
    payload = _payload(
        event=Event.STOPPED_UNFINISHED,
        kind="stopped",
        pk=continuation.pk,
        session=session,
        agent=agent,
        title=f"Stopped with {tasks}",
        excerpt=f"Not continued: {continuation.reason}.",
        path=path,
    )
    return Notice(Event.STOPPED_UNFINISHED, f"stopped:{continuation.pk}", session, None, payload)


def session_notice(session: Session) -> Notice:
    payload = _payload(
        event=Event.SESSION_ENDED,
        kind="session",
        pk=session.pk,
        session=session,
        agent=None,
        title=f"Session ended{' (quiet)' if session.ended_quietly else ''}: "
        f"{session.display_title}",
        path=reverse("session-board", args=[session.session_id]),
    )
    # A session can end, come back and end again: each ending is its own notice.
    ended = int(session.ended_at.timestamp()) if session.ended_at else 0
    return Notice(Event.SESSION_ENDED, f"session:{session.pk}:{ended}", session, None, payload)


# --- rendering per destination ---------------------------------------------------------------


def link(payload: dict[str, Any], base_url: str) -> str:
    base = settings.AGENTBOARD_PUBLIC_URL or base_url.rstrip("/")
    return f"{base}{payload['path']}"


def headline(payload: dict[str, Any]) -> str:
    """ "shop · main agent": the project and the agent, for titles."""
    return " · ".join(part for part in (payload["project"], payload["agent"]) if part)


def slack_escape(text: str) -> str:
    """Slack mrkdwn: &, < and > are its only control characters (links, mentions)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def slack_message(payload: dict[str, Any], base_url: str) -> dict[str, Any]:
    url = link(payload, base_url)
    title = f"{headline(payload)}: {payload['title']}"
    blocks: list[dict[str, Any]] = [
        {
            "type": "section",
            "text": {"type": "mrkdwn", "text": f"*{slack_escape(title)}*"},
        }
    ]
    if payload.get("excerpt"):
        # A code block keeps the agent's text literal; its own backticks would end it.
        excerpt = slack_escape(payload["excerpt"]).replace("```", "`\u200b``")
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": f"```{excerpt}```"}})
    blocks.append(
        {
            "type": "context",
            "elements": [{"type": "mrkdwn", "text": f"<{url}|Open in Agentboard>"}],
        }
    )
    # The text beside the blocks is what Slack shows in its own notification: mrkdwn as well.
    return {"text": slack_escape(title), "blocks": blocks}


def json_message(payload: dict[str, Any], base_url: str) -> dict[str, Any]:
    body = {key: value for key, value in payload.items() if key != "path"}
    return {**body, "url": link(payload, base_url)}


def push_message(payload: dict[str, Any], base_url: str) -> dict[str, Any]:
    return {
        "title": headline(payload) or "Agentboard",
        "body": payload["title"],
        "url": link(payload, base_url),
        "tag": f"{payload['kind']}-{payload['id']}",
    }
