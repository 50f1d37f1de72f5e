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


FORM_POST = """
import sys
import django
django.setup()
from daphne.http_protocol import HTTPFactory
from twisted.internet.testing import StringTransport
from dashboard.server import ArrivalDeadlineChannel

made = []


class Server:
    def protocol_connected(self, request):
        made.append(request)

    def create_application(self, *args, **kwargs):
        return None


factory = HTTPFactory(Server())
factory.protocol = ArrivalDeadlineChannel
channel = factory.buildProtocol(None)
channel.makeConnection(StringTransport())
body = b"username=ada&password=secret"
channel.dataReceived(
    b"POST /accounts/login/ HTTP/1.1\\r\\nHost: x\\r\\n"
    b"Content-Type: application/x-www-form-urlencoded\\r\\n"
    b"Content-Length: %d\\r\\n\\r\\n%s" % (len(body), body)
)
request = made[0]
request.content.seek(0)
print(repr(request.args), repr(request.content.read()))
"""


def test_the_server_hands_form_bodies_to_django_unparsed(tmp_path):
    """Django reads a form from the raw body; Twisted's own parse of it (and of every POST's
    Content-Type) was work on the event loop that nothing used."""
    done = subprocess.run(
        [sys.executable, "-c", FORM_POST],
        cwd=ROOT,
        env=server_env(tmp_path) | {"DJANGO_SETTINGS_MODULE": "dashboard.settings"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "{} b'username=ada&password=secret'"


COLLECT = """
import django
django.setup()
from dashboard.management.commands.serve import _static_files_collected
_static_files_collected()
"""


def test_a_start_collects_the_static_files_again_only_when_a_source_changed(tmp_path):
    env = server_env(tmp_path) | {"DJANGO_SETTINGS_MODULE": "dashboard.settings"}

    def start() -> int:
        done = subprocess.run(
            [sys.executable, "-c", COLLECT], cwd=ROOT, env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        return (tmp_path / "static" / "staticfiles.json").stat().st_mtime_ns

    first = start()
    assert start() == first
    # As after an upgrade that changed a stylesheet: the sources' fingerprint differs.
    (tmp_path / "static-sources").write_text("the sources of an older release")
    assert start() > first
    # And a static folder someone emptied is filled again.
    (tmp_path / "static" / "staticfiles.json").unlink()
    assert start() > first
