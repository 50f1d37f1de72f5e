from __future__ import annotations

from django.urls import path

from dashboard.notifications import views

urlpatterns = [
    path("webhooks/", views.target_add, name="webhook-add"),
    path("webhooks/<int:pk>/remove/", views.target_remove, name="webhook-remove"),
    path("webhooks/<int:pk>/test/", views.target_test, name="webhook-test"),
    path("webhooks/<int:pk>/log/", views.target_log, name="webhook-log"),
    path("devices/", views.device_add, name="device-add"),
    path("devices/<int:pk>/rename/", views.device_rename, name="device-rename"),
    path("devices/<int:pk>/remove/", views.device_remove, name="device-remove"),
    path("waiting.json", views.waiting, name="notify-waiting"),
]
