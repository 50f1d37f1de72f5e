"""Security hardening as a reviewer, an agent or an attacker meets it: who may open the board
socket, which links agents are handed, and what browsers are told to do with pages and cookies."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from planmode.models import Plan
from tests.conftest import parse_html, todo, write_todos
from tests.domain import plan_submit
from tests.liveserver import ROOT, server_env

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
