from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest

from dashboard.client.cli import main
from dashboard.client.install import is_ours
from tests.claude_cli.install import CLI
from tests.client.conftest import make_repository

URL = "http://board.example:8000"

EXISTING = {
    "model": "opus",
    "permissions": {"allow": ["Bash(npm test:*)"]},
    "hooks": {
        "PostToolUse": [
            {
                "matcher": "Edit|Write",
                "hooks": [{"type": "command", "command": "npx prettier --write"}],
            }
        ],
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
    },
}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps(EXISTING, indent=2))
    return tmp_path


def read(project: Path) -> dict:
    return json.loads((project / ".claude" / "settings.json").read_text())


def handlers(settings: dict, event: str) -> list[dict]:
    return [h for group in settings["hooks"].get(event, []) for h in group["hooks"]]


def test_it_adds_http_hooks_with_the_token_from_the_environment(project, capsys):
    assert main(["install-hooks", "--url", URL + "/", "--project", str(project)]) == 0

    settings = read(project)
    [plan_group] = settings["hooks"]["PermissionRequest"]
    assert plan_group["matcher"] == "ExitPlanMode"
    assert plan_group["hooks"] == [
        {
            "type": "http",
            "url": "http://board.example:8000/hooks/claude-code",
            "headers": {
                "Authorization": "Bearer $AGENTBOARD_TOKEN",
                "X-Agentboard-Hook-Timeout": "600",
                "X-Agentboard-Host": socket.gethostname(),
            },
            "allowedEnvVars": ["AGENTBOARD_TOKEN"],
            "timeout": 600,
        }
    ]
    ours = settings["hooks"]["PostToolUse"][-1]
    assert "matcher" not in ours, "every tool use is a step for the todo reminders"
    # Claude Code refuses HTTP hooks for SessionStart: it gets the command, even in HTTP mode.
    assert handlers(settings, "SessionStart") == [
        {
            "type": "command",
            "command": f"agentboard hook --url {URL} --hook-timeout 30",
            "timeout": 30,
        }
    ]
    # Without this, Claude Code 2.1.233+ offers no todo tools and the cards stay empty.
    assert settings["env"] == {"CLAUDE_CODE_ENABLE_TODO_TOOLS": "1"}
    for event in (
        "SessionEnd",
        "SubagentStart",
        "SubagentStop",
        "UserPromptSubmit",
        "Stop",
        "PreCompact",
        "Notification",
        "TaskCreated",
        "TaskCompleted",
        "PreToolUse",
        "PostToolUseFailure",
        "CwdChanged",
        "TeammateIdle",
        "StopFailure",
    ):
        [handler] = [h for h in handlers(settings, event) if h["type"] == "http"]
        assert handler["url"].endswith("/hooks/claude-code")
        assert handler["timeout"] < 600
    # A refusal by auto mode may wait in the inbox as long as a permission request.
    [refusal] = handlers(settings, "PermissionDenied")
    [request] = handlers(settings, "PermissionRequest")
    assert refusal["timeout"] == request["timeout"]
    assert "Added Agentboard's hooks" in capsys.readouterr().out


def test_it_keeps_every_hook_and_setting_already_there(project):
    main(["install-hooks", "--url", URL, "--project", str(project)])

    settings = read(project)
    assert settings["model"] == "opus"
    assert settings["permissions"] == EXISTING["permissions"]
    assert settings["hooks"]["PostToolUse"][0] == EXISTING["hooks"]["PostToolUse"][0]
    assert settings["hooks"]["Stop"][0] == EXISTING["hooks"]["Stop"][0]


def test_it_writes_a_backup_of_the_previous_file(project):
    before = (project / ".claude" / "settings.json").read_text()

    main(["install-hooks", "--url", URL, "--project", str(project)])

    assert (project / ".claude" / "settings.json.bak").read_text() == before


def test_running_it_twice_changes_nothing(project, capsys):
    main(["install-hooks", "--url", URL, "--project", str(project)])
    first = (project / ".claude" / "settings.json").read_text()
    capsys.readouterr()

    assert main(["install-hooks", "--url", URL, "--project", str(project)]) == 0

    assert (project / ".claude" / "settings.json").read_text() == first
    assert "nothing changed" in capsys.readouterr().out
    assert len(handlers(read(project), "PermissionRequest")) == 1


def test_another_url_replaces_ours_instead_of_adding_more(project):
    main(["install-hooks", "--url", URL, "--project", str(project)])

    main(["install-hooks", "--url", "https://other.example", "--project", str(project)])

    urls = [h["url"] for h in handlers(read(project), "PermissionRequest")]
    assert urls == ["https://other.example/hooks/claude-code"]


def test_remove_takes_out_only_our_entries(project):
    main(["install-hooks", "--url", URL, "--project", str(project)])

    assert main(["install-hooks", "--remove", "--project", str(project)]) == 0

    assert read(project) == EXISTING


def test_remove_leaves_a_group_shared_with_someone_elses_hook(project):
    settings = read(project)
    settings["hooks"]["Stop"][0]["hooks"].append(
        {"type": "http", "url": f"{URL}/hooks/claude-code", "timeout": 30}
    )
    (project / ".claude" / "settings.json").write_text(json.dumps(settings))

    main(["install-hooks", "--remove", "--project", str(project)])

    assert read(project) == EXISTING


def test_the_todo_tools_switch_can_be_left_out_and_keeps_other_variables(project):
    settings = read(project)
    settings["env"] = {"DEBUG": "1"}
    (project / ".claude" / "settings.json").write_text(json.dumps(settings))

    main(["install-hooks", "--url", URL, "--project", str(project)])
    assert read(project)["env"] == {"DEBUG": "1", "CLAUDE_CODE_ENABLE_TODO_TOOLS": "1"}

    main(["install-hooks", "--url", URL, "--project", str(project), "--no-todo-tools"])
    assert read(project)["env"] == {"DEBUG": "1"}
    assert handlers(read(project), "PermissionRequest")


def test_the_command_variant_installs_agentboard_hook(project):
    main(["install-hooks", "--url", URL, "--project", str(project), "--command"])

    settings = read(project)
    [plan_hook] = handlers(settings, "PermissionRequest")
    assert plan_hook == {
        "type": "command",
        "command": f"agentboard hook --url {URL} --hook-timeout 600",
        "timeout": 600,
    }
    assert not any(h["type"] == "http" for e in settings["hooks"] for h in handlers(settings, e))

    main(["install-hooks", "--url", URL, "--project", str(project)])
    assert [h["type"] for h in handlers(read(project), "PermissionRequest")] == ["http"]

    main(["install-hooks", "--remove", "--project", str(project)])
    assert read(project) == EXISTING


def test_a_missing_file_is_created_without_a_backup(tmp_path):
    assert main(["install-hooks", "--url", URL, "--project", str(tmp_path)]) == 0

    assert "PermissionRequest" in read(tmp_path)["hooks"]
    assert not (tmp_path / ".claude" / "settings.json.bak").exists()


def test_user_writes_the_settings_in_the_home_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))

    assert main(["install-hooks", "--url", URL, "--user"]) == 0

    assert "SessionStart" in read(tmp_path)["hooks"]


def test_a_settings_file_that_is_not_json_is_left_alone(project, capsys):
    path = project / ".claude" / "settings.json"
    path.write_text("{ not json")

    assert main(["install-hooks", "--url", URL, "--project", str(project)]) == 1

    assert path.read_text() == "{ not json"
    assert "fix it by hand" in capsys.readouterr().err


def test_hooks_in_an_unexpected_shape_are_left_alone(project, capsys):
    path = project / ".claude" / "settings.json"
    path.write_text(json.dumps({"hooks": {"Stop": "notify-send"}}))

    assert main(["install-hooks", "--url", URL, "--project", str(project)]) == 1

    assert json.loads(path.read_text()) == {"hooks": {"Stop": "notify-send"}}
    assert "hooks.Stop" in capsys.readouterr().err


def test_a_url_is_required_to_install(project, capsys):
    with pytest.raises(SystemExit):
        main(["install-hooks", "--project", str(project), "--url", "board.example"])
    assert "--url" in capsys.readouterr().err
    assert read(project) == EXISTING


def test_approvals_send_every_tools_permission_request_to_the_board(project):
    assert main(["install-hooks", "--url", URL, "--project", str(project), "--approvals"]) == 0

    [group] = read(project)["hooks"]["PermissionRequest"]
    assert "matcher" not in group, "every tool, plans included"
    assert group["hooks"][0]["timeout"] == 600

    # Installing again without it goes back to plans only.
    assert main(["install-hooks", "--url", URL, "--project", str(project)]) == 0
    [group] = read(project)["hooks"]["PermissionRequest"]
    assert group["matcher"] == "ExitPlanMode"


def test_a_projects_http_hooks_name_its_repository_without_credentials(project):
    make_repository(project, "https://ci:hunter2@git.example/acme/shop.git")

    main(["install-hooks", "--url", URL, "--project", str(project)])

    settings = read(project)
    for event in ("PermissionRequest", "Stop", "PostToolUse"):
        [handler] = [h for h in handlers(settings, event) if h["type"] == "http"]
        assert handler["headers"]["X-Agentboard-Repository"] == "https://git.example/acme/shop.git"
        assert handler["headers"]["X-Agentboard-Host"] == socket.gethostname()
    assert "hunter2" not in (project / ".claude" / "settings.json").read_text()
    # The command reads them itself on every call.
    [start] = handlers(settings, "SessionStart")
    assert start["command"] == f"agentboard hook --url {URL} --hook-timeout 30"

    main(["install-hooks", "--remove", "--project", str(project)])
    assert read(project) == EXISTING


def test_a_users_settings_name_only_the_machine(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    make_repository(tmp_path, "git@github.com:me/dotfiles.git")

    main(["install-hooks", "--url", URL, "--user"])

    [handler] = handlers(read(tmp_path), "PermissionRequest")
    assert "X-Agentboard-Repository" not in handler["headers"]
    assert handler["headers"]["X-Agentboard-Host"] == socket.gethostname()


def test_a_url_claude_code_would_rewrite_is_left_out(project):
    make_repository(project, "git@git.example:$HOME/shop.git")

    main(["install-hooks", "--url", URL, "--project", str(project)])

    [handler] = handlers(read(project), "PermissionRequest")
    assert "X-Agentboard-Repository" not in handler["headers"]


def test_no_origin_installs_hooks_that_report_neither(project):
    make_repository(project, "git@github.com:acme/shop.git")

    main(["install-hooks", "--url", URL, "--project", str(project), "--no-origin"])

    settings = read(project)
    [handler] = handlers(settings, "PermissionRequest")
    assert set(handler["headers"]) == {"Authorization", "X-Agentboard-Hook-Timeout"}
    [start] = handlers(settings, "SessionStart")
    assert start["command"].endswith(" --no-origin")

    # Installing again without it reports again, with nothing left over.
    main(["install-hooks", "--url", URL, "--project", str(project)])
    settings = read(project)
    assert len(handlers(settings, "SessionStart")) == 1
    assert not handlers(settings, "SessionStart")[0]["command"].endswith(" --no-origin")
    main(["install-hooks", "--remove", "--project", str(project)])
    assert read(project) == EXISTING


# --- hooks Claude Code runs in the background ---------------------------------------------------

EVERY_EVENT = [
    "SessionStart",
    "SessionEnd",
    "SubagentStart",
    "SubagentStop",
    "UserPromptSubmit",
    "Stop",
    "PreCompact",
    "Notification",
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "PermissionDenied",
    "CwdChanged",
    "TeammateIdle",
    "StopFailure",
    "TaskCreated",
    "TaskCompleted",
    "PermissionRequest",
]


def in_the_background(settings: dict) -> dict[str, list[str | None]]:
    """Per event, the matchers of our groups that run in the background (None: every one)."""
    found: dict[str, list[str | None]] = {}
    for event, groups in settings["hooks"].items():
        for group in groups:
            for handler in group["hooks"]:
                if handler.get("async"):
                    assert handler["type"] == "command", "Claude Code runs only commands so"
                    found.setdefault(event, []).append(group.get("matcher"))
    return found


BACKGROUND = {"SessionStart": ["startup|resume|clear"]}
# As command hooks, every supported version runs these in the background.
SHOWN_ONLY = {"CwdChanged": [None], "TeammateIdle": [None]}


@pytest.mark.parametrize(
    ("version", "mode", "expected"),
    [
        ("2.1.197", [], BACKGROUND),
        ("2.1.197", ["--command"], BACKGROUND | SHOWN_ONLY),
        # 2.1.330 also lets a SessionEnd hook finish after it exited; HTTP hooks are waited on.
        ("2.1.330", [], BACKGROUND),
        ("2.1.330", ["--command"], BACKGROUND | SHOWN_ONLY | {"SessionEnd": [None]}),
        ("2.1.332", ["--command"], BACKGROUND | SHOWN_ONLY | {"SessionEnd": [None]}),
        # Versions before the ones tried keep every hook waited on.
        ("2.1.196", ["--command"], {}),
    ],
)
def test_hooks_whose_answer_is_not_needed_run_in_the_background(project, version, mode, expected):
    main(
        [
            "install-hooks",
            "--url",
            URL,
            "--project",
            str(project),
            "--claude-version",
            version,
            *mode,
        ]
    )

    settings = read(project)
    assert in_the_background(settings) == expected
    # Every event still reaches the board, once.
    for event in EVERY_EVENT:
        ours = [handler for handler in handlers(settings, event) if is_ours(handler)]
        assert len(ours) == (2 if event == "SessionStart" and expected else 1), event


def test_after_compaction_session_start_is_still_waited_on(project):
    """Its answer hands the todo list back to the model."""
    main(["install-hooks", "--url", URL, "--project", str(project), "--claude-version", "2.1.330"])

    groups = read(project)["hooks"]["SessionStart"]
    assert [(group["matcher"], group["hooks"][0].get("async", False)) for group in groups] == [
        ("startup|resume|clear", True),
        ("compact", False),
    ]


def test_without_a_claude_code_to_ask_every_hook_is_waited_on(project, capsys):
    main(["install-hooks", "--url", URL, "--project", str(project), "--command"])

    assert in_the_background(read(project)) == {}
    assert handlers(read(project), "SessionStart")[0]["command"].startswith("agentboard hook")
    assert "Could not tell which Claude Code runs here" in capsys.readouterr().out


def test_the_claude_code_on_path_says_its_version(project, capsys, monkeypatch):
    claude = CLI.path_or_skip("2.1.330")
    monkeypatch.setenv("PATH", f"{claude.parent}{os.pathsep}{os.environ['PATH']}")

    main(["install-hooks", "--url", URL, "--project", str(project), "--command"])

    assert in_the_background(read(project)) == BACKGROUND | SHOWN_ONLY | {"SessionEnd": [None]}
    said = capsys.readouterr().out
    assert (
        "Claude Code 2.1.330 runs the SessionStart, SessionEnd, CwdChanged and TeammateIdle hooks "
        "in the background" in said
    )


def test_reinstalling_for_another_version_replaces_our_groups(project):
    main(["install-hooks", "--url", URL, "--project", str(project), "--claude-version", "2.1.330"])

    main(["install-hooks", "--url", URL, "--project", str(project), "--claude-version", "2.1.100"])

    assert in_the_background(read(project)) == {}
    assert len(read(project)["hooks"]["SessionStart"]) == 1


def test_a_version_that_is_not_one_is_refused(project, capsys):
    with pytest.raises(SystemExit) as exited:
        main(
            ["install-hooks", "--url", URL, "--project", str(project), "--claude-version", "latest"]
        )

    assert exited.value.code == 2
    assert "--claude-version takes a version such as 2.1.330" in capsys.readouterr().err
