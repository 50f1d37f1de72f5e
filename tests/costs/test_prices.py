"""The price table's page: admins change prices, add and remove a model; bad numbers are
refused with one sentence and change nothing; everyone else reads it."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.contrib.auth.models import User

from dashboard.costs.models import Price
from tests.conftest import parse_html

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin(db) -> User:
    return User.objects.create_superuser("root", password="pw-root-1234")


@pytest.fixture
def opus(db) -> Price:
    Price.objects.all().delete()  # the shipped rows, where a test runs on a fresh database
    return Price.objects.create(
        model="claude-opus-4-5", input=5, output=25, cache_read="0.5", cache_write="6.25"
    )


def row(price: Price, **changes: str) -> dict[str, str]:
    figures = {f: str(getattr(price, f)) for f in ("input", "output", "cache_read", "cache_write")}
    figures.update(changes)
    return {f"{field}-{price.pk}": value for field, value in figures.items()}


def test_an_admin_changes_a_price_and_adds_a_model(client, admin, opus):
    client.force_login(admin)

    answer = client.post(
        "/settings/prices/",
        {**row(opus, output="$30"), "new-model": "GPT-6", "new-input": "2", "new-output": "8",
         "new-cache_read": "0.2", "new-cache_write": "0"},
    )  # fmt: skip

    assert answer.status_code == 302
    opus.refresh_from_db()
    assert opus.output == Decimal("30")
    assert Price.objects.get(model="gpt-6").input == Decimal("2")


def test_an_admin_removes_a_model(client, admin, opus):
    client.force_login(admin)

    client.post("/settings/prices/", {**row(opus), f"remove-{opus.pk}": "1"})

    assert not Price.objects.exists()


@pytest.mark.parametrize(
    ("changes", "sentence"),
    [
        ({"output": "lots"}, "The output price of claude-opus-4-5 must be a number of dollars"),
        ({"input": "-1"}, "must be at least 0 and under $100,000"),
        ({"input": "1e9"}, "must be at least 0 and under $100,000"),
        ({"cache_read": "NaN"}, "must be a number of dollars"),
        ({"cache_write": "0.123456"}, "has more than four decimals"),
    ],
)
def test_a_bad_price_is_refused_and_nothing_changes(client, admin, opus, changes, sentence):
    client.force_login(admin)

    answer = client.post(
        "/settings/prices/", {**row(opus, **changes), "new-model": "gpt-6", "new-input": "1",
                              "new-output": "1", "new-cache_read": "1", "new-cache_write": "1"},
    )  # fmt: skip

    assert answer.status_code == 422
    assert sentence in parse_html(answer.content).find(cls="form-error").text()
    assert list(Price.objects.values_list("model", "output")) == [
        ("claude-opus-4-5", Decimal("25"))
    ]


@pytest.mark.parametrize(
    ("model", "sentence"),
    [
        ("claude-opus-4-5", "claude-opus-4-5 already has prices"),
        ("two words", "is one word"),
    ],
)
def test_a_bad_new_model_is_refused(client, admin, opus, model, sentence):
    client.force_login(admin)
    new = {"new-input": "1", "new-output": "1", "new-cache_read": "1", "new-cache_write": "1"}

    answer = client.post("/settings/prices/", {**row(opus), "new-model": model, **new})

    assert answer.status_code == 422
    assert sentence in parse_html(answer.content).find(cls="form-error").text()
    assert Price.objects.count() == 1


def test_everyone_else_reads_the_prices_and_cannot_change_them(client, user, opus):
    client.force_login(user)

    page = parse_html(client.get("/settings/prices/").content)
    assert "$25" in page.find("table").text()
    assert not page.find_all("input", attrs={"name": f"output-{opus.pk}"})
    assert client.post("/settings/prices/", row(opus, output="1")).status_code == 403
    opus.refresh_from_db()
    assert opus.output == Decimal("25")


def test_text_in_a_model_name_is_escaped(client, admin, opus):
    client.force_login(admin)
    new = {"new-input": "1", "new-output": "1", "new-cache_read": "1", "new-cache_write": "1"}

    client.post("/settings/prices/", {"new-model": "<script>x</script>", **new})

    assert b"<script>x</script>" not in client.get("/settings/prices/").content
