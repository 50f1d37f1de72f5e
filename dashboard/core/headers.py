"""Request headers the agent-side `agentboard` commands send and the server reads.

Plain constants, no imports: the hook commands import this on every call, and each is a fresh
process whose start-up cost an agent waits for.
"""

from __future__ import annotations

# Sent with every hook by the `agentboard` commands and the HTTP hooks that install-hooks
# writes: the seconds the client waits for the answer (see `dashboard.core.waits`).
HOOK_TIMEOUT_HEADER = "X-Agentboard-Hook-Timeout"
