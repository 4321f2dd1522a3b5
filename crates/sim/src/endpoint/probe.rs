//! The probe and its echo (`agent probe` / `agent echo --stamp`): a stamped datagram every
//! `interval`; the echo writes its receive time into it and sends it back; the probe's
//! statistics are the agent's (RTT, one-way delays each way, loss after a timeout).

use std::collections::BTreeMap;
use std::net::SocketAddrV4;
use std::path::Path;

use agent_proto::summary::{ProbeDelays, ProbeLoss};
use agent_proto::wire::stamp::{set_echo_ns, ProbeStamp, PROBE_LEN};
use linkem::Nanos;
use serde::Serialize;
use wire::ipv4::Ecn;

use super::pacer::{Pacer, Schedule};
use super::{packets, udp, write_summary, Endpoint};
use crate::datagram::Datagram;

pub struct Probe {
    name: String,
    addr: SocketAddrV4,
    to: SocketAddrV4,
    size: usize,
    start: Nanos,
    timeout: Nanos,
    pacer: Pacer,
    /// seq → (send, echo stamp, receive), for every answered probe.
    answered: BTreeMap<u64, (Nanos, Nanos, Nanos)>,
}

impl Probe {
    /// Probes as `schedule` says, each answered within `timeout` or lost.
    pub fn new(
        name: &str,
        addr: SocketAddrV4,
        to: SocketAddrV4,
        schedule: Schedule,
        start: Nanos,
        end: Nanos,
        timeout: Nanos,
    ) -> Self {
        Probe {
            name: name.to_string(),
            addr,
            to,
            size: (schedule.size as usize).max(PROBE_LEN),
            start,
            timeout,
            pacer: Pacer::new(&schedule, start, end),
            answered: BTreeMap::new(),
        }
    }
}

/// The agent's probe results without its receive-side counters (late, duplicate and
/// unknown replies, send errors), which the simulated network cannot produce.
#[derive(Serialize)]
struct ProbeResults {
    #[serde(flatten)]
    loss: ProbeLoss,
    #[serde(flatten)]
    delays: ProbeDelays,
}

impl Endpoint for Probe {
    fn address(&self) -> (u8, SocketAddrV4) {
        udp(self.addr)
    }

    fn receive(&mut self, now: Nanos, packet: &[u8]) {
        let Some(datagram) = Datagram::from_packet(packet) else {
            return;
        };
        let Ok(p) = ProbeStamp::decode(&datagram.payload) else {
            return;
        };
        if p.seq < self.pacer.sent() && now - p.send_ns <= self.timeout {
            self.answered.entry(p.seq).or_insert((p.send_ns, p.echo_ns, now));
        }
    }

    fn poll(&mut self, now: Nanos, out: &mut Vec<Vec<u8>>) {
        let stamp = |seq, send_ns, payload: &mut [u8]| {
            let stamp = ProbeStamp {
                seq,
                send_ns,
                echo_ns: 0,
            };
            stamp.emit(payload).expect("payload holds a probe stamp");
        };
        self.pacer.send_due(now, (self.addr, self.to), self.size, stamp, out);
    }

    fn next_wakeup(&self) -> Option<Nanos> {
        self.pacer.next_wakeup()
    }

    fn finished(&self) -> bool {
        self.pacer.done()
    }

    fn write_summary(&mut self, raw: &Path, end: Nanos) -> std::io::Result<()> {
        let a: Vec<&(Nanos, Nanos, Nanos)> = self.answered.values().collect();
        let rtt: Vec<f64> = a.iter().map(|(s, _, r)| (r - s) as f64).collect();
        let fwd: Vec<f64> = a.iter().map(|(s, e, _)| (e - s) as f64).collect();
        let rev: Vec<f64> = a.iter().map(|(_, e, r)| (r - e) as f64).collect();
        let results = ProbeResults {
            loss: ProbeLoss::new(self.pacer.sent(), a.len() as u64),
            delays: ProbeDelays::new(&rtt, &fwd, &rev),
        };
        let stopped_by = if self.pacer.counted_out() { "count" } else { "duration" };
        write_summary(
            &raw.join(format!("{}.json", self.name)),
            "probe",
            self.start,
            end,
            stopped_by,
            &results,
        )
    }
}

/// The echo: reflects every probe with its receive time written in.
pub struct Echo {
    addr: SocketAddrV4,
    pending: Vec<Datagram>,
}

impl Echo {
    pub fn new(addr: SocketAddrV4) -> Self {
        Echo {
            addr,
            pending: Vec::new(),
        }
    }
}

impl Endpoint for Echo {
    fn address(&self) -> (u8, SocketAddrV4) {
        udp(self.addr)
    }

    fn receive(&mut self, now: Nanos, packet: &[u8]) {
        let Some(mut datagram) = Datagram::from_packet(packet) else {
            return;
        };
        if set_echo_ns(&mut datagram.payload, now).is_ok() {
            self.pending.push(Datagram {
                src: self.addr,
                dst: datagram.src,
                ecn: Ecn::NotEct,
                payload: datagram.payload,
            });
        }
    }

    fn poll(&mut self, _now: Nanos, out: &mut Vec<Vec<u8>>) {
        packets(self.pending.drain(..), out);
    }

    fn next_wakeup(&self) -> Option<Nanos> {
        None
    }

    fn finished(&self) -> bool {
        true
    }

    fn write_summary(&mut self, _raw: &Path, _end: Nanos) -> std::io::Result<()> {
        Ok(())
    }
}
