"""The audit log is tamper-evident: each entry chains the one before by its digest, the
database refuses changes below the ORM, `audit verify` names the first entry changed, removed
or slipped in out of order, and the chain's head is kept outside once a day."""

from __future__ import annotations

import io
import json
import threading
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.db import DatabaseError, connection, connections, transaction

from dashboard.audit.chain import audit_head_sent
from dashboard.core.audit import audit
from dashboard.models import AuditAction, AuditEntry
from tests.capturing_server import CapturingServer
from tests.conftest import audit_triggers_put_aside

pytestmark = pytest.mark.django_db
postgresql_only = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="TRUNCATE and several writers are PostgreSQL's."
)


def recorded(*summaries: str) -> list[AuditEntry]:
    with transaction.atomic():
        return [audit(AuditAction.TOKEN_CREATED, summary=summary) for summary in summaries]


def verified(*args: str) -> tuple[int, str]:
    """`audit verify`'s exit status and what it said."""
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command("audit", "verify", *args, stdout=out, stderr=err)
    except SystemExit as exit:
        return int(exit.code or 0), out.getvalue() + err.getvalue()
    return 0, out.getvalue() + err.getvalue()


def test_a_normal_log_is_intact_and_its_head_is_the_last_entrys_digest():
    first, second, third = recorded("one", "two", "three")

    status, said = verified()

    assert [first.number, second.number, third.number] == [1, 2, 3]
    assert first.at <= second.at <= third.at
    assert (status, said.strip()) == (
        0,
        f"The audit log's 3 entries are intact; head {third.digest}",
    )
    assert verified("--head", second.digest)[0] == 0


def test_an_empty_log_is_intact():
    assert verified() == (0, "The audit log's 0 entries are intact; head none\n")


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE dashboard_auditentry SET summary = 'nothing happened'",
        "DELETE FROM dashboard_auditentry",
        "INSERT INTO dashboard_auditentry (at, actor_name, rule, action, session_key, "
        "project_name, about, summary, surface, number, digest) VALUES "
        "('2020-01-01 00:00:00', 'mallory', '', 'token.created', '', '', '', 'back-dated', "
        "'', 2, 'forged')",
    ],
)
def test_the_database_itself_refuses_to_change_remove_or_back_date_an_entry(statement):
    recorded("one")

    with pytest.raises(DatabaseError), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(statement)

    assert list(AuditEntry.objects.values_list("summary", flat=True)) == ["one"]
    assert verified()[0] == 0


@postgresql_only
def test_on_postgresql_the_log_cannot_be_truncated():
    recorded("one")

    with pytest.raises(DatabaseError), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("TRUNCATE dashboard_auditentry")

    assert AuditEntry.objects.count() == 1


def test_flush_empties_everything_but_the_audit_log_and_says_so():
    User.objects.create_user("sam")
    recorded("one", "two")
    out = io.StringIO()

    call_command("flush", interactive=False, stdout=out)

    assert not User.objects.exists() and AuditEntry.objects.count() == 2
    assert "but the audit log (2 entries)" in out.getvalue()
    assert "flush will not empty it" in out.getvalue()


def test_an_entry_changed_past_the_triggers_is_named():
    _, second, _ = recorded("one", "two", "three")
    with audit_triggers_put_aside() as cursor:
        cursor.execute(
            "UPDATE dashboard_auditentry SET summary = 'nothing happened' WHERE id = %s",
            [second.pk],
        )

    status, said = verified()

    assert status == 1
    assert f"Entry #2 (id {second.pk}, at {second.at.isoformat()}) was changed" in said
    assert "The first 1 entries are intact" in said


def test_a_removed_entry_is_named():
    _, second, third = recorded("one", "two", "three")
    with audit_triggers_put_aside() as cursor:
        cursor.execute("DELETE FROM dashboard_auditentry WHERE id = %s", [second.pk])

    status, said = verified()

    assert status == 1
    assert f"Entry #2 was removed: the chain goes on at Entry #3 (id {third.pk}," in said


def test_a_back_dated_entry_slipped_in_is_named_out_of_order():
    recorded("one", "two")
    forged = AuditEntry(
        at=AuditEntry.objects.get(number=1).at - timedelta(days=3), actor_name="mallory",
        action=AuditAction.TOKEN_REVOKED, summary="back-dated", number=3,
    )  # fmt: skip
    forged.digest = forged.digest_after(AuditEntry.objects.get(number=2).digest)
    with audit_triggers_put_aside() as cursor:
        cursor.execute(
            "INSERT INTO dashboard_auditentry (at, actor_name, rule, action, session_key, "
            "project_name, about, summary, surface, number, digest) "
            "VALUES (%s, 'mallory', '', 'token.revoked', '', '', '', 'back-dated', '', 3, %s)",
            [connection.ops.adapt_datetimefield_value(forged.at), forged.digest],
        )

    status, said = verified()

    assert status == 1
    assert "Entry #3 (id " in said and "was inserted out of order" in said


def test_a_log_emptied_and_begun_again_no_longer_holds_its_recorded_head():
    *_, last = recorded("one", "two")
    with audit_triggers_put_aside() as cursor:
        cursor.execute("DELETE FROM dashboard_auditentry")
    recorded("a new beginning")

    status, said = verified("--head", last.digest)

    assert status == 1
    assert f"The head recorded earlier ({last.digest}) is not in the chain" in said


def test_appends_from_several_connections_at_once_stay_one_chain():
    ready = threading.Barrier(4)
    failures: list[BaseException] = []

    def append(writer: int) -> None:
        try:
            ready.wait()
            for n in range(10):
                with transaction.atomic():
                    audit(AuditAction.TOKEN_CREATED, summary=f"writer {writer}, entry {n}")
                    audit(AuditAction.TOKEN_REVOKED, summary=f"writer {writer}, entry {n}")
        except BaseException as error:
            failures.append(error)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=append, args=(writer,)) for writer in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert failures == []
    numbers = list(AuditEntry.objects.order_by("number").values_list("number", flat=True))
    assert numbers == list(range(1, 81))
    assert verified()[0] == 0


async def test_the_head_is_logged_and_sent_to_the_webhook(settings, caplog):
    from asgiref.sync import sync_to_async

    *_, last = await sync_to_async(recorded)("one", "two")
    caplog.set_level("INFO", logger="dashboard.audit.chain")
    with CapturingServer() as webhook:
        settings.AGENTBOARD_AUDIT_HEAD_WEBHOOK = f"{webhook.url}/audit-head"
        await audit_head_sent()

    assert f"Audit log head: 2 entries, head {last.digest}" in caplog.text
    (sent,) = webhook.requests
    body = json.loads(sent.body)
    assert (sent.method, sent.path) == ("POST", "/audit-head")
    assert (body["entries"], body["head"]) == (2, last.digest)


async def test_a_webhook_that_fails_is_logged_without_its_address(settings, caplog):
    with CapturingServer() as webhook:
        url = webhook.url
    settings.AGENTBOARD_AUDIT_HEAD_WEBHOOK = f"{url}/secret-path"

    await audit_head_sent()

    assert "Could not send the audit log's head" in caplog.text
    assert "secret-path" not in caplog.text
