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

# BitTorrent's reference libutp through the patched copy of libutp-rs2 in crates/vendor
# (the `agent` binary's utp-server / utp-client, `--cc-param KEY=VALUE`): the target is
# libutp's context option UTP_TARGET_DELAY (µs; the agent converts), the gain is
# MAX_CWND_INCREASE_BYTES_PER_RTT, a constant of libutp's source that the vendored patch
# turns into a context option (default unchanged). Ranges as libtorrent's, so one sweep
# steps both implementations; the agent checks the same (crates/agent/src/utp.rs).
LIBUTP_PARAMETERS: dict[str, Parameter] = {
    p.name: p
    for p in (
        Parameter("target", "UTP_TARGET_DELAY", "ms", 100, 1, 10_000, "LEDBAT target queueing delay"),
        Parameter(
            "gain",
            "MAX_CWND_INCREASE_BYTES_PER_RTT",
            "bytes",
            3000,
            1,
            1_000_000,
            "window growth per RTT at zero delay",
        ),
    )
}

# Implementations a utp flow may name, with the parameters each exposes.
IMPLEMENTATIONS: dict[str, dict[str, Parameter]] = {
    "libtorrent": LIBTORRENT_PARAMETERS,
    "libutp": LIBUTP_PARAMETERS,
}

# Why an implementation takes no packet size (a flow's `mss`).
NO_PACKET_SIZE = {
    "libtorrent": "libtorrent's uTP finds its packet size by path MTU discovery and has no setting for it",
}

# libutp's packet size (a flow's `mss`): the UDP MTU it is told through its
# UTP_GET_UDP_MTU callback, i.e. its largest UDP datagram with uTP's 20-byte header
# (default 1402). libutp's MTU search starts at 576; 1472 fills a 1500-byte IPv4 packet.
LIBUTP_DATAGRAM_SIZE = (576, 1472)
