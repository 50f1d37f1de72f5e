"""`agentboard install-gemini` and `agentboard gemini-hook` on a developer's machine."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from dashboard.client.cli import main
from dashboard.core.waits import ServerWaits
from tests.liveserver import ROOT, free_port

URL = "http://127.0.0.1:8000"
OTHER_HOOK = {"type": "command", "name": "lint", "command": "npm run lint", "timeout": 5000}
EVENTS = {
    "SessionStart",
    "SessionEnd",
    "BeforeAgent",
    "AfterAgent",
    "BeforeTool",
    "AfterTool",
    "Notification",
}


@pytest.fixture
def project(tmp_path):
    folder = tmp_path / "project"
    folder.mkdir()
    return folder


def settings_of(project) -> dict:
    return json.loads((project / ".gemini" / "settings.json").read_text())


def ours(project) -> dict[str, list[dict]]:
    return {
        event: [h for g in groups for h in g["hooks"] if "gemini-hook" in h["command"]]
        for event, groups in settings_of(project)["hooks"].items()
        if isinstance(groups, list)
    }


def test_it_installs_command_hooks_with_timeouts_in_milliseconds(project, capsys):
    assert main(["install-gemini", "--url", URL, "--project", str(project)]) == 0

    hooks = ours(project)
    assert set(hooks) == EVENTS
    assert hooks["BeforeTool"] == [
        {
            "type": "command",
            "name": "agentboard",
            "command": f"agentboard gemini-hook --url {URL} --hook-timeout 30",
            "timeout": 30_000,
        }
    ]
    # AfterAgent is held for the continuation countdown: as long as a Stop hook.
    [after_agent] = hooks["AfterAgent"]
    assert after_agent["timeout"] == 1000 * ServerWaits().stop_timeout()
    assert settings_of(project)["hooksConfig"] == {"enabled": True}
    assert "trusted folder" in capsys.readouterr().out


def test_approvals_hold_before_tool_as_long_as_a_permission_request(project):
    assert main(["install-gemini", "--url", URL, "--project", str(project), "--approvals"]) == 0

    [before_tool] = ours(project)["BeforeTool"]
    assert before_tool["command"].endswith(" --approvals")
    assert before_tool["timeout"] == 600_000


def test_it_keeps_the_users_settings_and_hooks_and_switches_hooks_back_on(project, capsys):
    (project / ".gemini").mkdir()
    own = {
        "model": {"name": "gemini-2.5-pro"},
        "hooksConfig": {"enabled": False, "disabled": ["agentboard", "lint"]},
        "hooks": {"BeforeTool": [{"matcher": "write_file", "hooks": [OTHER_HOOK]}]},
    }
    (project / ".gemini" / "settings.json").write_text(json.dumps(own))

    assert main(["install-gemini", "--url", URL, "--project", str(project)]) == 0
    first = (project / ".gemini" / "settings.json").read_text()
    assert main(["install-gemini", "--url", URL, "--project", str(project)]) == 0

    assert (project / ".gemini" / "settings.json").read_text() == first
    assert "nothing changed" in capsys.readouterr().out
    settings = settings_of(project)
    assert settings["model"] == {"name": "gemini-2.5-pro"}
    assert settings["hooksConfig"] == {"enabled": True, "disabled": ["lint"]}
    assert settings["hooks"]["BeforeTool"][0] == {"matcher": "write_file", "hooks": [OTHER_HOOK]}
    assert json.loads((project / ".gemini" / "settings.json.bak").read_text()) == own


def test_remove_takes_out_only_its_hooks(project):
    (project / ".gemini").mkdir()
    own = {
        "hooksConfig": {"enabled": True},
        "hooks": {"AfterAgent": [{"hooks": [OTHER_HOOK]}], "notifications": False},
    }
    (project / ".gemini" / "settings.json").write_text(json.dumps(own))
    main(["install-gemini", "--url", URL, "--project", str(project), "--approvals"])

    assert main(["install-gemini", "--remove", "--project", str(project)]) == 0

    assert settings_of(project) == own


def test_another_url_replaces_ours_and_no_origin_is_kept_in_the_command(project):
    main(["install-gemini", "--url", URL, "--project", str(project)])
    main(["install-gemini", "--url", "https://board.example.com", "--project", str(project)])
    main(["install-gemini", "--url", URL, "--project", str(project), "--no-origin"])

    assert [h["command"] for h in ours(project)["SessionStart"]] == [
        f"agentboard gemini-hook --url {URL} --hook-timeout 30 --no-origin"
    ]


def test_user_settings_are_the_homes(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))

    assert main(["install-gemini", "--url", URL, "--user"]) == 0

    assert (tmp_path / ".gemini" / "settings.json").exists()


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("{not json", "cannot be read as JSON"),
        ('{"hooks": []}', "not an object"),
        ('{"hooks": {"BeforeTool": {}}}', "not a list"),
        ('{"hooksConfig": true}', "not an object"),
    ],
)
def test_a_file_it_cannot_merge_safely_is_left_as_it_is(project, capsys, text, problem):
    (project / ".gemini").mkdir()
    (project / ".gemini" / "settings.json").write_text(text)

    assert main(["install-gemini", "--url", URL, "--project", str(project)]) == 1

    assert problem in capsys.readouterr().err
    assert (project / ".gemini" / "settings.json").read_text() == text


def test_it_needs_a_url(project):
    with pytest.raises(SystemExit):
        main(["install-gemini", "--url", "ftp://nope", "--project", str(project)])


def test_the_hook_never_breaks_gemini_when_the_board_is_unreachable():
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "DJANGO"))}
    env.update(
        {"AGENTBOARD_URL": f"http://127.0.0.1:{free_port()}", "AGENTBOARD_TOKEN": "ab_whatever"}
    )
    payload = {"session_id": "s1", "hook_event_name": "AfterAgent", "cwd": str(ROOT)}
    result = subprocess.run(
        [sys.executable, "-m", "dashboard.client", "gemini-hook", "--approvals"],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=60,
    )

    # No output at all: Gemini reads an empty answer as "no opinion" and carries on.
    assert (result.returncode, result.stdout) == (0, "")
    assert "unreachable" in result.stderr
    assert len(result.stderr.splitlines()) == 1


def test_the_hook_command_loads_no_installer_nor_http_library():
    # Gemini runs it for every event: it costs what `agentboard hook` costs.
    check = (
        "import sys; sys.path.insert(0, sys.argv[1]); "
        "import dashboard.client.hook_command, dashboard.client.gemini_hook; "
        "heavy = {'dashboard.client.install', 'urllib.request', 'argparse', 'asyncio', "
        "'django', 'pydantic', 'dashboard.client.gemini'}; "
        "print(sorted(heavy & set(sys.modules)))"
    )
    result = subprocess.run(
        [sys.executable, "-S", "-c", check, str(ROOT)], capture_output=True, text=True, timeout=60
    )

    assert result.stdout.strip() == "[]", result.stderr
