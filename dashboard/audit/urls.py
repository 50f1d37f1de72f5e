from __future__ import annotations

from django.urls import path

from dashboard.audit import views

urlpatterns = [
    path("", views.audit_page, name="audit"),
    path("export.<str:kind>", views.audit_export, name="audit-export"),
]
