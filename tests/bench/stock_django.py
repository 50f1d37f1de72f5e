"""A stock Django project with one async no-op JSON view, served by the same daphne as
Agentboard: the benchmark's reference for what Django itself costs per request.

Settings, URLs, view and ASGI application in one module, with the middleware
`django-admin startproject` writes. Run: `daphne tests.bench.stock_django:application` with
DJANGO_SETTINGS_MODULE=tests.bench.stock_django.
"""

from __future__ import annotations

from django.http import HttpRequest, JsonResponse
from django.urls import path

SECRET_KEY = "benchmark-reference-only"
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
USE_TZ = True
INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
]
MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}}
ROOT_URLCONF = __name__


async def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


urlpatterns = [path("healthz", healthz)]

# Last: building the application loads the settings, which are this module.
from django.core.asgi import get_asgi_application  # noqa: E402

application = get_asgi_application()
