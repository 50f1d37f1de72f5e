"""A sign-in through the identity provider as one write (`dashboard.sso.services`): who it
finds, what the groups claim makes of them, and what the audit log says; password sign-ins'
entries; who may read them; the discovery document's checks."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.exceptions import ImproperlyConfigured
from django.db import transaction
from django.test import Client

from dashboard.audit.selectors import readable
from dashboard.core.visibility import audience_of
from dashboard.core.writer import write_sync
from dashboard.models import AuditEntry, Membership, Team
from dashboard.sso import provider
from dashboard.sso.models import Identity
from dashboard.sso.services import Claims, SignInRefused, sso_sign_in

User = get_user_model()
ISSUER = "https://sso.example.com/realms/acme"


def sign_in(groups: list[str] | object, **claims: object):
    """As the callback does it: in the writer, one transaction."""
    claims = {"sub": "subject-1", "preferred_username": "dana", **claims, "groups": groups}
    return write_sync(sso_sign_in, issuer=ISSUER, claims=Claims.of(claims), address="10.0.0.7")


def roles(user) -> dict[str, str]:
    return dict(Membership.objects.filter(user=user).values_list("team__name", "role"))


def actions() -> list[tuple[str, str, str]]:
    return list(AuditEntry.objects.order_by("pk").values_list("action", "actor_name", "surface"))


@pytest.fixture
def teams(db) -> dict[str, Team]:
    return {name: Team.objects.create(name=name) for name in ("Shop", "Infra", "Docs")}


def test_a_new_person_gets_an_account_and_the_teams_their_groups_name(teams):
    outcome = sign_in(["shop", "INFRA:reviewers", "marketing"], name="Dana <i>Quinn</i>")
    dana = outcome.value
    assert (dana.username, dana.first_name, dana.last_name) == ("dana", "Dana", "<i>Quinn</i>")
    assert not dana.has_usable_password()
    assert roles(dana) == {"Shop": "member", "Infra": "reviewer"}
    assert outcome.changes.audiences_changed
    assert actions() == [("team.member_added", "dana", "single sign-on")] * 2
    entry = AuditEntry.objects.get(team=teams["Infra"])
    assert (entry.summary, entry.address) == ("dana joined Infra as a reviewer.", "10.0.0.7")


def test_the_same_subject_is_the_same_person_whatever_their_name_or_address(teams):
    first = sign_in([], email="dana@example.com", email_verified=True).value
    again = sign_in([], preferred_username="dana.q", email="dq@example.com").value
    assert again.pk == first.pk and User.objects.count() == 1
    assert again.email == "dana@example.com"  # an unverified address does not replace it


def first_sign_in(subject: str, email: str):
    claims = Claims.of({"sub": subject, "email": email, "email_verified": True})
    return write_sync(sso_sign_in, issuer=ISSUER, claims=claims, address=None).value


def test_a_local_account_is_never_taken_over_by_e_mail_unless_linking_is_on(teams):
    local = User.objects.create_user("dana", email="Dana@Example.com")
    newcomer = first_sign_in("subject-2", "dana@example.com")
    assert newcomer.pk != local.pk and newcomer.username == "dana-2"


def test_with_linking_on_a_local_account_is_taken_over_only_on_a_verified_address(teams, settings):
    settings.AGENTBOARD_OIDC_LINK_BY_EMAIL = True
    local = User.objects.create_user("dana", email="dana@example.com")
    unverified = sign_in([], email="dana@example.com").value
    assert unverified.pk != local.pk and unverified.username == "dana-2"
    unverified.delete()
    assert first_sign_in("subject-2", "Dana@Example.com").pk == local.pk


def test_with_linking_on_an_address_of_two_accounts_or_of_someone_elses_is_refused(teams, settings):
    settings.AGENTBOARD_OIDC_LINK_BY_EMAIL = True
    first_sign_in("subject-1", "ana@example.com")  # made anew: nobody had the address
    with pytest.raises(SignInRefused, match="belongs to someone else who signs in with"):
        first_sign_in("subject-2", "ana@example.com")
    User.objects.create_user("ana.local", email="ANA@example.com")
    with pytest.raises(SignInRefused, match="More than one Agentboard account has the address"):
        first_sign_in("subject-3", "ana@example.com")
    assert User.objects.count() == 2 and Identity.objects.count() == 1


def test_a_removed_group_removes_its_membership_and_a_hand_made_one_stays(teams):
    dana = sign_in(["shop", "infra"]).value
    Membership.objects.create(team=teams["Docs"], user=dana, role="reviewer")
    outcome = sign_in(["shop:reviewers", "docs"])
    assert roles(dana) == {"Shop": "reviewer", "Docs": "reviewer"}
    assert outcome.changes.audiences_changed
    assert [action for action, *_ in actions()][-2:] == [
        "team.member_changed",
        "team.member_removed",
    ]
    unchanged = sign_in(["shop:reviewers", "docs"])
    assert not unchanged.changes.audiences_changed
    sign_in([])
    assert roles(dana) == {"Docs": "reviewer"}


def test_the_admin_group_gives_and_takes_the_admin_role(teams, settings):
    settings.AGENTBOARD_OIDC_ADMIN_GROUP = "agentboard-admins"
    dana = sign_in(["Agentboard-Admins"]).value
    assert dana.is_superuser and dana.is_staff
    dana = sign_in(["shop"]).value
    assert not dana.is_superuser and not dana.is_staff
    summaries = list(
        AuditEntry.objects.filter(action="role.changed")
        .order_by("pk")
        .values_list("summary", flat=True)
    )
    assert summaries == ["dana is an admin.", "dana is no longer an admin."]


def test_groups_that_cannot_be_read_are_left_out_with_a_log_line(teams, caplog):
    assert Claims.of({"sub": "s", "groups": "shop"}).groups == ("shop",)
    assert Claims.of({"sub": "s", "groups": {"shop": 1}}).groups == ()
    overlong = Claims.of({"sub": "s", "groups": ["x" * 5000, "shop\x00", 7, "infra"]})
    assert overlong.groups == ("shop", "infra")
    assert "Ignored a group whose name is longer than 110 characters." in caplog.text
    assert "The groups claim is not a list of names; no groups were read." in caplog.text
    many = Claims.of({"sub": "s", "groups": [f"g{n}" for n in range(5000)]})
    assert len(many.groups) == 200


def test_a_sign_in_reads_a_bounded_number_of_queries(teams, django_assert_max_num_queries):
    sign_in(["shop"])
    groups = ["shop", "infra:reviewers"] + [f"group-{n}" for n in range(190)]
    claims = Claims.of({"sub": "subject-1", "groups": groups})
    with django_assert_max_num_queries(20) as counted, transaction.atomic():
        sso_sign_in(issuer=ISSUER, claims=claims, address=None)
    assert len(counted) > 5


def test_a_password_sign_in_a_failure_and_a_sign_out_are_recorded(user):
    client = Client(REMOTE_ADDR="192.0.2.4")
    client.post("/accounts/login/", {"username": "dana", "password": "wrong"})
    client.post("/accounts/login/", {"username": "<b>nobody</b>", "password": "wrong"})
    client.post("/accounts/login/", {"username": "dana", "password": "a-long-password-1"})
    client.post("/accounts/logout/")
    rows = list(AuditEntry.objects.order_by("pk").values_list("action", "actor_name", "address"))
    assert rows == [
        ("auth.failed", "dana", "192.0.2.4"),
        ("auth.failed", "", "192.0.2.4"),
        ("auth.signed_in", "dana", "192.0.2.4"),
        ("auth.signed_out", "dana", "192.0.2.4"),
    ]
    assert AuditEntry.objects.filter(summary__contains="“<b>nobody</b>”").count() == 1


def test_sign_ins_are_for_admins_and_a_teams_changes_for_its_reviewers(teams, user, reviewer):
    sam = User.objects.create_user("sam")
    sam.user_permissions.add(Permission.objects.get(codename="review_plan"))
    Membership.objects.create(team=teams["Infra"], user=sam, role="reviewer")
    Client().post("/accounts/login/", {"username": "dana", "password": "wrong"})
    sign_in(["infra", "shop"])
    seen = {
        person.username: sorted(
            AuditEntry.objects.filter(readable(audience_of(person))).values_list(
                "summary", flat=True
            )
        )
        for person in (User.objects.get(pk=sam.pk), User.objects.get(pk=reviewer.pk))
    }
    assert seen["sam"] == ["dana-2 joined Infra as a member."]  # a local dana exists
    assert len(seen["lead"]) == 3


def test_the_login_page_has_the_providers_button_only_when_there_is_one(db):
    assert "Log in with" not in Client().get("/accounts/login/").content.decode()
    provider.use(provider.provider_of(ISSUER, discovery()))
    try:
        page = Client().get("/accounts/login/?next=/teams/").content.decode()
    finally:
        provider.use(None)
    assert 'href="/oidc/start/?next=/teams/"' in page
    assert ">Log in with sso.example.com</a>" in page


def discovery(**changes: object) -> dict[str, object]:
    return {
        "issuer": ISSUER,
        "authorization_endpoint": f"{ISSUER}/auth",
        "token_endpoint": f"{ISSUER}/token",
        "jwks_uri": f"{ISSUER}/certs",
        "userinfo_endpoint": f"{ISSUER}/userinfo",
        "id_token_signing_alg_values_supported": ["HS256", "ES256"],
        "token_endpoint_auth_methods_supported": ["client_secret_post"],
        **changes,
    }


def test_a_discovery_document_is_read_with_care():
    found = provider.provider_of(ISSUER, discovery())
    assert (found.algorithm, found.basic_auth, found.end_session_endpoint) == ("ES256", False, "")
    problems = {
        "calls itself": discovery(issuer="https://evil.example.com"),
        "no usable token_endpoint": discovery(token_endpoint="javascript:alert(1)"),
        "no usable jwks_uri": discovery(jwks_uri=None),
        "signs ID tokens with none of": discovery(id_token_signing_alg_values_supported=["none"]),
        "did not answer with an OpenID Connect discovery document": ["not", "a", "document"],
    }
    for sentence, document in problems.items():
        with pytest.raises(ImproperlyConfigured, match=sentence):
            provider.provider_of(ISSUER, document)


def test_the_callback_and_start_are_not_found_without_a_provider(db):
    assert Client().get("/oidc/start/").status_code == 404
    assert Client().get("/oidc/callback/?code=x&state=y").status_code == 404
