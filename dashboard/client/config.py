"""What every hook command shares: its configuration, its one kind of failure and the origin
headers its requests carry. Plain Python with only the imports a hook command needs (see
`transport`)."""

from __future__ import annotations

from dashboard.client.origin import origin_headers

TYPE_CHECKING = False  # `typing.TYPE_CHECKING` without importing typing at run time
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

TOKEN_VARIABLE = "AGENTBOARD_TOKEN"  # noqa: S105 - the variable's name, not a secret


class HookFailed(Exception):
    """The hook cannot do its job; the message is one sentence for stderr."""


class HookConfig:
    """How a hook command reaches the server and how long it waits. (A plain class: importing
    `dataclasses` would cost the hook command more than the rest of what it imports.)"""

    __slots__ = (
        "hook_timeout",
        "max_backoff",
        "plan_wait",
        "report_origin",
        "timeout",
        "token",
        "url",
    )

    def __init__(
        self,
        url: str,
        token: str,
        timeout: float = 10.0,
        plan_wait: float = 540.0,
        max_backoff: float = 5.0,
        hook_timeout: float | None = None,
        report_origin: bool = True,
    ) -> None:
        self.url = url
        self.token = token
        self.timeout = timeout
        self.plan_wait = plan_wait
        self.max_backoff = max_backoff
        # How long the agent lets this hook run (its installed timeout), when the install said.
        self.hook_timeout = hook_timeout
        # Whether requests say which repository and machine the session runs on (`origin`).
        self.report_origin = report_origin

    def waiting(self, timeout: float) -> HookConfig:
        """The same config with another timeout for the server's answer."""
        return HookConfig(
            self.url,
            self.token,
            timeout=timeout,
            plan_wait=self.plan_wait,
            max_backoff=self.max_backoff,
            hook_timeout=self.hook_timeout,
            report_origin=self.report_origin,
        )


def where_headers(config: HookConfig, payload: Mapping[str, Any]) -> dict[str, str]:
    """The repository and host headers for this hook input, unless the user opted out."""
    return origin_headers(payload.get("cwd")) if config.report_origin else {}
