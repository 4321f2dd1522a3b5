"""Paths over a scenario's links: the fewest-hops route between two hosts, where hosts
are end points (never forwarded through) and routers forward. The scenario's checks ask
whether a route exists; the plan's topology numbers the directions it crosses."""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence


class NoPath(ValueError):
    pass


def route(hosts: Sequence[str], links: Sequence[tuple[str, str]], src: str, dst: str) -> list[int]:
    """Direction indices along the fewest-hops path from `src` to `dst`; link i's
    direction a→b is 2i and b→a is 2i+1. Ties go to the link listed first, so routing
    is stable. Raises NoPath."""
    adjacency: dict[str, list[tuple[str, int]]] = {}
    for i, (a, b) in enumerate(links):
        adjacency.setdefault(a, []).append((b, 2 * i))
        adjacency.setdefault(b, []).append((a, 2 * i + 1))
    previous: dict[str, tuple[str, int]] = {}
    seen = {src}
    queue = deque([src])
    end_points = set(hosts)
    while queue:
        node = queue.popleft()
        if node == dst:
            break
        for nxt, direction in adjacency.get(node, []):
            if nxt not in seen and (nxt == dst or nxt not in end_points):
                seen.add(nxt)
                previous[nxt] = (node, direction)
                queue.append(nxt)
    if dst not in seen:
        raise NoPath(f"no path from {src!r} to {dst!r}")
    path = []
    node = dst
    while node != src:
        node, direction = previous[node]
        path.append(direction)
    return list(reversed(path))
