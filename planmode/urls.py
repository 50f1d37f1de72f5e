from __future__ import annotations

from django.urls import path

from planmode import views

urlpatterns = [
    path("", views.plan_queue, name="plan-queue"),
    path("decided/", views.plans_decided, name="plans-decided"),
    path("<int:plan_id>/", views.plan_review, name="plan-review"),
    path("<int:plan_id>/decide/", views.plan_decide, name="plan-decide"),
    path("<int:plan_id>/undo/", views.plan_undo, name="plan-undo"),
    path("<int:plan_id>/annotations/", views.annotation_save, name="plan-annotate"),
    path(
        "<int:plan_id>/annotations/<int:annotation_id>/remove/",
        views.annotation_remove,
        name="plan-annotation-remove",
    ),
]
