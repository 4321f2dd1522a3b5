"""A libtorrent session that speaks uTP only: TCP off both ways, uTP on both ways, no
DHT, local service discovery, UPnP or NAT-PMP, no protocol encryption, so the one peer
connection the agent makes is the transfer and nothing else touches the network."""

from __future__ import annotations

from transportlab.utp_agent.parameters import LIBTORRENT_PARAMETERS

# libtorrent's peer_info::utp_socket flag (bit 17; the Python bindings do not name it:
# i2p_socket is bit 16, rc4_encrypted bit 19).
UTP_SOCKET_FLAG = 1 << 17
# Counters of `session_stats_metrics()` the series records, by column name.
COUNTERS = {
    "utp_peers": "peer.num_utp_peers",
    "tcp_peers": "peer.num_tcp_peers",
    "utp_packets_in": "utp.utp_packets_in",
    "utp_packets_out": "utp.utp_packets_out",
    "utp_payload_pkts_in": "utp.utp_payload_pkts_in",
    "utp_payload_pkts_out": "utp.utp_payload_pkts_out",
    "utp_packet_loss": "utp.utp_packet_loss",
    "utp_timeout": "utp.utp_timeout",
    "utp_fast_retransmit": "utp.utp_fast_retransmit",
    "utp_packet_resend": "utp.utp_packet_resend",
    "utp_samples_above_target": "utp.utp_samples_above_target",
    "utp_samples_below_target": "utp.utp_samples_below_target",
    "utp_redundant_pkts_in": "utp.utp_redundant_pkts_in",
    "utp_invalid_pkts_in": "utp.utp_invalid_pkts_in",
}
# How often libtorrent's uTP transmits one packet (and a SYN, a FIN) before it gives the
# connection up ("Connection timed out"), raised from libtorrent's 3 / 2 / 2 for the lab's
# deliberately lossy links (docs/agent.md, "libtorrent's give-up limits"). libtorrent
# counts a fast retransmission as a transmission and checks the count when the oldest
# unacked packet times out, so a packet lost, fast-resent and lost again timed out and
# ended the connection once its resend timed out too: 2 of 6 5 MB uploads at 6 % loss
# each way ended so. Only the giving up changes: while the
# connection lives, its congestion control, retransmissions and timeouts are libtorrent's.
# The summary reports every `utp_*` setting in effect.
LAB_GIVE_UP = {
    "utp_num_resends": 10,
    "utp_syn_resends": 6,
    "utp_fin_resends": 6,
}

# How many 16 KiB blocks a receiver keeps requested (libtorrent's default 500, at most
# 3 s of the download rate). libtorrent's uTP buffers at most 1 MiB per socket, out of
# order data included, and drops even the packet that would fill a gap when it does not
# fit; when the one fast retransmission of a lost packet is lost too, the sender goes on
# past the gap (every ack postpones its timeout) until 1 MiB of out-of-order data has
# closed the window, and the connection deadlocks until the sender gives it up
# ("Connection timed out"; 2 of 58 5 MB downloads at 1 % loss each way). A sender sends
# only requested blocks, so with at most 60 (60 x (16 KiB + 13 bytes of message header)
# = 983 820 bytes, plus one packet) the receiver's buffer can never fill
# (docs/agent.md, "libtorrent's receive-buffer deadlock"). It caps a transfer at
# 983 820 bytes per request round trip, near the 1 MiB per RTT the uTP window allows
# anyway. A receiver replaces its own `max_out_request_queue` with the `reqq` the peer
# advertises in its extended handshake, which is the peer's
# `max_allowed_in_request_queue` (default 2000; bt_peer_connection.cpp), so both ends
# set both: with only the first, the cap was not in effect and 1 of 4 such downloads
# still deadlocked.
MAX_OUT_REQUEST_QUEUE = 60
REQUEST_QUEUE_CAP = {
    "max_out_request_queue": MAX_OUT_REQUEST_QUEUE,
    "max_allowed_in_request_queue": MAX_OUT_REQUEST_QUEUE,
}


def settings(lt, listen: str, params: dict[str, int]) -> dict:
    """The settings pack of an end listening on `listen` ("ADDR:PORT") with the flow's
    uTP parameters (cc_params keys, already checked by the flow kind)."""
    pack = {
        "listen_interfaces": listen,
        "enable_outgoing_tcp": False,
        "enable_incoming_tcp": False,
        "enable_outgoing_utp": True,
        "enable_incoming_utp": True,
        "enable_dht": False,
        "enable_lsd": False,
        "enable_upnp": False,
        "enable_natpmp": False,
        "enable_ip_notifier": False,
        "out_enc_policy": int(lt.enc_policy.disabled),
        "in_enc_policy": int(lt.enc_policy.disabled),
        "allow_multiple_connections_per_ip": True,
        # A receiver that finishes would close its connection to the seed at once; its
        # close could then reach the seeder before the last HAVE is handled, and the
        # seeder could not tell a finished receiver from one that left. The client ends
        # the connection when its part is done.
        "close_redundant_connections": False,
        "alert_mask": int(
            lt.alert.category_t.error_notification
            | lt.alert.category_t.status_notification
            | lt.alert.category_t.peer_notification
            | lt.alert.category_t.connect_notification
            | lt.alert.category_t.stats_notification
            | lt.alert.category_t.performance_warning
        ),
        "alert_queue_size": 10_000,
        **LAB_GIVE_UP,
        **REQUEST_QUEUE_CAP,
    }
    for key, value in params.items():
        pack[LIBTORRENT_PARAMETERS[key].setting] = int(value)
    return pack
