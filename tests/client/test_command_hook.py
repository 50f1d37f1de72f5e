from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time

import pytest

from tests.client.conftest import api_get
from tests.hooks.conftest import SESSION_ID, load_fixture
from tests.liveserver import ROOT, free_port

pytestmark = pytest.mark.timeout(180)


def plan_id_from(line: str) -> int:
    return int(re.search(r"plan (\d+) is waiting", line).group(1))


def test_it_forwards_a_todowrite_and_prints_the_answer(agentboard_server, run_hook):
    hook = run_hook(
        load_fixture("post_tool_use_todowrite.json"),
        url=agentboard_server.url,
        token=agentboard_server.token,
    )

    code, stdout, stderr = hook.finish()

    assert (code, stdout.strip(), stderr) == (0, "{}", "")
    todos = api_get(agentboard_server, f"/api/v1/sessions/{SESSION_ID}/agents/{SESSION_ID}/todos")
    assert [t["status"] for t in todos["todos"]] == ["completed", "in_progress", "pending"]


def test_an_unreachable_server_is_no_reason_to_stop_the_agent(run_hook):
    hook = run_hook(
        load_fixture("stop.json"), url=f"http://127.0.0.1:{free_port()}", token="ab_whatever"
    )

    code, stdout, stderr = hook.finish()

    assert (code, stdout) == (0, "")
    assert "unreachable" in stderr
    assert len(stderr.splitlines()) == 1


def test_an_unreachable_server_lets_a_plan_go_to_the_terminal(run_hook):
    hook = run_hook(
        load_fixture("permission_request_exit_plan_mode.json"),
        url=f"http://127.0.0.1:{free_port()}",
        token="ab_whatever",
    )

    code, stdout, stderr = hook.finish()

    assert (code, stdout) == (0, "")
    assert "unreachable" in stderr


def test_a_refused_token_is_explained_on_stderr(agentboard_server, run_hook):
    for name in ("stop.json", "permission_request_exit_plan_mode.json"):
        hook = run_hook(load_fixture(name), url=agentboard_server.url, token="ab_not_a_token")

        code, stdout, stderr = hook.finish()

        assert (code, stdout) == (0, "")
        assert "token" in stderr


def test_bad_input_or_configuration_never_fails_the_agent(run_hook):
    for payload, options, reason in [
        ("{ not json", {"url": "http://127.0.0.1:9", "token": "t"}, "not valid JSON"),
        ("{}", {"url": "", "token": "t"}, "AGENTBOARD_URL"),
        ("{}", {"url": "http://127.0.0.1:9", "token": ""}, "AGENTBOARD_TOKEN"),
    ]:
        code, stdout, stderr = run_hook(payload, **options).finish()
        assert (code, stdout) == (0, "")
        assert reason in stderr


def test_a_plan_waits_on_the_socket_and_gets_the_approval(
    agentboard_server, run_hook, reviewer_browser
):
    payload = load_fixture("permission_request_exit_plan_mode.json")
    hook = run_hook(payload, url=agentboard_server.url, token=agentboard_server.token)
    plan_id = plan_id_from(hook.wait_for_stderr("is waiting for a reviewer"))

    reviewer_browser(agentboard_server).decide(plan_id, "approve_auto")

    code, stdout, _ = hook.finish()
    assert code == 0
    assert json.loads(stdout) == {
        "hookSpecificOutput": {
            "hookEventName": "PermissionRequest",
            "decision": {
                "behavior": "allow",
                "updatedInput": payload["tool_input"],
                "updatedPermissions": [
                    {"type": "setMode", "mode": "acceptEdits", "destination": "session"}
                ],
            },
        }
    }


def test_any_other_tools_request_is_held_until_answered_on_the_inbox(
    agentboard_server, run_hook, reviewer_browser
):
    hook = run_hook(
        load_fixture("permission_request_bash.json"),
        url=agentboard_server.url,
        token=agentboard_server.token,
    )
    reviewer = reviewer_browser(agentboard_server)
    request_id = reviewer.waiting_request()

    reviewer.answer(request_id, "deny", message="Run only the changed test file.")

    code, stdout, _ = hook.finish()
    assert code == 0
    decision = json.loads(stdout)["hookSpecificOutput"]["decision"]
    assert decision["behavior"] == "deny"
    assert decision["message"].endswith("Their message:\nRun only the changed test file.")


def test_a_server_restart_during_the_wait_still_ends_with_the_decision(
    agentboard_server, run_hook, reviewer_browser
):
    hook = run_hook(
        load_fixture("permission_request_exit_plan_mode.json"),
        url=agentboard_server.url,
        token=agentboard_server.token,
    )
    plan_id = plan_id_from(hook.wait_for_stderr("is waiting for a reviewer"))

    agentboard_server.restart()
    hook.wait_for_stderr(f"watching plan {plan_id} again")
    reviewer_browser(agentboard_server).decide(plan_id, "reject", "Split it into two plans.")

    code, stdout, stderr = hook.finish()
    assert code == 0, stderr
    decision = json.loads(stdout)["hookSpecificOutput"]["decision"]
    assert decision["behavior"] == "deny"
    assert decision["message"].startswith("The reviewer did not approve the plan")
    assert "Their feedback:\nSplit it into two plans.\n" in decision["message"]


def test_a_decision_taken_while_the_server_was_down_is_not_lost(
    agentboard_server, run_hook, reviewer_browser
):
    hook = run_hook(
        load_fixture("permission_request_exit_plan_mode.json"),
        url=agentboard_server.url,
        token=agentboard_server.token,
    )
    plan_id = plan_id_from(hook.wait_for_stderr("is waiting for a reviewer"))

    agentboard_server.stop()
    decide = (
        "from django.contrib.auth.models import User; from planmode.services import plan_decide; "
        "from dashboard.core.writer import write_sync; "
        f"write_sync(plan_decide, plan_id={plan_id}, "
        "reviewer=User.objects.get(username='lead'), approve=True)"
    )
    subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", decide],
        cwd=ROOT,
        env=agentboard_server.env,
        check=True,
        capture_output=True,
        timeout=60,
    )
    agentboard_server.start()

    code, stdout, stderr = hook.finish()
    assert code == 0, stderr
    assert json.loads(stdout)["hookSpecificOutput"]["decision"]["behavior"] == "allow"


def test_no_decision_within_the_wait_lets_claude_code_ask(agentboard_server, run_hook):
    hook = run_hook(
        load_fixture("permission_request_exit_plan_mode.json"),
        url=agentboard_server.url,
        token=agentboard_server.token,
        args=("--plan-wait", "1"),
    )

    code, stdout, stderr = hook.finish()

    assert (code, stdout.strip()) == (0, "{}")
    assert "no reviewer decided in time" in stderr
    # Nobody waits for it any more, so the board shows it expired rather than pending.
    plan = api_get(agentboard_server, f"/api/v1/plans/{plan_id_from(stderr)}")
    assert plan["status"] == "expired"


def test_the_client_does_not_import_django():
    check = (
        "import sys, dashboard.client.cli, dashboard.client.hook, dashboard.client.install; "
        "assert not [m for m in sys.modules if m.split('.')[0] == 'django'], 'django'"
    )
    subprocess.run([sys.executable, "-c", check], cwd=ROOT, check=True, timeout=60)


def exited(pid: int) -> bool:
    """Gone, or a zombie nobody reaped yet (an orphan's new parent may never reap it)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_hook_whose_claude_code_went_away_exits_and_its_plan_expires(server_factory, tmp_path):
    server = server_factory(env={"AGENTBOARD_PLAN_RECONNECT_GRACE_SECONDS": "0.5"})
    payload = tmp_path / "input.json"
    payload.write_text(json.dumps(load_fixture("permission_request_exit_plan_mode.json")))
    stderr = tmp_path / "hook.err"
    # Claude Code's place: a parent that starts the hook, then dies without a word.
    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import subprocess, sys, time\n"
            "hook = subprocess.Popen([sys.executable, '-m', 'dashboard.client', 'hook'],"
            " stdin=open(sys.argv[1]), stderr=open(sys.argv[2], 'w'))\n"
            "print(hook.pid, flush=True)\n"
            "time.sleep(120)\n",
            str(payload),
            str(stderr),
        ],
        cwd=ROOT,
        env={
            **{k: v for k, v in os.environ.items() if not k.startswith("PYTEST")},
            "AGENTBOARD_URL": server.url,
            "AGENTBOARD_TOKEN": server.token,
        },
        stdout=subprocess.PIPE,
        text=True,
    )
    hook_pid = int(parent.stdout.readline())
    deadline = time.monotonic() + 30
    while "is waiting for a reviewer" not in stderr.read_text():
        assert time.monotonic() < deadline, stderr.read_text()
        time.sleep(0.05)
    plan_id = plan_id_from(stderr.read_text())

    parent.kill()
    parent.wait(5)

    deadline = time.monotonic() + 10
    while not exited(hook_pid):
        assert time.monotonic() < deadline, "the orphaned hook is still running"
        time.sleep(0.05)
    deadline = time.monotonic() + 10
    while api_get(server, f"/api/v1/plans/{plan_id}")["status"] != "expired":
        assert time.monotonic() < deadline, "the abandoned plan still shows as waiting"
        time.sleep(0.05)
