"""The installers ask the server how long it holds hooks and install timeouts that outlast it;
the server publishes its waits for them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dashboard.client.cli import main
from dashboard.client.install import server_waits
from dashboard.core.waits import ServerWaits

pytestmark = pytest.mark.django_db


def test_the_api_says_the_servers_waits_and_the_timeouts_to_install(agent_api, settings):
    settings.AGENTBOARD_CONTINUATION_COUNTDOWN_SECONDS = 40
    settings.AGENTBOARD_PLAN_HOOK_WAIT_SECONDS = 300
    settings.AGENTBOARD_PERMISSION_HOOK_WAIT_SECONDS = 900

    answer = agent_api.get("/api/v1/waits")

    assert answer.status_code == 200
    assert answer.json() == {
        "continuation_countdown_seconds": 40.0,
        "plan_wait_seconds": 300.0,
        "permission_wait_seconds": 900.0,
        "hook_timeouts": {"Stop": 60, "SubagentStop": 60, "PermissionRequest": 960, "other": 30},
    }


def test_the_waits_need_an_agent_token(client):
    assert client.get("/api/v1/waits").status_code == 401


def settings_of(project: Path) -> dict:
    return json.loads((project / ".claude" / "settings.json").read_text())


def timeouts(hooks: dict) -> dict[str, set[int]]:
    return {
        event: {handler["timeout"] for group in groups for handler in group["hooks"]}
        for event, groups in hooks.items()
    }


def test_install_hooks_gives_held_hooks_timeouts_that_outlast_the_servers_waits(
    server_factory, tmp_path, monkeypatch, capsys
):
    server = server_factory(env={"AGENTBOARD_CONTINUATION_COUNTDOWN_SECONDS": "40"})
    monkeypatch.setenv("AGENTBOARD_TOKEN", server.token)

    assert main(["install-hooks", "--url", server.url, "--project", str(tmp_path)]) == 0
    assert (
        main(
            ["install-hooks", "--url", server.url, "--project", str(tmp_path / "cmd"), "--command"]
        )
        == 0
    )

    http = settings_of(tmp_path)["hooks"]
    assert timeouts(http)["Stop"] == timeouts(http)["SubagentStop"] == {60}
    assert timeouts(http)["PermissionRequest"] == {600}
    assert timeouts(http)["PostToolUse"] == {30}
    [stop] = http["Stop"][0]["hooks"]
    assert stop["headers"]["X-Agentboard-Hook-Timeout"] == "60"
    [stop_command] = settings_of(tmp_path / "cmd")["hooks"]["Stop"][0]["hooks"]
    assert stop_command["command"].endswith("--hook-timeout 60")
    assert "holds a stopping agent 40 s" in capsys.readouterr().out


def test_install_codex_gives_its_stop_hook_a_timeout_that_outlasts_the_countdown(
    server_factory, tmp_path, monkeypatch
):
    server = server_factory(env={"AGENTBOARD_CONTINUATION_COUNTDOWN_SECONDS": "40"})
    monkeypatch.setenv("AGENTBOARD_TOKEN", server.token)

    assert main(["install-codex", "--url", server.url, "--project", str(tmp_path)]) == 0

    hooks = json.loads((tmp_path / ".codex" / "hooks.json").read_text())["hooks"]
    [stop] = hooks["Stop"][0]["hooks"]
    assert (stop["timeout"], stop["command"].split()[-2:]) == (60, ["--hook-timeout", "60"])


def test_a_server_that_cannot_be_asked_gets_the_default_timeouts_and_it_says_so(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.delenv("AGENTBOARD_TOKEN", raising=False)

    assert main(["install-hooks", "--url", "http://127.0.0.1:9", "--project", str(tmp_path)]) == 0

    assert timeouts(settings_of(tmp_path)["hooks"])["Stop"] == {ServerWaits().stop_timeout()}
    out = capsys.readouterr().out
    assert "Could not read the server's waits (AGENTBOARD_TOKEN is not set)" in out
    assert server_waits("http://127.0.0.1:9", "ab_x").startswith("the server is unreachable")
