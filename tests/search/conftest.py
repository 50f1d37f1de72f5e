from __future__ import annotations

from tests.hooks.conftest import hook  # noqa: F401 - the hook fixture, for these tests too
