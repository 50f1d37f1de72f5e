from __future__ import annotations

import re
from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command

from dashboard.management.commands.serve import Command as ServeCommand
from dashboard.models import AgentToken, hash_token
from tests.conftest import AgentApi, todo

pytestmark = pytest.mark.django_db


def create_token(*args: str) -> str:
    out = StringIO()
    call_command("create_token", *args, stdout=out)
    return out.getvalue().strip()


def bootstrap() -> str:
    out = StringIO()
    ServeCommand(stdout=out)._bootstrap(host="127.0.0.1", port=8000)
    return out.getvalue()


def test_create_token_prints_a_token_that_authenticates_the_user(client, user):
    raw = create_token("dana", "--label", "laptop")

    response = AgentApi(client, raw).put_todos("sess-1", "sess-1", {"todos": [todo("Run tests")]})

    assert response.status_code == 200
    token = AgentToken.objects.get()
    assert (token.owner, token.label) == (user, "laptop")


def test_create_token_stores_only_a_hash_of_the_token(user):
    raw = create_token("dana")

    token = AgentToken.objects.get()
    assert token.key_hash == hash_token(raw)
    stored = [str(value) for value in AgentToken.objects.values().get().values()]
    assert not any(raw in value for value in stored)


def test_create_token_makes_a_new_token_each_time(user):
    assert create_token("dana") != create_token("dana")
    assert AgentToken.objects.filter(owner=user).count() == 2


def test_create_token_refuses_an_unknown_user(db):
    with pytest.raises(CommandError, match="There is no user named 'nobody'"):
        create_token("nobody")
    assert not AgentToken.objects.exists()


def test_the_first_start_creates_a_reviewer_and_a_token_and_prints_them_once(client):
    output = bootstrap()

    password = re.search(r"password: (\S+)", output).group(1)
    raw = re.search(r"^\s+(ab_\S+)$", output, re.MULTILINE).group(1)
    lead = User.objects.get()
    assert (lead.username, lead.is_superuser) == ("lead", True)
    login = client.post("/accounts/login/", {"username": "lead", "password": password})
    assert login.status_code == 302
    assert AgentToken.objects.get().key_hash == hash_token(raw)
    assert AgentApi(client, raw).get_todos("s", "s").status_code == 200


def test_the_first_start_says_where_to_change_the_password(db):
    output = bootstrap()

    assert "/admin/" not in output
    assert "under Settings" in output
    assert "http://127.0.0.1:8000/accounts/password/" in output


def test_a_later_start_creates_nothing_and_prints_no_secrets(db):
    bootstrap()

    output = bootstrap()

    assert output == ""
    assert User.objects.count() == 1
    assert AgentToken.objects.count() == 1


def test_the_first_start_leaves_an_install_with_users_alone(user):
    assert bootstrap() == ""
    assert list(User.objects.all()) == [user]
    assert not AgentToken.objects.exists()
