"""The publisher: every event the browser and agent sockets receive, and the one place that sends.

The writer hands it the `Changes` of each committed write. Agents waiting on a decision (agent
sockets, held hooks) are woken at once, in this process and the others (`dashboard.live.watch`);
held Stop hooks through the channel layer. What browsers show is rendered off the request path,
in one render thread, coalesced: each agent's card, and each session's header and overview row,
is rendered at most once per frame (`AGENTBOARD_LIVE_FRAME_MS`) however many writes touched it,
the first change of a quiet period at once and the last state always; the plan lists likewise.
New history lines go out with the next flush. Flushes are at least `FLUSH_GAP` apart, so a busy
board gets what changed in one message rather than a message per write; each group gets one
message per flush, rendered once for all its browsers, and reaches each process once: the
process hands it to its own board sockets (`dashboard.live.boards`).

What browsers show crosses the channel layer, so one process or many behave alike. The channel
layer may drop a message: clients resync from the database when they (re)connect.
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Literal, TypedDict, TypeVar

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings
from django.template.loader import render_to_string

from dashboard.core.changes import Changes
from dashboard.core.loops import PerLoop, keep
from dashboard.core.visibility import EVERYONE, Audience
from dashboard.live.watch import announce

logger = logging.getLogger(__name__)
T = TypeVar("T")

# Live groups, each rendered once for all its browsers. Who joins which follows the one rule
# of `dashboard.core.visibility`: admins join the groups of everything; anyone else the open
# overview, their teams' overviews and their own groups.
# Every admin's overview: each session's row.
OVERVIEW_GROUP = "board.overview"
# Everyone else's overview: the rows of sessions no team owns, of one team's, and of a user's
# own sessions in a team they are not a member of.
OVERVIEW_OPEN = "board.overview.open"
# Every board page of an admin: the header's count of what waits on a person.
HEADER_GROUP = "board.header"
# The review queue page and every review page of an admin (its list of plans waiting).
PLANS_GROUP = "board.plans"
# The inbox page of an admin (every session's).
INBOX_GROUP = "board.inbox"
# Every browser socket: told to reconnect when who sees what changed (a team, a project's).
EVERY_BROWSER = "board.browsers"


def overview_team_group(team_pk: int) -> str:
    return f"board.overview.team.{team_pk}"


def overview_user_group(user_pk: int) -> str:
    return f"board.overview.user.{user_pk}"


def overview_groups(audience: Audience) -> list[str]:
    """The overview groups a viewer joins: each session they see reaches them by exactly one."""
    if audience.everything:
        return [OVERVIEW_GROUP]
    if audience.nothing:
        return []
    teams = [overview_team_group(pk) for pk in sorted(audience.teams)]
    return [OVERVIEW_OPEN, *teams, overview_user_group(audience.user_pk or 0)]


def _viewer_group(base: str, viewer: int | None) -> str:
    return base if viewer is None else f"{base}.user.{viewer}"


def header_group(audience: Audience) -> str:
    """The header count of an audience: admins, or one user."""
    return _viewer_group(HEADER_GROUP, audience_viewer(audience))


def inbox_group(audience: Audience) -> str:
    return _viewer_group(INBOX_GROUP, audience_viewer(audience))


def plans_group(audience: Audience) -> str:
    return _viewer_group(PLANS_GROUP, audience_viewer(audience))


def audience_viewer(audience: Audience) -> int | None:
    """Whose own groups: None for admins (one group for all of them), else the user's pk."""
    return None if audience.everything else audience.user_pk


def session_group(session_pk: int) -> str:
    return f"board.session.{session_pk}"


def plan_review_group(plan_pk: int) -> str:
    """Browsers on one plan's review page."""
    return f"board.plan.{plan_pk}"


def token_group(key_hash: str) -> str:
    """The agent sockets opened with one token, to close when it is revoked."""
    return f"agent-token.{key_hash[:32]}"


def close_token_sockets(key_hashes: list[str]) -> None:
    """After a commit that revoked tokens (or deactivated their user): close the agent sockets
    of every process that were opened with them. Those that miss this push are closed at their
    next frame, once the revocation reaches the token cache (within a second)."""
    messages = [(token_group(key), {"type": "token.revoked"}) for key in key_hashes]
    try:
        async_to_sync(_send_all)(messages)
    except Exception:
        logger.exception("could not tell agent sockets that their token was revoked")


def continuation_group(continuation_pk: int) -> str:
    """The held Stop hook of one continuation countdown."""
    return f"continuation.{continuation_pk}"


def pause_group(agent_pk: int) -> str:
    """The tool calls of one paused agent, held until it is resumed."""
    return f"paused.{agent_pk}"


def agent_messages_group(agent_pk: int) -> str:
    """The agent sockets watching one agent, for the messages queued for it."""
    return f"agent-messages.{agent_pk}"


class BoardFragment(TypedDict):
    """htmx out-of-band fragments for the board sockets of a group to forward as they are
    (`dashboard.live.boards`)."""

    type: Literal["board.fragment"]
    group: str
    html: str


class ContinuationResolved(TypedDict):
    """To a held Stop hook: its countdown was cancelled (or replaced)."""

    type: Literal["continuation.resolved"]
    continuation_id: int


class AgentResumed(TypedDict):
    """To a paused agent's held tool calls: the pause ended."""

    type: Literal["agent.resumed"]
    agent_id: int


class AgentMessaged(TypedDict):
    """To the agent sockets watching an agent: a message was queued for it (they claim it)."""

    type: Literal["agent.messaged"]
    agent_id: int


# One thread renders for the whole process, with its own database connection: rendering never
# runs on the event loop nor in a request.
_render_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="agentboard-render")


def drain(timeout: float = 10) -> None:
    """Return once the renders queued so far are done (tests)."""
    _render_executor.submit(lambda: None).result(timeout)


def close_connection() -> None:
    """Close the render thread's database connection (tests, shutdown)."""
    from django.db import connections

    _render_executor.submit(connections.close_all).result(10)


def publish(changes: Changes, *, loop: asyncio.AbstractEventLoop | None) -> None:
    """Called by the writer (any thread) after commit. Waiters first, then the browsers."""
    announce(changes)
    if loop is not None and not loop.is_closed():
        try:
            loop.call_soon_threadsafe(_publisher_for(loop).take, changes)
            return
        except RuntimeError:
            pass  # the loop closed meanwhile; fall through to a direct publish
    _render_executor.submit(_publish_blocking, changes)


def _publish_blocking(changes: Changes) -> None:
    """For writes made outside an event loop (management commands): no coalescing."""
    try:
        messages = _wake_messages(changes) + render(Due.everything_in(changes))
        if changes.audiences_changed:
            messages.append((EVERY_BROWSER, {"type": "board.reconnect"}))
        send = async_to_sync(_send_all)
        send(messages)
    except Exception:
        logger.exception("could not publish a change")


async def _send_all(messages: list[tuple[str, dict]]) -> None:
    layer = get_channel_layer()
    for group, message in messages:
        await layer.group_send(group, message)


def _wake_messages(changes: Changes) -> list[tuple[str, dict]]:
    messages: list[tuple[str, dict]] = [
        (
            continuation_group(pk),
            ContinuationResolved(type="continuation.resolved", continuation_id=pk),
        )
        for pk in sorted(changes.resolved_continuations)
    ]
    messages += [
        (pause_group(pk), AgentResumed(type="agent.resumed", agent_id=pk))
        for pk in sorted(changes.resumed_agents)
    ]
    messages += [
        (agent_messages_group(pk), AgentMessaged(type="agent.messaged", agent_id=pk))
        for pk in sorted(changes.messaged_agents)
    ]
    return messages


# --- coalescing ---------------------------------------------------------------------------------


@dataclass
class Routes:
    """Where the rendering of one flush goes, by the one visibility rule."""

    # The overview groups of each session whose row changed.
    overview: dict[int, list[str]] = field(default_factory=dict)
    # Users (admins aside) whose count of what waits, and inbox, may have changed.
    waited_on: set[int] = field(default_factory=set)
    # Users (admins aside) whose review queue may show a changed plan.
    queue_viewers: set[int] = field(default_factory=set)


@dataclass
class Due:
    """What one flush renders."""

    cards: dict[int, int] = field(default_factory=dict)  # agent pk -> session pk
    created_agents: set[int] = field(default_factory=set)
    sessions: set[int] = field(default_factory=set)
    created_sessions: set[int] = field(default_factory=set)
    revisions: list[int] = field(default_factory=list)
    enforcer_events: list[int] = field(default_factory=list)
    # The sessions whose history the revisions and enforcer events add lines to.
    history_sessions: set[int] = field(default_factory=set)
    plans: set[int] = field(default_factory=set)
    permission_requests: set[int] = field(default_factory=set)
    inbox_sessions: set[int] = field(default_factory=set)
    annotated_plans: set[int] = field(default_factory=set)
    # Which groups see what changed (found before rendering, `routes_of`).
    routes: Routes | None = None

    @classmethod
    def everything_in(cls, changes: Changes) -> Due:
        due = cls()
        due.add(changes)
        return due

    def add(self, changes: Changes) -> None:
        """What `changes` shows browsers: a changed card re-renders its session too."""
        self.cards.update(changes.agents)
        self.created_agents |= changes.created_agents
        self.sessions |= changes.sessions | set(changes.agents.values())
        self.created_sessions |= changes.created_sessions
        self.revisions += changes.revisions
        self.enforcer_events += changes.enforcer_events
        if changes.revisions or changes.enforcer_events:
            self.history_sessions |= changes.sessions | set(changes.agents.values())
        self.plans |= changes.plans
        self.permission_requests |= changes.permission_requests
        self.inbox_sessions |= changes.inbox_sessions
        self.annotated_plans |= changes.annotated_plans

    @property
    def inbox(self) -> bool:
        """Whether what waits on a person changed: inbox pages and header counts."""
        return bool(self.plans or self.permission_requests or self.inbox_sessions)

    def __bool__(self) -> bool:
        return bool(
            self.cards
            or self.sessions
            or self.revisions
            or self.enforcer_events
            or self.inbox
            or self.annotated_plans
        )


_publisher_for = PerLoop(lambda loop: Publisher(loop))


async def settled() -> None:
    """Return once this loop's publisher has sent everything handed to it so far (tests, and a
    clean shutdown)."""
    publisher = _publisher_for.made(asyncio.get_running_loop())
    while publisher is not None and (
        publisher.pending or publisher.flushing or publisher.timer or publisher.tasks
    ):
        await asyncio.sleep(0.005)


def frame_seconds() -> float:
    return settings.AGENTBOARD_LIVE_FRAME_MS / 1000


# The least time between two flushes (never more than the frame): what arrives meanwhile goes
# out together, in one message per group.
FLUSH_GAP = 0.025


class Publisher:
    """Runs on one event loop (the server's); all its methods are called on that loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.pending = Due()
        # When each card ("card", pk), session ("session", pk) or the plan lists ("plans", 0)
        # was last rendered, in loop time.
        self.rendered_at: dict[tuple[str, int], float] = {}
        self.flushed_at = float("-inf")
        self.timer: asyncio.TimerHandle | None = None
        self.flushing = False
        self.tasks: set[asyncio.Task] = set()

    def take(self, changes: Changes) -> None:
        wake = _wake_messages(changes)
        if changes.audiences_changed:
            wake.append((EVERY_BROWSER, {"type": "board.reconnect"}))
        if wake:
            self._spawn(_send_all(wake))
        self.pending.add(changes)
        self._schedule()

    def _spawn(self, coroutine: Any) -> None:
        keep(self.tasks, self.loop.create_task(coroutine))

    def _keys(self, due: Due) -> Iterable[tuple[str, int]]:
        yield from (("card", pk) for pk in due.cards)
        yield from (("session", pk) for pk in due.sessions)
        if (due.revisions or due.enforcer_events) and not due.history_sessions:
            yield ("history", 0)  # lines of no session's: the next flush takes them
        if due.plans or due.annotated_plans:
            yield ("plans", 0)
        if due.inbox:
            yield ("inbox", 0)

    def _ready_at(self, key: tuple[str, int]) -> float:
        last = self.rendered_at.get(key)
        ready = float("-inf") if last is None else last + frame_seconds()
        return max(ready, self.flushed_at + min(FLUSH_GAP, frame_seconds()))

    def _schedule(self) -> None:
        if self.flushing or not self.pending:
            return
        now = self.loop.time()
        soonest = max(now, min(self._ready_at(key) for key in self._keys(self.pending)))
        if self.timer is not None:
            if self.timer.when() <= soonest:
                return
            self.timer.cancel()
        self.timer = self.loop.call_at(soonest, self._start_flush)

    def _start_flush(self) -> None:
        self.timer = None
        self.flushing = True
        self._spawn(self._flush())

    def _take_due(self) -> Due:
        now = self.loop.time()
        pending, due = self.pending, Due()
        for pk in list(pending.sessions):
            if self._ready_at(("session", pk)) <= now:
                due.sessions.add(pk)
                pending.sessions.discard(pk)
                if pk in pending.created_sessions:
                    pending.created_sessions.discard(pk)
                    due.created_sessions.add(pk)
        for pk, session_pk in list(pending.cards.items()):
            if self._ready_at(("card", pk)) <= now:
                due.cards[pk] = session_pk
                del pending.cards[pk]
                if pk in pending.created_agents:
                    pending.created_agents.discard(pk)
                    due.created_agents.add(pk)
        if (pending.plans or pending.annotated_plans) and self._ready_at(("plans", 0)) <= now:
            due.plans, pending.plans = pending.plans, set()
            due.annotated_plans, pending.annotated_plans = pending.annotated_plans, set()
        if self._ready_at(("inbox", 0)) <= now:
            due.permission_requests, pending.permission_requests = (
                pending.permission_requests,
                set(),
            )
            due.inbox_sessions, pending.inbox_sessions = pending.inbox_sessions, set()
        # History lines are new items, never coalesced away: they go out with the next flush
        # of their session's header or of one of its cards (what they tell shows with them).
        flushed = due.sessions | set(due.cards.values())
        if not pending.history_sessions or pending.history_sessions & flushed:
            due.revisions, pending.revisions = pending.revisions, []
            due.enforcer_events, pending.enforcer_events = pending.enforcer_events, []
            due.history_sessions, pending.history_sessions = pending.history_sessions, set()
        for key in self._keys(due):
            if key[0] != "history":
                self.rendered_at[key] = now
        self.flushed_at = now
        return due

    async def _flush(self) -> None:
        try:
            due = self._take_due()
            if (due.sessions or due.inbox) and browsers_may_watch():
                due.routes = await self.loop.run_in_executor(_render_executor, routes_of, due)
            if due:
                watched = await watched_groups(groups_of(due))
                if watched:
                    messages = await self.loop.run_in_executor(
                        _render_executor, render, due, watched
                    )
                    await _send_all(messages)
        except Exception:
            logger.exception("could not publish live updates")
        finally:
            self.flushing = False
            self._schedule()


def groups_of(due: Due) -> set[str]:
    """Every group a flush of `due` could send to (review pages are found when rendering)."""
    routes = due.routes or Routes()
    sessions = due.sessions | set(due.cards.values()) | due.history_sessions
    groups = {session_group(pk) for pk in sessions}
    for targets in routes.overview.values():
        groups.update(targets)
    if due.plans:
        groups |= {session_group(pk) for pk in due.sessions}
        groups |= {_viewer_group(PLANS_GROUP, viewer) for viewer in [None, *routes.queue_viewers]}
    if due.inbox:
        for viewer in [None, *routes.waited_on]:
            groups |= {_viewer_group(HEADER_GROUP, viewer), _viewer_group(INBOX_GROUP, viewer)}
    groups |= {plan_review_group(pk) for pk in due.annotated_plans}
    return groups


def routes_of(due: Due) -> Routes:
    """Which groups show what `due` changed (in the render thread): one query for the
    sessions, one for their teams' members if any, and when what waits changed, one for the
    projects' own reviewers and one for the review permission's holders if no team owns one."""
    from django.contrib.auth import get_user_model
    from django.db.models import Q

    from dashboard.core.visibility import review_permission_holders
    from dashboard.models import Membership, Project, Session

    routes = Routes()
    condition = Q(pk__in=sorted(due.sessions | due.inbox_sessions))
    if due.plans:
        condition |= Q(plans__pk__in=sorted(due.plans))
    if due.permission_requests:
        condition |= Q(permission_requests__pk__in=sorted(due.permission_requests))
    found = Session.objects.filter(condition)
    projects = set()
    rows = set()
    for pk, owner, team, project in found.values_list(
        "pk", "owner_id", "team_id", "project_record_id"
    ):
        rows.add((pk, owner, team))
        if project is not None:
            projects.add(project)
    teams = {team for _, _, team in rows if team is not None}
    members: dict[int, set[int]] = defaultdict(set)
    if teams:
        for team, user in Membership.objects.filter(team_id__in=teams).values_list(
            "team_id", "user_id"
        ):
            members[team].add(user)
    open_sessions = False
    for pk, owner, team in rows:
        if team is None:
            routes.overview[pk] = [OVERVIEW_GROUP, OVERVIEW_OPEN]
            open_sessions = True
        else:
            routes.overview[pk] = [OVERVIEW_GROUP, overview_team_group(team)]
            if owner not in members[team]:
                routes.overview[pk].append(overview_user_group(owner))
    if due.inbox:
        # A wait is on the session's owner and reviewers; a plan shows in the queue of
        # everyone who sees its session.
        owners = {owner for _, owner, _ in rows}
        in_teams = set().union(*members.values()) if members else set()
        routes.waited_on = owners | in_teams
        routes.queue_viewers = owners | in_teams
        if projects:  # the projects' own reviewers
            named = Project.reviewers.through.objects.filter(project_id__in=sorted(projects))
            routes.waited_on |= set(named.values_list("user_id", flat=True))
        if open_sessions:
            routes.waited_on |= review_permission_holders()
            if due.plans:
                everyone = get_user_model().objects.filter(is_active=True, is_superuser=False)
                routes.queue_viewers |= set(everyone.values_list("pk", flat=True))
    return routes


def browsers_may_watch() -> bool:
    """Whether any browser could be shown a flush: False only when the in-memory layer of the
    embedded default (one process) has no board group joined, so agents' writes with nobody
    watching cost no read of who would see them."""
    members = getattr(get_channel_layer(), "groups", None)
    if not isinstance(members, dict):
        return True
    return any(group.startswith("board.") and joined for group, joined in members.items())


async def watched_groups(groups: set[str]) -> set[str] | None:
    """The groups with at least one member, so that nobody's board costs a render; None when
    the channel layer cannot say (then everything is rendered)."""
    layer = get_channel_layer()
    members = getattr(layer, "groups", None)
    if isinstance(members, dict):  # the in-memory layer of the embedded default
        return {group for group in groups if members.get(group)}
    group_key = getattr(layer, "_group_key", None)
    connection = getattr(layer, "connection", None)
    if group_key is None or connection is None:
        return None
    try:  # channels_redis: a group is a sorted set of channel names
        watched = set()
        for group in groups:
            redis = connection(layer.consistent_hash(group))
            if await redis.zcard(group_key(group)):
                watched.add(group)
        return watched
    except Exception:
        logger.warning("could not ask the channel layer who is watching", exc_info=True)
        return None


# --- rendering (in the render thread) -----------------------------------------------------------


def fragment(group: str, html: str) -> BoardFragment:
    return BoardFragment(type="board.fragment", group=group, html=html)


def render(due: Due, watched: set[str] | None = None) -> list[tuple[str, dict]]:
    """Every fragment `due` needs, rendered once, as one message per group; with `watched`,
    only what those groups show (plus review pages, which are always rendered)."""
    from dashboard.board import selectors
    from planmode import fragments
    from planmode.selectors import plans_by_pk

    def shown(group: str) -> bool:
        return watched is None or group in watched

    parts: dict[str, list[str]] = defaultdict(list)
    routes = due.routes if due.routes is not None else routes_of(due)
    plans = plans_by_pk(sorted(due.plans))

    def overview_shown(session_pk: int) -> list[str]:
        return [group for group in routes.overview.get(session_pk, ()) if shown(group)]

    session_pks = {
        pk
        for pk in set(due.sessions) | {plan.session_id for plan in plans}
        if shown(session_group(pk)) or overview_shown(pk)
    }
    summaries = {s.session.pk: s for s in selectors.session_summaries_by_pk(sorted(session_pks))}
    card_pks = [pk for pk, session_pk in due.cards.items() if shown(session_group(session_pk))]

    for card in selectors.agent_cards(sorted(card_pks)):
        created = card.agent.pk in due.created_agents
        html = render_to_string(
            "dashboard/_agent_card.html",
            {
                "card": card,
                "oob": True,
                "oob_insert": "beforeend:#cards" if created else "",
                # A new card flashes; on a changed one, the browser highlights what changed.
                "flash": created,
            },
        )
        parts[session_group(card.agent.session_id)].append(html)
    for session_pk, summary in summaries.items():
        group = session_group(session_pk)
        if shown(group):
            parts[group].append(
                render_to_string(
                    "dashboard/_session_header.html", {"summary": summary, "oob": True}
                )
            )
        overview = overview_shown(session_pk)
        if not overview:
            continue
        row = render_to_string(
            "dashboard/_session_row.html",
            {
                "summary": summary,
                "oob": True,
                "oob_insert": "afterbegin:#session-list"
                if session_pk in due.created_sessions
                else "",
                "flash": session_pk in due.created_sessions,
            },
        )
        for group in overview:
            parts[group].append(row)
    # Inserted one by one at the top, so the newest must come last.
    entries = (
        selectors.history_entries(revision_pks=due.revisions, event_pks=due.enforcer_events)
        if (due.revisions or due.enforcer_events)
        and any(shown(session_group(pk)) for pk in due.history_sessions)
        else []
    )
    for entry in sorted(entries, key=lambda entry: entry.at):
        if not shown(session_group(entry.agent.session_id)):
            continue
        parts[session_group(entry.agent.session_id)].append(
            render_to_string("dashboard/_history_entry.html", {"entry": entry, "oob": True})
        )
    # Each viewer's own: the count of what waits on them, their inbox, their review queue.
    viewers = {None, *routes.waited_on, *(routes.queue_viewers if plans else ())}
    audiences = viewer_audiences(
        viewer
        for viewer in viewers
        if viewer is not None
        and any(
            shown(_viewer_group(base, viewer)) for base in (HEADER_GROUP, INBOX_GROUP, PLANS_GROUP)
        )
    )
    if due.inbox:
        for viewer in [None, *sorted(routes.waited_on)]:
            audience = audiences.get(viewer)
            if audience is None:
                continue
            if shown(header_group(audience)):
                parts[header_group(audience)].append(render_plans_waiting(audience))
            if shown(inbox_group(audience)):
                parts[inbox_group(audience)].append(render_inbox(audience))
    # The banner of each board whose waits changed (a plan, a permission request, a countdown,
    # a terminal wait): only then, so that a todo write never takes the focus off its buttons.
    # (Permission requests name their sessions in `inbox_sessions`, as waits of other kinds do.)
    waits_changed = {plan.session_id for plan in plans} | due.inbox_sessions if due.inbox else set()
    for session_pk in sorted(waits_changed):
        if shown(session_group(session_pk)):
            summary = summaries.get(session_pk)
            parts[session_group(session_pk)].append(
                fragments.render_session_attention(
                    session_pk, oob=True, waits=summary.waits if summary else None
                )
            )
    if plans:
        flash = [plan.pk for plan in plans]
        for viewer in [None, *sorted(routes.queue_viewers)]:
            audience = audiences.get(viewer)
            if audience is not None and shown(plans_group(audience)):
                parts[plans_group(audience)].append(
                    fragments.render_queue(audience, flash_pks=flash, oob=True)
                )
        for session_pk in sorted({plan.session_id for plan in plans}):
            parts[session_group(session_pk)].append(
                fragments.render_session_plans(session_pk, flash_pks=flash, oob=True)
            )
        # Every page of an agent's plan thread shows the thread's decision history.
        for plan in {plan.agent_id: plan for plan in plans}.values():
            thread = fragments.render_thread(plan, oob=True)
            for review_pk in fragments.thread_plan_pks(plan):
                parts[plan_review_group(review_pk)].append(thread)
        for plan in plans:
            if not plan.is_pending:
                parts[plan_review_group(plan.pk)].append(fragments.render_decision_panel(plan))
                parts[plan_review_group(plan.pk)].append(fragments.render_annotations(plan))
            else:
                # Decided and about to be sent (with its Undo), or waiting again after one;
                # who has approved it so far, where two approve.
                parts[plan_review_group(plan.pk)].append(fragments.render_staged_decision(plan))
                parts[plan_review_group(plan.pk)].append(fragments.render_approvals(plan))
    for plan in plans_by_pk(sorted(due.annotated_plans - due.plans)):
        if shown(plan_review_group(plan.pk)):
            parts[plan_review_group(plan.pk)].append(fragments.render_annotations(plan))
    return [(group, fragment(group, "".join(html))) for group, html in parts.items()]


def viewer_audiences(user_pks: Iterable[int]) -> dict[int | None, Audience]:
    """The rule of each viewer to render for (admins: None), read at once."""
    from dashboard.core.visibility import audiences_of

    found: dict[int | None, Audience] = {None: EVERYONE}
    for pk, audience in audiences_of(user_pks).items():
        # An admin's own groups are never joined: they share the admins'.
        if not audience.everything and not audience.nothing:
            found[pk] = audience
    return found


def render_plans_waiting(audience: Audience = EVERYONE) -> str:
    """The header's count of what waits on the audience."""
    from planmode.inbox import inbox_count

    return render_to_string(
        "dashboard/_plans_waiting.html", {"waiting": inbox_count(audience), "oob": True}
    )


def render_inbox(audience: Audience) -> str:
    """The inbox list as the audience sees it; its forms carry no CSRF token (htmx sends the
    page's own)."""
    from planmode.inbox import inbox_context

    return render_to_string("planmode/inbox/_list.html", {**inbox_context(audience), "oob": True})
