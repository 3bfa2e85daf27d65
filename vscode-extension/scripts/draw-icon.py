"""Draw media/icon.png, the extension's 128×128 Marketplace and Open VSX icon: a loom tree
(a root, branches, leaves) with the current path in orange, as the Loom view and the tree
picture show it. Pure standard library (zlib), so anyone can redraw it without Pillow:

    python3 vscode-extension/scripts/draw-icon.py
"""

from __future__ import annotations

import itertools
import math
import struct
import zlib
from pathlib import Path

SIZE = 128
SAMPLES = 4  # per axis: 16 samples a pixel for smooth edges
BACKGROUND = (0x1F, 0x23, 0x35)
BRANCH = (0x7A, 0xA2, 0xF7)
PATH = (0xFF, 0x9E, 0x64)
Point = tuple[float, float]

NODES: dict[str, Point] = {
    "root": (64, 106), "a": (64, 80), "b1": (38, 54), "b2": (90, 54),
    "c1": (22, 26), "c2": (50, 24), "c3": (90, 24), "c4": (112, 34),
}
EDGES = [("root", "a"), ("a", "b1"), ("a", "b2"), ("b1", "c1"), ("b1", "c2"),
         ("b2", "c3"), ("b2", "c4")]
CURRENT = ["root", "a", "b1", "c2"]  # the path shown in the editor
EDGE_WIDTH = 5.0
NODE_RADIUS = 7.5
CORNER = 26.0


def _segment_distance(p: Point, a: Point, b: Point) -> float:
    ax, ay = p[0] - a[0], p[1] - a[1]
    bx, by = b[0] - a[0], b[1] - a[1]
    t = max(0.0, min(1.0, (ax * bx + ay * by) / (bx * bx + by * by)))
    return math.hypot(ax - t * bx, ay - t * by)


def _inside_rounded_square(x: float, y: float) -> bool:
    cx = min(max(x, CORNER), SIZE - CORNER)
    cy = min(max(y, CORNER), SIZE - CORNER)
    return math.hypot(x - cx, y - cy) <= CORNER


def _colour_at(x: float, y: float) -> tuple[int, int, int, int]:
    """The colour of one sample: the topmost shape under it (nodes over edges)."""
    if not _inside_rounded_square(x, y):
        return (0, 0, 0, 0)
    on_path = set(itertools.pairwise(CURRENT))
    for name in sorted(NODES, key=lambda n: n in CURRENT, reverse=True):
        nx, ny = NODES[name]
        if math.hypot(x - nx, y - ny) <= NODE_RADIUS:
            return (*(PATH if name in CURRENT else BRANCH), 255)
    for a, b in sorted(EDGES, key=lambda e: e in on_path, reverse=True):
        if _segment_distance((x, y), NODES[a], NODES[b]) <= EDGE_WIDTH / 2:
            return (*(PATH if (a, b) in on_path else BRANCH), 255)
    return (*BACKGROUND, 255)


def render() -> bytes:
    """The RGBA rows of the icon, each pixel the average of its samples."""
    rows = bytearray()
    step = 1 / SAMPLES
    for py in range(SIZE):
        rows.append(0)  # PNG filter: none
        for px in range(SIZE):
            acc = [0, 0, 0, 0]
            for sy in range(SAMPLES):
                for sx in range(SAMPLES):
                    r, g, b, a = _colour_at(px + (sx + 0.5) * step, py + (sy + 0.5) * step)
                    acc[0] += r * a
                    acc[1] += g * a
                    acc[2] += b * a
                    acc[3] += a
            n = SAMPLES * SAMPLES
            alpha = acc[3] / n
            if alpha == 0:
                rows += bytes(4)
            else:
                rows += bytes(round(c / acc[3]) for c in acc[:3]) + bytes([round(alpha)])
    return bytes(rows)


def png(raw: bytes) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", SIZE, SIZE, 8, 6, 0, 0, 0)  # 8-bit RGBA
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


if __name__ == "__main__":
    out = Path(__file__).resolve().parent.parent / "media" / "icon.png"
    out.write_bytes(png(render()))
    print(f"{out}: {out.stat().st_size} bytes")
