from __future__ import annotations

from tests.hooks.conftest import hook  # noqa: F401 - the hook fixture, for these tests too
from tests.teams.conftest import world  # noqa: F401 - two teams and what waits in one
