"""Webhooks as a receiver sees them: signed JSON, Slack blocks, retries, the SSRF guard, and
the settings page where targets are added, tested and their deliveries read."""

from __future__ import annotations

import asyncio
import json
import logging

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User
from django.urls import reverse

from dashboard.notifications import worker
from dashboard.notifications.models import Delivery, WebhookTarget
from dashboard.notifications.safety import UnsafeURL, check_url, mask_url, pinned
from dashboard.notifications.senders import new_client
from tests.notifications.receivers import Receiver, verify_signature
from tests.notifications.test_outbox import ask_to_run, main_agent, submit

pytestmark = pytest.mark.django_db
EVENTS = ["waiting", "decided", "stopped_unfinished", "session_ended"]


def add_target(owner: User, url: str, kind: str = "json", **fields) -> WebhookTarget:
    return WebhookTarget.objects.create(
        owner=owner,
        name=fields.pop("name", "chat"),
        kind=kind,
        url=url,
        secret="s3cret" if kind == "json" else "",
        events=EVENTS,
        base_url="http://board.test",
        **fields,
    )


async def deliver_until_settled(rounds: int = 200) -> None:
    """Run the worker's batches until nothing is pending (retries included)."""
    async with new_client() as client:
        for _ in range(rounds):
            await worker.deliver_once(client)
            pending = await sync_to_async(
                Delivery.objects.filter(status=Delivery.Status.PENDING).exists
            )()
            if not pending:
                return
            await asyncio.sleep(0.03)
    raise AssertionError("deliveries still pending")


async def test_a_json_webhook_is_signed_so_the_receiver_can_verify_it(
    user, reviewer, receiver, caplog
):
    await sync_to_async(add_target)(reviewer, f"{receiver.url}/agentboard")
    plan = await sync_to_async(submit)(user)
    with caplog.at_level(logging.DEBUG):
        await deliver_until_settled()
    assert "/agentboard" not in caplog.text
    [got] = receiver.received
    assert got.path == "/agentboard"
    assert verify_signature("s3cret", got.headers["X-Agentboard-Signature"], got.body)
    assert not verify_signature("another", got.headers["X-Agentboard-Signature"], got.body)
    assert got.headers["X-Agentboard-Event"] == "waiting"
    body = got.json()
    assert body["url"] == f"http://board.test/plans/{plan.pk}/"
    assert (body["project"], body["agent"], body["kind"]) == ("shop", "main agent", "plan")
    delivery = await Delivery.objects.aget()
    assert (delivery.status, delivery.attempts, delivery.last_status) == ("sent", 1, 200)


async def test_links_use_the_public_url_when_it_is_set(user, reviewer, receiver, settings):
    settings.AGENTBOARD_PUBLIC_URL = "https://board.example.com"
    await sync_to_async(add_target)(reviewer, receiver.url)
    plan = await sync_to_async(submit)(user)
    await deliver_until_settled()
    assert receiver.received[0].json()["url"] == f"https://board.example.com/plans/{plan.pk}/"


async def test_slack_gets_blocks_with_the_agents_text_escaped(user, reviewer, receiver):
    await sync_to_async(add_target)(reviewer, receiver.url, kind="slack")
    plan = await sync_to_async(submit)(user)
    await deliver_until_settled()
    message = receiver.received[0].json()
    text = json.dumps(message, ensure_ascii=False)
    assert "&lt;!channel&gt;" in text and "<!channel>" not in text
    assert "*shop · main agent: Plan rev 1 waits for review: Pagination &lt;!channel&gt;*" in text
    assert f"<http://board.test/plans/{plan.pk}/|Open in Agentboard>" in text
    assert "```" in message["blocks"][1]["text"]["text"]


async def test_slack_gets_a_permission_requests_command_escaped_and_cut(user, reviewer, receiver):
    await sync_to_async(add_target)(reviewer, receiver.url, kind="slack")
    command = "rm -rf build <!here> && " + "echo spam; " * 200
    agent = await sync_to_async(main_agent)(user)
    request = await sync_to_async(ask_to_run)(agent, command)
    await deliver_until_settled()

    message = receiver.received[0].json()
    assert "<!here>" not in json.dumps(message, ensure_ascii=False)
    title, excerpt = (block["text"]["text"] for block in message["blocks"][:2])
    assert title.startswith("*shop · main agent: Asks to use Bash: ")
    assert excerpt.startswith("```rm -rf build &lt;!here&gt; &amp;&amp; echo spam;")
    assert excerpt.endswith("…```")
    assert len(excerpt) < 400
    assert f"/inbox/requests/{request.pk}/" in message["blocks"][2]["elements"][0]["text"]


async def test_a_receiver_answering_500_gets_it_again_until_it_accepts(user, reviewer, receiver):
    receiver.statuses = [500, 503]
    await sync_to_async(add_target)(reviewer, receiver.url)
    await sync_to_async(submit)(user)
    await deliver_until_settled()
    assert len(receiver.received) == 3
    assert receiver.received[0].body == receiver.received[2].body
    delivery = await Delivery.objects.aget()
    assert (delivery.status, delivery.attempts, delivery.last_status) == ("sent", 3, 200)


async def test_after_the_last_attempt_the_log_says_failed_and_why(
    user, reviewer, receiver, settings
):
    settings.AGENTBOARD_NOTIFY_MAX_ATTEMPTS = 2
    receiver.statuses = [500] * 5
    await sync_to_async(add_target)(reviewer, receiver.url)
    await sync_to_async(submit)(user)
    await deliver_until_settled()
    delivery = await Delivery.objects.aget()
    assert (delivery.status, delivery.attempts) == ("failed", 2)
    assert delivery.last_error == "The receiver answered 500."


def test_backoff_doubles_after_each_failure(settings):
    settings.AGENTBOARD_NOTIFY_RETRY_SECONDS = 10
    assert [worker.backoff(n) for n in (1, 2, 3, 4)] == [10, 20, 40, 80]
    assert worker.backoff(30) == 3600


async def test_a_receiver_that_is_down_is_retried_and_its_url_never_logged(
    user, reviewer, caplog, settings
):
    settings.AGENTBOARD_NOTIFY_MAX_ATTEMPTS = 1
    down = Receiver().start()
    url = f"{down.url}/services/T000/B000/very-secret-token"
    down.stop()
    await sync_to_async(add_target)(reviewer, url)
    await sync_to_async(submit)(user)
    with caplog.at_level(logging.INFO):
        await deliver_until_settled()
    delivery = await Delivery.objects.aget()
    assert delivery.status == "failed"
    assert delivery.last_error.startswith("ConnectError")
    assert "very-secret-token" not in delivery.last_error
    assert "very-secret-token" not in caplog.text
    assert "127.0.0.1/…oken" in caplog.text


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8000/hook",
        "http://localhost/hook",
        "http://10.1.2.3/hook",
        "http://192.168.0.10/hook",
        "http://169.254.169.254/latest/meta-data",
        "http://[::1]/hook",
        "http://[fd00::1]/hook",
        "http://224.0.0.1/hook",
    ],
)
def test_private_and_loopback_addresses_are_refused(url, settings):
    settings.AGENTBOARD_WEBHOOK_ALLOW_PRIVATE = False
    with pytest.raises(UnsafeURL, match="does not call"):
        check_url(url)


@pytest.mark.parametrize("url", ["ftp://example.com/x", "https://user:pw@example.com/", "hooks"])
def test_addresses_that_are_not_plain_http_are_refused(url):
    with pytest.raises(UnsafeURL):
        check_url(url)


def test_a_public_address_is_allowed(settings):
    settings.AGENTBOARD_WEBHOOK_ALLOW_PRIVATE = False
    assert check_url("https://93.184.215.14/hook") == "https://93.184.215.14/hook"


async def test_the_worker_refuses_a_private_receiver_unless_allowed(
    user, reviewer, receiver, settings
):
    settings.AGENTBOARD_WEBHOOK_ALLOW_PRIVATE = False
    settings.AGENTBOARD_NOTIFY_MAX_ATTEMPTS = 1
    await sync_to_async(add_target)(reviewer, receiver.url)
    await sync_to_async(submit)(user)
    await deliver_until_settled()
    assert receiver.received == []
    assert "private" in (await Delivery.objects.aget()).last_error


def test_urls_are_masked():
    assert mask_url("https://hooks.slack.com/services/T0/B0/abcdefgh1234") == (
        "https://hooks.slack.com/…1234"
    )


# --- the settings page -------------------------------------------------------------------------


def test_a_reviewer_adds_a_signed_webhook_and_sees_its_secret_once(reviewer_client, receiver):
    url = f"{receiver.url}/services/very-secret-path"
    response = reviewer_client.post(
        reverse("webhook-add"),
        {
            "name": "Team chat",
            "kind": "json",
            "url": url,
            "events": ["waiting", "decided"],
            "projects": "shop, api",
        },
    )
    assert response.status_code == 200
    target = WebhookTarget.objects.get()
    assert (target.events, target.projects) == (["waiting", "decided"], ["shop", "api"])
    page = response.content.decode()
    assert target.secret in page
    assert "very-secret-path" not in page
    assert mask_url(url) in page
    again = reviewer_client.get(reverse("settings")).content.decode()
    assert target.secret not in again and "very-secret-path" not in again


def test_a_webhook_without_events_is_refused_with_a_sentence(reviewer_client, receiver):
    response = reviewer_client.post(
        reverse("webhook-add"), {"name": "x", "kind": "slack", "url": receiver.url}
    )
    assert response.status_code == 422
    assert "Pick at least one event for the target." in response.content.decode()
    assert not WebhookTarget.objects.exists()


def test_a_loopback_webhook_is_refused_on_a_server_that_does_not_allow_it(
    reviewer_client, settings
):
    settings.AGENTBOARD_WEBHOOK_ALLOW_PRIVATE = False
    response = reviewer_client.post(
        reverse("webhook-add"),
        {"name": "x", "kind": "slack", "url": "http://127.0.0.1:9/x", "events": ["waiting"]},
    )
    assert response.status_code == 422
    assert "loopback, private or link-local" in response.content.decode()


def test_someone_who_only_watches_cannot_add_webhooks(client, user, receiver):
    client.force_login(user)
    response = client.post(
        reverse("webhook-add"),
        {"name": "x", "kind": "slack", "url": receiver.url, "events": ["waiting"]},
    )
    assert response.status_code == 403
    assert not WebhookTarget.objects.exists()


def test_send_test_shows_what_the_receiver_answered(reviewer_client, reviewer, receiver):
    receiver.answer = b"invalid_token"
    receiver.statuses = [403]
    target = add_target(reviewer, receiver.url, kind="slack")
    response = reviewer_client.post(reverse("webhook-test", args=[target.pk]))
    page = response.content.decode()
    assert "The receiver answered 403." in page
    assert "invalid_token" in page
    assert "A test from Agentboard" in receiver.received[0].body.decode()


def test_the_delivery_log_shows_status_attempts_and_the_last_error(reviewer_client, reviewer, user):
    target = add_target(reviewer, "https://hooks.example.com/x")
    submit(user)
    Delivery.objects.update(
        status="failed", attempts=8, last_status=502, last_error="The receiver answered 502."
    )
    page = reviewer_client.get(reverse("webhook-log", args=[target.pk])).content.decode()
    assert "Plan rev 1 waits for review" in page
    assert "✗ failed" in page and "The receiver answered 502." in page


def test_reviewers_see_and_remove_only_their_own_webhooks(client, reviewer, user):
    from django.contrib.auth.models import Permission

    mia = User.objects.create_user("mia", password="a-long-password-4")
    mia.user_permissions.add(Permission.objects.get(codename="review_plan"))
    team = add_target(reviewer, "https://hooks.example.com/team", name="team")
    client.force_login(mia)
    assert (
        "team"
        not in client.get(reverse("settings"))
        .content.decode()
        .split("webhooks-title")[1]
        .split("Add a webhook")[0]
    )
    assert client.post(reverse("webhook-remove", args=[team.pk])).status_code == 404
    assert client.get(reverse("webhook-log", args=[team.pk])).status_code == 404


def test_a_request_goes_to_the_address_that_was_checked_not_a_second_lookup():
    url, headers, extensions = pinned("https://hooks.example.com:8443/a/b?c=1", "93.184.215.14")
    assert url == "https://93.184.215.14:8443/a/b?c=1"
    assert headers == {"Host": "hooks.example.com:8443"}
    assert extensions == {"sni_hostname": "hooks.example.com"}
    assert pinned("http://example.com/x", "2606:2800:21f:cb07::1")[0] == (
        "http://[2606:2800:21f:cb07::1]/x"
    )


async def test_a_pinned_request_reaches_the_receiver_with_its_own_host_name(receiver):
    url, headers, extensions = pinned(
        f"http://receiver.test:{receiver.server.server_address[1]}/hook", "127.0.0.1"
    )
    async with new_client() as client:
        response = await client.post(url, content=b"{}", headers=headers, extensions=extensions)
    assert response.status_code == 200
    assert (
        receiver.received[0].headers["Host"] == f"receiver.test:{receiver.server.server_address[1]}"
    )


def test_the_readmes_verification_snippet_accepts_a_real_signature():
    import re
    import time
    from pathlib import Path

    from dashboard.notifications.senders import sign

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    snippet = re.search(r"```python\n(import hashlib, hmac, time\n.*?)```", readme, re.S).group(1)
    namespace: dict = {}
    exec(snippet, namespace)  # noqa: S102 - our own README
    body = b'{"event": "waiting"}'
    header = sign("s3cret", body, int(time.time()))
    assert namespace["verify"]("s3cret", header, body)
    assert not namespace["verify"]("s3cret", header, body + b" ")
    assert not namespace["verify"]("s3cret", sign("s3cret", body, int(time.time()) - 3600), body)


async def test_a_stopping_server_frees_what_it_was_sending(user, reviewer):
    import threading

    answer = threading.Event()
    slow = Receiver(handle=lambda got: (answer.wait(10), (200, b"late"))[1]).start()
    try:
        await sync_to_async(add_target)(reviewer, slow.url)
        await sync_to_async(submit)(user)
        async with new_client() as client:
            sending = asyncio.create_task(worker.deliver_once(client))
            while not slow.received:
                await asyncio.sleep(0.02)
            sending.cancel()
            with pytest.raises(asyncio.CancelledError):
                await sending
        await asyncio.wrap_future(worker._executor.submit(lambda: None))
        delivery = await Delivery.objects.aget()
        assert (delivery.status, delivery.lease_token, delivery.lease_until) == (
            "pending",
            "",
            None,
        )
        assert await sync_to_async(worker.claim)("another-process") != []
    finally:
        answer.set()
        slow.stop()
