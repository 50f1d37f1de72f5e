"""Live delivery: what happens after a write commits, and the sockets.

The publisher renders changed fragments once and sends them (`publisher`); board sockets of a
process share one channel (`boards`); held requests wait for decisions (`watch`, `waiting`);
the browser's and the agent's sockets (`consumers`, their frames in `frames`); the in-memory
channel layer of the embedded default (`channel_layer`).
"""
