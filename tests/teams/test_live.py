"""The sockets obey the rule too: a board of another team's session is not there, an overview
hears only the rows its viewer may see, and a change of who sees what makes every browser
reconnect and read it afresh."""

from __future__ import annotations

import pytest
from channels.db import database_sync_to_async
from django.test import Client

from dashboard.core.writer import write
from dashboard.live import publisher as live
from dashboard.live.boards import CLOSE_RECONNECT
from dashboard.models import Session
from dashboard.teams.services import member_add
from planmode.services import plan_decide
from tests.conftest import BROWSER_ORIGIN
from tests.teams.conftest import SESSION_ID

pytestmark = pytest.mark.django_db(transaction=True)

NOT_FOUND = 4404


@pytest.fixture
def browser(open_socket):
    async def open_page(user, path: str):
        client = Client()
        await database_sync_to_async(client.force_login)(user)
        cookie = client.cookies["sessionid"].value
        socket, accepted = await open_socket(
            path, {"Origin": BROWSER_ORIGIN, "Cookie": f"sessionid={cookie}"}
        )
        assert accepted
        return socket

    return open_page


async def closed_with(socket) -> int:
    message = await socket.receive_output(timeout=5)
    while message["type"] != "websocket.close":
        message = await socket.receive_output(timeout=5)
    return message["code"]


async def test_another_teams_board_and_review_page_are_not_there(world, browser, outsider):
    ana = await browser(outsider, f"/ws/board/?session={SESSION_ID}")
    assert await closed_with(ana) == NOT_FOUND
    review = await browser(outsider, f"/ws/board/?plans={world.plan.pk}")
    assert await closed_with(review) == NOT_FOUND
    sam = await browser(world.sam, f"/ws/board/?session={SESSION_ID}")
    assert "Orders paging" in await sam.receive_from(timeout=5)


async def test_an_overview_hears_only_the_rows_its_viewer_may_see(world, browser, outsider):
    ana = await browser(outsider, "/ws/board/")
    sam = await browser(world.sam, "/ws/board/")
    row = f'id="session-row-{world.session.pk}"'
    assert row not in await ana.receive_from(timeout=5)
    assert row in await sam.receive_from(timeout=5)

    await write(plan_decide, plan_id=world.plan.pk, reviewer=world.sam, approve=True)
    await live.settled()

    assert row in await sam.receive_from(timeout=5)
    assert await ana.receive_nothing(timeout=0.5)


async def test_a_team_change_makes_every_browser_reconnect_and_see_anew(world, browser):
    ana = await browser(world.ana, "/ws/board/")
    await ana.receive_from(timeout=5)  # the snapshot, without the Shop session

    await write(member_add, team_pk=world.shop.pk, username="ana", role="member")
    await live.settled()
    assert await closed_with(ana) == CLOSE_RECONNECT

    again = await browser(world.ana, "/ws/board/")
    assert f'id="session-row-{world.session.pk}"' in await again.receive_from(timeout=5)
    assert await database_sync_to_async(
        Session.objects.filter(session_id=SESSION_ID, team=world.shop).exists
    )()
