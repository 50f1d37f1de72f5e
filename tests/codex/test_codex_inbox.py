"""A Codex request on the inbox offers only what Codex can do with the answer."""

from __future__ import annotations

import pytest

from dashboard.models import Client
from tests.planmode.test_inbox_views import items, make_request, make_session

pytestmark = pytest.mark.django_db


def buttons(item) -> list[str]:
    return [b.attrs["value"] for b in item.find_all("button") if b.attrs.get("name") == "action"]


def test_a_codex_request_offers_no_always_allow(client, reviewer, user):
    session, agent = make_session(user)
    session.client = Client.CODEX
    session.save(update_fields=["client"])
    make_request(agent, tool_input={"command": "npm install left-pad"})
    client.force_login(reviewer)

    [item] = items(client.get("/inbox/"))

    assert buttons(item) == ["allow", "deny", "stop"]
    assert not item.find_all("input", name="remember")
    assert "always-allow" not in item.text()
    assert "npm install left-pad" in item.text()


def test_a_claude_code_request_still_offers_it(client, reviewer, user):
    _, agent = make_session(user)
    make_request(agent)
    client.force_login(reviewer)

    [item] = items(client.get("/inbox/"))

    assert buttons(item) == ["allow", "remember", "deny", "stop"]
