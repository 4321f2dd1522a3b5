"""Jitter, two definitions with different names on purpose:

- `jitter_rfc3550`: RFC 3550 (RTP) smoothed interarrival jitter, J += (|D| − J)/16.
- `ipdv_rfc3393`: RFC 3393 IP packet delay variation summarised as the mean of
  |D(n) − D(n−1)| over consecutive packets.

Both take transit times (one-way delays, e.g. `delay.one_way_delay(...)["delay_ns"]`, or
probe RTTs) in the order the packets were *received* for RFC 3550 and in *sequence* order
for RFC 3393 (identical when nothing is reordered). Lost packets (NaN) are skipped.
Results are in the unit of the input (ns in, ns out).
"""

from __future__ import annotations

import numpy as np

_A = 15.0 / 16.0
_BLOCK = 4096  # (16/15)^4096 ≈ 1e115: far from float64 overflow
_K = np.arange(1, _BLOCK + 1, dtype=np.float64)
_APOW = _A**_K
_AINV = (1.0 / _A) ** _K


def _clean(values) -> np.ndarray:
    v = np.asarray(values, dtype=np.float64)
    return v[~np.isnan(v)]


def jitter_rfc3550_series(transit) -> np.ndarray:
    """RFC 3550 §6.4.1 interarrival jitter after each received packet.

    With transit times S_i (receive time − send time, any unit, received packets in
    arrival order; NaN = lost, skipped): D_i = S_i − S_{i−1} and J_i = J_{i−1} +
    (|D_i| − J_{i−1})/16, J_0 = 0. Returns the array J_0..J_{n−1} (float, input unit).

    The recursion is the linear filter J_i = (15/16)·J_{i−1} + |D_i|/16, evaluated in
    closed form per block of 4096 packets (J_j = a^j·(J_prev + Σ_{i≤j} a^{−i}|D_i|/16),
    a = 15/16; all terms are non-negative so the sum keeps full relative precision):
    one NumPy pass per block instead of a Python step per packet.
    """
    s = _clean(transit)
    n = len(s)
    out = np.zeros(n, dtype=np.float64)
    if n < 2:
        return out
    d = np.abs(np.diff(s))
    prev = 0.0
    for start in range(0, len(d), _BLOCK):
        chunk = d[start : start + _BLOCK]
        m = len(chunk)
        acc = np.cumsum(chunk * _AINV[:m]) / 16.0
        block = _APOW[:m] * (prev + acc)
        out[start + 1 : start + 1 + m] = block
        prev = block[-1]
    return out


def jitter_rfc3550(transit) -> float:
    """RFC 3550 smoothed interarrival jitter at the end of the series (the value an RTP
    receiver would report after the last packet): last element of
    `jitter_rfc3550_series`. 0.0 for fewer than two received packets. Input unit."""
    j = jitter_rfc3550_series(transit)
    return float(j[-1]) if len(j) else 0.0


def ipdv_rfc3393_series(delay) -> np.ndarray:
    """RFC 3393 ipdv of consecutive received packets: D(n) − D(n−1) (signed, input unit),
    one value per pair; NaN (lost) entries are removed first, so a pair spans a loss."""
    return np.diff(_clean(delay))


def ipdv_rfc3393(delay) -> float:
    """Mean absolute RFC 3393 ipdv: mean over consecutive received packets of
    |D(n) − D(n−1)|, input unit. NaN if fewer than two packets were received."""
    v = ipdv_rfc3393_series(delay)
    return float(np.abs(v).mean()) if len(v) else float("nan")


def interarrival(times_ns) -> np.ndarray:
    """Inter-arrival times (ns) of a stream of packet arrivals: the differences of
    consecutive arrival times after sorting them; n arrivals give n − 1 values."""
    t = np.sort(np.asarray(times_ns, dtype=np.int64))
    return np.diff(t)
