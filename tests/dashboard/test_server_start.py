"""What the server process does at its start, before it serves (`dashboard.server`)."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.liveserver import ROOT, server_env

# Importing the server installs Twisted's reactor: the warm-up runs in a process of its own.
WARM_UP = """
import asyncio, json, sys
import django
django.setup()
from django.template import engines
from dashboard.server import load_lazy_parts

before = set(sys.modules)
asyncio.run(load_lazy_parts())
loader = engines["django"].engine.template_loaders[0]
print(json.dumps({
    "templates": sorted(name for name in loader.get_template_cache),
    "loaded": sorted(set(sys.modules) - before),
}))
"""


def test_the_start_compiles_every_template_and_loads_the_workers_client_before_serving(
    tmp_path,
):
    env = server_env(tmp_path) | {"DJANGO_SETTINGS_MODULE": "dashboard.settings"}
    done = subprocess.run(
        [sys.executable, "-c", WARM_UP], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    warmed = json.loads(done.stdout.strip().splitlines()[-1])

    templates = ROOT / "templates"
    expected = sorted(path.relative_to(templates).as_posix() for path in templates.rglob("*.html"))
    assert set(expected) <= set(warmed["templates"])
    assert "dashboard/_agent_card.html" in expected
    # The notification worker's HTTP client, with what it loads on first use.
    assert {"httpcore", "h11", "anyio"} <= set(warmed["loaded"])
