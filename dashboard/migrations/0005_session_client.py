from django.db import migrations, models


def name_claude_code_sessions(apps, schema_editor) -> None:
    """Sessions that Claude Code hooks (or its transcripts) reported before the field existed."""
    Session = apps.get_model("dashboard", "Session")
    TodoRevision = apps.get_model("todos", "TodoRevision")
    reported = TodoRevision.objects.filter(source__in=["hook", "import"]).values(
        "agent__session_id"
    )
    Session.objects.filter(pk__in=reported).update(client="claude_code")


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0004_session_title_branch_ended_quietly"),
        ("todos", "0003_agenttracking_held_flags"),
    ]

    operations = [
        migrations.AddField(
            model_name="session",
            name="client",
            field=models.CharField(
                choices=[
                    ("claude_code", "Claude Code"),
                    ("opencode", "opencode"),
                    ("codex", "Codex"),
                    ("api", "API"),
                ],
                default="api",
                max_length=20,
            ),
        ),
        migrations.RunPython(name_claude_code_sessions, migrations.RunPython.noop),
    ]
