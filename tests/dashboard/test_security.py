"""Security hardening as a reviewer, an agent or an attacker meets it: who may open the board
socket, which links agents are handed, what browsers are told to do with pages and cookies,
login throttling, and decisions that stay on record."""

from __future__ import annotations

import re
import subprocess
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass
from datetime import timedelta
from http.cookies import SimpleCookie
from urllib.parse import urlencode

import pytest
from axes.models import AccessAttempt
from django.utils import timezone

from dashboard.models import Session
from planmode.models import Decision, Plan
from tests.conftest import parse_html, todo, write_todos
from tests.domain import plan_decide, plan_submit
from tests.liveserver import ROOT, LiveServer, server_env

pytestmark = pytest.mark.django_db(transaction=True)

SESSION = "sess-secure"
TABLE_PLAN = "# Exports\n\n| step | minutes |\n|:--|--:|\n| stream rows | 20 |\n"


# --- the browser board socket only opens for our own pages ------------------------------------


@pytest.fixture
def board_socket(open_socket, session_cookie):
    """A logged-in browser's board socket, opened with the given Host and Origin headers."""

    async def open_(**headers: str):
        return await open_socket("/ws/board/", {"Cookie": f"sessionid={session_cookie}", **headers})

    return open_


@pytest.mark.parametrize(
    ("host", "origin"),
    [
        ("localhost:8000", "http://localhost:3000"),
        ("127.0.0.1:8000", "https://127.0.0.1:9443"),
        ("127.0.0.1:8000", "https://127.0.0.1:8000"),
        ("127.0.0.1:8000", "http://localhost:8000"),
        ("127.0.0.1:8000", "null"),
    ],
)
async def test_the_board_socket_refuses_pages_of_another_scheme_or_port_on_our_host_names(
    board_socket, host, origin
):
    _, accepted = await board_socket(Host=host, Origin=origin)
    assert not accepted


async def test_the_board_socket_refuses_a_page_that_sends_no_origin(board_socket):
    _, accepted = await board_socket(Host="127.0.0.1:8000")
    assert not accepted


async def test_the_board_socket_opens_for_the_page_it_was_served_to(board_socket):
    socket, accepted = await board_socket(Host="localhost:8000", Origin="http://localhost:8000")
    assert accepted
    assert 'id="session-list"' in await socket.receive_from(timeout=5)


async def test_the_board_socket_refuses_a_host_that_is_not_ours_even_from_its_own_page(
    board_socket,
):
    # A rebinding attack: evil.example resolves to our address, so Host and Origin agree.
    _, accepted = await board_socket(Host="evil.example:8000", Origin="http://evil.example:8000")
    assert not accepted


async def test_a_csrf_trusted_origin_may_open_the_board_socket_at_its_exact_scheme_and_port(
    board_socket, settings
):
    settings.CSRF_TRUSTED_ORIGINS = ["https://board.example.com"]

    assert (await board_socket(Host="127.0.0.1:8000", Origin="https://board.example.com"))[1]
    for other in ("http://board.example.com", "https://board.example.com:8443"):
        assert not (await board_socket(Host="127.0.0.1:8000", Origin=other))[1], other


async def test_x_forwarded_proto_makes_the_socket_https_only_behind_a_trusted_proxy(
    board_socket, settings
):
    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "board.example.com"]
    behind_proxy = {
        "Host": "board.example.com",
        "Origin": "https://board.example.com",
        "X-Forwarded-Proto": "https",
    }

    assert not (await board_socket(**behind_proxy))[1]
    settings.AGENTBOARD_TRUSTED_PROXY = True
    assert (await board_socket(**behind_proxy))[1]


async def test_an_agent_socket_needs_no_origin(open_socket, token):
    socket, accepted = await open_socket("/ws/agent/", {"Authorization": f"Bearer {token}"})
    assert accepted
    await socket.send_json_to({"type": "ping", "id": 1})
    assert await socket.receive_json_from(timeout=5) == {"type": "pong", "id": 1}


# --- review links handed to agents ------------------------------------------------------------


@pytest.fixture
def review_url(open_socket, token):
    """The review_url an agent gets back for a plan sent over a socket with these headers."""

    async def submit(**headers: str) -> str:
        socket, _ = await open_socket("/ws/agent/", {"Authorization": f"Bearer {token}", **headers})
        await socket.send_json_to(
            {
                "type": "exit_plan_mode",
                "id": "plan",
                "session_id": SESSION,
                "agent_id": SESSION,
                "plan": "# Plan\n\n1. Step\n",
            }
        )
        reply = await socket.receive_json_from(timeout=5)
        return reply["result"]["review_url"]

    return submit


async def test_a_review_link_never_points_at_a_host_an_agent_made_up(review_url):
    assert re.fullmatch(r"/plans/\d+/", await review_url(Host="evil.example"))


async def test_a_review_link_uses_the_host_when_it_is_one_of_ours(review_url):
    url = await review_url(Host="localhost:8000")
    assert re.fullmatch(r"http://localhost:8000/plans/\d+/", url)


async def test_a_review_link_uses_the_public_url_when_one_is_set(review_url, settings):
    settings.AGENTBOARD_PUBLIC_URL = "https://board.example.com"
    url = await review_url(Host="evil.example")
    assert re.fullmatch(r"https://board\.example\.com/plans/\d+/", url)


async def test_a_review_link_is_https_only_when_a_trusted_proxy_says_so(review_url, settings):
    headers = {"Host": "localhost:8000", "X-Forwarded-Proto": "https"}
    assert (await review_url(**headers)).startswith("http://localhost:8000/plans/")
    settings.AGENTBOARD_TRUSTED_PROXY = True
    assert (await review_url(**headers)).startswith("https://localhost:8000/plans/")


@pytest.mark.parametrize(
    "value",
    ["board.example.com", "https://board.example.com/agentboard", "ftp://board.example.com"],
)
def test_a_public_url_that_is_not_a_plain_address_stops_the_server_at_startup(value, tmp_path):
    result = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env=server_env(tmp_path) | {"AGENTBOARD_PUBLIC_URL": value},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode != 0
    assert "AGENTBOARD_PUBLIC_URL must be an http(s) address without a path" in result.stderr


# --- what browsers are told -------------------------------------------------------------------


@pytest.fixture
def pages(user, reviewer) -> dict[str, str]:
    """Every kind of page, with content: a board with a progress bar, a plan with a table."""
    write_todos(user, SESSION, SESSION, [todo("Stream rows", "completed"), todo("Drop file")])
    plan = plan_submit(
        owner=user,
        session_id=SESSION,
        agent_id=SESSION,
        plan=TABLE_PLAN,
        plan_file_path=None,
        source=Plan.Source.API,
    )
    return {
        "overview": "/",
        "board": f"/sessions/{SESSION}/",
        "plan queue": "/plans/",
        "plan review": f"/plans/{plan.pk}/",
        "session history": f"/sessions/{SESSION}/history/",
        "ended sessions": "/ended/",
        "decided plans": "/plans/decided/",
        "decided requests": "/inbox/decided/",
        "admin": "/admin/",
        "admin form": f"/admin/auth/user/{user.pk}/change/",
        "API docs": "/api/v1/docs",
        "not found": "/sessions/nope/",
    }


def test_every_page_forbids_inline_script_and_style_and_framing(client, reviewer, pages):
    client.force_login(reviewer)
    for name, path in {"login": "/accounts/login/", **pages}.items():
        policy = client.get(path)["Content-Security-Policy"]
        directives = dict(part.strip().split(" ", 1) for part in policy.split(";"))
        assert directives["script-src"] == "'self'", name
        assert directives["style-src"] == "'self'", name
        assert directives["frame-ancestors"] == "'none'", name
        assert directives["connect-src"] == "'self' ws://testserver wss://testserver", name


def test_our_pages_carry_no_inline_script_or_style_attribute(client, reviewer, pages):
    client.force_login(reviewer)
    for name in ("overview", "board", "plan queue", "plan review"):
        page = parse_html(client.get(pages[name]).content)
        elements = list(page.iter())
        assert not [e.attrs for e in elements if "style" in e.attrs], name
        assert not [e for e in elements if e.tag == "style"], name
        inline = [e for e in elements if e.tag == "script" and not e.attrs.get("src")]
        assert all(e.attrs.get("type") == "application/json" for e in inline), name
        assert not [e.attrs for e in elements if any(a.startswith("on") for a in e.attrs)], name


def test_the_progress_bar_shows_its_share_without_a_style_attribute(client, reviewer, pages):
    client.force_login(reviewer)
    card = parse_html(client.get(pages["board"]).content).find("article", cls="card")
    assert card.find(cls="bar-fill").attrs["width"] == "50"


def test_pages_and_api_answers_are_kept_by_no_cache(client, reviewer, pages, agent_api):
    client.force_login(reviewer)
    for name in ("overview", "board", "plan review", "not found"):
        assert client.get(pages[name])["Cache-Control"] == "private, no-store", name
    answer = agent_api.get_todos(SESSION, SESSION)
    assert answer["Cache-Control"] == "private, no-store"
    assert "no-store" not in client.get("/static/css/agentboard.css")["Cache-Control"]


def test_over_https_cookies_are_secure_and_browsers_are_told_to_stay_on_https(client, user):
    page = client.get("/accounts/login/", secure=True)
    assert page.cookies["csrftoken"]["secure"]
    assert page["Strict-Transport-Security"] == "max-age=31536000"

    logged_in = client.post(
        "/accounts/login/", {"username": "dana", "password": "a-long-password-1"}, secure=True
    )
    assert logged_in.status_code == 302
    assert logged_in.cookies["sessionid"]["secure"]


def test_over_plain_http_cookies_are_not_secure_so_login_still_works(client, user):
    page = client.get("/accounts/login/")
    assert not page.cookies["csrftoken"]["secure"]
    assert "Strict-Transport-Security" not in page

    logged_in = client.post(
        "/accounts/login/", {"username": "dana", "password": "a-long-password-1"}
    )
    assert logged_in.status_code == 302
    assert not logged_in.cookies["sessionid"]["secure"]
    assert client.get("/").status_code == 200


# --- login throttling -------------------------------------------------------------------------


def log_in(client, username: str, password: str, address: str = "127.0.0.1", path: str = ""):
    return client.post(
        path or "/accounts/login/",
        {"username": username, "password": password},
        REMOTE_ADDR=address,
    )


def test_forty_wrong_passwords_and_then_the_right_one_does_not_log_in(client, user):
    for _ in range(40):
        log_in(client, "dana", "guess")

    response = log_in(client, "dana", "a-long-password-1")

    assert response.status_code == 429
    page = parse_html(response.content)
    assert page.find("h1").text() == "Login paused"
    assert page.find(role="alert").text() == (
        "Too many failed logins for this account or from this address: "
        "wait 15 minutes, then try again."
    )
    assert "axes_reset_username" in page.text()
    assert client.get("/").status_code == 302


def test_a_few_wrong_passwords_do_not_stop_the_right_one(client, user):
    for _ in range(9):
        assert log_in(client, "dana", "guess").status_code == 200

    assert log_in(client, "dana", "a-long-password-1").status_code == 302


def test_an_account_is_locked_whatever_address_the_guesses_come_from(client, user):
    for number in range(10):
        log_in(client, "dana", "guess", address=f"203.0.113.{number}")

    assert log_in(client, "dana", "a-long-password-1", address="198.51.100.7").status_code == 429


def test_an_address_is_locked_whatever_accounts_it_guesses(client, user, other_user):
    for number in range(10):
        log_in(client, f"someone-{number}", "guess", address="203.0.113.9")

    assert log_in(client, "dana", "a-long-password-1", address="203.0.113.9").status_code == 429
    assert log_in(client, "ana", "a-long-password-2", address="198.51.100.7").status_code == 302


def test_the_admin_login_is_throttled_too(client, reviewer):
    for _ in range(10):
        log_in(client, "lead", "guess", path="/admin/login/")

    response = log_in(client, "lead", "a-long-password-3", path="/admin/login/")
    assert response.status_code == 429
    assert b"Login paused" in response.content


def test_after_the_wait_the_right_password_logs_in_again(client, user):
    for _ in range(10):
        log_in(client, "dana", "guess")
    assert log_in(client, "dana", "a-long-password-1").status_code == 429

    AccessAttempt.objects.update(attempt_time=timezone.now() - timedelta(minutes=16))

    assert log_in(client, "dana", "a-long-password-1").status_code == 302


# --- real servers: proxy headers, and a lockout every process honours -------------------------


class _KeepRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


@dataclass
class Answer:
    status: int
    cookies: SimpleCookie
    hsts: str
    body: str


def fetch(
    server: LiveServer, path: str, headers: dict[str, str], form: dict[str, str] | None = None
) -> Answer:
    """One request as a browser behind (or pretending to be behind) a proxy would send it."""
    request = urllib.request.Request(
        server.url + path,
        data=urlencode(form).encode() if form is not None else None,
        headers=headers,
    )
    opener = urllib.request.build_opener(_KeepRedirects)
    try:
        with opener.open(request, timeout=10) as response:
            status, answer, body = response.status, response.headers, response.read()
    except urllib.error.HTTPError as error:
        status, answer, body = error.code, error.headers, error.read()
    cookies = SimpleCookie()
    for header in answer.get_all("Set-Cookie") or []:
        cookies.load(header)
    return Answer(status, cookies, answer.get("Strict-Transport-Security", ""), body.decode())


def try_login(server: LiveServer, username: str, password: str, headers: dict[str, str]) -> int:
    """The login form filled in and sent: 302 logged in, 200 refused, 429 locked out."""
    page = fetch(server, "/accounts/login/", headers)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.body).group(1)
    cookie = f"csrftoken={page.cookies['csrftoken'].value}"
    form = {"username": username, "password": password, "csrfmiddlewaretoken": token}
    return fetch(server, "/accounts/login/", {**headers, "Cookie": cookie}, form).status


def test_without_a_trusted_proxy_forwarded_headers_are_ignored_and_a_lockout_holds_everywhere(
    server_factory,
):
    env = {"AGENTBOARD_LOGIN_FAILURE_LIMIT": "3"}
    first = server_factory(env=env)
    second = server_factory(shared_with=first, env=env)

    page = fetch(first, "/accounts/login/", {"X-Forwarded-Proto": "https"})
    assert page.hsts == ""
    assert not page.cookies["csrftoken"]["secure"]

    # Made-up client addresses do not spread the guesses over several addresses.
    guesses = [
        try_login(first, f"someone-{n}", "guess", {"X-Forwarded-For": f"203.0.113.{n}"})
        for n in range(3)
    ]
    assert guesses == [200, 200, 429]

    # The lockout is in the database: the other server process refuses the right password too.
    elsewhere = {"X-Forwarded-For": "198.51.100.7"}
    assert try_login(second, second.username, second.password, elsewhere) == 429


def test_behind_a_trusted_proxy_https_and_the_client_address_come_from_its_headers(
    server_factory,
):
    server = server_factory(
        env={
            "AGENTBOARD_TRUSTED_PROXY": "1",
            "AGENTBOARD_PUBLIC_URL": "https://board.example.com",
            "AGENTBOARD_LOGIN_FAILURE_LIMIT": "3",
        }
    )

    def proxied(address: str) -> dict[str, str]:
        return {
            "Host": "board.example.com",
            "Origin": "https://board.example.com",
            "X-Forwarded-For": address,
            "X-Forwarded-Proto": "https",
        }

    page = fetch(server, "/accounts/login/", proxied("203.0.113.9"))
    assert page.hsts == "max-age=31536000"
    assert page.cookies["csrftoken"]["secure"]

    guesses = [try_login(server, f"someone-{n}", "guess", proxied("203.0.113.9")) for n in range(3)]
    assert guesses == [200, 200, 429]
    assert try_login(server, server.username, server.password, proxied("203.0.113.9")) == 429
    assert try_login(server, server.username, server.password, proxied("198.51.100.7")) == 302


# --- decisions stay on record -----------------------------------------------------------------


@pytest.fixture
def decided_plan(user, reviewer) -> Plan:
    plan = plan_submit(
        owner=user,
        session_id=SESSION,
        agent_id=SESSION,
        plan=TABLE_PLAN,
        plan_file_path=None,
        source=Plan.Source.API,
    )
    return plan_decide(plan_id=plan.pk, reviewer=reviewer, approve=False, feedback="Smaller.")


def test_a_superuser_cannot_delete_a_decision_or_a_plan_in_the_admin(
    client, reviewer, decided_plan
):
    client.force_login(reviewer)
    decision = Decision.objects.get()

    for path in (
        f"/admin/planmode/decision/{decision.pk}/delete/",
        f"/admin/planmode/plan/{decided_plan.pk}/delete/",
    ):
        assert client.post(path, {"post": "yes"}).status_code == 403, path
    client.post(
        "/admin/planmode/plan/",
        {"action": "delete_selected", "_selected_action": [decided_plan.pk], "post": "yes"},
    )

    assert (Plan.objects.count(), Decision.objects.count()) == (1, 1)


def test_deleting_a_session_in_the_admin_cannot_take_its_decisions_along(
    client, reviewer, decided_plan
):
    client.force_login(reviewer)
    session = Session.objects.get()

    page = client.get(f"/admin/dashboard/session/{session.pk}/delete/")
    response = client.post(f"/admin/dashboard/session/{session.pk}/delete/", {"post": "yes"})

    assert "permission to delete the following types of objects" in page.content.decode()
    assert response.status_code == 403
    assert (Session.objects.count(), Plan.objects.count(), Decision.objects.count()) == (1, 1, 1)
