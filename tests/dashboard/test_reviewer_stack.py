"""A reviewer's click on an async view (a plan's decision) through the real ASGI application:
no thread of its own, no new database connection, and the same refusals as ever."""

from __future__ import annotations

import threading
import urllib.parse

import pytest
from asgiref.sync import SyncToAsync, sync_to_async
from channels.testing import HttpCommunicator
from django.conf import settings
from django.contrib.auth.models import Permission, User
from django.contrib.sessions.backends.db import SessionStore
from django.core import signals
from django.db import OperationalError, close_old_connections, connection, reset_queries
from django.db.backends.signals import connection_created
from django.middleware.csrf import _get_new_csrf_string, _mask_cipher_secret
from django.shortcuts import resolve_url

from dashboard.asgi import application, skip_the_request_started_hop
from dashboard.core import reader
from planmode.models import Plan
from tests.domain import plan_submit

pytestmark = pytest.mark.django_db(transaction=True)


def signed_in(user: User) -> str:
    """The Cookie header of a browser where `user` is logged in, with its CSRF cookie."""
    session = SessionStore()
    session["_auth_user_id"] = str(user.pk)
    session["_auth_user_backend"] = "django.contrib.auth.backends.ModelBackend"
    session["_auth_user_hash"] = user.get_session_auth_hash()
    session.save()
    return f"{settings.SESSION_COOKIE_NAME}={session.session_key}; csrftoken={CSRF_SECRET}"


CSRF_SECRET = _get_new_csrf_string()


async def decide(plan_id: int, cookie: str, *, csrf: bool = True, action: str = "approve"):
    body = urllib.parse.urlencode({"action": action, "text": ""}).encode()
    headers = [
        (b"host", b"testserver"),
        (b"content-type", b"application/x-www-form-urlencoded"),
        (b"cookie", cookie.encode()),
    ]
    if csrf:
        headers.append((b"x-csrftoken", _mask_cipher_secret(CSRF_SECRET).encode()))
    communicator = HttpCommunicator(
        application, "POST", f"/plans/{plan_id}/decide/", body=body, headers=headers
    )
    response = await communicator.get_response(timeout=10)
    response["headers"] = {
        name.decode().lower(): value.decode() for name, value in response["headers"]
    }
    return response


@pytest.fixture
def plans(user) -> list[int]:
    return [
        plan_submit(
            owner=user,
            session_id=f"sess-review-{n}",
            agent_id=f"sess-review-{n}",
            plan=f"# Plan {n}\n\n1. Do it\n",
            plan_file_path=None,
            source=Plan.Source.API,
        ).pk
        for n in range(12)
    ]


@pytest.fixture
def permitted_reviewer(db) -> User:
    """A reviewer by permission (not a superuser): the permission check reads the database."""
    reviewer = User.objects.create_user("mia", password="a-long-password-4")
    reviewer.user_permissions.add(Permission.objects.get(codename="review_plan"))
    return reviewer


def statuses(plan_ids: list[int]) -> list[str]:
    return [Plan.objects.get(pk=pk).status for pk in plan_ids]


async def test_a_decision_starts_no_thread_and_opens_no_database_connection(
    plans, permitted_reviewer
):
    cookie = await sync_to_async(signed_in)(permitted_reviewer)
    for plan_id in plans[:2]:  # warm: the writer and reading threads have their connections
        assert (await decide(plan_id, cookie))["status"] == 302
    started: list[str] = []
    connected: list[str] = []
    original = threading.Thread.start

    def counting_start(thread: threading.Thread) -> None:
        started.append(thread.name)
        original(thread)

    def count_connection(sender: object, **kwargs: object) -> None:
        connected.append(threading.current_thread().name)

    threading.Thread.start = counting_start
    connection_created.connect(count_connection)
    try:
        for plan_id in plans[2:]:
            response = await decide(plan_id, cookie)
            assert response["status"] == 302
            assert response["headers"]["location"] == f"/plans/{plan_id}/"
    finally:
        threading.Thread.start = original
        connection_created.disconnect(count_connection)

    assert (started, connected) == ([], [])
    assert await sync_to_async(statuses)(plans) == ["approved"] * len(plans)


async def test_a_decision_without_the_csrf_token_is_refused_and_changes_nothing(
    plans, permitted_reviewer
):
    response = await decide(
        plans[0], await sync_to_async(signed_in)(permitted_reviewer), csrf=False
    )

    assert response["status"] == 403
    assert b"The form had expired" in response["body"]
    assert await sync_to_async(statuses)(plans[:1]) == ["pending"]


async def test_a_signed_in_user_without_the_review_permission_is_refused(plans, other_user):
    response = await decide(plans[0], await sync_to_async(signed_in)(other_user))

    assert response["status"] == 403
    assert b"Only reviewers can decide on plans" in response["body"]
    assert await sync_to_async(statuses)(plans[:1]) == ["pending"]


async def test_a_browser_that_is_not_signed_in_is_sent_to_the_login(plans):
    response = await decide(plans[0], f"csrftoken={CSRF_SECRET}")

    assert response["status"] == 302
    assert response["headers"]["location"].startswith(resolve_url(settings.LOGIN_URL))
    assert await sync_to_async(statuses)(plans[:1]) == ["pending"]


async def test_a_signed_out_session_decides_nothing(plans, permitted_reviewer):
    cookie = await sync_to_async(signed_in)(permitted_reviewer)
    assert (await decide(plans[0], cookie))["status"] == 302
    session_key = cookie.split(";")[0].split("=")[1]
    await sync_to_async(SessionStore(session_key).delete)()  # signed out elsewhere

    response = await decide(plans[1], cookie)

    assert response["headers"]["location"].startswith(resolve_url(settings.LOGIN_URL))
    assert await sync_to_async(statuses)(plans[:2]) == ["approved", "pending"]


async def test_a_changed_password_ends_the_other_sessions_at_once(plans, permitted_reviewer):
    cookie = await sync_to_async(signed_in)(permitted_reviewer)
    assert (await decide(plans[0], cookie))["status"] == 302
    permitted_reviewer.set_password("a-new-long-password-5")
    await permitted_reviewer.asave()

    response = await decide(plans[1], cookie)

    assert response["headers"]["location"].startswith(resolve_url(settings.LOGIN_URL))
    assert await sync_to_async(statuses)(plans[:2]) == ["approved", "pending"]


async def test_the_reading_thread_reconnects_after_a_database_error(db):
    def broken() -> None:
        connection.ensure_connection()
        raise OperationalError("the server closed the connection unexpectedly")

    with pytest.raises(OperationalError):
        await reader.read(broken)

    assert await reader.read(lambda: connection.connection is None)
    assert await reader.read(User.objects.count) == 0


@pytest.fixture
def request_signals_as_served():
    """The request signals as `dashboard.asgi` leaves them in the server (Django's test client,
    used by other tests in this process, connects the start's receiver again)."""
    skip_the_request_started_hop()
    yield
    signals.request_started.connect(close_old_connections)
    signals.request_started.connect(reset_queries)


async def test_a_decision_leaves_the_event_loop_only_for_its_read_and_its_write(
    plans, permitted_reviewer, monkeypatch, request_signals_as_served
):
    """Django would hand each step of its middleware, the login check and the request signals
    to a thread: ten hops per click. Its read and its write go to their own long-lived
    threads; what is left is the database connections' tidy-up once the answer is out."""
    cookie = await sync_to_async(signed_in)(permitted_reviewer)
    assert (await decide(plans[0], cookie))["status"] == 302
    hops: list[str] = []
    hop = SyncToAsync.__call__

    async def counting(self: SyncToAsync, *args: object, **kwargs: object) -> object:
        hops.append(getattr(self.func, "__qualname__", repr(self.func)))
        return await hop(self, *args, **kwargs)

    monkeypatch.setattr(SyncToAsync, "__call__", counting)
    response = await decide(plans[1], cookie)

    assert response["status"] == 302
    # At most the response's close (request_finished: close_old_connections), once it is out.
    assert hops in ([], ["HttpResponseRedirect.close"])
