"""Agentboard settings, read from the environment.

Embedded default: SQLite (WAL, IMMEDIATE transactions) and the in-memory channel layer in one
process. Set DATABASE_URL and REDIS_URL to run several processes against PostgreSQL and Redis.
"""

from __future__ import annotations

import os
import secrets
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent


def envbool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    if value.lower() in {"1", "true", "yes", "on"}:
        return True
    if value.lower() in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name} must be true or false, not {value!r}.")


def envint(name: str, default: int) -> int:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    try:
        return int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a whole number, not {value!r}.") from None


def envfloat(name: str, default: float) -> float:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    try:
        return float(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a number, not {value!r}.") from None


def envlist(name: str, default: list[str]) -> list[str]:
    value = os.environ.get(name)
    if not value:
        return default
    return [item.strip() for item in value.split(",") if item.strip()]


DATA_DIR = Path(os.environ.get("AGENTBOARD_DATA_DIR") or BASE_DIR / "var")
DATA_DIR.mkdir(parents=True, exist_ok=True)


def _secret_key() -> str:
    if key := os.environ.get("AGENTBOARD_SECRET_KEY"):
        return key
    # A generated key is kept beside the database so sessions survive restarts.
    key_file = DATA_DIR / "secret_key"
    if not key_file.exists():
        key_file.write_text(secrets.token_urlsafe(50))
        key_file.chmod(0o600)
    return key_file.read_text().strip()


SECRET_KEY = _secret_key()
DEBUG = envbool("AGENTBOARD_DEBUG", False)
ALLOWED_HOSTS = envlist("AGENTBOARD_ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"])
CSRF_TRUSTED_ORIGINS = envlist("AGENTBOARD_CSRF_TRUSTED_ORIGINS", [])


def _public_url(value: str) -> str:
    """The dashboard's address for links given to agents, e.g. https://board.example.com."""
    if not value:
        return ""
    parts = urlsplit(value)
    try:
        port_ok = parts.port is None or parts.port > 0
    except ValueError:
        port_ok = False
    if not (
        port_ok
        and parts.scheme in {"http", "https"}
        and parts.hostname
        and parts.username is None
        and parts.path in {"", "/"}
        and not parts.query
        and not parts.fragment
    ):
        raise ImproperlyConfigured(
            "AGENTBOARD_PUBLIC_URL must be an http(s) address without a path, such as "
            f"https://board.example.com, not {value!r}."
        )
    return f"{parts.scheme}://{parts.netloc}"


# Links handed to agents (a plan's review_url) use this address when it is set; otherwise the
# request's Host header, and only when that is one of ALLOWED_HOSTS. The dashboard is reachable
# there, so its host is allowed and its origin trusted.
AGENTBOARD_PUBLIC_URL = _public_url(os.environ.get("AGENTBOARD_PUBLIC_URL", ""))
if AGENTBOARD_PUBLIC_URL:
    _public_host = urlsplit(AGENTBOARD_PUBLIC_URL).hostname or ""
    ALLOWED_HOSTS.append(f"[{_public_host}]" if ":" in _public_host else _public_host)
    CSRF_TRUSTED_ORIGINS.append(AGENTBOARD_PUBLIC_URL)

# On only when a reverse proxy is the sole way in and sets X-Forwarded-For and
# X-Forwarded-Proto itself: anyone can send those headers, so they count only then.
AGENTBOARD_TRUSTED_PROXY = envbool("AGENTBOARD_TRUSTED_PROXY", False)
if AGENTBOARD_TRUSTED_PROXY:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "axes",
    "channels",
    "django_htmx",
    "dashboard",
    "todos",
    "planmode",
    "dashboard.activity",
    "dashboard.notifications",
    "dashboard.projects",
    "dashboard.teams",
    "dashboard.audit",
    "dashboard.sso",
    "dashboard.search",
    "dashboard.costs",
    "dashboard.steering",
    "dashboard.policy",
]

# Django's middleware runs on the event loop under async views wherever it reads only the
# request (`dashboard.core.security`): the header-only ones wrapped by `on_the_loop`, sessions,
# CSRF, login and messages as subclasses. `check --deploy` looks for SecurityMiddleware,
# XFrameOptionsMiddleware and CsrfViewMiddleware by name: they are here, wrapped or subclassed
# (tests/dashboard/test_security.py checks their headers and the CSRF refusal).
SILENCED_SYSTEM_CHECKS = ["security.W001", "security.W002", "security.W003"]
MIDDLEWARE = [
    "dashboard.core.security.django_security",
    "servestatic.middleware.ServeStaticMiddleware",
    # After the static files (they keep their own caching), before the session and CSRF
    # middleware (so it sees their cookies).
    "dashboard.core.security.security_headers",
    "dashboard.core.security.Sessions",
    "dashboard.core.security.django_common",
    "dashboard.core.security.Csrf",
    "dashboard.core.security.Authentication",
    "dashboard.core.security.Messages",
    "dashboard.core.security.django_clickjacking",
    "django_htmx.middleware.HtmxMiddleware",
    "axes.middleware.AxesMiddleware",
]

# The agent endpoints (`/hooks/`, `/api/v1/`) authenticate with bearer tokens and need none of
# the browser's middleware (`dashboard.asgi.AgentHandler`).
AGENTBOARD_AGENT_MIDDLEWARE = [
    "dashboard.core.security.django_security",
    "dashboard.core.security.security_headers",
]

ROOT_URLCONF = "dashboard.urls"
ASGI_APPLICATION = "dashboard.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "dashboard.web.context_processors.header",
            ],
        },
    },
]

_SQLITE_DEFAULT = {
    "ENGINE": "django.db.backends.sqlite3",
    "NAME": DATA_DIR / "agentboard.sqlite3",
    "OPTIONS": {
        # IMMEDIATE takes the write lock at BEGIN, so concurrent writers queue instead of
        # failing half-way; WAL lets the dashboard read while an agent writes.
        "transaction_mode": "IMMEDIATE",
        "timeout": 20,
        "init_command": (
            "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA busy_timeout=20000;"
        ),
    },
}

if database_url := os.environ.get("DATABASE_URL"):
    _database = dj_database_url.parse(database_url, conn_max_age=0)
    if _database["ENGINE"] == "django.db.backends.sqlite3":
        # `sqlite:///path` must behave like the default: the same locking and journal options,
        # or concurrent writers fail with "database is locked".
        _database["OPTIONS"] = {**_SQLITE_DEFAULT["OPTIONS"], **_database.get("OPTIONS", {})}
    elif _database["ENGINE"] == "django.db.backends.postgresql":
        _options: dict[str, object] = {}
        if envbool("AGENTBOARD_PREPARED_STATEMENTS", default=True):
            # The hot paths' statements (`dashboard.core.sql.hot_cursor`) are prepared on first
            # use; the ORM's own queries never are (they bind on the client). Turn off behind a
            # pooler that cannot keep prepared statements (PgBouncer before 1.21, or without
            # max_prepared_statements in transaction mode).
            _options["prepare_threshold"] = 0
        if _pool_size := envint("AGENTBOARD_DATABASE_POOL_SIZE", 20):
            # Each page runs in a thread of its own (Django under ASGI), which would open a
            # connection and close it at the end: a new PostgreSQL backend, whose first reads
            # of each table load its catalog anew (20 to 45 ms of a page on a year's database).
            # A pool of this process's connections lends them instead. The long-lived threads
            # (the writer, the reader, the renderer, the notifications worker) each keep one.
            # 0 turns it off.
            _options["pool"] = {"min_size": 1, "max_size": _pool_size, "timeout": 20}
        _database["OPTIONS"] = {**_options, **_database.get("OPTIONS", {})}
    DATABASES = {"default": _database}
else:
    DATABASES = {"default": _SQLITE_DEFAULT}

# With Redis, every server process of a team shares it: the channel layer, and the decision bus
# that wakes agents waiting in other processes (`dashboard.live.watch`). Keys and channels start
# with the prefix, so several deployments can share one Redis.
AGENTBOARD_REDIS_URL = os.environ.get("REDIS_URL") or None
AGENTBOARD_REDIS_PREFIX = os.environ.get("AGENTBOARD_REDIS_PREFIX", "agentboard")
if redis_url := AGENTBOARD_REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {
                "hosts": [
                    {
                        "address": redis_url,
                        # channels_redis waits up to 5 s in a blocking read; redis-py's default
                        # 5 s socket timeout cuts that read short and breaks every waiter.
                        "socket_timeout": 15,
                        # redis-py's default pool of 100 fails (instead of waiting) when hundreds
                        # of held hook requests subscribe or leave at the same moment.
                        "max_connections": 2000,
                    }
                ],
                "prefix": AGENTBOARD_REDIS_PREFIX,
                "capacity": 1000,
                "expiry": 30,
            },
        }
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "dashboard.live.channel_layer.InMemoryChannelLayer"}}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

# Login throttling (django-axes, counted in the database so every server process agrees): after
# this many failed logins for one account, or from one address, logins are refused until the
# lockout has passed since the last failed attempt.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
    # Takes part only when single sign-on is set up (below).
    "dashboard.sso.backend.SsoBackend",
]
AXES_FAILURE_LIMIT = envint("AGENTBOARD_LOGIN_FAILURE_LIMIT", 10)
AXES_COOLOFF_TIME = timedelta(minutes=envfloat("AGENTBOARD_LOGIN_LOCKOUT_MINUTES", 15))
if AXES_FAILURE_LIMIT < 1 or AXES_COOLOFF_TIME <= timedelta(0):
    raise ImproperlyConfigured(
        "AGENTBOARD_LOGIN_FAILURE_LIMIT and AGENTBOARD_LOGIN_LOCKOUT_MINUTES must be positive."
    )
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]
AXES_LOCKOUT_CALLABLE = "dashboard.web.views.login_locked_out"
# The client's address: daphne has already put the proxy's X-Forwarded-For there when
# AGENTBOARD_TRUSTED_PROXY is on, and ignores the header otherwise.
AXES_IPWARE_META_PRECEDENCE_ORDER = ["REMOTE_ADDR"]
AXES_VERBOSE = False

# Single sign-on with the team's identity provider (OpenID Connect, `dashboard.sso`; README,
# "Single sign-on"): off unless the issuer is set. The provider's endpoints are read from its
# discovery document when the server starts; one that cannot be read stops it.
AGENTBOARD_OIDC_ISSUER = os.environ.get("AGENTBOARD_OIDC_ISSUER", "").strip()
AGENTBOARD_OIDC_CLIENT_ID = os.environ.get("AGENTBOARD_OIDC_CLIENT_ID", "").strip()
AGENTBOARD_OIDC_CLIENT_SECRET = os.environ.get("AGENTBOARD_OIDC_CLIENT_SECRET", "").strip()
AGENTBOARD_OIDC_SCOPES = os.environ.get("AGENTBOARD_OIDC_SCOPES", "").strip() or (
    "openid email profile"
)
# The claim that lists a person's groups, and the group whose members are admins (when set,
# the provider decides who is an admin among the people who sign in with it).
AGENTBOARD_OIDC_GROUPS_CLAIM = (
    os.environ.get("AGENTBOARD_OIDC_GROUPS_CLAIM", "").strip() or "groups"
)
AGENTBOARD_OIDC_ADMIN_GROUP = os.environ.get("AGENTBOARD_OIDC_ADMIN_GROUP", "").strip()
# Signing out of Agentboard signs out of the provider too (when it offers an end_session_endpoint
# and the login page's address is registered there as a post-logout redirect URI).
AGENTBOARD_OIDC_SIGN_OUT_AT_PROVIDER = envbool("AGENTBOARD_OIDC_SIGN_OUT_AT_PROVIDER", False)
# A person's first sign-in takes over the one account that has their verified e-mail address
# (an account made before single sign-on). Off: a provider's e-mail claim is whatever its admins
# (or, at some providers, its users) set, so by default only the subject names a person.
AGENTBOARD_OIDC_LINK_BY_EMAIL = envbool("AGENTBOARD_OIDC_LINK_BY_EMAIL", False)
# The provider's name on the login page's button ("Log in with Acme"); its host by default.
AGENTBOARD_OIDC_NAME = os.environ.get("AGENTBOARD_OIDC_NAME", "").strip()[:60]
if AGENTBOARD_OIDC_ISSUER:
    if urlsplit(AGENTBOARD_OIDC_ISSUER).scheme not in {"http", "https"}:
        raise ImproperlyConfigured(
            "AGENTBOARD_OIDC_ISSUER must be the provider's https address, such as "
            f"https://sso.example.com/realms/acme, not {AGENTBOARD_OIDC_ISSUER!r}."
        )
    if not (AGENTBOARD_OIDC_CLIENT_ID and AGENTBOARD_OIDC_CLIENT_SECRET):
        raise ImproperlyConfigured(
            "Single sign-on needs AGENTBOARD_OIDC_CLIENT_ID and AGENTBOARD_OIDC_CLIENT_SECRET "
            "as well as AGENTBOARD_OIDC_ISSUER."
        )
    if "openid" not in AGENTBOARD_OIDC_SCOPES.split():
        raise ImproperlyConfigured("AGENTBOARD_OIDC_SCOPES must include openid.")

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "overview"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = os.environ.get("AGENTBOARD_TIME_ZONE", "UTC")
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = DATA_DIR / "static"
# `serve` collects the files into STATIC_ROOT on every start, each under a name with a hash of
# its content and compressed beside it; servestatic then serves them gzipped (brotli too when
# the brotli package is installed) and cacheable for a year, since a changed file gets a new
# name. With AGENTBOARD_DEBUG they are served from the source folders as they are.
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "servestatic.storage.CompressedManifestStaticFilesStorage"},
}
SERVESTATIC_AUTOREFRESH = DEBUG

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
# Sent only on HTTPS responses (behind a trusted proxy that says so); 0 turns it off. Cookies
# are marked Secure on those responses too (dashboard.core.security), never over plain http.
SECURE_HSTS_SECONDS = envint("AGENTBOARD_HSTS_SECONDS", 31_536_000)

# Largest accepted request body (HTTP API, hooks) and socket frame, in bytes.
AGENTBOARD_MAX_BODY_BYTES = envint("AGENTBOARD_MAX_BODY_BYTES", 256 * 1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = AGENTBOARD_MAX_BODY_BYTES
# An OTLP export (`/v1/metrics`, `/v1/logs`) batches many points: its own cap, gzipped or not.
AGENTBOARD_OTLP_MAX_BYTES = envint("AGENTBOARD_OTLP_MAX_BYTES", 4 * 1024 * 1024)

# "default" accepts everything Claude Code accepts; "strict" adds the gencode rules
# (at most 20 items, 500 characters per text, at most one item in progress).
AGENTBOARD_TODO_POLICY = os.environ.get("AGENTBOARD_TODO_POLICY", "default")
if AGENTBOARD_TODO_POLICY not in {"default", "strict"}:
    raise ImproperlyConfigured("AGENTBOARD_TODO_POLICY must be 'default' or 'strict'.")

# Live updates: each card, session header and plan list is rendered at most once per frame,
# however many writes touched it in that time (the first change of a quiet period at once).
AGENTBOARD_LIVE_FRAME_MS = envint("AGENTBOARD_LIVE_FRAME_MS", 100)
if AGENTBOARD_LIVE_FRAME_MS < 0:
    raise ImproperlyConfigured("AGENTBOARD_LIVE_FRAME_MS must be 0 or more.")

# A session whose agents have said nothing for this long ends (and comes back with their next
# report); 0 keeps sessions running until their agent says SessionEnd.
AGENTBOARD_SESSION_IDLE_MINUTES = envfloat("AGENTBOARD_SESSION_IDLE_MINUTES", 30.0)
if AGENTBOARD_SESSION_IDLE_MINUTES < 0:
    raise ImproperlyConfigured("AGENTBOARD_SESSION_IDLE_MINUTES must be 0 or more.")

# Largest plan accepted, in characters of markdown.
# Agents' steps (every tool call) are kept this many days; `prune_activity` (run daily by the
# server) deletes older ones.
AGENTBOARD_ACTIVITY_DAYS = envfloat("AGENTBOARD_ACTIVITY_DAYS", 30.0)
if AGENTBOARD_ACTIVITY_DAYS <= 0:
    raise ImproperlyConfigured("AGENTBOARD_ACTIVITY_DAYS must be more than 0.")

# An agent that made the same failing call (same tool, same input) this many times in a row
# needs a look: it shows with what waits on a person until its next healthy step.
AGENTBOARD_LOOP_REPEATS = envint("AGENTBOARD_LOOP_REPEATS", 3)
if AGENTBOARD_LOOP_REPEATS < 2:
    raise ImproperlyConfigured("AGENTBOARD_LOOP_REPEATS must be 2 or more.")

# The same answer people gave to equivalent permission requests this many times in 14 days
# (and never the other answer) suggests a team rule (`dashboard.policy`).
AGENTBOARD_SUGGEST_AFTER = envint("AGENTBOARD_SUGGEST_AFTER", 3)
if AGENTBOARD_SUGGEST_AFTER < 2:
    raise ImproperlyConfigured("AGENTBOARD_SUGGEST_AFTER must be 2 or more.")

# An agent with a task in progress that made no step (and sent nothing) for this long, while
# nothing of it waits on a person, is stuck; 0 turns this off.
# A project's named reviewers are notified of its plans and permission requests at once;
# everyone else who would be told, this long after, if nobody has answered meanwhile.
AGENTBOARD_REVIEW_FALLBACK_MINUTES = envfloat("AGENTBOARD_REVIEW_FALLBACK_MINUTES", 10.0)
if AGENTBOARD_REVIEW_FALLBACK_MINUTES < 0:
    raise ImproperlyConfigured("AGENTBOARD_REVIEW_FALLBACK_MINUTES must be 0 or more.")
AGENTBOARD_STUCK_MINUTES = envfloat("AGENTBOARD_STUCK_MINUTES", 10.0)
if AGENTBOARD_STUCK_MINUTES < 0:
    raise ImproperlyConfigured("AGENTBOARD_STUCK_MINUTES must be 0 or more.")


def step_limits(text: str) -> dict[str, float]:
    """ "Bash=600,WebFetch=120": the longest a step of each tool may run, in seconds."""
    limits: dict[str, float] = {}
    for part in text.split(","):
        if not part.strip():
            continue
        tool, sep, seconds = part.partition("=")
        try:
            limit = float(seconds) if sep and tool.strip() else -1.0
        except ValueError:
            limit = -1.0
        if limit <= 0:
            raise ImproperlyConfigured(
                f"AGENTBOARD_STEP_LIMITS: {part.strip()!r} is not TOOL=SECONDS with more than 0 "
                "seconds; write it like Bash=600,WebFetch=120."
            )
        limits[tool.strip()] = limit
    return limits


# A step of one of these tools running longer than its limit (seconds) needs a look; empty: off.
AGENTBOARD_STEP_LIMITS = step_limits(os.environ.get("AGENTBOARD_STEP_LIMITS", ""))

# How often the server looks for stuck agents and steps running long.
AGENTBOARD_CONCERN_SWEEP_SECONDS = envfloat("AGENTBOARD_CONCERN_SWEEP_SECONDS", 30.0)
if AGENTBOARD_CONCERN_SWEEP_SECONDS <= 0:
    raise ImproperlyConfigured("AGENTBOARD_CONCERN_SWEEP_SECONDS must be a positive number.")

AGENTBOARD_MAX_PLAN_CHARS = envint("AGENTBOARD_MAX_PLAN_CHARS", 100_000)

# The audit log's head (its last entry's digest) goes to the server's log this often, and is
# POSTed as JSON to this address when set: kept outside, it shows a log emptied or rewritten.
AGENTBOARD_AUDIT_HEAD_WEBHOOK = os.environ.get("AGENTBOARD_AUDIT_HEAD_WEBHOOK", "").strip()
AGENTBOARD_AUDIT_HEAD_SECONDS = envfloat("AGENTBOARD_AUDIT_HEAD_SECONDS", 24 * 60 * 60)
if AGENTBOARD_AUDIT_HEAD_SECONDS <= 0:
    raise ImproperlyConfigured("AGENTBOARD_AUDIT_HEAD_SECONDS must be a positive number.")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("AGENTBOARD_LOG_LEVEL", "INFO")},
    "loggers": {
        "daphne": {"level": "WARNING"},
        "django.channels.server": {"level": "WARNING"},
        # Failed logins and lockouts are warnings; the rest of what axes says is noise.
        "axes": {"level": "WARNING"},
        # httpx logs every request's full URL at INFO: webhook URLs and push endpoints are secrets.
        "httpx": {"level": "WARNING"},
        "httpcore": {"level": "WARNING"},
        # The audit log's daily head is kept in the log whatever AGENTBOARD_LOG_LEVEL says.
        "dashboard.audit.chain": {"level": "INFO"},
    },
}

# Keeping agents on track (todo reminders and the continuation enforcer).
# A reminder goes out once an agent has taken this many steps (tool uses) without a todo write...
AGENTBOARD_REMINDER_STEPS_SINCE_WRITE = envint("AGENTBOARD_REMINDER_STEPS_SINCE_WRITE", 7)
# ...and this many steps since the previous reminder.
AGENTBOARD_REMINDER_STEPS_BETWEEN = envint("AGENTBOARD_REMINDER_STEPS_BETWEEN", 3)
AGENTBOARD_ENFORCER_ENABLED = envbool("AGENTBOARD_ENFORCER_ENABLED", True)
# Seconds the board shows "Resuming in Ns…" before an agent with unfinished tasks is continued.
AGENTBOARD_CONTINUATION_COUNTDOWN_SECONDS = envfloat(
    "AGENTBOARD_CONTINUATION_COUNTDOWN_SECONDS", 2.0
)
# Consecutive continuations before the agent is let stop (Claude Code itself stops at 8).
AGENTBOARD_CONTINUATION_LIMIT = envint("AGENTBOARD_CONTINUATION_LIMIT", 5)
if not 1 <= AGENTBOARD_CONTINUATION_LIMIT < 8:
    raise ImproperlyConfigured("AGENTBOARD_CONTINUATION_LIMIT must be between 1 and 7.")
# No continuation this many seconds after an error was reported (a new prompt clears it).
AGENTBOARD_ERROR_COOLDOWN_SECONDS = envfloat("AGENTBOARD_ERROR_COOLDOWN_SECONDS", 3.0)
# Agent types that cannot edit files, so continuing them makes no sense.
AGENTBOARD_READ_ONLY_AGENT_TYPES = envlist("AGENTBOARD_READ_ONLY_AGENT_TYPES", ["Explore", "Plan"])

# How long the Claude Code PermissionRequest hook holds a plan for a reviewer before answering
# "no decision" (Claude Code then asks in the terminal). Keep it below the hook's timeout (600 s).
AGENTBOARD_PLAN_HOOK_WAIT_SECONDS = envfloat("AGENTBOARD_PLAN_HOOK_WAIT_SECONDS", 540.0)
if AGENTBOARD_PLAN_HOOK_WAIT_SECONDS <= 0:
    raise ImproperlyConfigured("AGENTBOARD_PLAN_HOOK_WAIT_SECONDS must be a positive number.")
# The same for any other tool's permission request (install-hooks --approvals); then it
# expires and Claude Code asks in its terminal (a background subagent takes that as a denial).
AGENTBOARD_PERMISSION_HOOK_WAIT_SECONDS = envfloat("AGENTBOARD_PERMISSION_HOOK_WAIT_SECONDS", 540.0)
if AGENTBOARD_PERMISSION_HOOK_WAIT_SECONDS <= 0:
    raise ImproperlyConfigured("AGENTBOARD_PERMISSION_HOOK_WAIT_SECONDS must be a positive number.")

# A person's decision in the browser (a plan on its review page, a permission request in the
# inbox) is sent this many seconds later, so it can be undone meanwhile; 0 sends it at once.
AGENTBOARD_UNDO_SECONDS = envfloat("AGENTBOARD_UNDO_SECONDS", 5.0)
if AGENTBOARD_UNDO_SECONDS < 0:
    raise ImproperlyConfigured("AGENTBOARD_UNDO_SECONDS must be 0 or a positive number.")

# A decision's push to waiting agents can be lost (its server process died right after the
# commit, the channel layer dropped it): waiters then re-read their plans this often.
AGENTBOARD_DECISION_RESYNC_SECONDS = envfloat("AGENTBOARD_DECISION_RESYNC_SECONDS", 1.0)
if AGENTBOARD_DECISION_RESYNC_SECONDS <= 0:
    raise ImproperlyConfigured("AGENTBOARD_DECISION_RESYNC_SECONDS must be a positive number.")

# On SIGTERM / Ctrl+C the server stops taking connections, answers every held hook (`{}`, so
# agents fall back to their terminal) and waits this long for requests in flight, then exits.
AGENTBOARD_STOP_GRACE_SECONDS = envfloat("AGENTBOARD_STOP_GRACE_SECONDS", 5.0)

# An agent socket waiting on a plan closed (a killed `agentboard hook`, a lost network): if no
# socket watches the plan again within this time, nobody waits for it and it expires.
AGENTBOARD_PLAN_RECONNECT_GRACE_SECONDS = envfloat("AGENTBOARD_PLAN_RECONNECT_GRACE_SECONDS", 15.0)

# Most items one todo list may hold; a longer list is refused (422). The board shows a bounded
# part of any list, so this only bounds storage and what agents read back.
AGENTBOARD_MAX_TODOS = envint("AGENTBOARD_MAX_TODOS", 1000)
if AGENTBOARD_MAX_TODOS < 1:
    raise ImproperlyConfigured("AGENTBOARD_MAX_TODOS must be 1 or more.")
# Seconds a client may take to send one whole request (its headers and body) once it has begun;
# a slower one is answered 408 and disconnected, so trickling headers cannot hold connections.
AGENTBOARD_REQUEST_ARRIVAL_SECONDS = envfloat("AGENTBOARD_REQUEST_ARRIVAL_SECONDS", 20.0)
if AGENTBOARD_REQUEST_ARRIVAL_SECONDS <= 0:
    raise ImproperlyConfigured("AGENTBOARD_REQUEST_ARRIVAL_SECONDS must be a positive number.")

# Notifications (webhooks, Web Push): a failed delivery is tried again after this many seconds,
# doubled after each failure, until AGENTBOARD_NOTIFY_MAX_ATTEMPTS; the worker looks for due
# deliveries at least every AGENTBOARD_NOTIFY_POLL_SECONDS (at once after a commit of its own).
AGENTBOARD_NOTIFY_RETRY_SECONDS = envfloat("AGENTBOARD_NOTIFY_RETRY_SECONDS", 10.0)
AGENTBOARD_NOTIFY_MAX_ATTEMPTS = envint("AGENTBOARD_NOTIFY_MAX_ATTEMPTS", 8)
AGENTBOARD_NOTIFY_POLL_SECONDS = envfloat("AGENTBOARD_NOTIFY_POLL_SECONDS", 2.0)
# A worker's claim on a delivery: longer than a send can take (connect 5 s, answer 10 s). A
# process killed mid-send leaves its claims to the others (or its restart) after this long.
AGENTBOARD_NOTIFY_LEASE_SECONDS = envfloat("AGENTBOARD_NOTIFY_LEASE_SECONDS", 60.0)
if min(AGENTBOARD_NOTIFY_RETRY_SECONDS, AGENTBOARD_NOTIFY_POLL_SECONDS) <= 0:
    raise ImproperlyConfigured(
        "AGENTBOARD_NOTIFY_RETRY_SECONDS and AGENTBOARD_NOTIFY_POLL_SECONDS must be positive."
    )
if AGENTBOARD_NOTIFY_MAX_ATTEMPTS < 1:
    raise ImproperlyConfigured("AGENTBOARD_NOTIFY_MAX_ATTEMPTS must be 1 or more.")
# Webhooks and push endpoints on loopback, private or link-local addresses are refused unless
# this is on (a chat server inside the team's network; tests).
AGENTBOARD_WEBHOOK_ALLOW_PRIVATE = envbool("AGENTBOARD_WEBHOOK_ALLOW_PRIVATE", False)
# Who push services may contact about this server's messages (VAPID "sub"): a mailto: or https:
# address; defaults to AGENTBOARD_PUBLIC_URL.
AGENTBOARD_VAPID_SUBJECT = os.environ.get("AGENTBOARD_VAPID_SUBJECT", "")


def checked_vapid_private_key(pem: str) -> bytes:
    """The key pair every process signs push messages with, as PEM: processes on several hosts
    (no shared data dir) must all use the one that browsers subscribed with."""
    if not pem:
        return b""
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    try:
        key = load_pem_private_key(pem.encode(), password=None)
    except ValueError:
        key = None
    if not isinstance(key, ec.EllipticCurvePrivateKey) or key.curve.name != "secp256r1":
        raise ImproperlyConfigured(
            "AGENTBOARD_VAPID_PRIVATE_KEY must be an unencrypted P-256 private key in PEM, "
            "like the vapid_private.pem a server writes into its data dir."
        )
    return pem.encode()


AGENTBOARD_VAPID_PRIVATE_KEY = checked_vapid_private_key(
    os.environ.get("AGENTBOARD_VAPID_PRIVATE_KEY", "").strip()
)
