"""A small HTTP/1.1 load generator on asyncio streams: keep-alive connections, no dependencies.

Cheap enough per request that one client core can drive one server process to its ceiling.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field


def http_request(
    method: str, path: str, *, body: object = None, headers: dict[str, str] | None = None
) -> bytes:
    data = b"" if body is None else json.dumps(body).encode()
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1"]
    lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
    if body is not None:
        lines.append("Content-Type: application/json")
    lines.append(f"Content-Length: {len(data)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + data


@dataclass
class Response:
    status: int
    body: bytes


class Connection:
    """One keep-alive connection; requests on it go one at a time."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def open(cls, port: int) -> Connection:
        return cls(*await asyncio.open_connection("127.0.0.1", port))

    async def send(self, request: bytes) -> Response:
        self.writer.write(request)
        head = await self.reader.readuntil(b"\r\n\r\n")
        status = int(head[9:12])
        length = 0
        chunked = False
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
            elif name.strip().lower() == b"transfer-encoding" and b"chunked" in value.lower():
                chunked = True
        if chunked:
            body = b""
            while True:
                size = int((await self.reader.readuntil(b"\r\n")).strip(), 16)
                chunk = await self.reader.readexactly(size + 2)
                if size == 0:
                    break
                body += chunk[:-2]
        else:
            body = await self.reader.readexactly(length) if length else b""
        return Response(status, body)

    def close(self) -> None:
        self.writer.close()


@dataclass
class Run:
    seconds: float = 0.0
    latencies: list[float] = field(default_factory=list)
    statuses: dict[int, int] = field(default_factory=dict)

    @property
    def rate(self) -> float:
        return len(self.latencies) / self.seconds if self.seconds else 0.0

    @property
    def errors(self) -> int:
        return sum(count for status, count in self.statuses.items() if status >= 400)

    def percentile(self, fraction: float) -> float:
        if not self.latencies:
            return float("nan")
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))] * 1000

    @property
    def p50(self) -> float:
        return statistics.median(self.latencies) * 1000 if self.latencies else float("nan")


async def closed_loop(
    port: int, make: Callable[[int], bytes], *, clients: int, seconds: float
) -> Run:
    """`clients` connections, each sending its next request as soon as the last answered."""
    run = Run()
    deadline = time.perf_counter() + seconds

    async def client(number: int) -> None:
        connection = await Connection.open(port)
        try:
            while time.perf_counter() < deadline:
                request = make(number)
                started = time.perf_counter()
                response = await connection.send(request)
                run.latencies.append(time.perf_counter() - started)
                run.statuses[response.status] = run.statuses.get(response.status, 0) + 1
        finally:
            connection.close()

    started = time.perf_counter()
    await asyncio.gather(*(client(n) for n in range(clients)))
    run.seconds = time.perf_counter() - started
    return run


async def open_loop(
    port: int, make: Callable[[int], bytes], *, rate: float, seconds: float, connections: int = 32
) -> Run:
    """Requests sent at a steady `rate` whatever the answers do, as agents would send them;
    latency counts from when each request was due."""
    run = Run()
    pool: asyncio.Queue[Connection] = asyncio.Queue()
    for _ in range(connections):
        pool.put_nowait(await Connection.open(port))
    total = int(rate * seconds)
    start = time.perf_counter()

    async def one(number: int) -> None:
        due = start + number / rate
        await asyncio.sleep(max(0.0, due - time.perf_counter()))
        connection = await pool.get()
        try:
            response = await connection.send(make(number))
        finally:
            pool.put_nowait(connection)
        run.latencies.append(time.perf_counter() - due)
        run.statuses[response.status] = run.statuses.get(response.status, 0) + 1

    await asyncio.gather(*(one(n) for n in range(total)))
    run.seconds = time.perf_counter() - start
    while not pool.empty():
        pool.get_nowait().close()
    return run
