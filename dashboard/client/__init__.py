"""The agent-side client and the `agentboard` command line.

Runs on developer machines beside Claude Code, so it imports nothing beyond the standard
library and `websockets`: never Django.
"""
