#!/usr/bin/env python3
"""Writes the synthetic LTE downlink trace S1's trace experiments use
(scenarios/s1/lte/lte-static-4.5mbit.trace): a Mahimahi trace (one line per chance to
deliver one 1500-byte packet, in ms) of a static LTE user whose capacity fluctuates
around 4.5 Mbit/s.

It is NOT the study's trace (a published measurement of a static LTE user, which this
machine cannot download): it is generated here, with a fixed seed, to have that trace's
kind and mean. The capacity is log-normal, an AR(1) process in 100 ms steps (ρ = 0.9,
σ = 0.35 of the log-rate: fading and scheduling of one user who does not move), scaled
so the first 200 s average exactly 4.5 Mbit/s (75 000 packets); the trace is 200 s long
and repeats.

    python3 scripts/lte_trace.py > scenarios/s1/lte/lte-static-4.5mbit.trace
"""

from __future__ import annotations

import sys

import numpy as np

SEED = 2020
SECONDS = 200
STEP_MS = 100
MEAN_BPS = 4.5e6
PACKET_BITS = 1500 * 8
RHO, SIGMA = 0.9, 0.35


def trace() -> list[int]:
    rng = np.random.default_rng(SEED)
    steps = SECONDS * 1000 // STEP_MS
    x = np.empty(steps)
    x[0] = rng.normal(0.0, SIGMA)
    for i in range(1, steps):
        x[i] = RHO * x[i - 1] + np.sqrt(1 - RHO**2) * rng.normal(0.0, SIGMA)
    weight = np.exp(x)
    total = round(MEAN_BPS * SECONDS / PACKET_BITS)
    # Packets per step in proportion to the capacity, rounded so they add up to `total`.
    ideal = weight / weight.sum() * total
    counts = np.floor(ideal).astype(int)
    counts[np.argsort(ideal - counts)[::-1][: total - counts.sum()]] += 1
    out: list[int] = []
    for i, n in enumerate(counts):
        start = i * STEP_MS
        out += [start + 1 + (k * STEP_MS) // max(n, 1) for k in range(n)]
    out[-1] = SECONDS * 1000  # the period: the trace repeats after its last timestamp
    return sorted(out)


def main() -> int:
    sys.stdout.write("".join(f"{t}\n" for t in trace()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
