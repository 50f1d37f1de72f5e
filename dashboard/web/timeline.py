"""A session's timeline page: its agents as lanes of steps on a time axis, or the same steps as
a list (for the keyboard and screen readers), filtered by range, agent, tool and failures, with
one step's detail beside them. Live: the page listens to its session's board socket and
fetches the timeline again when something changed."""

from __future__ import annotations

from urllib.parse import urlencode

from django.core.exceptions import BadRequest
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from dashboard.activity.selectors import session_steps
from dashboard.activity.timeline import (
    DEFAULT_RANGE,
    RANGE_LABELS,
    RANGES,
    session_timeline,
    step_in_session,
    waited_on,
)
from dashboard.board import selectors
from dashboard.core.edge import query_text
from dashboard.core.security import login_required
from dashboard.core.visibility import visible_sessions
from dashboard.steering.selectors import steering_events
from planmode.inbox import staged_in_session

VIEWS = ("timeline", "list")
LIST_PAGE = 50
MAX_TOOL_CHARS = 200


@login_required
def session_timeline_page(request: HttpRequest, session_id: str) -> HttpResponse:
    session = get_object_or_404(
        visible_sessions(request.user).select_related("owner"), session_id=session_id
    )
    query = request.GET
    view = query.get("view", "timeline")
    if view not in VIEWS:
        raise BadRequest(f"There is no view {view!r}; pick timeline or list.")
    range_key = query.get("range", DEFAULT_RANGE)
    if range_key not in RANGES:
        raise BadRequest(f"There is no range {range_key!r}; pick one of {', '.join(RANGES)}.")
    tool = query_text(query, "tool", max_length=MAX_TOOL_CHARS)
    failures_only = query.get("failures", "") == "1"
    agent_id = query_text(query, "agent")
    timeline = session_timeline(
        session,
        range_key=range_key,
        agent_id=agent_id,
        tool=tool,
        failures_only=failures_only,
    )
    if agent_id and not any(agent.agent_id == agent_id for agent in timeline.agents):
        raise BadRequest("There is no agent with this id in this session; pick one from the list.")
    filters = {
        "range": range_key,
        "agent": agent_id,
        "tool": tool,
        "failures": query.get("failures", ""),
    }
    # The links of the page keep its filters (and the view), dropping what is empty.
    kept = {key: value for key, value in filters.items() if value}
    if kept.get("range") == DEFAULT_RANGE:
        del kept["range"]
    context = {
        "session": session,
        "summary": selectors.session_summaries([session])[0],
        "timeline": timeline,
        "view": view,
        "range_key": range_key,
        "ranges": [{"key": key, "label": RANGE_LABELS[key]} for key in RANGES],
        "filters": filters,
        "filtered": bool(agent_id or tool or failures_only),
        "kept_query": urlencode(kept),
    }
    # Where the page is: its filters, its view and its page of the list (a step's link and the
    # detail's Close keep them).
    here = dict(kept)
    if view == "list":
        here["view"] = "list"
        if query.get("before"):
            here["before"] = query["before"]
    context["here_query"] = urlencode(here)
    context["waits"] = [*context["summary"].waits, *staged_in_session(session.pk)]
    # What leads said to its agents, and their pauses: who, when, what.
    labels = {
        agent.pk: agent.label if agent.is_main else f"{agent.label} {agent.short_id}"
        for agent in timeline.agents
    }
    context["steering_events"] = [
        (event, labels.get(event.agent_pk, "an agent")) for event in steering_events(session)
    ]
    if view == "list":
        try:
            page = session_steps(
                session=session,
                after=query.get("before") or None,
                agent_id=agent_id or None,
                tool=tool or None,
                failures_only=failures_only,
                limit=LIST_PAGE,
                newest_first=True,
            )
        except ValueError:
            raise BadRequest(
                "This page link is not one this list handed out; start again from the newest steps."
            ) from None
        for listed in page.steps:
            listed.agent.session = session  # its label reads it: no query per row
        context["page"] = page
        context["first_page"] = not query.get("before")
    step_pk = query.get("step", "")
    if step_pk:
        step = step_in_session(session, int(step_pk)) if step_pk.isdigit() else None
        if step is None:
            raise Http404(
                "There is no such step in this session (steps are kept a while, then pruned)."
            )
        context["step"] = step
        context["step_waited_on"] = waited_on(step)
    return render(request, "activity/timeline.html", context)
