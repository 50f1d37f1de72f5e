"""Two teams and what waits in one of them: the people each surface is tried with.

- sam reviews the Shop team; dana is a member of it and owns a session in its project, where
  a plan, a permission request, a countdown and an agent that needs a look all wait;
- ana reviews another team (Infra): the member of another team every surface must refuse (and
  `outsider` adds raj, a plain member of Infra);
- lead is an admin (a superuser), who sees everything.
"""

from __future__ import annotations

from dataclasses import dataclass
from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.utils import timezone

from dashboard.activity.models import Concern, ConcernKind
from dashboard.models import Agent, AgentToken, Membership, Project, Session, Team, TeamRole
from planmode.models import PermissionRequest, Plan
from planmode.permissions import input_key
from planmode.services import plan_submit
from tests.hooks.conftest import hook  # noqa: F401 - the hook fixture, for these tests too
from todos.models import Continuation

SESSION_ID = "shop-session-1"
PLAN = "# Cursor pagination for orders\n\nPage the orders list with a cursor."


@dataclass
class World:
    shop: Team
    infra: Team
    project: Project
    session: Session
    agent: Agent
    plan: Plan
    request: PermissionRequest
    countdown: Continuation
    concern: Concern
    sam: User
    dana: User
    ana: User


@pytest.fixture
def world(db, reviewer, user, other_user) -> World:
    shop = Team.objects.create(name="Shop")
    infra = Team.objects.create(name="Infra")
    sam = User.objects.create_user("sam", password="a-long-password-5")
    dana, ana = user, other_user
    Membership.objects.create(team=shop, user=sam, role=TeamRole.REVIEWER)
    Membership.objects.create(team=shop, user=dana, role=TeamRole.MEMBER)
    Membership.objects.create(team=infra, user=ana, role=TeamRole.REVIEWER)
    project = Project.objects.create(
        key="github.com/acme/shop", name="shop", repository="github.com/acme/shop", team=shop
    )
    plan = plan_submit(
        owner=dana,
        session_id=SESSION_ID,
        agent_id=SESSION_ID,
        plan=PLAN,
        plan_file_path=None,
        source=Plan.Source.API,
    ).plan
    Session.objects.filter(session_id=SESSION_ID).update(
        project_record=project, project_name="shop", team=shop, title="Orders paging"
    )
    session = Session.objects.get(session_id=SESSION_ID)
    agent = Agent.objects.get(session=session, agent_id=SESSION_ID)
    tool_input = {"command": "make release-orders"}
    request = PermissionRequest.objects.create(
        session=session,
        agent=agent,
        tool_name="Bash",
        tool_input=tool_input,
        input_key=input_key("Bash", tool_input),
    )
    countdown = Continuation.objects.create(
        agent=agent,
        status=Continuation.Status.COUNTING,
        reason="2 tasks left",
        unfinished=2,
        deadline=timezone.now() + timezone.timedelta(minutes=5),
    )
    concern = Concern.objects.create(
        agent=agent, session=session, kind=ConcernKind.LOOPING, since=timezone.now()
    )
    # What search finds: indexed as the write path would have.
    call_command("rebuild_search", stdout=StringIO())
    return World(
        shop=shop,
        infra=infra,
        project=project,
        session=Session.objects.get(pk=session.pk),
        agent=agent,
        plan=Plan.objects.get(pk=plan.pk),
        request=request,
        countdown=countdown,
        concern=concern,
        sam=sam,
        dana=dana,
        ana=ana,
    )


@pytest.fixture(params=["reviewer", "member"], ids=["its reviewer", "a member"])
def outsider(request, world: World) -> User:
    """Someone of another team (Infra): ana, its reviewer, or raj, a plain member of it."""
    if request.param == "reviewer":
        return world.ana
    raj = User.objects.create_user("raj", password="a-long-password-7")
    Membership.objects.create(team=world.infra, user=raj, role=TeamRole.MEMBER)
    return raj


def token_of(user: User) -> str:
    return AgentToken.issue(owner=user, label="test")[1]
