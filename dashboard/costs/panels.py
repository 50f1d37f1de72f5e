"""What the costs add to other capabilities' pages (`dashboard.core.panels`): a project's
cost and chart, an approved plan's cost since its approval."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Any

from django.http import HttpRequest
from django.template.loader import render_to_string
from django.utils import timezone

from dashboard.core.visibility import audience_of
from dashboard.costs import selectors
from dashboard.costs.selectors import CostSummary, SessionUsage

CHART_WIDTH = 300
CHART_HEIGHT = 60
BAR_GAP = 2


@dataclass(frozen=True)
class Bar:
    day: date
    usage: SessionUsage
    x: int
    y: float
    height: float
    today: bool


@dataclass(frozen=True)
class Chart:
    bars: list[Bar]
    bar_width: int
    peak_text: str
    peak_day: date | None
    width: int = CHART_WIDTH
    height: int = CHART_HEIGHT


def chart_of(summary: CostSummary) -> Chart:
    """The bars of a summary's days, scaled to its dearest day; a day with any cost shows at
    least a sliver."""
    count = max(1, len(summary.days))
    step = CHART_WIDTH // count
    peak = summary.peak_micros
    today = timezone.localdate()
    bars = []
    for n, day in enumerate(summary.days):
        cost = day.usage.cost_micros
        height = 0.0 if not peak else max(1.0, CHART_HEIGHT * cost / peak) if cost else 0.0
        bars.append(
            Bar(day.day, day.usage, n * step, round(CHART_HEIGHT - height, 2), round(height, 2),
                day.day == today)
        )  # fmt: skip
    dearest = max(summary.days, key=lambda d: d.usage.cost_micros, default=None)
    return Chart(
        bars=bars,
        bar_width=max(1, step - BAR_GAP),
        peak_text=dearest.usage.cost_text if dearest else "$0.00",
        peak_day=dearest.day if dearest else None,
    )


def summary_html(
    request: HttpRequest, summary: CostSummary, *, heading_id: str, whose: str, extra: str = ""
) -> str:
    return render_to_string(
        "costs/_summary.html",
        {
            "summary": summary,
            "chart": chart_of(summary),
            "heading_id": heading_id,
            "whose": whose,
            "extra": extra,
        },
        request=request,
    )


def project_panel(request: HttpRequest, *, project: Any, **_: Any) -> str:
    from dashboard.costs.budget_views import budgets_html

    summary = selectors.cost_summary(audience_of(request.user), project_pk=project.pk)
    return summary_html(
        request,
        summary,
        heading_id="cost-title",
        whose="the sessions of it you see",
        extra=budgets_html(request, project=project),
    )


def plan_panel(request: HttpRequest, *, plan: Any, **_: Any) -> str:
    usage = selectors.plan_cost(plan)
    if usage is None:
        return ""
    return render_to_string("costs/_plan_cost.html", {"usage": usage}, request=request)
