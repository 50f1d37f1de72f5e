"""Sign-ins, sign-outs, failed sign-ins and lockouts in the audit log, for passwords and the
identity provider alike. Django and django-axes announce them; each entry is written at once
(in its own transaction: Django's login has none to join)."""

from __future__ import annotations

from typing import Any

from axes.signals import user_locked_out
from django.contrib.auth import BACKEND_SESSION_KEY, get_user_model
from django.contrib.auth.signals import user_logged_in, user_logged_out, user_login_failed
from django.db import transaction

from dashboard.core.audit import audit, via_request
from dashboard.models import AuditAction
from dashboard.sso.services import SURFACE, plain_text

LOGIN_PAGE = "sign-in page"
BACKEND = "dashboard.sso.backend.SsoBackend"


def _surface(user: Any) -> str:
    return SURFACE if getattr(user, "backend", "") == BACKEND else LOGIN_PAGE


def _from_a_page(request: Any) -> bool:
    """A sign-in or out a person made through a page: code that signs someone in itself (the
    test client's force_login) passes no request, or an empty one."""
    return request is not None and request.method is not None


def _signed_in(sender: Any, request: Any, user: Any, **kwargs: Any) -> None:
    if not _from_a_page(request):
        return
    with transaction.atomic():
        audit(AuditAction.SIGNED_IN, actor=user, via=via_request(request, _surface(user)),
              about=f"user:{user.pk}")  # fmt: skip


def _signed_out(sender: Any, request: Any, user: Any, **kwargs: Any) -> None:
    if not _from_a_page(request) or user is None:
        return
    # Sent before the session ends: it still says how the person signed in.
    backend = request.session.get(BACKEND_SESSION_KEY, "") if hasattr(request, "session") else ""
    surface = SURFACE if backend == BACKEND else LOGIN_PAGE
    with transaction.atomic():
        audit(AuditAction.SIGNED_OUT, actor=user, via=via_request(request, surface),
              about=f"user:{user.pk}")  # fmt: skip


def tried(username: object) -> tuple[Any, str]:
    """The account a failed sign-in tried (if there is one) and the name typed, as plain
    text: it is anybody's input."""
    name = plain_text(username, 150)
    account = get_user_model().objects.filter(username=name).first() if name else None
    return account, name


def _failed(sender: Any, credentials: dict[str, Any], request: Any = None, **kwargs: Any) -> None:
    # The provider's failures are recorded by its callback (`dashboard.sso.views`), which
    # knows why; a sign-in refused because of a lockout is the lockout's entry.
    if request is None or "username" not in credentials:
        return
    if getattr(request, "axes_locked_out", False):
        return
    account, name = tried(credentials.get("username"))
    with transaction.atomic():
        audit(
            AuditAction.SIGN_IN_FAILED, actor=account, via=via_request(request, LOGIN_PAGE),
            summary=f"Wrong password for the user name “{name}”." if name else "No user name.",
        )  # fmt: skip


def _locked_out(sender: Any, request: Any = None, username: Any = None, **kwargs: Any) -> None:
    if request is None:
        return
    account, name = tried(username)
    with transaction.atomic():
        audit(
            AuditAction.LOCKED_OUT, actor=account, via=via_request(request, LOGIN_PAGE),
            summary=f"Sign-ins as “{name}” or from this address are paused after too many "
            "failures." if name else "Sign-ins from this address are paused after failures.",
        )  # fmt: skip


def connect() -> None:
    user_logged_in.connect(_signed_in, dispatch_uid="sso.audit.signed_in")
    user_logged_out.connect(_signed_out, dispatch_uid="sso.audit.signed_out")
    user_login_failed.connect(_failed, dispatch_uid="sso.audit.failed")
    user_locked_out.connect(_locked_out, dispatch_uid="sso.audit.locked_out")
