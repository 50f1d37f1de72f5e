"""Codex CLI: its command hooks (installed by `agentboard install-codex`, forwarded by
`agentboard codex-hook`) reach `POST /hooks/codex`."""
