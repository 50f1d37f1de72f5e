"""`manage.py demo` against a running server: sessions that end, a plan with a revision to
review, and one token of its own however often it runs."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import urllib.request
from pathlib import Path

from tests.liveserver import ROOT


def run_demo(server) -> str:
    result = subprocess.run(
        [sys.executable, "manage.py", "demo", "--url", server.url, "--fast"],
        cwd=ROOT,
        env=server.env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def api_get(server, path: str, token: str = "") -> dict:
    request = urllib.request.Request(
        f"{server.url}{path}", headers={"Authorization": f"Bearer {token or server.token}"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.load(response)


def test_the_demo_reviews_a_revised_plan_ends_its_sessions_and_keeps_its_token(
    agentboard_server,
):
    first = run_demo(agentboard_server)
    second = run_demo(agentboard_server)

    assert "Made a demo token for lead" in first
    assert "Using the demo token" in second and "Made a demo token" not in second
    assert "Demo finished: every session has ended." in second
    shop = re.search(r"/sessions/(demo-shop-\w+)/", second).group(1)
    run = shop.removeprefix("demo-shop-")
    # Two people on two machines, in two repositories and a folder.
    ana = (Path(agentboard_server.env["AGENTBOARD_DATA_DIR"]) / "demo_token_ana").read_text()
    sessions = {
        name: api_get(agentboard_server, f"/api/v1/sessions/demo-{name}-{run}", token)
        for name, token in [("shop", ""), ("api", ana), ("docs", "")]
    }
    assert all(session["ended_at"] for session in sessions.values())
    where = {name: (s["project"], s["repository"], s["host"]) for name, s in sessions.items()}
    assert where == {
        "shop": ("shop", "github.com/acme/shop", "dana-laptop"),
        "api": ("api", "github.com/acme/api", "ana-desktop"),
        "docs": ("docs", "", "dana-laptop"),
    }
    plans = [int(number) for number in re.findall(r"/plans/(\d+)/", second)]
    revised = api_get(agentboard_server, f"/api/v1/plans/{plans[-1]}")
    assert revised["revision"] == 2
    assert revised["status"] == "expired"
