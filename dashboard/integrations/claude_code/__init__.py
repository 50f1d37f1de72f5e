"""Claude Code: its hooks (`POST /hooks/claude-code`, from native HTTP hooks or `agentboard
hook`) and their input schemas. Codex's hooks share their shape and reuse this handling."""
