"""Domain services as most tests call them: the result alone, without the `Changes` each one
reports to the publisher (tests of live updates go through the writer instead)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from dashboard.live import waiting
from planmode import services as plan_services
from planmode.models import Plan
from todos import enforcer as enforcer_module


def plan_submit(**kwargs: Any) -> Plan:
    return plan_services.plan_submit(**kwargs).plan


def plan_decide(**kwargs: Any) -> Plan:
    return plan_services.plan_decide(**kwargs).plan


def plan_expire(**kwargs: Any) -> Plan:
    return plan_services.plan_expire(**kwargs).plan


class _Enforcer(SimpleNamespace):
    """`todos.enforcer` with its results unwrapped."""

    def __getattr__(self, name: str) -> Any:
        return getattr(enforcer_module, name)

    @staticmethod
    def on_step(**kwargs: Any) -> str | None:
        return enforcer_module.on_step(**kwargs).text

    @staticmethod
    def on_user_prompt(**kwargs: Any) -> str | None:
        return enforcer_module.on_user_prompt(**kwargs).text

    @staticmethod
    def on_session_start(**kwargs: Any) -> str | None:
        return enforcer_module.on_session_start(**kwargs).text

    @staticmethod
    def on_hook(**kwargs: Any) -> str | None:
        return enforcer_module.on_hook(**kwargs).text

    @staticmethod
    def continuation_begin(**kwargs: Any):
        return enforcer_module.continuation_begin(**kwargs).continuation

    @staticmethod
    def continuation_finish(**kwargs: Any):
        return enforcer_module.continuation_finish(**kwargs).continuation

    @staticmethod
    def continuation_cancel(**kwargs: Any) -> bool:
        return enforcer_module.continuation_cancel(**kwargs).cancelled

    stop_hook_answer = staticmethod(waiting.stop_hook_answer)


enforcer = _Enforcer()
