from __future__ import annotations

# Hook payloads posted as Claude Code posts them, for tests of what the hooks show.
from tests.hooks.conftest import hook  # noqa: F401
