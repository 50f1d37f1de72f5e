"""Panels a capability adds to a page of a floor below it: the project page and a plan's
review page show what the agents cost (`dashboard.costs`), which they cannot import. Each
panel renders itself for the viewer (who must be allowed to see the page) and returns HTML,
or "" to show nothing."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import Any

from django.http import HttpRequest
from django.utils.safestring import SafeString

# A panel renders a template (so its text is escaped) or returns "" to show nothing.
Panel = Callable[..., SafeString | str]

# The page's name ("project", "plan") -> its panels, in the order registered.
PANELS: dict[str, list[Panel]] = defaultdict(list)


def panels(page: str, request: HttpRequest, **about: Any) -> list[SafeString]:
    """The HTML of each panel of `page` for this request (rendered templates, so escaped)."""
    shown = (panel(request, **about) for panel in PANELS.get(page, ()))
    return [html for html in shown if isinstance(html, SafeString) and html]
