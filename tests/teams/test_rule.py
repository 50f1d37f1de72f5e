"""The one visibility rule (`dashboard.core.visibility`), person by person."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission, User

from dashboard.core.visibility import EVERYONE, NOBODY, audience_of, audiences_of
from dashboard.models import Membership, Session, TeamRole
from planmode.inbox import inbox_count

pytestmark = pytest.mark.django_db


def seen(user: User) -> set[str]:
    return set(
        Session.objects.filter(audience_of(user).sees()).values_list("session_id", flat=True)
    )


@pytest.fixture
def sessions(world):
    """Besides the Shop session: one of Infra's, one no team owns, and ana's own session in the
    Shop project (she is not in the Shop team)."""
    Session.objects.create(session_id="infra-1", owner=world.ana, team=world.infra)
    Session.objects.create(session_id="open-1", owner=world.dana)
    Session.objects.create(session_id="ana-in-shop", owner=world.ana, team=world.shop)
    return world


def test_an_admin_sees_and_decides_everything(sessions, reviewer):
    assert audience_of(reviewer) == EVERYONE
    assert seen(reviewer) == {"shop-session-1", "infra-1", "open-1", "ana-in-shop"}
    assert audience_of(reviewer).may_decide(sessions.session)


def test_a_member_sees_their_teams_sessions_those_of_no_team_and_their_own(sessions):
    assert seen(sessions.dana) == {"shop-session-1", "open-1", "ana-in-shop"}
    assert seen(sessions.ana) == {"infra-1", "open-1", "ana-in-shop"}


def test_a_teams_reviewer_decides_its_sessions_and_no_other_teams(sessions):
    sam, ana = audience_of(sessions.sam), audience_of(sessions.ana)
    assert sam.may_decide(sessions.session)
    assert not ana.may_decide(sessions.session)
    assert not ana.may_see(sessions.session)
    infra = Session.objects.get(session_id="infra-1")
    assert ana.may_decide(infra) and not sam.may_decide(infra)


def test_a_member_is_waited_on_only_for_their_own_sessions(sessions):
    dana = audience_of(sessions.dana)
    assert not dana.may_decide(sessions.session)
    assert dana.is_waited_on_in(sessions.session)  # her own: she answers her requests
    assert inbox_count(dana).permissions == 1
    assert inbox_count(audience_of(sessions.sam)).total == 4
    assert inbox_count(audience_of(sessions.ana)).total == 0


def test_the_review_permission_reviews_projects_of_no_team_and_the_members_own_teams(sessions):
    permission = Permission.objects.get(codename="review_plan")
    sessions.dana.user_permissions.add(permission)
    dana = audience_of(User.objects.get(pk=sessions.dana.pk))
    assert dana.reviews_open and dana.reviews == {sessions.shop.pk}
    assert dana.may_decide(Session.objects.get(session_id="open-1"))
    assert not dana.may_decide(Session.objects.get(session_id="infra-1"))


def test_without_teams_everyone_sees_everything_as_before(db, user, other_user):
    Session.objects.create(session_id="a", owner=user)
    Session.objects.create(session_id="b", owner=other_user)
    assert seen(user) == seen(other_user) == {"a", "b"}
    assert not audience_of(user).may_decide(Session.objects.get(session_id="b"))


def test_signed_out_or_deactivated_sees_nothing(sessions):
    from django.contrib.auth.models import AnonymousUser

    assert audience_of(AnonymousUser()) == NOBODY
    sessions.sam.is_active = False
    sessions.sam.save()
    assert seen(User.objects.get(pk=sessions.sam.pk)) == set()
    assert audiences_of([sessions.sam.pk])[sessions.sam.pk] == NOBODY


def test_many_peoples_rules_at_once_match_each_ones_own(sessions, reviewer):
    people = [sessions.sam, sessions.dana, sessions.ana, reviewer]
    together = audiences_of(person.pk for person in people)
    assert all(together[person.pk] == audience_of(person) for person in people)


def test_the_raw_condition_for_search_matches_the_querysets(sessions):
    from django.db import connection

    for person in (sessions.sam, sessions.dana, sessions.ana):
        condition, params = audience_of(person).sessions_sql("s")
        table = Session._meta.db_table
        with connection.cursor() as cursor:
            query = f"SELECT s.session_id FROM {table} s WHERE {condition}"  # noqa: S608
            cursor.execute(query, params)
            assert {row[0] for row in cursor.fetchall()} == seen(person)


def test_a_membership_change_is_seen_at_the_next_request(sessions, client):
    client.force_login(sessions.ana)
    assert client.get(f"/sessions/{sessions.session.session_id}/").status_code == 404
    Membership.objects.create(team=sessions.shop, user=sessions.ana, role=TeamRole.MEMBER)
    assert client.get(f"/sessions/{sessions.session.session_id}/").status_code == 200
