"""Read models for the review queue, the review page and the session board."""

from __future__ import annotations

import difflib
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.core.cache import cache
from django.db.models import QuerySet
from django.utils.safestring import SafeString

from dashboard.core.errors import ServiceError
from dashboard.core.keyset import Page, page_of
from dashboard.core.sql import PreparedQuery
from dashboard.core.visibility import EVERYONE, Audience
from planmode.markdown import Block, plan_blocks, render_marked, renders_as_text, same_list
from planmode.models import Plan, PlanStatus

RECENT_DECIDED = 20
SESSION_PLANS = 20
THREAD_LENGTH = 30
DIFF_CONTEXT = 3


def pending_plan_count() -> int:
    """Plans waiting for a reviewer, for the header on every page."""
    return Plan.objects.filter(status=PlanStatus.PENDING, sends_at__isnull=True).count()


def _with_relations(plans: QuerySet[Plan]) -> QuerySet[Plan]:
    return plans.select_related(
        "session", "session__owner", "agent", "agent__session", "decided_by"
    )


def pending_plans(audience: Audience = EVERYONE) -> list[Plan]:
    """Oldest waiting first: whoever has waited longest is served first. A plan decided and
    about to be sent (its undo window) waits for nobody. Those of the sessions the audience
    sees."""
    return list(
        _with_relations(
            Plan.objects.filter(
                audience.sees("session__"), status=PlanStatus.PENDING, sends_at__isnull=True
            )
        ).order_by("submitted_at", "pk")
    )


def staged_plans(audience: Audience = EVERYONE) -> list[Plan]:
    """Plans decided on their review page whose decision is not sent yet (the undo window)."""
    return list(
        _with_relations(
            Plan.objects.filter(
                audience.sees("session__"), status=PlanStatus.PENDING, sends_at__isnull=False
            )
        ).order_by("sends_at", "pk")
    )


def recently_decided(audience: Audience = EVERYONE, limit: int = RECENT_DECIDED) -> list[Plan]:
    return list(
        _with_relations(
            Plan.objects.filter(audience.sees("session__")).exclude(status=PlanStatus.PENDING)
        ).order_by("-decided_at", "-pk")[:limit]
    )


def decided_plans(
    audience: Audience, *, before: str | None = None, after: str | None = None
) -> Page[Plan]:
    """A page of the decided plans the audience sees, the latest decision first (keyset on its
    time). Raises ValueError for a cursor this list did not hand out."""
    decided = Plan.objects.filter(audience.sees("session__"), decided_at__isnull=False)
    decided = decided.exclude(status=PlanStatus.PENDING)
    return page_of(_with_relations(decided), at="decided_at", before=before, after=after)


def plan_for_review(plan_id: int, audience: Audience = EVERYONE) -> Plan | None:
    """The plan, if the audience sees its session."""
    return _with_relations(Plan.objects.filter(audience.sees("session__"), pk=plan_id)).first()


def plans_by_pk(plan_pks: list[int]) -> list[Plan]:
    if not plan_pks:
        return []  # (a query for none still costs its compiling)
    return list(_with_relations(Plan.objects.filter(pk__in=plan_pks)).order_by("pk"))


def plan_for_owner(*, plan_id: int, owner: AbstractBaseUser) -> Plan:
    """A plan of one of the owner's sessions; another user's plan is not found either."""
    plan = plan_for_review(plan_id)
    if plan is None or plan.session.owner_id != owner.pk:
        raise ServiceError(
            "plan_not_found",
            f"There is no plan {plan_id} for this token; use the id returned when the plan "
            "was submitted.",
            status=404,
        )
    return plan


def previous_revision(plan: Plan) -> Plan | None:
    return _with_relations(
        Plan.objects.filter(agent_id=plan.agent_id, revision=plan.revision - 1)
    ).first()


def plan_thread(plan: Plan, limit: int = THREAD_LENGTH) -> list[Plan]:
    """Every revision this agent submitted, newest first: the plan's decision history."""
    return list(
        _with_relations(Plan.objects.filter(agent_id=plan.agent_id)).order_by("-revision")[:limit]
    )


def session_plans(session_pk: int, limit: int = SESSION_PLANS) -> list[Plan]:
    return list(
        _with_relations(Plan.objects.filter(session_id=session_pk)).order_by(
            "-submitted_at", "-pk"
        )[:limit]
    )


def session_pending_plans(session_pk: int) -> list[Plan]:
    return list(
        _with_relations(
            Plan.objects.filter(
                session_id=session_pk, status=PlanStatus.PENDING, sends_at__isnull=True
            )
        ).order_by("submitted_at", "pk")
    )


# Read on every live update of a session: compiled once.
_pending_in_sessions = PreparedQuery(
    Plan,
    lambda pks: (
        Plan.objects.filter(session_id__in=pks, status=PlanStatus.PENDING, sends_at__isnull=True)
        .select_related("agent", "agent__session")
        .order_by("submitted_at", "pk")
    ),
)


def pending_by_session(session_pks: list[int]) -> dict[int, dict[str, Any]]:
    """For overview rows: how many plans wait in each session, since when, and the one that
    has waited longest (the one to review first)."""
    waiting: dict[int, dict[str, Any]] = {}
    for plan in _pending_in_sessions.rows(session_pks):
        entry = waiting.setdefault(
            plan.session_id,
            {"plans_waiting": 0, "plan_waiting_since": plan.submitted_at, "waiting_plan": plan},
        )
        entry["plans_waiting"] += 1
    return waiting


def sessions_with_pending_plans() -> list[int]:
    return list(
        Plan.objects.filter(status=PlanStatus.PENDING, sends_at__isnull=True)
        .values_list("session_id", flat=True)
        .distinct()
    )


@dataclass(frozen=True)
class DiffLine:
    kind: str  # "add", "remove", "context" or "gap"
    text: str
    # The line in pieces, ("same" | "changed", text), when only some words of it changed.
    parts: tuple[tuple[str, str], ...] = ()

    @property
    def marker(self) -> str:
        return {"add": "+", "remove": "-", "context": " ", "gap": "⋯"}[self.kind]

    @property
    def pieces(self) -> tuple[tuple[str, str], ...]:
        return self.parts or (("same", self.text),)


@dataclass(frozen=True)
class PlanDiff:
    lines: list[DiffLine]
    added: int
    removed: int
    # Set when the two texts were too large to compare line by line: only their sizes are
    # shown, ((lines, characters) of the old text, and of the new).
    sizes: tuple[tuple[int, int], tuple[int, int]] | None = None
    # Changed lines past the first MAX_DIFF_LINES, counted but not listed.
    not_listed: int = 0

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.sizes)


WORDS = re.compile(r"\s+|\w+|[^\w\s]")

# difflib's matching costs the product of the two sides' lengths, and more when they repeat
# themselves (a long paragraph's spaces): every comparison has a budget, so any plan's page has
# a bound. Two texts whose line counts multiply past LINE_BUDGET are compared by size only; a
# reworded line has its words marked when both sides are at most WORD_DIFF_LINE_CHARS long and
# while the characters compared so far (multiplied pairwise) stay within WORD_BUDGET, else it is
# shown whole; at most MAX_DIFF_LINES lines are listed. Blank lines never anchor a match, and
# when other lines repeat so often on both sides that matching them would cost more than
# REPEAT_BUDGET per pass, difflib's own heuristic leaves the most frequent ones out as well.
LINE_BUDGET = 4_000_000
CHANGES_CACHE_SECONDS = 3600
REPEAT_BUDGET = 100_000
WORD_DIFF_LINE_CHARS = 2_000
WORD_BUDGET = 20_000_000
MAX_DIFF_LINES = 2_000


def _word_changes(old: str, new: str) -> tuple[tuple, tuple]:
    """Both lines in pieces, the words that differ marked "changed"."""
    old_words, new_words = WORDS.findall(old), WORDS.findall(new)
    old_parts: list[tuple[str, str]] = []
    new_parts: list[tuple[str, str]] = []
    matcher = difflib.SequenceMatcher(None, old_words, new_words, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        kind = "same" if tag == "equal" else "changed"
        if i2 > i1:
            old_parts.append((kind, "".join(old_words[i1:i2])))
        if j2 > j1:
            new_parts.append((kind, "".join(new_words[j1:j2])))
    return tuple(old_parts), tuple(new_parts)


def _is_blank(line: str) -> bool:
    return not line.strip()


def _repeats(old_lines: list[str], new_lines: list[str]) -> int:
    """How many pairs of equal non-blank lines the two sides have: one matching pass's cost."""
    old_counts = Counter(line for line in old_lines if line.strip())
    return sum(old_counts[line] for line in new_lines if line in old_counts)


def plan_changes_since(previous: Plan, plan: Plan) -> PlanDiff:
    """What changed from one revision to the next, computed once per pair in each process (a
    revision's text never changes)."""
    key = f"plan-changes:{previous.pk}:{plan.pk}"
    changes = cache.get(key)
    if changes is None:
        changes = plan_changes(previous.markdown, plan.markdown)
        cache.set(key, changes, timeout=CHANGES_CACHE_SECONDS)
    return changes


def plan_diff(old: str, new: str) -> list[DiffLine]:
    """Changed lines with a little context, as a reader compares two texts."""
    return plan_changes(old, new).lines


def plan_changes(old: str, new: str) -> PlanDiff:
    """Changed lines with a little context, as a reader compares two revisions; a line that
    was only reworded shows which words changed. Bounded in cost whatever the texts are."""
    old_lines, new_lines = old.splitlines(), new.splitlines()
    if len(old_lines) * len(new_lines) > LINE_BUDGET:
        changed = old != new
        return PlanDiff(
            lines=[],
            added=len(new_lines) if changed else 0,
            removed=len(old_lines) if changed else 0,
            sizes=((len(old_lines), len(old)), (len(new_lines), len(new))) if changed else None,
        )
    matcher = difflib.SequenceMatcher(
        _is_blank, old_lines, new_lines, autojunk=_repeats(old_lines, new_lines) > REPEAT_BUDGET
    )
    lines: list[DiffLine] = []
    added = removed = 0
    word_budget = WORD_BUDGET
    for group in matcher.get_grouped_opcodes(DIFF_CONTEXT):
        if lines or group[0][1] > 0:
            lines.append(DiffLine("gap", ""))
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                lines += [DiffLine("context", line) for line in old_lines[i1:i2]]
                continue
            olds, news = old_lines[i1:i2], new_lines[j1:j2]
            removed += len(olds)
            added += len(news)
            pairs: list[tuple[tuple, tuple]] = []
            if tag == "replace" and len(olds) == len(news):
                for a, b in zip(olds, news, strict=True):
                    word_budget -= len(a) * len(b)
                    if max(len(a), len(b)) > WORD_DIFF_LINE_CHARS or word_budget < 0:
                        break
                    pairs.append(_word_changes(a, b))
            if len(pairs) == len(olds) and pairs:
                lines += [DiffLine("remove", a, p[0]) for a, p in zip(olds, pairs, strict=True)]
                lines += [DiffLine("add", b, p[1]) for b, p in zip(news, pairs, strict=True)]
            else:
                lines += [DiffLine("remove", line) for line in olds]
                lines += [DiffLine("add", line) for line in news]
    not_listed = max(0, len(lines) - MAX_DIFF_LINES)
    return PlanDiff(
        lines=lines[:MAX_DIFF_LINES], added=added, removed=removed, not_listed=not_listed
    )


@dataclass(frozen=True)
class MarkedPlan:
    """A revision's rendered plan with what changed since the previous one marked inside it."""

    html: SafeString  # empty when nothing changed or the two were not compared
    added: int
    removed: int
    # False when the two were too large to compare block by block: shown unmarked.
    compared: bool = True

    def __bool__(self) -> bool:
        return bool(self.added or self.removed)


def plan_marked_since(previous: Plan, plan: Plan) -> MarkedPlan:
    """`plan_marked` for two revisions, once per pair in each process (revisions never
    change)."""
    key = f"plan-marked:{previous.pk}:{plan.pk}"
    marked = cache.get(key)
    if marked is None:
        marked = plan_marked(
            previous.markdown, plan.markdown, old_title=previous.title, new_title=plan.title
        )
        cache.set(key, marked, timeout=CHANGES_CACHE_SECONDS)
    return marked


def plan_marked(old: str, new: str, *, old_title: str, new_title: str) -> MarkedPlan:
    """The new revision rendered, its blocks (paragraphs, headings, code blocks, tables, list
    items) that are new marked "added" and the old ones it no longer has shown in place,
    marked "removed". Compared as the lines are, with the same budget."""
    # Blocks are never more than lines: texts within the line diff's budget are within this
    # one's, and the others are not even parsed (the page shows the plan as it is). Nor are
    # revisions past the rendering budget: the page shows those as their text.
    if (
        len(old.splitlines()) * len(new.splitlines()) > LINE_BUDGET
        or renders_as_text(old)
        or renders_as_text(new)
    ):
        return MarkedPlan(SafeString(""), 0, 0, compared=False)
    old_blocks = plan_blocks(old, title=old_title)
    new_blocks = plan_blocks(new, title=new_title)
    old_keys = [block.key for block in old_blocks]
    new_keys = [block.key for block in new_blocks]
    matcher = difflib.SequenceMatcher(
        None, old_keys, new_keys, autojunk=_repeats(old_keys, new_keys) > REPEAT_BUDGET
    )
    blocks: list[tuple[str, Block]] = []
    added = removed = 0
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            blocks += [("same", block) for block in new_blocks[j1:j2]]
            continue
        changed = [("removed", block) for block in old_blocks[i1:i2]]
        changed += [("added", block) for block in new_blocks[j1:j2]]
        # Items that go on the list just shown come first, so it is not cut in two.
        shown_list = blocks[-1][1].list_open if blocks else None
        blocks += sorted(changed, key=lambda pair: not same_list(pair[1].list_open, shown_list))
        removed += i2 - i1
        added += j2 - j1
    return MarkedPlan(render_marked(blocks), added, removed)
