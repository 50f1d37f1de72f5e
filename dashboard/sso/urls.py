from __future__ import annotations

from django.urls import path

from dashboard.sso import views

# The callback's address is the redirect URI registered at the provider:
# https://<host>/oidc/callback/ (README, "Single sign-on").
urlpatterns = [
    path("start/", views.SsoStart.as_view(), name="oidc_authentication_init"),
    path("callback/", views.SsoCallback.as_view(), name="oidc_authentication_callback"),
]
