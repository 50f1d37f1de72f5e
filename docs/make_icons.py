"""Draws the app icons (static/icons/icon-*.png): a checked box on the accent colour.

Pure Python (zlib), so it needs nothing installed: `python docs/make_icons.py`.
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

ACCENT = (109, 40, 217)
WHITE = (255, 255, 255)
OUT = Path(__file__).resolve().parent.parent / "static" / "icons"


def _distance_to_segment(px: float, py: float, a: tuple, b: tuple) -> float:
    ax, ay = a
    bx, by = b
    dx, dy = bx - ax, by - ay
    t = max(0.0, min(1.0, ((px - ax) * dx + (py - ay) * dy) / (dx * dx + dy * dy)))
    return ((px - ax - t * dx) ** 2 + (py - ay - t * dy) ** 2) ** 0.5


def pixel(x: float, y: float) -> tuple[int, int, int]:
    """x, y in 0..1. The whole square is accent (maskable: the safe zone is the middle 80%)."""
    inside_box = 0.30 <= x <= 0.70 and 0.30 <= y <= 0.70
    border = inside_box and not (0.345 <= x <= 0.655 and 0.345 <= y <= 0.655)
    check = min(
        _distance_to_segment(x, y, (0.39, 0.50), (0.47, 0.59)),
        _distance_to_segment(x, y, (0.47, 0.59), (0.64, 0.38)),
    )
    return WHITE if border or check < 0.035 else ACCENT


def png(size: int) -> bytes:
    rows = b"".join(
        b"\x00" + b"".join(bytes(pixel((x + 0.5) / size, (y + 0.5) / size)) for x in range(size))
        for y in range(size)
    )

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows, 9))
        + chunk(b"IEND", b"")
    )


if __name__ == "__main__":
    OUT.mkdir(parents=True, exist_ok=True)
    for size in (180, 192, 512):
        (OUT / f"icon-{size}.png").write_bytes(png(size))
