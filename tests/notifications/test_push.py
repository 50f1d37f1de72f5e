"""Web Push against a local push service that checks the VAPID JWT and decrypts each message,
as a browser's push service and the browser would; and the installable app's files."""

from __future__ import annotations

import json
from urllib.parse import urlsplit

import pytest
from asgiref.sync import sync_to_async
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat
from django.core.exceptions import ImproperlyConfigured
from django.urls import reverse

from dashboard.notifications import senders
from dashboard.notifications.models import Delivery, PushDevice
from dashboard.settings import checked_vapid_private_key
from tests.notifications.receivers import PushBrowser, Received, Receiver, check_vapid
from tests.notifications.test_outbox import submit
from tests.notifications.test_webhooks import deliver_until_settled

pytestmark = pytest.mark.django_db


class PushService:
    """Accepts a message only with a valid VAPID JWT for its origin, and decrypts it with the
    subscribing browser's keys; answers 410 for subscriptions it forgot."""

    def __init__(self) -> None:
        self.browser = PushBrowser()
        self.messages: list[dict] = []
        self.problems: list[str] = []
        self.forgotten: set[str] = set()
        self.receiver = Receiver(handle=self.handle).start()

    def handle(self, got: Received) -> tuple[int, bytes]:
        if got.path in self.forgotten:
            return 410, b"gone"
        try:
            origin = urlsplit(self.receiver.url)
            check_vapid(got.headers["Authorization"], f"{origin.scheme}://{origin.netloc}")
            assert got.headers["Content-Encoding"] == "aes128gcm"
            assert int(got.headers["TTL"]) > 0
            self.messages.append(self.browser.decrypt(got.body))
        except Exception as error:  # the test reads the problem
            self.problems.append(repr(error))
            return 400, b"bad"
        return 201, b""

    def subscription(self, name: str = "phone") -> dict:
        return self.browser.subscription(f"{self.receiver.url}/push/{name}")


@pytest.fixture
def push_service():
    service = PushService()
    yield service
    service.receiver.stop()


def add_device(user, service: PushService, name: str = "phone") -> PushDevice:
    sub = service.subscription(name)
    return PushDevice.objects.create(
        user=user,
        name=name,
        endpoint=sub["endpoint"],
        p256dh=sub["keys"]["p256dh"],
        auth=sub["keys"]["auth"],
        base_url="http://board.test",
    )


async def test_a_new_plan_reaches_the_phone_encrypted_and_signed(user, reviewer, push_service):
    device = await sync_to_async(add_device)(reviewer, push_service)
    plan = await sync_to_async(submit)(user)
    await deliver_until_settled()
    assert push_service.problems == []
    assert push_service.messages == [
        {
            "title": "shop · main agent",
            "body": "Plan rev 1 waits for review: Pagination <!channel>",
            "url": f"http://board.test/plans/{plan.pk}/",
            "tag": f"plan-{plan.pk}",
        }
    ]
    await device.arefresh_from_db()
    assert device.last_sent_at is not None


async def test_a_subscription_the_push_service_forgot_is_dropped(user, reviewer, push_service):
    device = await sync_to_async(add_device)(reviewer, push_service, "old-phone")
    push_service.forgotten.add("/push/old-phone")
    await sync_to_async(submit)(user)
    await deliver_until_settled()
    assert not await PushDevice.objects.filter(pk=device.pk).aexists()
    delivery = await Delivery.objects.aget()
    assert (delivery.status, delivery.attempts) == ("gone", 1)


def test_the_vapid_keys_are_made_once_and_kept_in_the_data_dir(settings, tmp_path):
    settings.DATA_DIR = tmp_path
    senders._vapid = None
    try:
        first = senders.public_key()
        senders._vapid = None
        assert senders.public_key() == first
        key_file = tmp_path / "vapid_private.pem"
        assert key_file.stat().st_mode & 0o777 == 0o600
        assert len(first) == 87  # an uncompressed P-256 point, base64url
    finally:
        senders._vapid = None


def test_processes_on_several_hosts_share_the_key_given_in_the_environment(settings, tmp_path):
    settings.DATA_DIR = tmp_path
    settings.AGENTBOARD_VAPID_PRIVATE_KEY = b""
    senders._vapid = None
    try:
        made = senders.public_key()
        pem = (tmp_path / "vapid_private.pem").read_text()
        settings.DATA_DIR = tmp_path / "another-host"
        settings.AGENTBOARD_VAPID_PRIVATE_KEY = checked_vapid_private_key(pem)
        senders._vapid = None
        assert senders.public_key() == made
        assert not (tmp_path / "another-host" / "vapid_private.pem").exists()
    finally:
        senders._vapid = None


@pytest.mark.parametrize(
    "value",
    [
        "not a key",
        "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
        ec.generate_private_key(ec.SECP384R1())
        .private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
        .decode(),
    ],
)
def test_a_vapid_key_that_is_not_a_p256_pem_key_stops_the_start_with_one_sentence(value):
    with pytest.raises(ImproperlyConfigured, match="must be an unencrypted P-256 private key"):
        checked_vapid_private_key(value)


def test_a_browser_registers_names_renames_and_removes_its_device(client, user, push_service):
    client.force_login(user)
    body = {**push_service.subscription("a"), "name": "Dana's phone"}
    response = client.post(reverse("device-add"), json.dumps(body), content_type="application/json")
    assert response.status_code == 201
    device = PushDevice.objects.get()
    assert (device.user, device.name) == (user, "Dana's phone")
    page = client.get(reverse("settings")).content.decode()
    assert "Dana&#x27;s phone" in page
    assert "/push/a" not in page
    client.post(reverse("device-rename", args=[device.pk]), {"name": "Work phone"})
    assert PushDevice.objects.get().name == "Work phone"
    client.post(reverse("device-remove", args=[device.pk]))
    assert not PushDevice.objects.exists()


def test_a_subscription_that_is_not_one_is_refused_with_a_sentence(client, user):
    client.force_login(user)
    response = client.post(reverse("device-add"), "{}", content_type="application/json")
    assert response.status_code == 422
    assert response.json()["detail"] == "Send the subscription as JSON."
    response = client.post(
        reverse("device-add"),
        json.dumps({"endpoint": "ftp://x/y", "keys": {"p256dh": "k", "auth": "a"}}),
        content_type="application/json",
    )
    assert response.status_code == 422


def test_nobody_removes_another_persons_device(client, user, other_user, push_service):
    device = add_device(other_user, push_service)
    client.force_login(user)
    assert client.post(reverse("device-remove", args=[device.pk])).status_code == 404
    assert PushDevice.objects.exists()


def test_a_subscription_another_account_registered_stays_that_accounts(
    client, user, other_user, push_service
):
    device = add_device(other_user, push_service)
    client.force_login(user)
    body = {**push_service.subscription(), "name": "Taken over"}

    response = client.post(reverse("device-add"), json.dumps(body), content_type="application/json")

    assert response.status_code == 409
    assert "another account" in response.json()["detail"]
    device.refresh_from_db()
    assert (device.user, device.name) == (other_user, "phone")
    assert PushDevice.objects.count() == 1


def test_registering_the_same_browser_again_updates_its_own_device(client, user, push_service):
    client.force_login(user)
    for name in ("Phone", "Dana's phone"):
        body = {**push_service.subscription(), "name": name}
        response = client.post(
            reverse("device-add"), json.dumps(body), content_type="application/json"
        )
        assert response.status_code == 201
    assert [(d.user, d.name) for d in PushDevice.objects.all()] == [(user, "Dana's phone")]


def test_a_subscription_with_nan_in_it_is_refused_and_stores_nothing(client, user, push_service):
    client.force_login(user)
    subscription = json.dumps(push_service.subscription())
    body = subscription.replace('"keys"', '"expirationTime": NaN, "keys"')

    response = client.post(reverse("device-add"), body, content_type="application/json")

    assert response.status_code == 422
    assert not PushDevice.objects.exists()


def test_the_service_worker_is_served_at_the_root_and_never_cached_stale(client):
    response = client.get("/sw.js")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/javascript")
    assert response["Service-Worker-Allowed"] == "/"
    assert response["Cache-Control"] == "no-cache"
    assert b"showNotification" in response.content
    assert b"caches." not in response.content


def test_the_manifest_makes_agentboard_installable(client):
    manifest = client.get("/manifest.webmanifest")
    assert manifest["Content-Type"] == "application/manifest+json"
    data = manifest.json()
    assert (data["display"], data["start_url"], data["scope"]) == ("standalone", "/inbox/", "/")
    sizes = {icon["sizes"] for icon in data["icons"]}
    assert {"192x192", "512x512"} <= sizes
    for icon in data["icons"]:
        image = client.get(icon["src"])
        assert image.status_code == 200
        assert image["Content-Type"] == "image/png"
