"""The inbox and the header count update live, each for its own audience."""

from __future__ import annotations

import asyncio

import pytest
from channels.testing import WebsocketCommunicator
from django.test import AsyncClient

from dashboard.core.writer import write
from dashboard.live.consumers import BoardConsumer
from planmode.models import PermissionRequest
from planmode.permissions import Answer, permission_decide
from tests.hooks.conftest import HOOK_URL, load_fixture

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("sync_thread_connections_closed"),
]


async def board_socket(user, query: str) -> WebsocketCommunicator:
    communicator = WebsocketCommunicator(BoardConsumer.as_asgi(), f"/ws/board/?{query}")
    communicator.scope["user"] = user
    connected, _ = await communicator.connect()
    assert connected
    return communicator


async def receive_until(communicator: WebsocketCommunicator, text: str) -> str:
    while True:
        html = await communicator.receive_from(timeout=5)
        if text in html:
            return html


async def receive_both(communicator: WebsocketCommunicator, first: str, second: str):
    """The inbox and the header come as two messages, in either order."""
    found: dict[str, str] = {}
    while len(found) < 2:
        html = await communicator.receive_from(timeout=5)
        for text in (first, second):
            if text in html:
                found[text] = html
    return found[first], found[second]


def hold(token: str, payload: dict) -> asyncio.Task:
    client = AsyncClient()
    return asyncio.create_task(
        client.post(
            HOOK_URL,
            payload,
            content_type="application/json",
            headers={"Authorization": f"Bearer {token}"},
        )
    )


async def test_a_new_request_appears_in_an_open_inbox_and_leaves_when_answered(token, reviewer):
    browser = await board_socket(reviewer, "inbox=1")
    snapshot = await browser.receive_from(timeout=5)
    assert 'id="inbox-list"' in snapshot and "Nothing is waiting on you" in snapshot

    held = hold(token, load_fixture("permission_request_bash.json"))
    html, header = await receive_both(browser, "inbox-permission-", 'id="plans-waiting"')
    assert "npm run test -- --watch=false" in html and 'hx-swap-oob="true"' in html
    # Fragments pushed to many browsers carry no CSRF token of their own.
    assert "csrfmiddlewaretoken" not in html
    assert "1 waiting on you" in header

    request = await PermissionRequest.objects.aget()
    await write(permission_decide, request_id=request.pk, user=reviewer, answer=Answer(allow=True))
    html = await receive_until(browser, "Recently decided requests")
    assert "inbox-permission-" not in html
    assert (await asyncio.wait_for(held, 5)).status_code == 200
    await browser.disconnect()


async def test_someone_elses_request_reaches_neither_their_inbox_nor_their_count(
    token, reviewer, other_user
):
    other = await board_socket(other_user, "inbox=1")
    await other.receive_from(timeout=5)
    lead = await board_socket(reviewer, "")
    await lead.receive_from(timeout=5)

    held = hold(token, load_fixture("permission_request_bash.json"))

    assert "1 waiting on you" in await receive_until(lead, 'id="plans-waiting"')
    assert await other.receive_nothing(timeout=0.5)
    held.cancel()
    await other.disconnect()
    await lead.disconnect()


async def test_the_owner_sees_their_own_request_counted(token, user):
    mine = await board_socket(user, "")
    await mine.receive_from(timeout=5)

    held = hold(token, load_fixture("permission_request_bash.json"))

    assert "1 waiting on you" in await receive_until(mine, 'id="plans-waiting"')
    held.cancel()
    await mine.disconnect()
