"""install-hooks switches on Claude Code's export of tokens and cost to the board."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from dashboard.client.cli import main
from tests.liveserver import ROOT

URL = "http://board.example:8000"
OURS = {
    "CLAUDE_CODE_ENABLE_TELEMETRY": "1",
    "OTEL_METRICS_EXPORTER": "otlp",
    "OTEL_LOGS_EXPORTER": "otlp",
    "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
    "OTEL_EXPORTER_OTLP_ENDPOINT": URL,
    "OTEL_METRIC_EXPORT_INTERVAL": "10000",
    "OTEL_LOGS_EXPORT_INTERVAL": "5000",
}


@pytest.fixture
def user_settings(home: Path) -> Path:
    path = home / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"model": "opus", "env": {"MY_OWN": "kept", "DEBUG": "1"}}))
    return path


def read(path: Path) -> dict:
    return json.loads(path.read_text())


def test_a_project_install_switches_the_export_on_in_the_users_settings(
    tmp_path, user_settings, capsys
):
    assert main(["install-hooks", "--url", URL, "--project", str(tmp_path)]) == 0

    settings = read(user_settings)
    assert settings["env"] == {"MY_OWN": "kept", "DEBUG": "1", **OURS}
    assert settings["otelHeadersHelper"] == "agentboard otel-headers"
    assert settings["model"] == "opus"
    # No token in any file: the helper reads it from the agent's environment.
    project = read(tmp_path / ".claude" / "settings.json")
    assert "OTEL_EXPORTER_OTLP_ENDPOINT" not in project.get("env", {})
    assert "Switched on Claude Code's export of tokens and cost" in capsys.readouterr().out


def test_a_user_install_writes_hooks_and_export_in_one_file(user_settings):
    assert main(["install-hooks", "--url", URL, "--user"]) == 0

    settings = read(user_settings)
    assert settings["env"]["OTEL_EXPORTER_OTLP_ENDPOINT"] == URL
    assert "SessionStart" in settings["hooks"]


@pytest.mark.parametrize("where", [["--user"], ["--project", "{project}"]])
def test_remove_takes_the_export_out_and_leaves_the_users_own_env(tmp_path, user_settings, where):
    where = [arg.format(project=tmp_path) for arg in where]
    main(["install-hooks", "--url", URL, *where])

    assert main(["install-hooks", "--remove", *where]) == 0

    settings = read(user_settings)
    assert settings["env"] == {"MY_OWN": "kept", "DEBUG": "1"}
    assert "otelHeadersHelper" not in settings


def test_no_telemetry_leaves_the_export_off_and_takes_out_an_earlier_one(tmp_path, user_settings):
    main(["install-hooks", "--url", URL, "--project", str(tmp_path)])

    assert main(["install-hooks", "--url", URL, "--project", str(tmp_path), "--no-telemetry"]) == 0

    assert read(user_settings)["env"] == {"MY_OWN": "kept", "DEBUG": "1"}
    assert "SessionStart" in read(tmp_path / ".claude" / "settings.json")["hooks"]


def test_installing_again_changes_nothing(tmp_path, user_settings):
    main(["install-hooks", "--url", URL, "--project", str(tmp_path)])
    before = user_settings.read_text()

    main(["install-hooks", "--url", URL, "--project", str(tmp_path)])

    assert user_settings.read_text() == before


def run_helper(env: dict[str, str]) -> tuple[dict, str]:
    done = subprocess.run(
        [sys.executable, "-m", "dashboard.client", "otel-headers"],
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), **env},
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return json.loads(done.stdout), done.stderr


def test_the_headers_helper_prints_the_token_from_the_environment():
    assert run_helper({"AGENTBOARD_TOKEN": "ab_secret"})[0] == {"Authorization": "Bearer ab_secret"}


def test_the_headers_helper_without_a_token_says_so_and_sends_none():
    headers, said = run_helper({})

    assert headers == {}
    assert "set AGENTBOARD_TOKEN" in said
