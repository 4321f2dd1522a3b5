"""Seeds derived from one run seed, so every random stage gets its own stream and the
same scenario and seed give the same decisions."""

from __future__ import annotations

import hashlib


def derive_seed(seed: int, *labels: object) -> int:
    """A 64-bit seed from a parent seed and labels (stable across Python versions)."""
    h = hashlib.blake2b(digest_size=8)
    h.update(str(seed).encode())
    for label in labels:
        h.update(b"\x00" + str(label).encode())
    return int.from_bytes(h.digest(), "little")
