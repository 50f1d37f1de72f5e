from __future__ import annotations

from django.urls import path

from dashboard.search import views

urlpatterns = [path("", views.search_page, name="search")]
