from __future__ import annotations

from django.urls import path

from planmode import inbox_views

urlpatterns = [
    path("", inbox_views.inbox, name="inbox"),
    path("decided/", inbox_views.inbox_decided, name="inbox-decided"),
    path("requests/decide/", inbox_views.requests_decide_many, name="inbox-decide-many"),
    path("requests/<int:request_id>/", inbox_views.request_detail, name="inbox-request"),
    path("requests/<int:request_id>/decide/", inbox_views.request_decide, name="inbox-decide"),
    path("requests/<int:request_id>/undo/", inbox_views.request_undo, name="inbox-undo"),
]
