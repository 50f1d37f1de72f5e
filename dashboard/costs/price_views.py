"""The price table's page (Settings, Prices): everyone signed in reads the prices that make
the estimated costs; admins change them, add a model and remove one."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from dashboard.core.errors import ServiceError
from dashboard.core.security import login_required
from dashboard.costs.models import Price

FIELDS = (
    ("input", "input"),
    ("output", "output"),
    ("cache_read", "cache read"),
    ("cache_write", "cache write"),
)
MOST = Decimal("100000")


def _price(text: str, *, model: str, what: str) -> Decimal:
    """A price in dollars per million tokens, as typed; one sentence when it is not one."""
    cleaned = text.strip().removeprefix("$").strip()
    try:
        value = Decimal(cleaned)
    except InvalidOperation:
        value = None
    if value is None or not value.is_finite():
        raise ServiceError(
            "bad_price", f"The {what} price of {model} must be a number of dollars, like 3 or "
            f"0.30; {text.strip()[:40]!r} is not one.",
        )  # fmt: skip
    if value < 0 or value >= MOST:
        raise ServiceError(
            "bad_price", f"The {what} price of {model} must be at least 0 and under $100,000 "
            "per million tokens.",
        )  # fmt: skip
    if value != value.quantize(Decimal("0.0001")):
        raise ServiceError("bad_price", f"The {what} price of {model} has more than four decimals.")
    return value


def _model_name(text: str) -> str:
    name = text.strip().lower()
    if not name:
        raise ServiceError("bad_model", "Name the model whose prices these are.")
    if len(name) > 200 or any(c.isspace() for c in name):
        raise ServiceError(
            "bad_model", "A model's name is one word of at most 200 characters, like gpt-5."
        )
    return name


def prices_save(post: dict[str, str]) -> tuple[int, str]:
    """Every row's prices (`<field>-<pk>`), the rows to remove (`remove-<pk>`), and a new
    model (`new-model`, `new-<field>`), checked all before any is saved. Returns how many
    rows changed and the model added ("" if none)."""
    prices = list(Price.objects.select_for_update().order_by("model"))
    changed: list[Price] = []
    removed: list[int] = []
    for price in prices:
        if post.get(f"remove-{price.pk}"):
            removed.append(price.pk)
            continue
        before = [getattr(price, field) for field, _ in FIELDS]
        for field, what in FIELDS:
            key = f"{field}-{price.pk}"
            if key in post:
                setattr(price, field, _price(post[key], model=price.model, what=what))
        if [getattr(price, field) for field, _ in FIELDS] != before:
            changed.append(price)
    added = None
    if post.get("new-model", "").strip():
        name = _model_name(post["new-model"])
        if any(price.model == name for price in prices if price.pk not in removed):
            raise ServiceError(
                "model_exists", f"{name} already has prices; change them in its row."
            )
        added = Price(
            model=name,
            **{
                field: _price(post.get(f"new-{field}", "") or "", model=name, what=what)
                for field, what in FIELDS
            },
        )
    for price in changed:
        price.save()
    if removed:
        Price.objects.filter(pk__in=removed).delete()
    if added is not None:
        added.save()
    return len(changed) + len(removed), added.model if added else ""


@login_required
def prices_page(request: HttpRequest) -> HttpResponse:
    is_admin = bool(request.user.is_superuser)
    error = ""
    status = 200
    if request.method == "POST":
        if not is_admin:
            raise PermissionDenied("Only admins change the price table.")
        try:
            with transaction.atomic():
                count, added = prices_save(request.POST.dict())
        except ServiceError as failure:
            error, status = failure.message, failure.status
        else:
            done = [f"Added {added}." if added else "", f"{count} row{'s' if count != 1 else ''} "
                    "changed." if count else ""]  # fmt: skip
            messages.success(request, " ".join(filter(None, done)) or "Nothing changed.")
            return redirect("prices")
    typed = request.POST if error else {}
    rows = [
        (price, [(field, what, typed.get(f"{field}-{price.pk}", getattr(price, field).normalize()))
                 for field, what in FIELDS])
        for price in Price.objects.order_by("model")
    ]  # fmt: skip
    new = [(field, what, typed.get(f"new-{field}", "")) for field, what in FIELDS]
    context = {
        "rows": rows,
        "new": new,
        "new_model": typed.get("new-model", ""),
        "fields": FIELDS,
        "may_edit": is_admin,
        "error": error,
    }
    return render(request, "costs/prices.html", context, status=status)
