from __future__ import annotations

from django.apps import AppConfig


class CostsConfig(AppConfig):
    name = "dashboard.costs"
    label = "costs"
    verbose_name = "Costs"

    def ready(self) -> None:
        from dashboard.board.selectors import CARD_PARTS, SUMMARY_PARTS
        from dashboard.core.gates import TOOL_GATES
        from dashboard.core.panels import PANELS
        from dashboard.costs.budgets import tool_refusal
        from dashboard.costs.panels import plan_panel, project_panel
        from dashboard.costs.selectors import usage_by_agent, usage_by_session

        # Each session's tokens and cost so far, on its overview row and board header, and
        # each agent's on its card.
        SUMMARY_PARTS["usage"] = usage_by_session
        CARD_PARTS["usage"] = usage_by_agent
        # A project's cost and chart; what an approved plan's work has cost since.
        for page, panel in (("project", project_panel), ("plan", plan_panel)):
            if panel not in PANELS[page]:
                PANELS[page].append(panel)
        # A budget spent stops a session's tool calls, if it says so.
        if tool_refusal not in TOOL_GATES:
            TOOL_GATES.append(tool_refusal)
