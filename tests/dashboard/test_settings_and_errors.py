"""The settings page (password, agent tokens) and the error pages, in the app's layout."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from dashboard.models import AgentToken, hash_token
from tests.conftest import parse_html

pytestmark = pytest.mark.django_db


@pytest.fixture
def logged_in(client, user) -> Client:
    client.force_login(user)
    return client


def test_a_new_token_is_shown_once_and_works_for_the_agent_api(logged_in, user):
    response = logged_in.post("/settings/tokens/", {"label": "laptop"})

    raw = parse_html(response.content).find("input", id="new-token").attrs["value"]
    assert raw.startswith("ab_")
    token = AgentToken.objects.get(owner=user, label="laptop")
    assert token.key_hash == hash_token(raw)
    assert raw not in logged_in.get("/settings/").content.decode()
    answer = Client().get("/api/v1/sessions/nope", headers={"Authorization": f"Bearer {raw}"})
    assert answer.status_code == 404


def test_revoking_a_token_stops_it_and_says_so(logged_in, user):
    token, raw = AgentToken.issue(owner=user, label="old")

    response = logged_in.post(f"/settings/tokens/{token.pk}/revoke/", follow=True)

    token.refresh_from_db()
    assert token.revoked_at is not None
    assert f"Revoked the token {token.hint}" in response.content.decode()
    answer = Client().get("/api/v1/sessions/nope", headers={"Authorization": f"Bearer {raw}"})
    assert answer.status_code == 401


def test_nobody_revokes_another_users_token(logged_in, other_user):
    token, _ = AgentToken.issue(owner=other_user)

    assert logged_in.post(f"/settings/tokens/{token.pk}/revoke/").status_code == 404
    token.refresh_from_db()
    assert token.revoked_at is None


def test_a_user_changes_their_password_on_the_settings_page(logged_in, user):
    response = logged_in.post(
        "/accounts/password/",
        {
            "old_password": "a-long-password-1",
            "new_password1": "another-long-password-7",
            "new_password2": "another-long-password-7",
        },
        follow=True,
    )

    assert "Your password was changed." in response.content.decode()
    assert User.objects.get(pk=user.pk).check_password("another-long-password-7")


def test_the_settings_page_says_how_to_reset_a_forgotten_password(logged_in):
    page = parse_html(logged_in.get("/settings/").content)

    assert "python manage.py changepassword dana" in page.find("section").text()


def test_a_missing_page_is_a_404_in_the_apps_layout(logged_in):
    response = logged_in.get("/sessions/no-such-session/")

    assert response.status_code == 404
    page = parse_html(response.content)
    assert page.find("h1").text() == "There is nothing here"
    assert page.find("a", cls="brand").text() == "Agentboard"
    assert page.find("a", cls="button").attrs["href"] == "/"
