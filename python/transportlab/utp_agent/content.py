"""What a uTP flow transfers: a single-file torrent both ends derive on their own from
the same arguments, so no metadata has to cross the link before the transfer.

- `download` content: `size` bytes drawn from numpy's PCG64 seeded with the flow's
  seed, piece by piece (each piece is the next `piece_length` bytes of the stream);
- `bulk` content (a transfer for a duration): `size` zero bytes, kept as a sparse file
  on the seeding side, every piece then having the same hash.

The torrent is v1 only (SHA-1 piece hashes) with a fixed name and no creation date, so
its info-hash depends on the arguments alone."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

FILE_NAME = "tlab-utp-content"
DOWNLOAD_PIECE_LENGTH = 256 * 1024
BULK_PIECE_LENGTH = 16 * 1024 * 1024


@dataclass(frozen=True)
class Content:
    size: int
    seed: int | None  # None: zeros (bulk)

    @property
    def piece_length(self) -> int:
        return BULK_PIECE_LENGTH if self.seed is None else DOWNLOAD_PIECE_LENGTH

    @property
    def num_pieces(self) -> int:
        return -(-self.size // self.piece_length)

    def pieces(self) -> Iterator[bytes]:
        """The content piece by piece (download content only: bulk pieces are zeros)."""
        assert self.seed is not None
        rng = np.random.Generator(np.random.PCG64(self.seed))
        left = self.size
        while left > 0:
            n = min(self.piece_length, left)
            yield rng.bytes(n)
            left -= n

    def piece_hashes(self) -> list[bytes]:
        if self.seed is not None:
            return [hashlib.sha1(p).digest() for p in self.pieces()]
        full = hashlib.sha1(bytes(self.piece_length)).digest()
        tail = self.size - (self.num_pieces - 1) * self.piece_length
        last = full if tail == self.piece_length else hashlib.sha1(bytes(tail)).digest()
        return [full] * (self.num_pieces - 1) + [last]

    def write(self, directory: Path) -> None:
        """The file a seeder serves, in `directory` (bulk: sparse, nothing written)."""
        path = directory / FILE_NAME
        with open(path, "wb") as f:
            if self.seed is None:
                f.truncate(self.size)
            else:
                for piece in self.pieces():
                    f.write(piece)
            f.flush()
            os.fsync(f.fileno())

    def torrent(self, lt) -> dict:
        """The torrent's decoded metainfo (libtorrent's `create_torrent.generate()`)."""
        files = [lt.create_file_entry(FILE_NAME, self.size)]
        ct = lt.create_torrent(files, self.piece_length, lt.create_torrent.v1_only)
        for i, h in enumerate(self.piece_hashes()):
            ct.set_hash(i, h)
        ct.set_creator("transportlab")
        return ct.generate()


# A transfer for a duration serves zeros up to this rate for its whole length (a sparse
# file: only what moves is ever written); a faster path runs out, and the receiving end
# then fails saying so.
BULK_RATE_BOUND_BPS = 1e9


def bulk_size(duration_s: float) -> int:
    """The content of a bulk transfer of `duration_s` seconds: whole pieces, at least one."""
    pieces = max(1, -(-int(duration_s * BULK_RATE_BOUND_BPS / 8) // BULK_PIECE_LENGTH))
    return pieces * BULK_PIECE_LENGTH
