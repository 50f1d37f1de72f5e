"""Reviewers racing on two real `serve` processes of one deployment (PostgreSQL + Redis when
DATABASE_URL and REDIS_URL are set, the shared SQLite file otherwise), with the default kind
of undo window: of concurrent decisions on one held request exactly one wins, the others are
refused with 409 and who was first, and the agent hears the winner's answer only."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.hooks.conftest import load_fixture
from tests.liveserver import ROOT, LiveServer

pytestmark = pytest.mark.timeout(400)

ROUNDS = 12
WINDOW = "1"


def add_reviewer(server: LiveServer, name: str, password: str) -> None:
    code = (
        "from django.contrib.auth.models import User; "
        f"User.objects.create_superuser({name!r}, password={password!r})"
    )
    subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", code], cwd=ROOT, env=server.env, check=True
    )


class Reviewer:
    """A reviewer signed in on one server, posting the inbox's forms as a browser does."""

    def __init__(self, server: LiveServer, name: str, password: str) -> None:
        self.server, self.name = server, name
        self.browser = server.log_in(username=name, password=password)

    def post(self, path: str, form: dict[str, str | list[str]]) -> tuple[int, str]:
        """The status of the answer (a redirect is not followed) and its page's text."""
        request = urllib.request.Request(
            f"{self.server.url}{path}",
            data=urllib.parse.urlencode(form, doseq=True).encode(),
            headers={"Cookie": self.browser["cookie"], "X-CSRFToken": self.browser["csrf"]},
        )
        opener = urllib.request.build_opener(NoRedirect)
        try:
            with opener.open(request, timeout=30) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


class HeldHooks:
    """Bash permission requests held by real hook calls, one thread each."""

    def __init__(self, server: LiveServer) -> None:
        self.server = server
        self.answers: dict[str, dict] = {}
        self.threads: list[threading.Thread] = []

    def ask(self, command: str) -> None:
        payload = load_fixture(
            "permission_request_bash.json", tool_input={"command": command, "description": ""}
        )

        def send() -> None:
            request = urllib.request.Request(
                f"{self.server.url}/hooks/claude-code",
                data=json.dumps(payload).encode(),
                headers={
                    "Authorization": f"Bearer {self.server.token}",
                    "Content-Type": "application/json",
                },
            )
            with urllib.request.urlopen(request, timeout=120) as response:
                self.answers[command] = json.loads(response.read())

        thread = threading.Thread(target=send)
        thread.start()
        self.threads.append(thread)

    def join(self) -> None:
        for thread in self.threads:
            thread.join(timeout=60)
        assert not any(thread.is_alive() for thread in self.threads), "a hook is still held"


def decision(answer: dict) -> str:
    return answer["hookSpecificOutput"]["decision"]["behavior"]


def pending_requests(server: LiveServer, count: int) -> dict[str, int]:
    """The held requests' ids by command, once all `count` are stored."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        rows = server.query(
            "SELECT id, tool_input FROM planmode_permissionrequest WHERE status = 'pending'"
        )
        if len(rows) >= count:
            return {
                (json.loads(data) if isinstance(data, str) else data)["command"]: pk
                for pk, data in rows
            }
        time.sleep(0.05)
    raise AssertionError(f"{count} requests were not stored:\n{server.log()}")


def at_once(*calls: Callable[[], tuple[int, str]]) -> list[tuple[int, str]]:
    """Every call started at the same instant, on threads of its own."""
    start = threading.Barrier(len(calls))

    def run(call: Callable[[], tuple[int, str]]) -> tuple[int, str]:
        start.wait()
        return call()

    with ThreadPoolExecutor(len(calls)) as pool:
        return list(pool.map(run, calls))


REFUSED = "already decided this request and it is about to be sent; undo that first"


@pytest.fixture(scope="module")
def two_reviewers(module_server_factory) -> tuple[Reviewer, Reviewer, LiveServer]:
    """Two reviewers of one deployment, each on a process of its own (the tests leave no
    request pending)."""
    first = module_server_factory(env={"AGENTBOARD_UNDO_SECONDS": WINDOW})
    second = module_server_factory(shared_with=first, env={"AGENTBOARD_UNDO_SECONDS": WINDOW})
    add_reviewer(first, "raj", "a-long-password-9")
    return (
        Reviewer(first, first.username, first.password),
        Reviewer(second, "raj", "a-long-password-9"),
        first,
    )


def test_of_an_allow_and_a_deny_clicked_at_once_on_two_processes_exactly_one_wins(
    two_reviewers,
):
    lead, raj, server = two_reviewers
    hooks = HeldHooks(server)
    commands = [f"./deploy.sh --round {number}" for number in range(ROUNDS)]
    for command in commands:
        hooks.ask(command)
    ids = pending_requests(server, ROUNDS)

    winners: dict[str, str] = {}
    for command in commands:
        path = f"/inbox/requests/{ids[command]}/decide/"
        allowed, denied = at_once(
            lambda path=path: lead.post(path, {"action": "allow"}),
            lambda path=path: raj.post(path, {"action": "deny", "message": "Not today."}),
        )
        statuses = sorted([allowed[0], denied[0]])
        assert statuses == [302, 409], (command, allowed[0], denied[0])
        refused = allowed if allowed[0] == 409 else denied
        first = "raj" if allowed[0] == 409 else "lead"
        assert f"{first} {REFUSED}" in refused[1], refused[1][:2000]
        winners[command] = "allow" if allowed[0] == 302 else "deny"

    hooks.join()
    assert {command: decision(hooks.answers[command]) for command in commands} == winners
    decided = dict(
        server.query(
            "SELECT r.id, u.username FROM planmode_permissionrequest r "
            "JOIN auth_user u ON u.id = r.decided_by_id"
        )
    )
    for command in commands:
        assert decided[ids[command]] == ("lead" if winners[command] == "allow" else "raj")


def test_a_bulk_answer_racing_single_ones_on_another_process_decides_each_request_once(
    two_reviewers,
):
    lead, raj, server = two_reviewers
    hooks = HeldHooks(server)
    # Identical requests of six agents (subagents of one session): answerable together.
    payloads = []
    for number in range(6):
        payloads.append(f"sub-{number}")
    command = "npm run migrate -- --env staging"
    threads_before = len(hooks.threads)
    for agent_id in payloads:
        payload = load_fixture(
            "permission_request_bash.json",
            agent_id=agent_id,
            tool_input={"command": command, "description": ""},
        )

        def send(payload=payload, agent_id=agent_id) -> None:
            request = urllib.request.Request(
                f"{server.url}/hooks/claude-code",
                data=json.dumps(payload).encode(),
                headers={"Authorization": f"Bearer {server.token}"},
            )
            with urllib.request.urlopen(request, timeout=120) as response:
                hooks.answers[agent_id] = json.loads(response.read())

        thread = threading.Thread(target=send)
        thread.start()
        hooks.threads.append(thread)
    assert len(hooks.threads) == threads_before + 6
    deadline = time.monotonic() + 30
    rows: list[tuple] = []
    while len(rows) < 6 and time.monotonic() < deadline:
        rows = server.query(
            "SELECT id FROM planmode_permissionrequest WHERE status = 'pending' ORDER BY id"
        )
        time.sleep(0.05)
    ids = [pk for (pk,) in rows]
    assert len(ids) == 6, server.log()

    outcomes = at_once(
        lambda: lead.post("/inbox/requests/decide/", {"action": "allow", "ids": ids}),
        *[
            lambda pk=pk: raj.post(
                f"/inbox/requests/{pk}/decide/", {"action": "deny", "message": "Staging is frozen."}
            )
            for pk in ids[::2]
        ],
    )

    singles = outcomes[1:]
    hooks.join()
    told = {agent_id: decision(hooks.answers[agent_id]) for agent_id in payloads}
    stored = {
        pk: name
        for pk, name in server.query(
            "SELECT r.id, u.username FROM planmode_permissionrequest r "
            "JOIN auth_user u ON u.id = r.decided_by_id"
        )
        if pk in ids
    }
    assert sorted(stored) == sorted(ids)
    # Every single deny raj was told he made is the one its agent heard, and the others
    # were refused saying lead was first.
    for pk, (status, page) in zip(ids[::2], singles, strict=True):
        if status == 302:
            assert stored[pk] == "raj"
        else:
            assert status == 409 and f"lead {REFUSED}" in page, page[:2000]
            assert stored[pk] == "lead"
    by_agent = dict(
        server.query(
            "SELECT r.id, a.agent_id FROM planmode_permissionrequest r "
            "JOIN dashboard_agent a ON a.id = r.agent_id"
        )
    )
    for pk in ids:
        assert told[by_agent[pk]] == ("allow" if stored[pk] == "lead" else "deny")


def test_an_undo_racing_the_end_of_its_window_either_sends_or_takes_back_never_both(
    two_reviewers,
):
    """Each round: the window ends while an Undo is in flight from the other process. If the
    Undo was told it worked, the agent heard nothing and the request waits again."""
    lead_first, raj, first = two_reviewers
    lead_second = Reviewer(raj.server, first.username, first.password)
    hooks = HeldHooks(first)
    commands = [f"make undo-race-{number}" for number in range(8)]
    for command in commands:
        hooks.ask(command)
    ids = pending_requests(first, len(commands))

    undone: list[str] = []
    for number, command in enumerate(commands):
        pk = ids[command]
        status, _ = lead_first.post(f"/inbox/requests/{pk}/decide/", {"action": "allow"})
        assert status == 302
        # Around the window's end, a little earlier or later each round.
        time.sleep(0.85 + 0.03 * number)
        status, page = lead_second.post(f"/inbox/requests/{pk}/undo/", {})
        if status == 302:
            undone.append(command)
        else:
            assert status == 409 and "has no decision waiting to be sent" in page, page[:2000]

    time.sleep(1.5)
    for command in undone:
        assert command not in hooks.answers, command
        assert first.query(
            "SELECT status, staged_answer IS NULL FROM planmode_permissionrequest WHERE id = %s",
            (ids[command],),
        ) == [("pending", True)]
        # Still waiting, so still answerable once more.
        status, _ = lead_first.post(
            f"/inbox/requests/{ids[command]}/decide/", {"action": "deny", "message": "No."}
        )
        assert status == 302
    hooks.join()
    for command in commands:
        expected = "deny" if command in undone else "allow"
        assert decision(hooks.answers[command]) == expected, command
