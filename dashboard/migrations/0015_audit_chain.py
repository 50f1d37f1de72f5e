from django.db import migrations, models

from dashboard.models import audit_digest

# The chain's next entry has the next number and a time no earlier than the last one's
# (`AuditEntry.chain`); anything else is refused, so a back-dated entry cannot be slipped in.
PG_IN_ORDER = """
CREATE FUNCTION dashboard_audit_in_order() RETURNS trigger AS $$
DECLARE
    head record;
BEGIN
    SELECT number, at INTO head FROM dashboard_auditentry ORDER BY number DESC LIMIT 1;
    IF NEW.number IS DISTINCT FROM coalesce(head.number, 0) + 1 OR NEW.at < head.at THEN
        RAISE EXCEPTION 'The audit log is append-only: a new entry follows the last one, '
            'numbered next and at its time or later.';
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER dashboard_audit_in_order
    BEFORE INSERT ON dashboard_auditentry
    FOR EACH ROW EXECUTE FUNCTION dashboard_audit_in_order();
CREATE TRIGGER dashboard_audit_no_truncate
    BEFORE TRUNCATE ON dashboard_auditentry
    FOR EACH STATEMENT EXECUTE FUNCTION dashboard_audit_append_only();
"""
PG_IN_ORDER_REVERSE = """
DROP TRIGGER IF EXISTS dashboard_audit_no_truncate ON dashboard_auditentry;
DROP TRIGGER IF EXISTS dashboard_audit_in_order ON dashboard_auditentry;
DROP FUNCTION IF EXISTS dashboard_audit_in_order();
"""

# SQLite drops a table's triggers when a migration rebuilds the table (as most changes of a
# column do): such a migration must create these again (tests/audit/test_chain.py notices).
SQLITE_TRIGGERS = [
    """
    CREATE TRIGGER dashboard_audit_no_update BEFORE UPDATE ON dashboard_auditentry
    BEGIN
        SELECT RAISE(ABORT, 'The audit log is append-only: entries are never changed or removed.');
    END
    """,
    """
    CREATE TRIGGER dashboard_audit_no_delete BEFORE DELETE ON dashboard_auditentry
    BEGIN
        SELECT RAISE(ABORT, 'The audit log is append-only: entries are never changed or removed.');
    END
    """,
    """
    CREATE TRIGGER dashboard_audit_in_order BEFORE INSERT ON dashboard_auditentry
    WHEN NEW.number IS NOT (SELECT coalesce(max(number), 0) + 1 FROM dashboard_auditentry)
        OR NEW.at < (SELECT at FROM dashboard_auditentry ORDER BY number DESC LIMIT 1)
    BEGIN
        SELECT RAISE(
            ABORT,
            'The audit log is append-only: a new entry follows the last one, numbered next and at its time or later.'
        );
    END
    """,
]
SQLITE_TRIGGER_NAMES = [
    "dashboard_audit_no_update",
    "dashboard_audit_no_delete",
    "dashboard_audit_in_order",
]


def chain_existing(apps, schema_editor):
    """The entries written before the chain, chained oldest first."""
    AuditEntry = apps.get_model("dashboard", "AuditEntry")
    postgresql = schema_editor.connection.vendor == "postgresql"
    if postgresql:
        schema_editor.execute(
            "ALTER TABLE dashboard_auditentry DISABLE TRIGGER dashboard_audit_append_only", None
        )
    previous = ""
    batch = []
    for number, entry in enumerate(AuditEntry.objects.order_by("at", "pk").iterator(), 1):
        entry.number = number
        entry.digest = previous = audit_digest(entry, previous)
        batch.append(entry)
        if len(batch) == 1000:
            AuditEntry.objects.bulk_update(batch, ["number", "digest"])
            batch = []
    AuditEntry.objects.bulk_update(batch, ["number", "digest"])
    if postgresql:
        schema_editor.execute(
            "ALTER TABLE dashboard_auditentry ENABLE TRIGGER dashboard_audit_append_only", None
        )


def refuse_changes(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(PG_IN_ORDER, None)
    else:
        for trigger in SQLITE_TRIGGERS:
            schema_editor.execute(trigger, None)


def refuse_changes_reverse(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(PG_IN_ORDER_REVERSE, None)
    else:
        for name in SQLITE_TRIGGER_NAMES:
            schema_editor.execute(f"DROP TRIGGER IF EXISTS {name}", None)


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0014_session_running_index"),
    ]

    operations = [
        migrations.AddField(
            model_name="auditentry",
            name="number",
            field=models.PositiveBigIntegerField(null=True),
        ),
        migrations.AddField(
            model_name="auditentry",
            name="digest",
            field=models.CharField(default="", max_length=64),
            preserve_default=False,
        ),
        migrations.RunPython(chain_existing, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="auditentry",
            name="number",
            field=models.PositiveBigIntegerField(unique=True),
        ),
        migrations.RunPython(refuse_changes, refuse_changes_reverse),
    ]
