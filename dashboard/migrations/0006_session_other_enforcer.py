from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0005_session_client"),
    ]

    operations = [
        migrations.AddField(
            model_name="session",
            name="other_enforcer",
            field=models.CharField(blank=True, max_length=100),
        ),
    ]
