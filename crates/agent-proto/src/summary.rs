//! The summary structures every transportlab endpoint writes, emulated (the agent) or
//! simulated (`tlab-sim`): one struct per part, so that both write each field under one
//! name and the metrics stage reads a simulated run like an emulated one (docs/agent.md
//! lists the fields). Building them is arithmetic on what the caller measured; writing the
//! file is the caller's.

use serde::Serialize;

use crate::one_way;
use crate::stats::{self, Scaled};
use crate::transfer::secs;
use crate::wire::request::{Mode, Request, Transport};

/// Every summary file: what wrote it, its parameters, when it ran and its `results`.
#[derive(Serialize)]
pub struct Envelope<'a, P, R> {
    pub subcommand: &'a str,
    pub agent_version: &'static str,
    /// Written (as true) only by the simulator.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub simulated: bool,
    /// The command line's parameters; the simulator has none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub params: Option<P>,
    pub start_ns: u64,
    pub end_ns: u64,
    pub stopped_by: &'a str,
    pub results: R,
}

impl<'a, P: Serialize, R: Serialize> Envelope<'a, P, R> {
    /// The agent's envelope: `params` are its command line's.
    pub fn new(subcommand: &'a str, params: P, start_ns: u64, end_ns: u64, stopped_by: &'a str, results: R) -> Self {
        Envelope {
            subcommand,
            agent_version: env!("CARGO_PKG_VERSION"),
            simulated: false,
            params: Some(params),
            start_ns,
            end_ns,
            stopped_by,
            results,
        }
    }
}

impl<'a, R: Serialize> Envelope<'a, (), R> {
    /// The simulator's envelope: `simulated: true`, no command line.
    pub fn simulated(subcommand: &'a str, start_ns: u64, end_ns: u64, stopped_by: &'a str, results: R) -> Self {
        Envelope {
            subcommand,
            agent_version: env!("CARGO_PKG_VERSION"),
            simulated: true,
            params: None,
            start_ns,
            end_ns,
            stopped_by,
            results,
        }
    }
}

/// One object of a client's objects mode, as the summary lists it.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct ObjectSummary {
    pub index: u64,
    pub size: u64,
    pub request_ns: u64,
    pub first_byte_ns: u64,
    pub complete_ns: u64,
    pub ttfb_s: f64,
    pub completion_s: f64,
}

impl ObjectSummary {
    pub fn new(index: u64, size: u64, request_ns: u64, first_byte_ns: u64, complete_ns: u64) -> ObjectSummary {
        ObjectSummary {
            index,
            size,
            request_ns,
            first_byte_ns,
            complete_ns,
            ttfb_s: secs(first_byte_ns.saturating_sub(request_ns)),
            completion_s: secs(complete_ns.saturating_sub(request_ns)),
        }
    }
}

/// The objects-mode fields of tcp-client and quic-client `results`.
#[derive(Serialize)]
pub struct ObjectsSummary {
    pub objects: Vec<ObjectSummary>,
    pub objects_completed: usize,
    pub ttfb: Option<Scaled>,
    pub object_completion: Option<Scaled>,
}

impl ObjectsSummary {
    /// The objects as listed, and the distributions of their time to first byte and to
    /// the whole object (ms).
    pub fn new(objects: Vec<ObjectSummary>) -> ObjectsSummary {
        let ttfb: Vec<f64> = objects
            .iter()
            .map(|o| o.first_byte_ns.saturating_sub(o.request_ns) as f64)
            .collect();
        let completion: Vec<f64> = objects
            .iter()
            .map(|o| o.complete_ns.saturating_sub(o.request_ns) as f64)
            .collect();
        ObjectsSummary {
            objects_completed: objects.len(),
            ttfb: stats::scaled(&ttfb, 1e6, "ms"),
            object_completion: stats::scaled(&completion, 1e6, "ms"),
            objects,
        }
    }
}

/// The messages-mode fields of quic-client `results` and a quic-server connection: the
/// sender's lateness, the receiver's one-way delays (each end fills the half it saw).
#[derive(Serialize)]
pub struct MessagesSummary {
    pub messages_sent: u64,
    pub messages_received: usize,
    /// How late each message was written after its deadline (µs); None where nothing
    /// was late or early to measure (a receiver, or the simulator, whose sender writes
    /// each message at its deadline by construction).
    pub lateness: Option<Scaled>,
    /// Each message's one-way delay, its last byte read − the send time stamped in it (ms).
    pub owd: Option<Scaled>,
}

impl MessagesSummary {
    /// `lateness_ns`: the sender's; `received`: (send time stamped, time read) of every
    /// message received whole.
    pub fn new(messages_sent: u64, lateness_ns: &[u64], received: &[(u64, u64)]) -> MessagesSummary {
        let lateness: Vec<f64> = lateness_ns.iter().map(|&v| v as f64).collect();
        let owd: Vec<f64> = received.iter().map(|&(s, r)| r.saturating_sub(s) as f64).collect();
        MessagesSummary {
            messages_sent,
            messages_received: received.len(),
            lateness: stats::scaled(&lateness, 1e3, "us"),
            owd: stats::scaled(&owd, 1e6, "ms"),
        }
    }
}

/// A probe's losses, the head of a `probe` summary's `results` (the agent's probe adds
/// its receive-side counters after them).
#[derive(Serialize)]
pub struct ProbeLoss {
    pub sent: u64,
    pub received: u64,
    pub lost: u64,
    pub loss_rate: Option<f64>,
}

impl ProbeLoss {
    /// Of `sent` probes, `received` answered in time.
    pub fn new(sent: u64, received: u64) -> ProbeLoss {
        ProbeLoss {
            sent,
            received,
            lost: sent - received,
            loss_rate: (sent > 0).then(|| (sent - received) as f64 / sent as f64),
        }
    }
}

/// A probe's delays, the tail of a `probe` summary's `results`, in ms.
#[derive(Serialize)]
pub struct ProbeDelays {
    pub rtt: Option<Scaled>,
    pub owd_forward: Option<Scaled>,
    pub owd_reverse: Option<Scaled>,
}

impl ProbeDelays {
    /// From the answered probes' RTTs and one-way delays each way, in ns.
    pub fn new(rtt_ns: &[f64], forward_ns: &[f64], reverse_ns: &[f64]) -> ProbeDelays {
        ProbeDelays {
            rtt: stats::scaled(rtt_ns, 1e6, "ms"),
            owd_forward: stats::scaled(forward_ns, 1e6, "ms"),
            owd_reverse: stats::scaled(reverse_ns, 1e6, "ms"),
        }
    }
}

/// What a served connection's transfer was, how it ended and what it moved: the same
/// fields, in this order, in every server's `results.connections` (tcp, quic and utp), the
/// agent's and the simulator's. `stopped`: the end was signalled before the transfer ended
/// (never in the simulator).
#[derive(Serialize, Default, Debug)]
pub struct ServedTransfer {
    /// The request's mode; none until a request was read.
    pub mode: Option<&'static str>,
    /// Which end sends the payload: `client` or `server`; none until a request was read.
    pub sender: Option<&'static str>,
    pub complete: bool,
    pub stopped: bool,
    pub error: Option<String>,
    /// Payload the receiving application read.
    pub bytes: u64,
    pub bytes_sent: u64,
    pub bytes_received: u64,
}

impl ServedTransfer {
    /// The transfer a request in `mode` asked for (`sender_is_server`: the server sends its
    /// payload), its outcome still to fill in; no mode and no sender before a request was read.
    pub fn requested(mode: Option<Mode>, sender_is_server: bool) -> ServedTransfer {
        ServedTransfer {
            mode: mode.map(Mode::name),
            sender: mode.map(|_| if sender_is_server { "server" } else { "client" }),
            ..Default::default()
        }
    }
}

/// The decoded request as a server's `results.connections[].request` gives it: the
/// amounts, and over QUIC also the messages and streams.
#[derive(Serialize)]
pub struct RequestSummary {
    pub bytes: u64,
    pub duration_ns: u64,
    pub object_size: u64,
    pub object_count: u64,
    #[serde(flatten)]
    pub quic: Option<QuicRequestSummary>,
}

/// The QUIC request's fields beyond TCP's.
#[derive(Serialize)]
pub struct QuicRequestSummary {
    pub message_size: u64,
    pub message_interval_ns: u64,
    pub streams: u64,
}

impl RequestSummary {
    /// What `r`, received over `transport`, asked for.
    pub fn of(r: &Request, transport: Transport) -> RequestSummary {
        RequestSummary {
            bytes: r.bytes,
            duration_ns: r.duration_ns,
            object_size: r.object_size,
            object_count: r.object_count,
            quic: (transport == Transport::Quic).then_some(QuicRequestSummary {
                message_size: r.message_size,
                message_interval_ns: r.message_interval_ns,
                streams: r.streams,
            }),
        }
    }
}

/// The `results` keys of a QUIC client's summary that the agent and the simulator both
/// write: each flattens this one struct into its own, so the two cannot name a field
/// differently.
#[derive(Serialize)]
pub struct QuicClientResults {
    /// The request's mode ([`Mode::name`](crate::wire::request::Mode::name)).
    pub mode: &'static str,
    /// Which end sent the payload: `client` (an upload) or `server`.
    pub sender: &'static str,
    /// This end's congestion controller (`congestion` crate or quinn's own).
    pub cc: String,
    /// The transfer ended as requested (its bytes, objects or messages all delivered).
    pub complete: bool,
    /// Why the transfer or the run is not valid, if it is not.
    pub error: Option<String>,
    /// Payload the receiving application read (the server's, in an upload).
    pub bytes: u64,
    /// Application bytes this end wrote (payload, object requests) and read.
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// Bulk: payload per stream, the request's stream first.
    pub stream_bytes: Option<Vec<u64>>,
    /// From the connect's start to the transfer's end, when complete.
    pub completion_s: Option<f64>,
    /// `bytes` over the time from the connect's start to the transfer's end.
    pub goodput_bps: Option<f64>,
    /// The connection's counters at the summary.
    pub quic: Option<QuicStats>,
    #[serde(flatten)]
    pub objects: Option<ObjectsSummary>,
    #[serde(flatten)]
    pub messages: Option<MessagesSummary>,
}

/// The `results` keys of a TCP client's summary that the agent and the simulator both
/// write (as [`QuicClientResults`] for QUIC).
#[derive(Serialize)]
pub struct TcpClientResults<'a> {
    /// The request's mode ([`Mode::name`](crate::wire::request::Mode::name)).
    pub mode: &'static str,
    /// Which end sent the payload: `client` (an upload) or `server`.
    pub sender: &'static str,
    /// The congestion control the socket ran, where this end set or read it.
    pub cc: Option<&'a str>,
    /// The transfer ended as requested (its bytes, objects or records all delivered).
    pub complete: bool,
    /// Payload the receiving application read (the server's, in an upload).
    pub bytes: u64,
    /// Payload this end wrote and read.
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// From the connect's start to the transfer's end, when complete.
    pub completion_s: Option<f64>,
    /// `bytes` over the time from the connect's start to the transfer's end.
    pub goodput_bps: Option<f64>,
    /// Segments this end sent again, where the stack says.
    pub retransmits: Option<u64>,
}

/// A QUIC connection's counters (`quic` in every QUIC summary), from quinn-proto's
/// statistics and what the congestion controller's probe saw.
#[derive(Serialize)]
pub struct QuicStats {
    pub packets_sent: u64,
    pub datagrams_sent: u64,
    pub udp_bytes_sent: u64,
    pub send_calls: u64,
    pub datagrams_received: u64,
    pub udp_bytes_received: u64,
    pub receive_calls: u64,
    pub lost_packets: u64,
    pub lost_bytes: u64,
    pub congestion_events: u64,
    pub cwnd_bytes: u64,
    pub ssthresh_bytes: Option<u64>,
    pub bytes_in_flight: u64,
    pub bytes_acked: u64,
    pub srtt_us: u64,
    pub min_rtt_us: u64,
    pub mtu: u16,
    pub black_holes_detected: u64,
    pub ack_frames_sent: u64,
    pub ack_frames_received: u64,
    pub stream_frames_sent: u64,
    pub stream_frames_received: u64,
    /// This end's one-way delay exchange ([`one_way`]).
    pub one_way_delay: one_way::Summary,
}

/// What the congestion controller's probe adds to quinn-proto's statistics.
pub struct ProbeCounters {
    pub ssthresh_bytes: Option<u64>,
    pub bytes_in_flight: u64,
    pub bytes_acked: u64,
    pub one_way_delay: one_way::Summary,
}

impl QuicStats {
    pub fn new(s: &quinn_proto::ConnectionStats, probe: ProbeCounters) -> QuicStats {
        QuicStats {
            packets_sent: s.path.sent_packets,
            datagrams_sent: s.udp_tx.datagrams,
            udp_bytes_sent: s.udp_tx.bytes,
            send_calls: s.udp_tx.ios,
            datagrams_received: s.udp_rx.datagrams,
            udp_bytes_received: s.udp_rx.bytes,
            receive_calls: s.udp_rx.ios,
            lost_packets: s.path.lost_packets,
            lost_bytes: s.path.lost_bytes,
            congestion_events: s.path.congestion_events,
            cwnd_bytes: s.path.cwnd,
            ssthresh_bytes: probe.ssthresh_bytes,
            bytes_in_flight: probe.bytes_in_flight,
            bytes_acked: probe.bytes_acked,
            srtt_us: s.path.rtt.as_micros() as u64,
            min_rtt_us: s.path.min_rtt.as_micros() as u64,
            mtu: s.path.current_mtu,
            black_holes_detected: s.path.black_holes_detected,
            ack_frames_sent: s.frame_tx.acks,
            ack_frames_received: s.frame_rx.acks,
            stream_frames_sent: s.frame_tx.stream,
            stream_frames_received: s.frame_rx.stream,
            one_way_delay: probe.one_way_delay,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_are_timed() {
        let s = ObjectsSummary::new(vec![
            ObjectSummary::new(1, 10, 2_000_000, 5_000_000, 9_000_000),
            ObjectSummary::new(0, 10, 0, 1_000_000, 3_000_000),
        ]);
        assert_eq!(s.objects_completed, 2);
        assert_eq!(s.objects[0].index, 1);
        assert_eq!((s.objects[0].ttfb_s, s.objects[0].completion_s), (0.003, 0.007));
        let v = serde_json::to_value(&s).unwrap();
        // ttfb 1 and 3 ms: mean 2 ms.
        assert_eq!(v["ttfb"]["mean_ms"], 2.0);
    }

    #[test]
    fn messages_owd_and_lateness() {
        let m = MessagesSummary::new(3, &[1_000, 3_000], &[(0, 4_000_000), (10, 2_000_010)]);
        let v = serde_json::to_value(&m).unwrap();
        assert_eq!(
            (v["messages_sent"].as_u64(), v["messages_received"].as_u64()),
            (Some(3), Some(2))
        );
        assert_eq!(v["owd"]["mean_ms"], 3.0);
        assert_eq!(v["lateness"]["mean_us"], 2.0);
        assert!(MessagesSummary::new(0, &[], &[]).owd.is_none());
    }

    #[test]
    fn probe_loss_and_delays() {
        let v = serde_json::to_value(ProbeLoss::new(4, 3)).unwrap();
        assert_eq!((v["lost"].as_u64(), v["loss_rate"].as_f64()), (Some(1), Some(0.25)));
        assert!(ProbeLoss::new(0, 0).loss_rate.is_none());
        let d = ProbeDelays::new(&[2e6, 4e6], &[1e6], &[]);
        let v = serde_json::to_value(&d).unwrap();
        assert_eq!(
            (v["rtt"]["mean_ms"].as_f64(), v["owd_forward"]["mean_ms"].as_f64()),
            (Some(3.0), Some(1.0))
        );
        assert!(v["owd_reverse"].is_null());
    }

    #[test]
    fn the_simulators_envelope_says_so_and_has_no_params() {
        let v = serde_json::to_value(Envelope::simulated("quic-client", 1, 2, "bytes", ())).unwrap();
        assert_eq!(v["simulated"], true);
        assert!(v.get("params").is_none());
        let v = serde_json::to_value(Envelope::new("quic-client", 7, 1, 2, "bytes", ())).unwrap();
        assert!(v.get("simulated").is_none());
        assert_eq!(v["params"], 7);
    }
}
