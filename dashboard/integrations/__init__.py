"""Agent integrations, one package each: what an agent's own hooks or plugin send, validated and
handed to the domain services, and how its answers are shaped (Claude Code, opencode, Codex)."""
