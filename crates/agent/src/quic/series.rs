//! The QUIC time series: one row per connection every `--sample-interval` (plus a final
//! one), from quinn's connection statistics, the controller probe and the transfer record.
//! Column names follow the TCP series where the meaning is the same.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arrow_array::{ArrayRef, Float64Array, Int64Array, UInt32Array, UInt64Array};

use super::cc::Probe;
use super::transfer::{MessageRecord, Transfer};
use crate::{output, sys};

pub struct Sample {
    pub conn: u32,
    pub t_ns: u64,
    pub bytes: u64,
    pub udp_bytes_sent: u64,
    pub udp_bytes_received: u64,
    pub packets_sent: u64,
    pub datagrams_received: u64,
    pub bytes_acked: u64,
    pub cwnd_bytes: u64,
    pub ssthresh_bytes: Option<u64>,
    pub bytes_in_flight: u64,
    pub srtt_us: u64,
    pub min_rtt_us: u64,
    pub lost_packets: u64,
    pub lost_bytes: u64,
    pub congestion_events: u64,
    pub pacing_rate_bps: Option<u64>,
    pub mtu: u32,
    pub diagnostics: Vec<(&'static str, f64)>,
}

/// What a connection's sampler reads.
#[derive(Clone)]
pub struct Sources {
    pub conn_index: u32,
    pub connection: quinn::Connection,
    pub probe: Arc<Probe>,
    pub transfer: Arc<Transfer>,
}

impl Sources {
    pub fn sample(&self) -> Sample {
        let s = self.connection.stats();
        let p = &self.probe;
        Sample {
            conn: self.conn_index,
            t_ns: sys::now_ns(),
            bytes: self.transfer.payload.load(Relaxed),
            udp_bytes_sent: s.udp_tx.bytes,
            udp_bytes_received: s.udp_rx.bytes,
            packets_sent: s.path.sent_packets,
            datagrams_received: s.udp_rx.datagrams,
            bytes_acked: p.bytes_acked.load(Relaxed),
            cwnd_bytes: s.path.cwnd,
            ssthresh_bytes: p.ssthresh(),
            bytes_in_flight: p.bytes_in_flight.load(Relaxed),
            srtt_us: s.path.rtt.as_micros() as u64,
            min_rtt_us: s.path.min_rtt.as_micros() as u64,
            lost_packets: s.path.lost_packets,
            lost_bytes: s.path.lost_bytes,
            congestion_events: s.path.congestion_events,
            pacing_rate_bps: p.pacing_rate(),
            mtu: s.path.current_mtu as u32,
            diagnostics: p.diagnostics.lock().unwrap().clone(),
        }
    }
}

/// Samples `src` every `interval_ns` on a grid of absolute deadlines until the returned
/// handle is dropped via [`Sampler::finish`].
pub struct Sampler {
    src: Sources,
    samples: Arc<Mutex<Vec<Sample>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Sampler {
    pub fn start(src: Sources, interval_ns: u64) -> Sampler {
        let samples = Arc::new(Mutex::new(Vec::with_capacity(4096)));
        let (s, out) = (src.clone(), samples.clone());
        let task = tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_nanos(interval_ns));
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
            loop {
                tick.tick().await;
                let row = s.sample();
                out.lock().unwrap().push(row);
            }
        });
        Sampler { src, samples, task }
    }

    /// Stops sampling, takes a final sample and returns all of them.
    pub fn finish(self) -> Vec<Sample> {
        self.task.abort();
        let mut v = std::mem::take(&mut *self.samples.lock().unwrap());
        v.push(self.src.sample());
        v
    }
}

pub fn write(path: &Path, s: &[Sample]) -> anyhow::Result<()> {
    fn u64s(s: &[Sample], f: impl Fn(&Sample) -> u64) -> ArrayRef {
        Arc::new(UInt64Array::from_iter_values(s.iter().map(f)))
    }
    fn opt_u64s(s: &[Sample], f: impl Fn(&Sample) -> Option<u64>) -> ArrayRef {
        Arc::new(UInt64Array::from_iter(s.iter().map(f)))
    }
    let mut cols: Vec<(String, ArrayRef)> = vec![
        (
            "conn".into(),
            Arc::new(UInt32Array::from_iter_values(s.iter().map(|x| x.conn))),
        ),
        (
            "t_ns".into(),
            Arc::new(Int64Array::from_iter_values(s.iter().map(|x| x.t_ns as i64))),
        ),
        ("bytes".into(), u64s(s, |x| x.bytes)),
        ("udp_bytes_sent".into(), u64s(s, |x| x.udp_bytes_sent)),
        ("udp_bytes_received".into(), u64s(s, |x| x.udp_bytes_received)),
        ("packets_sent".into(), u64s(s, |x| x.packets_sent)),
        ("datagrams_received".into(), u64s(s, |x| x.datagrams_received)),
        ("bytes_acked".into(), u64s(s, |x| x.bytes_acked)),
        ("cwnd_bytes".into(), u64s(s, |x| x.cwnd_bytes)),
        ("ssthresh_bytes".into(), opt_u64s(s, |x| x.ssthresh_bytes)),
        ("bytes_in_flight".into(), u64s(s, |x| x.bytes_in_flight)),
        ("srtt_us".into(), u64s(s, |x| x.srtt_us)),
        ("min_rtt_us".into(), u64s(s, |x| x.min_rtt_us)),
        ("lost_packets".into(), u64s(s, |x| x.lost_packets)),
        ("lost_bytes".into(), u64s(s, |x| x.lost_bytes)),
        ("congestion_events".into(), u64s(s, |x| x.congestion_events)),
        ("pacing_rate_Bps".into(), opt_u64s(s, |x| x.pacing_rate_bps)),
        (
            "mtu".into(),
            Arc::new(UInt32Array::from_iter_values(s.iter().map(|x| x.mtu))),
        ),
    ];
    // One `cc_<name>` column per diagnostic any sample has (null where a row lacks it).
    let names: BTreeSet<&'static str> = s.iter().flat_map(|x| x.diagnostics.iter().map(|d| d.0)).collect();
    for name in names {
        let col = Float64Array::from_iter(
            s.iter()
                .map(|x| x.diagnostics.iter().find(|d| d.0 == name).map(|d| d.1)),
        );
        cols.push((format!("cc_{name}"), Arc::new(col)));
    }
    output::write_series(path, cols.iter().map(|(n, a)| (n.as_str(), a.clone())).collect())
}

/// The per-message file (`--message-series`): one row per message received.
pub fn write_messages(path: &Path, rows: &[(u32, MessageRecord)]) -> anyhow::Result<()> {
    output::write_series(
        path,
        vec![
            (
                "conn",
                Arc::new(UInt32Array::from_iter_values(rows.iter().map(|r| r.0))) as ArrayRef,
            ),
            (
                "seq",
                Arc::new(UInt64Array::from_iter_values(rows.iter().map(|r| r.1.seq))),
            ),
            (
                "send_ns",
                Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.1.send_ns as i64))),
            ),
            (
                "recv_ns",
                Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.1.recv_ns as i64))),
            ),
            (
                "owd_ns",
                Arc::new(Int64Array::from_iter_values(
                    rows.iter().map(|r| r.1.recv_ns as i64 - r.1.send_ns as i64),
                )),
            ),
        ],
    )
}
