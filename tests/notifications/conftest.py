from __future__ import annotations

import pytest

from tests.notifications.receivers import Receiver


@pytest.fixture(autouse=True)
def notification_settings(settings):
    settings.AGENTBOARD_WEBHOOK_ALLOW_PRIVATE = True
    settings.AGENTBOARD_NOTIFY_RETRY_SECONDS = 0.05
    settings.AGENTBOARD_NOTIFY_POLL_SECONDS = 0.05


@pytest.fixture
def receiver():
    receiver = Receiver().start()
    yield receiver
    receiver.stop()


@pytest.fixture(scope="session", autouse=True)
def worker_connection_closed(django_db_setup):
    """The delivery worker's thread keeps its connection; PostgreSQL cannot drop the test
    database while it does."""
    yield
    from dashboard.notifications import worker

    worker.close_connection()


@pytest.fixture
def reviewer_client(client, reviewer):
    client.force_login(reviewer)
    return client
