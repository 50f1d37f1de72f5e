"""A reviewer's clicks on async views (deciding, answering) read who they are once a second at
most (`dashboard.core.security`); whatever takes their right to click away still takes effect at
once in this process, and within a second when another process made the change."""

from __future__ import annotations

import asyncio
from copy import deepcopy

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import Permission, User
from django.test import AsyncClient

from dashboard.core.security import SIGNED_IN_SECONDS
from planmode.models import Plan

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("sync_thread_connections_closed"),
]


@pytest.fixture
def two_plans(submit) -> tuple[Plan, Plan]:
    return submit(session_id="api"), submit(session_id="shop")


async def decide(browser: AsyncClient, plan: Plan):
    return await browser.post(f"/plans/{plan.pk}/decide/", {"action": "approve", "text": ""})


async def status_of(plan: Plan) -> str:
    return (await Plan.objects.aget(pk=plan.pk)).status


async def signed_in(user: User) -> AsyncClient:
    browser = AsyncClient()
    await browser.aforce_login(user)
    return browser


async def test_taking_the_review_permission_away_refuses_the_very_next_click(
    two_plans, second_reviewer
):
    first, second = two_plans
    browser = await signed_in(second_reviewer)
    assert (await decide(browser, first)).status_code == 302

    permission = await Permission.objects.aget(codename="review_plan")
    await sync_to_async(second_reviewer.user_permissions.remove)(permission)

    response = await decide(browser, second)
    assert response.status_code == 403
    assert "Only reviewers can decide on plans" in response.content.decode()
    assert await status_of(second) == "pending"


async def test_after_signing_out_the_old_cookie_decides_nothing(two_plans, reviewer):
    first, second = two_plans
    browser = await signed_in(reviewer)
    assert (await decide(browser, first)).status_code == 302
    old_cookies = deepcopy(browser.cookies)  # the logout's answer clears the client's own

    assert (await browser.post("/accounts/logout/")).status_code == 302

    stolen = AsyncClient()
    stolen.cookies = old_cookies
    response = await decide(stolen, second)
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")
    assert await status_of(second) == "pending"


async def test_a_user_deactivated_by_another_process_is_refused_within_a_second(
    two_plans, reviewer
):
    first, second = two_plans
    browser = await signed_in(reviewer)
    assert (await decide(browser, first)).status_code == 302

    # An update that sends no signal here, as one made by another server process.
    await User.objects.filter(pk=reviewer.pk).aupdate(is_active=False)
    await asyncio.sleep(SIGNED_IN_SECONDS + 0.1)

    response = await decide(browser, second)
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")
    assert await status_of(second) == "pending"
