from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0006_session_other_enforcer"),
    ]

    operations = [
        migrations.AddField(
            model_name="agent",
            name="turn_ended_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
    ]
