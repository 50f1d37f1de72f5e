"""The base floor: what every other part stands on and that knows nothing above it.

The batched writer and the read pool (`writer`, `reader`), prepared SQL (`sql`), the change
sets that services return (`changes`), per-event-loop helpers (`loops`), service errors
(`errors`), the input edge's types (`edge`), HTTP security and sign-in (`security`) and the
services of sessions, agents and tokens (`services`).
"""
