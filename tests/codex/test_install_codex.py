"""`agentboard install-codex` and `agentboard codex-hook` on a developer's machine."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib

import pytest

from dashboard.client.cli import main
from tests.codex.conftest import load_fixture
from tests.liveserver import ROOT, free_port

URL = "http://127.0.0.1:8000"
OTHER_HOOK = {"type": "command", "command": "notify-send done", "timeout": 5}


@pytest.fixture
def home(tmp_path, monkeypatch):
    folder = tmp_path / "codex-home"
    monkeypatch.setenv("CODEX_HOME", str(folder))
    return folder


def hooks_of(home) -> dict:
    return json.loads((home / "hooks.json").read_text())["hooks"]


def our_commands(home) -> dict[str, list[str]]:
    return {
        event: [h["command"] for g in groups for h in g["hooks"] if "codex-hook" in h["command"]]
        for event, groups in hooks_of(home).items()
    }


def test_it_installs_command_hooks_and_switches_the_checklist_tool_on(home, capsys):
    assert main(["install-codex", "--url", URL]) == 0

    commands = our_commands(home)
    assert set(commands) == {
        "SessionStart",
        "SessionEnd",
        "UserPromptSubmit",
        "PreToolUse",
        "PostToolUse",
        "Stop",
        "SubagentStart",
        "SubagentStop",
        "PreCompact",
    }
    # Each hook says its timeout to the server, which never holds it longer.
    assert all(
        c == [f"agentboard codex-hook --url {URL} --hook-timeout 30"] for c in commands.values()
    )
    config = tomllib.loads((home / "config.toml").read_text())
    assert config["tools"]["update_plan"] == {"enabled": True}
    out = capsys.readouterr().out
    assert "trust" in out


def test_approvals_add_the_permission_request_hook_with_a_long_timeout(home):
    assert main(["install-codex", "--url", URL, "--approvals"]) == 0

    [group] = hooks_of(home)["PermissionRequest"]
    assert group["hooks"][0]["timeout"] == 600


def test_installing_twice_changes_nothing_and_keeps_other_hooks_and_settings(home, capsys):
    home.mkdir()
    (home / "hooks.json").write_text(json.dumps({"hooks": {"Stop": [{"hooks": [OTHER_HOOK]}]}}))
    (home / "config.toml").write_text('model = "gpt-5.5"\n\n[tools]\nweb_search = true\n')

    assert main(["install-codex", "--url", URL]) == 0
    first = (home / "hooks.json").read_text(), (home / "config.toml").read_text()
    assert main(["install-codex", "--url", URL]) == 0

    assert ((home / "hooks.json").read_text(), (home / "config.toml").read_text()) == first
    assert "nothing changed" in capsys.readouterr().out
    assert OTHER_HOOK in [h for g in hooks_of(home)["Stop"] for h in g["hooks"]]
    config = tomllib.loads(first[1])
    assert config["model"] == "gpt-5.5"
    assert config["tools"] == {"web_search": True, "update_plan": {"enabled": True}}
    assert (home / "hooks.json.bak").exists()


def test_another_url_replaces_ours(home):
    main(["install-codex", "--url", URL])
    main(["install-codex", "--url", "https://board.example.com"])

    commands = our_commands(home)
    assert commands["Stop"] == [
        "agentboard codex-hook --url https://board.example.com --hook-timeout 30"
    ]


def test_remove_takes_out_only_what_it_added(home):
    home.mkdir()
    original_hooks = {"hooks": {"Stop": [{"hooks": [OTHER_HOOK]}]}}
    original_config = 'model = "gpt-5.5"\n'
    (home / "hooks.json").write_text(json.dumps(original_hooks))
    (home / "config.toml").write_text(original_config)
    main(["install-codex", "--url", URL, "--approvals"])

    assert main(["install-codex", "--remove"]) == 0

    assert json.loads((home / "hooks.json").read_text()) == original_hooks
    assert (home / "config.toml").read_text() == original_config


def test_no_origin_installs_hook_commands_that_report_neither_repository_nor_host(home):
    main(["install-codex", "--url", URL, "--no-origin"])

    assert our_commands(home)["Stop"] == [
        f"agentboard codex-hook --url {URL} --hook-timeout 30 --no-origin"
    ]

    main(["install-codex", "--url", URL])
    assert our_commands(home)["Stop"] == [f"agentboard codex-hook --url {URL} --hook-timeout 30"]


def test_a_users_own_update_plan_setting_is_left_alone(home):
    home.mkdir()
    own = "[tools]\nupdate_plan = { enabled = false }\n"
    (home / "config.toml").write_text(own)

    main(["install-codex", "--url", URL])

    assert tomllib.loads((home / "config.toml").read_text())["tools"] == {
        "update_plan": {"enabled": False}
    }


def test_no_plan_tool_and_no_telemetry_leave_config_toml_alone(home):
    main(["install-codex", "--url", URL, "--no-plan-tool", "--no-telemetry"])

    assert not (home / "config.toml").exists()


def test_a_project_gets_its_own_codex_folder(tmp_path, home):
    project = tmp_path / "shop"
    project.mkdir()

    main(["install-codex", "--url", URL, "--project", str(project)])

    assert (project / ".codex" / "hooks.json").exists()
    assert not home.exists()


@pytest.mark.parametrize(
    ("name", "text", "problem"),
    [
        ("hooks.json", "{not json", "cannot be read as JSON"),
        ("hooks.json", '{"hooks": []}', "not an object"),
        ("config.toml", "model = ", "not valid TOML"),
        ("config.toml", "tools = 3\n", "by hand"),
    ],
)
def test_a_file_it_cannot_merge_safely_is_left_as_it_is(home, capsys, name, text, problem):
    home.mkdir()
    (home / name).write_text(text)

    assert main(["install-codex", "--url", URL]) == 1

    assert problem in capsys.readouterr().err
    assert (home / name).read_text() == text


def test_it_needs_a_url(home):
    with pytest.raises(SystemExit):
        main(["install-codex", "--url", "ftp://nope"])


def test_the_hook_never_breaks_codex_when_the_board_is_unreachable():
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "DJANGO"))}
    env.update(
        {"AGENTBOARD_URL": f"http://127.0.0.1:{free_port()}", "AGENTBOARD_TOKEN": "ab_whatever"}
    )
    result = subprocess.run(
        [sys.executable, "-m", "dashboard.client", "codex-hook"],
        input=json.dumps(load_fixture("stop.json")),
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=60,
    )

    # No output at all: Codex reads an empty answer as "no opinion" and carries on.
    assert (result.returncode, result.stdout) == (0, "")
    assert "unreachable" in result.stderr
    assert len(result.stderr.splitlines()) == 1


def test_it_adds_an_otel_exporter_to_the_boards_logs_and_says_how_to_pass_the_token(home, capsys):
    assert main(["install-codex", "--url", URL]) == 0

    otel = tomllib.loads((home / "config.toml").read_text())["otel"]
    assert otel["log_user_prompt"] is False
    assert otel["exporter"] == {
        "otlp-http": {
            "endpoint": "http://127.0.0.1:8000/v1/logs",
            "protocol": "binary",
        }
    }
    # Codex sends config.toml's header values as written: the token is not written there.
    said = capsys.readouterr().out
    assert 'export OTEL_EXPORTER_OTLP_HEADERS="Authorization=Bearer $AGENTBOARD_TOKEN"' in said


def test_remove_and_no_telemetry_take_the_otel_table_out_and_keep_the_rest(home):
    home.mkdir()
    (home / "config.toml").write_text('model = "gpt-5.5"\n')
    main(["install-codex", "--url", URL])

    main(["install-codex", "--url", URL, "--no-telemetry"])
    assert "otel" not in tomllib.loads((home / "config.toml").read_text())
    main(["install-codex", "--url", "http://board.example:9000"])
    main(["install-codex", "--remove"])

    assert (home / "config.toml").read_text() == 'model = "gpt-5.5"\n'


def test_a_users_own_otel_exporter_is_left_alone(home):
    home.mkdir()
    own = '[otel]\nexporter = "none"\n'
    (home / "config.toml").write_text(own)

    main(["install-codex", "--url", URL, "--no-plan-tool"])

    assert (home / "config.toml").read_text() == own
