from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("activity", "0002_concern"),
    ]

    operations = [
        migrations.AddField(
            model_name="concern",
            name="tool_use_id",
            field=models.CharField(blank=True, max_length=200),
        ),
    ]
