"""Notification settings (webhook targets, push devices), the PWA files and the waiting list.

Webhook targets: admins add team targets (every project they pick, every decision); reviewers
add their own. A target gets only what its owner may see. Devices are each user's own.
"""

from __future__ import annotations

import secrets
from datetime import datetime, timedelta
from typing import Annotated, Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST
from pydantic import BaseModel, Field, ValidationError

from dashboard.core.audit import Via, audit, via_request
from dashboard.core.edge import strict_loads, text_type
from dashboard.core.redaction import redact
from dashboard.core.security import login_required
from dashboard.core.visibility import Audience, audience_of
from dashboard.models import AuditAction
from dashboard.notifications.messages import cut
from dashboard.notifications.models import Delivery, Event, PushDevice, WebhookTarget
from dashboard.notifications.routing import ASKED_FIRST, named_reviewers, told_at
from dashboard.notifications.safety import UnsafeURL, check_form, check_url, host_of, mask_url
from dashboard.notifications.senders import new_client, public_key, send_webhook
from dashboard.web.views import settings_page
from planmode.inbox import inbox_items
from planmode.permissions import is_reviewer
from todos.models import Continuation

LOG_LENGTH = 50


def may_add_targets(user: AbstractBaseUser) -> bool:
    return bool(user.is_staff or is_reviewer(user))


def _base_url(request: HttpRequest) -> str:
    return settings.AGENTBOARD_PUBLIC_URL or request.build_absolute_uri("/").rstrip("/")


def _visible_targets(user: AbstractBaseUser):
    targets = WebhookTarget.objects.select_related("owner")
    return targets if user.is_staff else targets.filter(owner=user)


def settings_context(user: AbstractBaseUser) -> dict[str, Any]:
    """What the settings page shows of notifications (registered in `apps.py`)."""
    targets = list(_visible_targets(user))
    return {
        "notify_devices": [
            {"device": device, "endpoint": mask_url(device.endpoint)}
            for device in PushDevice.objects.filter(user=user)
        ],
        "notify_targets": [
            {
                "target": target,
                "url": mask_url(target.url),
                "events": [Event(event).label for event in target.events if event in Event.values],
            }
            for target in targets
        ],
        "notify_events": Event.choices,
        "notify_kinds": WebhookTarget.Kind.choices,
        "may_add_targets": may_add_targets(user),
        "vapid_public_key": public_key(),
    }


# --- webhook targets -------------------------------------------------------------------------


class TargetForm(BaseModel):
    name: Annotated[str, text_type(max_length=100, blank="Give the target a name.")]
    kind: WebhookTarget.Kind
    url: Annotated[str, text_type(max_length=2000, blank="Give the webhook's address.")]
    events: list[Event] = Field(min_length=1)
    projects: list[Annotated[str, text_type(max_length=200)]] = []


def _settings_again(request: HttpRequest, *, status: int = 200, **extra: Any) -> HttpResponse:
    response = settings_page(request, **extra)
    response.status_code = status
    return response


@login_required
@require_POST
def target_add(request: HttpRequest) -> HttpResponse:
    if not may_add_targets(request.user):
        return _settings_again(
            request,
            status=403,
            target_error="Only reviewers and admins can add webhooks; ask an admin.",
        )
    data = {
        "name": request.POST.get("name", "").strip(),
        "kind": request.POST.get("kind", ""),
        "url": request.POST.get("url", "").strip(),
        "events": request.POST.getlist("events"),
        "projects": [p.strip() for p in request.POST.get("projects", "").split(",") if p.strip()],
    }
    try:
        form = TargetForm.model_validate(data)
        check_url(form.url)
    except ValidationError as error:
        first = error.errors()[0]
        field = first["loc"][0] if first["loc"] else ""
        sentence = {
            "events": "Pick at least one event for the target.",
            "kind": "Pick Slack or signed JSON.",
        }.get(str(field), first["msg"].removeprefix("Value error, "))
        return _settings_again(request, status=422, target_error=sentence, target_form=data)
    except UnsafeURL as error:
        return _settings_again(request, status=422, target_error=str(error), target_form=data)
    with transaction.atomic():
        target = WebhookTarget.objects.create(
            owner=request.user,
            name=form.name,
            kind=form.kind,
            url=form.url,
            secret=secrets.token_urlsafe(32) if form.kind == WebhookTarget.Kind.JSON else "",
            events=[str(event) for event in form.events],
            projects=form.projects,
            base_url=_base_url(request),
        )
        _target_audit(AuditAction.TARGET_ADDED, target, request, "added")
    return _settings_again(request, new_target=target)


def _target_words(target: WebhookTarget) -> str:
    """The target as the audit log says it: its name, kind, host (never the URL: its path
    or query can carry the credential) and what it is sent."""
    events = ", ".join(Event(event).label for event in target.events if event in Event.values)
    projects = ", ".join(target.projects) or "every project its owner sees"
    return redact(
        f"webhook {target.name} ({target.get_kind_display()}) to {host_of(target.url)}: "
        f"{events}; {projects}"
    )


def _target_audit(action: str, target: WebhookTarget, request: HttpRequest, done: str) -> None:
    audit(
        action, actor=request.user, via=via_request(request, "settings"),
        about=f"webhook:{target.pk}", summary=f"{_target_words(target)} {done}",
    )  # fmt: skip


def _device_audit(action: str, device: PushDevice, via: Via, actor: Any, done: str) -> None:
    audit(
        action, actor=actor, via=via, about=f"device:{device.pk}",
        summary=redact(f"push device {device.name} ({host_of(device.endpoint)}) {done}"),
    )  # fmt: skip


def _own_target(request: HttpRequest, pk: int) -> WebhookTarget:
    return get_object_or_404(_visible_targets(request.user), pk=pk)


@login_required
@require_POST
def target_remove(request: HttpRequest, pk: int) -> HttpResponse:
    target = _own_target(request, pk)
    with transaction.atomic():
        _target_audit(AuditAction.TARGET_REMOVED, target, request, "removed")
        target.delete()
    messages.success(request, f"Removed the webhook “{target.name}”.")
    return redirect(reverse("settings") + "#webhooks-title")


TEST_PAYLOAD = {
    "event": "test",
    "kind": "test",
    "id": 0,
    "project": "agentboard",
    "session": "",
    "agent": "",
    "title": "A test from Agentboard: this target works.",
    "excerpt": "",
    "path": "/settings/",
}


@login_required
@require_POST
async def target_test(request: HttpRequest, pk: int) -> HttpResponse:
    """Send a test message now and show what the receiver answered."""
    from asgiref.sync import sync_to_async

    target = await sync_to_async(_own_target)(request, pk)
    payload = {**TEST_PAYLOAD, "at": timezone.now().isoformat()}
    async with new_client() as client:
        result = await send_webhook(client, target, payload, f"test:{secrets.token_hex(4)}")
    return await sync_to_async(_settings_again)(request, test_target=target.pk, test_result=result)


@login_required
@require_GET
def target_log(request: HttpRequest, pk: int) -> HttpResponse:
    target = _own_target(request, pk)
    deliveries = Delivery.objects.filter(target=target)[:LOG_LENGTH]
    return render(
        request,
        "notifications/log.html",
        {"target": target, "url": mask_url(target.url), "deliveries": deliveries},
    )


# --- push devices ----------------------------------------------------------------------------


class SubscriptionKeys(BaseModel):
    p256dh: Annotated[str, text_type(max_length=200, blank="The subscription has no key.")]
    auth: Annotated[str, text_type(max_length=100, blank="The subscription has no key.")]


class DeviceForm(BaseModel):
    name: Annotated[str, text_type(max_length=100)] = ""
    endpoint: Annotated[str, text_type(max_length=2000, blank="The subscription has no endpoint.")]
    keys: SubscriptionKeys


def _problem(message: str, status: int) -> JsonResponse:
    return JsonResponse({"detail": message}, status=status)


@login_required
@require_POST
def device_add(request: HttpRequest) -> JsonResponse:
    """A browser's push subscription (JSON, as PushSubscription.toJSON() gives it)."""
    try:
        form = DeviceForm.model_validate(strict_loads(request.body or b"null"))
        check_form(form.endpoint)
    except ValueError as error:
        # ValidationError and UnsafeURL are both ValueErrors; JSON errors too.
        text = str(error) if isinstance(error, UnsafeURL) else "Send the subscription as JSON."
        return _problem(text, 422)
    name = form.name.strip() or "This device"
    try:
        with transaction.atomic():
            # Only the user's own device is updated: a subscription another account registered
            # stays that account's (the endpoint is unique, so creating it again is refused).
            device, created = PushDevice.objects.update_or_create(
                endpoint=form.endpoint,
                user=request.user,
                defaults={
                    "name": name,
                    "p256dh": form.keys.p256dh,
                    "auth": form.keys.auth,
                    "base_url": _base_url(request),
                },
            )
            _device_audit(
                AuditAction.TARGET_ADDED if created else AuditAction.TARGET_CHANGED,
                device, via_request(request, "settings"), request.user,
                "added" if created else "subscribed again",
            )  # fmt: skip
    except IntegrityError:
        return _problem(
            "This browser already gets notifications for another account; sign in as that "
            "account and remove it under Settings first.",
            409,
        )
    return JsonResponse({"id": device.pk, "name": device.name}, status=201)


@login_required
@require_POST
def device_rename(request: HttpRequest, pk: int) -> HttpResponse:
    device = get_object_or_404(PushDevice, pk=pk, user=request.user)
    name = request.POST.get("name", "").strip()[:100]
    if name and name != device.name:
        before = device.name
        with transaction.atomic():
            device.name = name
            device.save(update_fields=["name"])
            _device_audit(
                AuditAction.TARGET_CHANGED, device, via_request(request, "settings"),
                request.user, f"renamed from {before}",
            )  # fmt: skip
    return redirect(reverse("settings") + "#devices-title")


@login_required
@require_POST
def device_remove(request: HttpRequest, pk: int) -> HttpResponse:
    device = get_object_or_404(PushDevice, pk=pk, user=request.user)
    with transaction.atomic():
        _device_audit(
            AuditAction.TARGET_REMOVED, device, via_request(request, "settings"), request.user,
            "removed",
        )  # fmt: skip
        device.delete()
    messages.success(request, f"Removed the device “{device.name}”; it gets no more messages.")
    return redirect(reverse("settings") + "#devices-title")


# --- what the browser notifies about ---------------------------------------------------------

WANTS = {
    "plan": "wants its plan reviewed",
    "permission": "asks to use a tool",
    "countdown": "will be continued unless you cancel",
    "terminal": "waits for you in its terminal",
    "look": "needs a look",
    "stopped": "stopped with tasks left",
}
# How long an agent that stopped with tasks left stays worth a desktop notification.
STOPPED_RECENTLY = timedelta(minutes=30)


@login_required
@require_GET
def waiting(request: HttpRequest) -> JsonResponse:
    """What the user is to be told of now, for desktop notifications (text only: the
    browser's notification shows it as text): what waits on them, except what a project asks
    its own reviewers about first while the others' turn has not come (`routing`). The page
    asks again when it does (`later_in`, in seconds)."""
    now = timezone.now()
    # Decided ones in their undo window wait on nobody.
    waits = [item for item in inbox_items(audience_of(request.user)) if not item.staged]
    named = named_reviewers(
        item.session.project_record_id for item in waits if item.kind in ASKED_FIRST
    )
    items = []
    held: list[datetime] = []
    for item in waits:
        at = told_at(
            kind=item.kind, session=item.session, user_pk=request.user.pk, since=item.since,
            named=named,
        )  # fmt: skip
        if at > now:
            held.append(at)
            continue
        if item.kind == "plan" and item.plan:
            what = f"Plan rev {item.plan.revision}: {item.plan.title}"
            url = reverse("plan-review", args=[item.pk])
        elif item.kind == "permission" and item.view:
            what = f"{item.view.tool}: {item.view.headline}"
            url = reverse("inbox-request", args=[item.pk])
        elif item.kind == "look":
            what = f"{item.what}: {item.summary}"
            url = reverse("session-board", args=[item.session.session_id])
        else:
            what = WANTS.get(item.kind, "waits for you")
            url = reverse("session-board", args=[item.session.session_id])
        agent = "main agent" if item.agent.is_main else f"{item.agent.label} agent"
        items.append(
            {
                "key": f"{item.kind}-{item.pk}",
                "title": cut(f"{item.session.project} · {agent} {WANTS.get(item.kind, '')}", 120),
                "body": cut(what, 200),
                "url": url,
            }
        )
    for stop in _stopped_unfinished(audience_of(request.user)):
        agent = "main agent" if stop.agent.is_main else f"{stop.agent.label} agent"
        items.append(
            {
                "key": f"stopped-{stop.pk}",
                "title": cut(f"{stop.agent.session.project} · {agent} {WANTS['stopped']}", 120),
                "body": cut(f"{stop.unfinished} unfinished: {stop.reason}", 200),
                "url": reverse("session-board", args=[stop.agent.session.session_id]),
            }
        )
    later_in = (min(held) - now).total_seconds() if held else None
    return JsonResponse({"items": items, "later_in": later_in})


def _stopped_unfinished(audience: Audience) -> list[Continuation]:
    """Agents that stopped lately with tasks left and were let stop (one query)."""
    stops = Continuation.objects.filter(
        status=Continuation.Status.SKIPPED,
        unfinished__gt=0,
        resolved_at__gte=timezone.now() - STOPPED_RECENTLY,
    ).select_related("agent", "agent__session")
    stops = stops.filter(audience.waits_on("agent__session__"))
    return list(stops.order_by("resolved_at", "pk")[:50])


# --- installable app -------------------------------------------------------------------------


@require_GET
def service_worker(request: HttpRequest) -> HttpResponse:
    response = HttpResponse(
        render_to_string("notifications/sw.js"), content_type="text/javascript; charset=utf-8"
    )
    response["Service-Worker-Allowed"] = "/"
    # A new version is picked up at the next visit, never a stale copy.
    response["Cache-Control"] = "no-cache"
    return response


@require_GET
def manifest(request: HttpRequest) -> JsonResponse:
    from django.templatetags.static import static

    icons = [
        {"src": static(f"icons/icon-{size}.png"), "sizes": f"{size}x{size}", "type": "image/png"}
        for size in (192, 512)
    ]
    icons.append({**icons[-1], "purpose": "maskable"})
    response = JsonResponse(
        {
            "name": "Agentboard",
            "short_name": "Agentboard",
            "description": "Watch your coding agents and decide what they wait for.",
            "start_url": "/inbox/",
            "scope": "/",
            "display": "standalone",
            "background_color": "#131316",
            "theme_color": "#6d28d9",
            "icons": icons,
        }
    )
    response["Content-Type"] = "application/manifest+json"
    return response
