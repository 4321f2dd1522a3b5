"""The uTP implementations and the per-flow parameters each exposes: the one list the
flow kind checks scenario files against and the agent maps onto the implementation's
own settings."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Parameter:
    name: str  # the key in a flow's cc_params
    setting: str  # the implementation's own name for it
    unit: str
    default: int
    min: int
    max: int
    meaning: str


# libtorrent's uTP (libtorrent-rasterbar 2.x, `settings_pack`); values are integers.
LIBTORRENT_PARAMETERS: dict[str, Parameter] = {
    p.name: p
    for p in (
        Parameter("target", "utp_target_delay", "ms", 100, 1, 10_000, "LEDBAT target queueing delay"),
        Parameter("gain", "utp_gain_factor", "bytes", 3000, 1, 1_000_000, "window growth per RTT at zero delay"),
        Parameter("loss_multiplier", "utp_loss_multiplier", "%", 50, 1, 100, "window kept on a loss (percent of cwnd)"),
        Parameter(
            "cwnd_reduce_timer", "utp_cwnd_reduce_timer", "ms", 100, 0, 10_000, "at most one loss cut per interval"
        ),
    )
}

# BitTorrent's reference libutp through the libutp-rs2 crate (the `agent` binary's
# utp-server / utp-client): the crate keeps libutp's context to itself, so its one
# context option (UTP_TARGET_DELAY) cannot be set, and gain and packet size are constants
# of libutp's source. A libutp flow takes no parameters.
LIBUTP_PARAMETERS: dict[str, Parameter] = {}

# Implementations a utp flow may name, with the parameters each exposes.
IMPLEMENTATIONS: dict[str, dict[str, Parameter]] = {
    "libtorrent": LIBTORRENT_PARAMETERS,
    "libutp": LIBUTP_PARAMETERS,
}

# Why neither takes a packet size (a flow's `mss`).
NO_PACKET_SIZE = {
    "libtorrent": "libtorrent's uTP finds its packet size by path MTU discovery and has no setting for it",
    "libutp": "libutp's packet size is a constant of its source (libutp-rs2 sets no MTU callback)",
}
