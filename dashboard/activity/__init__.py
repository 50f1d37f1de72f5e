"""Activity: every tool call of every agent as a step, and what each agent is doing now."""
