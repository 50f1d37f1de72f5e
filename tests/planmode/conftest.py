from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.auth.models import Permission, User

from planmode.models import Plan
from tests.domain import plan_submit

PLAN = "# Pagination\n\n1. Cursor based paging\n- [ ] limit max 100\n"


@pytest.fixture
def submit(user) -> Callable[..., Plan]:
    """Submit a plan as `user`'s agent, through the service the API and socket use."""

    def submit(
        session_id: str = "sess-1", agent_id: str | None = None, plan: str = PLAN, **options
    ) -> Plan:
        options.setdefault("plan_file_path", None)
        options.setdefault("source", Plan.Source.API)
        return plan_submit(
            owner=user, session_id=session_id, agent_id=agent_id or session_id, plan=plan, **options
        )

    return submit


@pytest.fixture
def second_reviewer(db) -> User:
    """A reviewer by permission rather than as a superuser."""
    reviewer = User.objects.create_user("mia", password="a-long-password-4")
    reviewer.user_permissions.add(Permission.objects.get(codename="review_plan"))
    return User.objects.get(pk=reviewer.pk)
