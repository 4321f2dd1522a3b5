"""The no-emulator floor: the same probe and echo agents over a plain veth pair between
two namespaces (offloads off, no engine), measured in the same run as the emulator so
the emulator's *added* error is what a comparison subtracts out: both hosts' stacks,
the veth devices and the agents' own wake-ups are in both."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from transportlab.network.live import Network
from transportlab.plan.topology import Direction, Link, Topology
from transportlab.run import agents


def floor_probes(out: Path, interval: float, count: int, size: int = 64) -> dict:
    """Probe results (the agent's `results`: `rtt` statistics in ms, sent, received…)
    over the floor."""
    topo = Topology(("a", "b"), (Link("floor", "a", "b", Direction(), Direction()),))
    with Network(topo, out, attach="floor") as net:
        return agents.run_probes(net, "a", "b", out, interval=interval, count=count, size=size)


def added_one_way_us(rtt_mean_ms: float, floor_rtt_mean_ms: float, one_way_delay_s: float) -> float:
    """The emulator's added one-way error: (mean RTT through it − floor mean RTT) / 2 −
    the configured one-way delay, in µs (a symmetric path: the same delay each way)."""
    return ((rtt_mean_ms - floor_rtt_mean_ms) / 2 - one_way_delay_s * 1e3) * 1e3


def added_one_way_std_us(rtt_std_ms: float, floor_rtt_std_ms: float) -> float:
    """The spread the emulator adds to a one-way delay, in µs: the RTT's variance beyond
    the floor's, split evenly over the two directions (independent, so variances add);
    0 when the emulator's RTT varies no more than the floor's."""
    return math.sqrt(max(rtt_std_ms**2 - floor_rtt_std_ms**2, 0.0) / 2) * 1e3


def rtts_us(series: pd.DataFrame | None) -> np.ndarray:
    """The answered probes' RTTs in µs from a probe agent's series (`send_ns`, `recv_ns`)."""
    if series is None or series.empty:
        return np.array([])
    return (series["recv_ns"] - series["send_ns"]).dropna().to_numpy(np.float64) / 1e3


def stalls(rtt_us: np.ndarray) -> int:
    """Probes back more than 1 ms after the median RTT: the machine's rare stalls, each of
    which moves a mean over a few dozen probes by tens of µs."""
    return int(np.sum(rtt_us - np.median(rtt_us) > 1000)) if len(rtt_us) else 0
