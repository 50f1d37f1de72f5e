from __future__ import annotations

from django.urls import path

from dashboard.costs import views

# OTLP/HTTP's own paths, under the server's root (what OTEL_EXPORTER_OTLP_ENDPOINT adds).
urlpatterns = [
    path("metrics", views.otlp_metrics, name="otlp-metrics"),
    path("logs", views.otlp_logs, name="otlp-logs"),
]
