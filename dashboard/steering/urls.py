from __future__ import annotations

from django.urls import path

from dashboard.steering import views

urlpatterns = [
    path("<str:session_id>/count/", views.steer_count, name="steer-count"),
    path("<str:session_id>/<str:action>/", views.steer_box, name="steer-box"),
    path("<str:session_id>/<str:action>/send/", views.steer_act, name="steer-act"),
]
