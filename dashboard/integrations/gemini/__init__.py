"""Gemini CLI: its command hooks (installed by `agentboard install-gemini`, forwarded by
`agentboard gemini-hook`) reach `POST /hooks/gemini`."""
