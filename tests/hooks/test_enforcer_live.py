"""The countdown cancel crosses server processes: hook held on one, click taken by another."""

from __future__ import annotations

import http.cookiejar
import re
import urllib.parse
import urllib.request

from websockets.sync.client import connect

from tests.conftest import two_processes
from tests.e2e.test_board_live import put_todos
from tests.e2e.test_enforcer_countdown import SESSION, UNFINISHED, HookInBackground


class Browser:
    """A logged-in reviewer speaking plain HTTP, as the board page's buttons do."""

    def __init__(self, server) -> None:
        self.server = server
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))
        page = self.get("/accounts/login/")
        csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
        self.post(
            "/accounts/login/",
            {"username": server.username, "password": server.password, "csrfmiddlewaretoken": csrf},
        )

    def cookie_header(self) -> str:
        return "; ".join(f"{cookie.name}={cookie.value}" for cookie in self.jar)

    def get(self, path: str) -> str:
        with self.opener.open(f"{self.server.url}{path}", timeout=10) as response:
            return response.read().decode()

    def post(self, path: str, form: dict) -> int:
        token = next((c.value for c in self.jar if c.name == "csrftoken"), "")
        request = urllib.request.Request(
            f"{self.server.url}{path}",
            data=urllib.parse.urlencode(form).encode(),
            headers={"X-CSRFToken": token, "Origin": self.server.url},
        )
        with self.opener.open(request, timeout=10) as response:
            return response.status


@two_processes
def test_a_cancel_clicked_on_another_process_releases_the_held_stop_hook(server_factory):
    env = {"AGENTBOARD_CONTINUATION_COUNTDOWN_SECONDS": "20"}
    holding = server_factory(env=env)
    clicking = server_factory(shared_with=holding, env=env)
    put_todos(holding, SESSION, SESSION, UNFINISHED)

    reviewer = Browser(clicking)
    # The reviewer's board socket on the other process; the countdown must show up there.
    with connect(
        f"{clicking.ws_url}/ws/board/?session={SESSION}",
        additional_headers={"Cookie": reviewer.cookie_header(), "Origin": clicking.url},
        open_timeout=10,
    ) as board:
        board.recv(timeout=10)  # the snapshot, before the Stop arrives
        hook = HookInBackground(holding)
        hook.start()
        cancel_path = None
        while cancel_path is None:
            found = re.search(r'hx-post="(/continuations/\d+/cancel/)"', board.recv(timeout=15))
            cancel_path = found.group(1) if found else None

    assert reviewer.post(cancel_path, {}) == 204
    hook.join(timeout=10)
    assert hook.answer == {}
    assert hook.held < 20
