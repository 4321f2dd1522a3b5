"""Mahimahi link traces: one integer millisecond timestamp per line, non-decreasing; each
line is one opportunity to deliver a 1500-byte packet, and the trace repeats with a
period of its last timestamp."""

from __future__ import annotations

import functools
import os
from pathlib import Path

# The link model refuses longer periods (its nanosecond clock would wrap); about 35 years.
MAX_PERIOD_MS = 2**40


class TraceError(ValueError):
    pass


def load_trace(path: str | os.PathLike) -> tuple[int, ...]:
    """The delivery opportunities of a trace file (ms). Raises TraceError naming the file
    and the line."""
    p = Path(path)
    try:
        st = p.stat()
    except OSError as e:
        raise TraceError(f"cannot read trace file {str(p)!r}: {e.strerror or e}") from None
    if not p.is_file():
        raise TraceError(f"trace {str(p)!r} is not a file")
    return _load(str(p), st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=32)
def _load(path: str, mtime_ns: int, size: int) -> tuple[int, ...]:
    try:
        text = Path(path).read_text(encoding="ascii")
    except (OSError, UnicodeDecodeError) as e:
        raise TraceError(f"cannot read trace file {path!r}: {e}") from None
    out: list[int] = []
    for n, line in enumerate(text.splitlines(), start=1):
        s = line.strip()
        if not s:
            continue
        if not s.isdigit():
            raise TraceError(f"{path} line {n}: expected a whole number of milliseconds (got {s!r})")
        t = int(s)
        if out and t < out[-1]:
            raise TraceError(f"{path} line {n}: timestamps must not decrease ({t} after {out[-1]})")
        out.append(t)
    if not out:
        raise TraceError(f"{path}: the trace is empty")
    if out[-1] == 0:
        raise TraceError(f"{path}: the last timestamp must be greater than 0 (it is the trace's period)")
    if out[-1] > MAX_PERIOD_MS:
        raise TraceError(f"{path}: the trace's period (its last timestamp, {out[-1]} ms) exceeds {MAX_PERIOD_MS} ms")
    return tuple(out)
