"""Conversions at the Python/Rust boundary: Python keeps seconds and bits/s as floats,
the engine takes integer nanoseconds and bits/s."""

from __future__ import annotations


def to_ns(seconds: float) -> int:
    return int(round(seconds * 1e9))
