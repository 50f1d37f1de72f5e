from __future__ import annotations

import asyncio
import inspect
import json
import os
import re
import secrets
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlencode

import pytest
from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib.auth.models import User
from django.db import IntegrityError, OperationalError, connections, transaction
from django.db.backends.utils import CursorWrapper
from django.test import Client, TransactionTestCase

from dashboard.models import AgentToken
from tests.liveserver import (
    LiveServer,
    ServerTemplate,
    create_database,
    drop_database,
    free_port,
    server_env,
)
from todos.schemas import TodoWriteIn

# In-process tests get a Redis prefix of their own, so nothing left by an earlier run (or a
# live server of this one) shares their groups. Channel layers are built on first use, later.
if "Redis" in settings.CHANNEL_LAYERS["default"]["BACKEND"]:
    _layer_config = settings.CHANNEL_LAYERS["default"]["CONFIG"]
    _layer_config["prefix"] = f"agentboard-run-{secrets.token_hex(4)}"

# Decisions in the browser are sent at once, as before the undo window; tests of the window
# set AGENTBOARD_UNDO_SECONDS themselves (live servers too: see `server_env`).
settings.AGENTBOARD_UNDO_SECONDS = 0


def _emptied_again_when_raced(teardown):
    """On PostgreSQL the emptying after each test takes the locks of the tables' rows one table
    after another; a write still running there (a server's sweep as its test ended) may take
    some in another order. PostgreSQL then ends one of the two, and when it is the emptying, the
    next test would find this one's rows. It runs in a transaction of its own, rolled back
    whole: it runs again. So does an emptying that a late write made inconsistent."""

    def raced(error: BaseException | None) -> bool:
        while error is not None:
            if isinstance(error, OperationalError) and "deadlock detected" in str(error):
                return True
            # A write that ended after the emptying looked for rows (a search index job, a
            # sweep) left a row pointing at one it deleted: the commit refuses, and a second
            # look finds that row too.
            if isinstance(error, IntegrityError):
                return True
            error = error.__cause__ or error.__context__
        return False

    def flushed(self) -> None:
        for attempt in range(4):
            try:
                return teardown(self)
            except Exception as error:
                if attempt == 3 or not raced(error):
                    raise
                time.sleep(0.1 * (attempt + 1))

    return flushed


@contextmanager
def audit_triggers_put_aside(alias: str = "default") -> Iterator[CursorWrapper]:
    """A cursor that gets past the audit log's triggers, as only the database's owner can: in
    one transaction they are put aside and put back, so no other connection ever finds the log
    without them. Nothing but tests does this; the chain (`audit verify`) and its head, kept
    outside, are what show it done to a real log (README, "Audit log")."""
    connection = connections[alias]
    with transaction.atomic(using=alias), connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("ALTER TABLE dashboard_auditentry DISABLE TRIGGER USER")
            yield cursor
            cursor.execute("ALTER TABLE dashboard_auditentry ENABLE TRIGGER USER")
            return
        cursor.execute(
            "SELECT name, sql FROM sqlite_master "
            "WHERE type = 'trigger' AND tbl_name = 'dashboard_auditentry'"
        )
        triggers = cursor.fetchall()
        for name, _ in triggers:
            cursor.execute(f'DROP TRIGGER "{name}"')
        yield cursor
        for _, sql in triggers:
            cursor.execute(sql)


# What migrations make and no test changes: kept, so that nothing has to make them again.
KEPT_TABLES = frozenset({"django_content_type", "auth_permission", "django_migrations"})
AUDIT_TABLE = "dashboard_auditentry"
_tables: dict[str, list[str]] = {}


def database_emptied(alias: str = "default") -> None:
    """Every table a test may have written emptied, as `flush` would, but only those that hold
    rows: one query finds them, and a test writes a handful. (A flush truncates every table,
    about 0.4 s on PostgreSQL, and makes the content types and permissions again.) Foreign keys
    are checked at the commit, so the order of the deletes does not matter. The audit log is
    emptied past its triggers."""
    connection = connections[alias]
    if alias not in _tables:
        _tables[alias] = [
            table
            for table in connection.introspection.django_table_names(
                only_existing=True, include_views=False
            )
            if table not in KEPT_TABLES
        ]
    quote = connection.ops.quote_name
    with transaction.atomic(using=alias), connection.cursor() as cursor:
        cursor.execute(
            " UNION ALL ".join(
                f"SELECT '{table}' WHERE EXISTS (SELECT 1 FROM {quote(table)})"  # noqa: S608
                for table in _tables[alias]
            )
        )
        holding = [table for (table,) in cursor.fetchall()]
        for table in holding:
            if table != AUDIT_TABLE:
                cursor.execute(f"DELETE FROM {quote(table)}")  # noqa: S608
    if AUDIT_TABLE in holding:
        with audit_triggers_put_aside(alias) as cursor:
            cursor.execute(f"DELETE FROM {AUDIT_TABLE}")  # noqa: S608


def _emptied(self: TransactionTestCase) -> None:
    for alias in self._databases_names(include_mirrors=False):
        database_emptied(alias)


TransactionTestCase._fixture_teardown = _emptied_again_when_raced(_emptied)  # type: ignore[method-assign]


CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix, tmp_path_factory):
    """Test against an SQLite file like the one `serve` uses, not a shared-cache memory
    database, whose table locks would fail concurrent writers instead of queueing them."""
    database = settings.DATABASES["default"]
    if database["ENGINE"] == "django.db.backends.sqlite3":
        path = tmp_path_factory.mktemp("database") / "test.sqlite3"
        database.setdefault("TEST", {})["NAME"] = str(path)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every database test commits for real (see the `db` fixture), and every async test
    leaves its loop quiet before the loop closes (see `loop_left_quiet`)."""
    for item in items:
        if inspect.iscoroutinefunction(getattr(item, "obj", None)):
            # First set up, so torn down last: after the fixtures that still use the loop.
            item.fixturenames.insert(0, "loop_left_quiet")
            # Last set up, so torn down first: before the database is emptied.
            item.fixturenames.append("let_go_requests_expired")
        marker = item.get_closest_marker("django_db")
        if marker is not None and not marker.kwargs.get("transaction"):
            item.add_marker(
                pytest.mark.django_db(*marker.args, **{**marker.kwargs, "transaction": True}),
                append=False,
            )


@pytest.fixture
def db(transactional_db) -> None:
    """Writes run in the writer thread on its own database connection, as in the server, so
    a test's data must be committed to be seen there: every database test is transactional."""


@pytest.fixture
async def loop_left_quiet():
    """At the end of an async test, while its loop still runs: the loop's watch lets its
    waiters go and waits for its own tasks (so do its boards), and the channel layer closes its
    Redis connections.
    Left to the loop's close instead, a task cancelled in the middle of a blocking Redis read
    could keep the close waiting until the read's timeout, again and again."""
    yield
    from channels.layers import channel_layers

    from dashboard.live.boards import boards_for
    from dashboard.live.watch import watch_for

    loop = asyncio.get_running_loop()
    for registry in (watch_for.made(loop), boards_for.made(loop)):
        if registry is not None:
            await registry.close()
    layer = channel_layers.backends.get("default")
    if hasattr(layer, "close_pools"):
        await layer.close_pools()


@pytest.fixture
async def let_go_requests_expired():
    """A held hook that the test let go of (cancelled) expires its request in a write of its
    own; it must be written before the database is emptied (the writer is drained then, see
    `renders_finished_before_the_flush`), or it would write into the next test's tables."""
    yield
    from dashboard.integrations.claude_code.hooks import abandoned_requests_expired

    await abandoned_requests_expired()


@pytest.fixture(autouse=True)
def a_channel_layer_per_test():
    """Each test runs its own event loop, while channels keeps one layer object per process.
    channels_redis binds its receive lock to the loop that first received: a receive still
    running when a test's loop closed would leave the next tests' layer locked to a dead loop.
    The server has one loop for its life; tests get a fresh layer each."""
    from channels.layers import channel_layers

    channel_layers.backends.clear()
    yield
    channel_layers.backends.clear()


@pytest.fixture(autouse=True)
def renders_finished_before_the_flush(request):
    """A test may end while the writer still writes (a held request expiring after the test
    let go of it), or the render or reading thread still reads what it wrote (the publisher's
    coalesced flush). On PostgreSQL either, running beside the test's TRUNCATE, can deadlock
    with it, so the database test waits for queued writes and renders first (set up after the
    database, so torn down before its flush)."""
    if request.node.get_closest_marker("django_db") or "transactional_db" in request.fixturenames:
        request.getfixturevalue("_django_db_helper")
    yield
    from dashboard.core import reader
    from dashboard.core.writer import writer
    from dashboard.live import publisher as live

    writer.drain()
    live.drain()
    reader.drain()


@pytest.fixture(scope="session", autouse=True)
def static_files_collected() -> None:
    """Pages link the hashed names of the static files, as `serve` collects them."""
    from django.core.management import call_command

    call_command("collectstatic", interactive=False, verbosity=0)


@pytest.fixture(scope="session", autouse=True)
def writer_and_render_connections_closed(django_db_setup):
    """The writer and render threads keep their connections open, and so does asgiref's shared
    worker thread; PostgreSQL refuses to drop the test database while they do. (Depending on
    `django_db_setup` makes this run before the database is dropped.)"""
    yield
    from asgiref.sync import SyncToAsync
    from django.db import connections

    from dashboard.core import reader
    from dashboard.core.writer import writer
    from dashboard.live import publisher as live

    writer.stop()
    live.close_connection()
    reader.close_connection()
    SyncToAsync.single_thread_executor.submit(connections.close_all).result(10)


@pytest.fixture(autouse=True)
def concerns_read_again():
    """Each test's database starts without open concerns: this process reads them again."""
    from dashboard.activity.concerns import watched_forget

    watched_forget()
    yield
    watched_forget()


@pytest.fixture(autouse=True)
def refusals_read_again():
    """Each test's database starts without refusals of auto mode: this process reads the
    sessions that have one open again."""
    from planmode.allow_once import forget

    forget()
    yield
    forget()


@pytest.fixture(autouse=True)
def team_rules_read_again():
    """Each test's database starts without team rules: this process reads them again."""
    from planmode.rulebook import forget

    forget()
    yield
    forget()


@pytest.fixture(autouse=True)
def origins_noted_again():
    """Each test's database starts empty: this process notes where its sessions run again."""
    from dashboard.core.origin import forget_noted

    forget_noted()
    yield
    forget_noted()


@pytest.fixture(autouse=True)
def fast_password_hashing(settings) -> None:
    # Real hashing costs a quarter of a second per user; these tests are not about it.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def user(db) -> User:
    return User.objects.create_user("dana", password="a-long-password-1")


@pytest.fixture
def other_user(db) -> User:
    return User.objects.create_user("ana", password="a-long-password-2")


@pytest.fixture
def reviewer(db) -> User:
    return User.objects.create_superuser("lead", password="a-long-password-3")


@pytest.fixture
def token(user) -> str:
    return AgentToken.issue(owner=user, label="test")[1]


class AgentApi:
    """The agent HTTP API as an agent calls it: JSON bodies and a bearer token."""

    def __init__(self, client: Client, token: str | None) -> None:
        self.client = client
        self.token = token

    def headers(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        headers = dict(extra or {})
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        return headers

    def put_todos(
        self,
        session_id: str,
        agent_id: str,
        body,
        headers: dict | None = None,
        query: dict[str, str] | None = None,
    ):
        data = body if isinstance(body, str | bytes) else json.dumps(body)
        url = f"/api/v1/sessions/{session_id}/agents/{agent_id}/todos"
        if query:
            url += f"?{urlencode(query)}"
        return self.client.put(
            url,
            data=data,
            content_type="application/json",
            headers=self.headers(headers),
        )

    def get_todos(self, session_id: str, agent_id: str):
        return self.client.get(
            f"/api/v1/sessions/{session_id}/agents/{agent_id}/todos", headers=self.headers()
        )

    def post(self, path: str, body, headers: dict | None = None):
        data = body if isinstance(body, str | bytes) else json.dumps(body)
        return self.client.post(
            path, data=data, content_type="application/json", headers=self.headers(headers)
        )

    def get(self, path: str):
        return self.client.get(path, headers=self.headers())


@pytest.fixture
def agent_api(client, token) -> AgentApi:
    return AgentApi(client, token)


def todo(content: str, status: str = "pending", active_form: str | None = None) -> dict:
    item = {"content": content, "status": status}
    item["activeForm"] = active_form or f"{content}ing"
    return item


def write_todos(owner: User, session_id: str, agent_id: str, todos: list[dict], **options):
    """A TodoWrite through the service, validated by the same schema as the API and socket."""
    from todos.services import todo_list_replace

    options.setdefault("source", "api")
    items = TodoWriteIn.model_validate({"todos": todos}).todos
    return todo_list_replace(
        owner=owner, session_id=session_id, agent_id=agent_id, todos=items, **options
    )


async def write_todos_live(
    owner: User, session_id: str, agent_id: str, todos: list[dict], **options
):
    """A TodoWrite as the API and the sockets make it: through the writer, so open boards
    see it."""
    from dashboard.core.writer import write
    from todos.services import todo_list_replace

    options.setdefault("source", "api")
    items = TodoWriteIn.model_validate({"todos": todos}).todos
    return await write(
        todo_list_replace,
        owner=owner,
        session_id=session_id,
        agent_id=agent_id,
        todos=items,
        **options,
    )


@pytest.fixture
def session_cookie(client, user) -> str:
    """The session cookie of a browser where `user` is logged in."""
    client.force_login(user)
    return client.cookies[settings.SESSION_COOKIE_NAME].value


BROWSER_ORIGIN = "http://127.0.0.1:8000"


@pytest.fixture
async def open_socket():
    """Open websockets on the real ASGI application; each one is disconnected afterwards.

    Returns (communicator, accepted): a refused handshake is (communicator, False).
    """
    from channels.testing import WebsocketCommunicator

    from dashboard.asgi import application

    communicators: list[WebsocketCommunicator] = []

    async def open_(path: str, headers: dict[str, str] | None = None):
        # Every real client sends a Host header; the server of BROWSER_ORIGIN is the default.
        sent = {"host": BROWSER_ORIGIN.removeprefix("http://")}
        sent.update({name.lower(): value for name, value in (headers or {}).items()})
        communicator = WebsocketCommunicator(
            application,
            path,
            headers=[(name.encode(), value.encode()) for name, value in sent.items()],
        )
        communicators.append(communicator)
        accepted, _ = await communicator.connect(timeout=5)
        return communicator, accepted

    yield open_
    for communicator in communicators:
        await communicator.disconnect()


# --- reading pages as a user sees them -----------------------------------------------------

VOID_TAGS = {
    "area",
    "base",
    "br",
    "col",
    "embed",
    "hr",
    "img",
    "input",
    "link",
    "meta",
    "source",
    "track",
    "wbr",
}


class Element:
    def __init__(self, tag: str, attrs: dict[str, str | None]) -> None:
        self.tag = tag
        self.attrs = attrs
        self.children: list[Element | str] = []

    @property
    def classes(self) -> list[str]:
        return (self.attrs.get("class") or "").split()

    def text(self) -> str:
        """The visible text, whitespace collapsed, entities decoded (so `<b>` here was text)."""
        parts = [c if isinstance(c, str) else c.text() for c in self.children]
        return re.sub(r"\s+", " ", " ".join(parts)).strip()

    def iter(self) -> Iterator[Element]:
        for child in self.children:
            if isinstance(child, Element):
                yield child
                yield from child.iter()

    def find_all(
        self, tag: str | None = None, *, cls: str | None = None, **attrs: str
    ) -> list[Element]:
        return [
            element
            for element in self.iter()
            if (tag is None or element.tag == tag)
            and (cls is None or cls in element.classes)
            and all(
                element.attrs.get(name.replace("_", "-")) == value for name, value in attrs.items()
            )
        ]

    def find(self, tag: str | None = None, *, cls: str | None = None, **attrs: str) -> Element:
        found = self.find_all(tag, cls=cls, **attrs)
        assert found, f"no <{tag or '*'}> with class={cls} {attrs} in:\n{self.text()[:500]}"
        return found[0]


class _TreeBuilder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Element("#document", {})
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = Element(tag, dict(attrs))
        self.stack[-1].children.append(element)
        if tag not in VOID_TAGS:
            self.stack.append(element)

    def handle_endtag(self, tag: str) -> None:
        for depth in range(len(self.stack) - 1, 0, -1):
            if self.stack[depth].tag == tag:
                del self.stack[depth:]
                return

    def handle_data(self, data: str) -> None:
        self.stack[-1].children.append(data)


def parse_html(html: str | bytes) -> Element:
    builder = _TreeBuilder()
    builder.feed(html.decode() if isinstance(html, bytes) else html)
    builder.close()
    return builder.root


# --- real servers and a real browser -------------------------------------------------------


def services_available() -> bool:
    return bool(
        os.environ.get("DATABASE_URL", "").startswith("postgres") and os.environ.get("REDIS_URL")
    )


# For a test of two server processes: skipped, saying why, where they cannot share a database
# and Redis.
two_processes = pytest.mark.skipif(
    not services_available(),
    reason=(
        "Two server processes need a shared database and Redis: PostgreSQL and Redis are "
        "not configured (set DATABASE_URL and REDIS_URL)."
    ),
)


@pytest.fixture(scope="session")
def server_template(tmp_path_factory) -> Iterator[ServerTemplate]:
    """A data folder, and on PostgreSQL a database, migrated and with the static files
    collected once for the whole run: each server starts from a copy of them, as `serve`
    would leave a first start's, instead of migrating and collecting again (seconds each)."""
    template = ServerTemplate.made(tmp_path_factory.mktemp("server-template"))
    yield template
    template.drop()


@pytest.fixture
def server_factory(tmp_path, server_template) -> Iterator:
    """Start real `manage.py serve` processes; with DATABASE_URL/REDIS_URL they share both."""
    yield from _servers(tmp_path, server_template)


@pytest.fixture(scope="module")
def module_server_factory(tmp_path_factory, server_template) -> Iterator:
    """`server_factory` for the tests of a module together: servers cost seconds to start."""
    yield from _servers(tmp_path_factory.mktemp("servers"), server_template)


def _servers(tmp_path: Path, template: ServerTemplate) -> Iterator:
    servers: list[LiveServer] = []
    database: dict[str, str] = {}
    prefix = f"agentboard-test-{secrets.token_hex(4)}"

    def start(
        *, shared_with: LiveServer | None = None, env: dict[str, str] | None = None
    ) -> LiveServer:
        data_dir = tmp_path / f"server{len(servers)}"
        database_url = None
        if template.database_url:
            if not database:
                database["url"], database["name"] = create_database(
                    os.environ["DATABASE_URL"], template=template.database_name
                )
            database_url = database["url"]
        if shared_with is not None and database_url is None:
            # Without PostgreSQL: the same data folder (SQLite file and secret key).
            data_dir = Path(shared_with.env["AGENTBOARD_DATA_DIR"])
        else:
            template.copy_to(data_dir)
        if shared_with is not None and database_url is not None:
            shutil.copy(Path(shared_with.env["AGENTBOARD_DATA_DIR"]) / "secret_key", data_dir)
        port = free_port()
        server = LiveServer(
            url=f"http://127.0.0.1:{port}",
            port=port,
            env=server_env(data_dir, database_url=database_url, redis_prefix=prefix) | (env or {}),
            log_path=tmp_path / f"server{len(servers)}.log",
        )
        if shared_with is not None:
            server.username, server.password, server.token = (
                shared_with.username,
                shared_with.password,
                shared_with.token,
            )
        servers.append(server)
        server.start()
        return server

    yield start
    for server in servers:
        server.stop()
    if database:
        drop_database(os.environ["DATABASE_URL"], database["name"])


@pytest.fixture
def agentboard_server(server_factory) -> LiveServer:
    return server_factory()


@pytest.fixture(scope="module")
def chromium():
    """One browser per test module. While Playwright's sync API runs it leaves its own event
    loop set as the thread's running loop, so a later async test could not start its own
    loop; stopping Playwright after each module of browser tests clears it."""
    if not Path(CHROMIUM).exists():
        pytest.skip(
            f"Browser tests skipped: {CHROMIUM} is not installed (apt-get install chromium)."
        )
    playwright_sync = pytest.importorskip(
        "playwright.sync_api", reason="Browser tests skipped: the playwright package is missing."
    )
    with playwright_sync.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(chromium):
    context = chromium.new_context(viewport={"width": 1280, "height": 860})
    page = context.new_page()
    yield page
    context.close()


def login(
    page, server: LiveServer, *, username: str | None = None, password: str | None = None
) -> None:
    page.goto(f"{server.url}/accounts/login/")
    page.get_by_label("Username").fill(username or server.username)
    page.get_by_label("Password").fill(password or server.password)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{server.url}/")


SCREENSHOTS = Path(__file__).resolve().parent / "e2e" / "screenshots"


def screenshot(page, name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


@pytest.fixture
async def sync_thread_connections_closed():
    """Async tests reach the database from asgiref's worker thread; close what it opened, or
    PostgreSQL refuses to drop the test database at the end of the run."""
    yield
    await sync_to_async(connections.close_all)()
