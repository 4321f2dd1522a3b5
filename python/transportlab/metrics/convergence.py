"""Convergence time of competing flows, from binned throughput (e.g. the DataFrame of
`throughput.throughput_by_flow`: index = bin start in ns, one column per flow).

Only bins that start at or after `join_ns` (the time the later flow joins) are looked at.
Results are durations in ns from `join_ns` to the start of the bin where the condition is
first met (bin resolution), or None when it never is.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd


def _after(rates: pd.DataFrame, join_ns: int, columns: Sequence | None) -> tuple[np.ndarray, np.ndarray]:
    df = rates if columns is None else rates[list(columns)]
    t = np.asarray(df.index, dtype=np.int64)
    keep = t >= join_ns
    return t[keep], df.to_numpy(np.float64)[keep]


def crossing_time(rates: pd.DataFrame, join_ns: int, columns: Sequence | None = None) -> int | None:
    """Time (ns after `join_ns`) until the throughput lines of two flows first cross.

    With d_k = x1_k − x2_k over the bins k starting at or after `join_ns` (x1, x2 = the two
    columns, or `columns` = [first, second]), the crossing is the first bin k where d_k = 0,
    or where sign(d_k) differs from sign(d_{k−1}) with k−1 also after the join. Returns
    t_k − join_ns (t_k = the bin's start), or None if the lines never cross.
    """
    t, x = _after(rates, join_ns, columns)
    if x.shape[1] != 2:
        raise ValueError(f"crossing_time needs exactly two flows, got {x.shape[1]}")
    s = np.sign(x[:, 0] - x[:, 1])
    hit = s == 0
    hit[1:] |= s[1:] != s[:-1]
    k = np.flatnonzero(hit)
    return int(t[k[0]] - join_ns) if len(k) else None


def delta_fair_convergence(
    rates: pd.DataFrame,
    join_ns: int,
    delta: float,
    hold_ns: int,
    fair_share=None,
    bin_ns: int | None = None,
    columns: Sequence | None = None,
) -> int | None:
    """δ-fair convergence time (ns after `join_ns`), or None if never reached.

    A bin is δ-fair when every flow's throughput x_i satisfies |x_i − f| ≤ δ·f, f = the fair
    share: `fair_share` if given (a scalar such as capacity/n, or one value per bin of
    `rates`), else the mean of the flows' throughputs in that bin (the equal split of what
    they jointly got). δ is a fraction (0.1 = within 10 %). Convergence is the first bin
    k ≥ join from which m = max(1, ceil(hold_ns / bin_ns)) consecutive bins are all δ-fair;
    returns t_k − join_ns. `bin_ns` defaults to the spacing of the index. The series must
    contain all m bins: a run cut short by the end of the data does not count.
    """
    df = rates if columns is None else rates[list(columns)]
    t_all = np.asarray(df.index, dtype=np.int64)
    keep = t_all >= join_ns
    t, x = t_all[keep], df.to_numpy(np.float64)[keep]
    if len(t) == 0:
        return None
    if bin_ns is None:
        if len(t_all) < 2:
            raise ValueError("bin_ns is needed when the series has a single bin")
        bin_ns = int(t_all[1] - t_all[0])
    if fair_share is None:
        f = x.mean(axis=1)
    else:
        fs = np.asarray(fair_share, dtype=np.float64)
        f = np.full(len(t), float(fs)) if fs.ndim == 0 else fs[keep]
    ok = (np.abs(x - f[:, None]) <= delta * f[:, None]).all(axis=1)
    m = max(1, -(-int(hold_ns) // int(bin_ns)))
    if len(ok) < m:
        return None
    # run[k] = number of fair bins in k..k+m-1
    c = np.concatenate(([0], np.cumsum(ok)))
    run = c[m:] - c[:-m]
    k = np.flatnonzero(run == m)
    return int(t[k[0]] - join_ns) if len(k) else None
