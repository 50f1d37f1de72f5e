"""The price table as shipped: the vendors' public list prices in US dollars per million tokens
(input, output, cache read, cache write), as published on their pricing pages in November 2025
(Anthropic's cache write is its 5-minute write; OpenAI does not charge cache writes; Gemini's
are its prompts up to 200k tokens, a cache write priced as input). Prices change: admins edit
them on the prices page (Settings › Prices), and this migration never runs again."""

from decimal import Decimal

from django.db import migrations

LIST_PRICES = [
    # model name prefix, input, output, cache read, cache write
    ("claude-opus-4-5", "5", "25", "0.5", "6.25"),
    ("claude-opus-4-1", "15", "75", "1.5", "18.75"),
    ("claude-opus-4", "15", "75", "1.5", "18.75"),
    ("claude-sonnet-4-5", "3", "15", "0.3", "3.75"),
    ("claude-sonnet-4", "3", "15", "0.3", "3.75"),
    ("claude-3-7-sonnet", "3", "15", "0.3", "3.75"),
    ("claude-haiku-4-5", "1", "5", "0.1", "1.25"),
    ("claude-3-5-haiku", "0.8", "4", "0.08", "1"),
    ("gpt-5", "1.25", "10", "0.125", "0"),
    ("gpt-5-codex", "1.25", "10", "0.125", "0"),
    ("gpt-5.1", "1.25", "10", "0.125", "0"),
    ("gpt-5.1-codex", "1.25", "10", "0.125", "0"),
    ("gpt-5.1-codex-max", "1.25", "10", "0.125", "0"),
    ("gpt-5.1-codex-mini", "0.25", "2", "0.025", "0"),
    ("gpt-5-mini", "0.25", "2", "0.025", "0"),
    ("gpt-5-nano", "0.05", "0.4", "0.005", "0"),
    ("gemini-2.5-pro", "1.25", "10", "0.125", "1.25"),
    ("gemini-2.5-flash", "0.3", "2.5", "0.03", "0.3"),
    ("gemini-2.5-flash-lite", "0.1", "0.4", "0.01", "0.1"),
]


def ship(apps, schema_editor):
    Price = apps.get_model("costs", "Price")
    for model, *figures in LIST_PRICES:
        input_, output, cache_read, cache_write = map(Decimal, figures)
        Price.objects.get_or_create(
            model=model,
            defaults={
                "input": input_,
                "output": output,
                "cache_read": cache_read,
                "cache_write": cache_write,
            },
        )


class Migration(migrations.Migration):
    dependencies = [("costs", "0002_price")]

    operations = [migrations.RunPython(ship, migrations.RunPython.noop)]
