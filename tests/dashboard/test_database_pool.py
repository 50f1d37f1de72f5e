"""On PostgreSQL a server process lends its pages pooled connections: a page does not connect
anew (a new backend, whose first reads of each table load its catalog again), and with the pool
turned off (`AGENTBOARD_DATABASE_POOL_SIZE=0`) each page does."""

from __future__ import annotations

import os
import time
import urllib.request
from urllib.parse import urlsplit

import pytest

pytestmark = [
    pytest.mark.services,
    pytest.mark.skipif(
        not os.environ.get("DATABASE_URL", "").startswith("postgres"),
        reason="The connection pool is PostgreSQL's: DATABASE_URL does not name a PostgreSQL.",
    ),
]

PAGES = ("/", "/inbox/", "/plans/", "/", "/inbox/", "/plans/")


def sessions_opened(server) -> int:
    """How many connections PostgreSQL has accepted to the server's database so far."""
    import psycopg

    url = server.env["DATABASE_URL"]
    name = urlsplit(url).path.lstrip("/")
    with psycopg.connect(url.rsplit("/", 1)[0] + "/postgres", autocommit=True) as connection:
        if connection.info.server_version < 140000:
            pytest.skip("PostgreSQL counts the connections it accepted from version 14 on.")
        connection.execute("SELECT pg_stat_clear_snapshot()")
        return connection.execute(
            "SELECT sessions FROM pg_stat_database WHERE datname = %s", [name]
        ).fetchone()[0]


def counted_at_rest(server) -> int:
    """The count once PostgreSQL has taken in every connection that ended: it counts one when
    it ends (or when it reports, every second or more), so this waits for two readings alike."""
    deadline = time.monotonic() + 15
    count = sessions_opened(server)
    while time.monotonic() < deadline:
        time.sleep(0.5)
        again = sessions_opened(server)
        if again == count:
            return count
        count = again
    return count


def new_connections_for_pages(server) -> int:
    cookie = server.log_in()["cookie"]

    def get(path: str) -> None:
        request = urllib.request.Request(f"{server.url}{path}", headers={"Cookie": cookie})
        with urllib.request.urlopen(request, timeout=30) as response:
            assert response.status == 200

    get("/")  # the pool's first page connection, or the first of many
    before = counted_at_rest(server)
    for path in PAGES:
        get(path)
    return counted_at_rest(server) - before


def test_pages_borrow_the_pools_connections(server_factory):
    server = server_factory()
    assert new_connections_for_pages(server) <= 1  # the pool may open one more, not one a page


def test_without_the_pool_each_page_connects(server_factory):
    server = server_factory(env={"AGENTBOARD_DATABASE_POOL_SIZE": "0"})
    assert new_connections_for_pages(server) >= len(PAGES)
