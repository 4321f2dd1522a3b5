//! Run statistics the engine writes at exit: per-direction counts, unintended drops and
//! how punctually packets were handed back to the hosts.

use linkem::merge::MergeStats;
use serde::Serialize;

/// One entry per direction index of the packet log: the configured directions first,
/// then the legs of multipath directions.
#[derive(Debug, Default, Clone, Serialize)]
pub struct DirectionStats {
    pub name: String,
    /// A leg: the index of its multipath direction.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub leg_of: Option<usize>,
    /// A multipath direction: the indices of its legs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub legs: Option<Vec<usize>>,
    /// A multipath direction: its merge's counters (delivered, discarded, gap_skipped,
    /// timer_expiries, max_buffered).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub merge: Option<MergeStats>,
    pub arrivals: u64,
    pub departures: u64,
    pub bytes_departed: u64,
    pub drops_queue_full: u64,
    pub drops_random_loss: u64,
    /// Discarded by a multipath direction's merge (duplicate or too late).
    pub drops_merge_discard: u64,
    /// Dropped by an active queue management decision (an AQM discipline) before the queue
    /// was full.
    pub drops_aqm: u64,
    /// ECN marks: packets a queue with ECN on set to CE instead of dropping (including
    /// packets that were CE already).
    pub marks: u64,
}

#[derive(Debug, Default, Serialize)]
pub struct UnintendedDrops {
    pub no_route: u64,
    pub not_ipv4: u64,
    /// Writing to a host failed (TUN write or veth send).
    pub host_write_failed: u64,
    /// IP packets larger than the link MTU out of a host (an offload left on).
    pub oversize: u64,
    /// Packets refused because those held (in every queue and delay line) had reached the
    /// engine's `memory_limit_bytes`.
    pub memory_limit: u64,
    /// Per host: frames the kernel dropped because the engine's receive ring was full.
    pub ring_full: Vec<u64>,
}

impl UnintendedDrops {
    pub fn total(&self) -> u64 {
        self.no_route
            + self.not_ipv4
            + self.host_write_failed
            + self.oversize
            + self.memory_limit
            + self.ring_full.iter().sum::<u64>()
    }
}

/// Hand-over lateness: real time at which a packet was written to its host minus the
/// model's due time. Kept as a histogram of 1 µs buckets up to 10 ms (and one overflow
/// bucket), enough for mean and percentiles without storing every sample.
pub struct Lateness {
    buckets: Vec<u64>,
    count: u64,
    sum_ns: u128,
    max_ns: u64,
}

const BUCKETS: usize = 10_000;

impl Default for Lateness {
    fn default() -> Self {
        Lateness {
            buckets: vec![0; BUCKETS + 1],
            count: 0,
            sum_ns: 0,
            max_ns: 0,
        }
    }
}

impl Lateness {
    pub fn add(&mut self, late_ns: u64) {
        self.buckets[((late_ns / 1000) as usize).min(BUCKETS)] += 1;
        self.count += 1;
        self.sum_ns += late_ns as u128;
        self.max_ns = self.max_ns.max(late_ns);
    }

    fn percentile_us(&self, q: f64) -> f64 {
        if self.count == 0 {
            return 0.0;
        }
        let rank = ((q * self.count as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, &n) in self.buckets.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return i as f64 + 1.0; // upper edge of the bucket
            }
        }
        BUCKETS as f64
    }

    pub fn summary(&self) -> LatenessSummary {
        LatenessSummary {
            count: self.count,
            mean_us: if self.count == 0 {
                0.0
            } else {
                self.sum_ns as f64 / self.count as f64 / 1000.0
            },
            p50_us: self.percentile_us(0.5),
            p99_us: self.percentile_us(0.99),
            max_us: self.max_ns as f64 / 1000.0,
        }
    }
}

#[derive(Debug, Serialize)]
pub struct LatenessSummary {
    pub count: u64,
    pub mean_us: f64,
    /// Percentiles are upper edges of 1 µs buckets.
    pub p50_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
}

#[derive(Debug, Serialize)]
pub struct Calibration {
    pub samples: u64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
    /// Spin before each due time chosen from it (ns): max(configured, largest lateness + margin), capped.
    pub spin_ns: u64,
}

#[derive(Debug, Serialize)]
pub struct RunStats {
    pub directions: Vec<DirectionStats>,
    pub unintended_drops: UnintendedDrops,
    pub unintended_drops_total: u64,
    pub packets_in: u64,
    pub packets_out: u64,
    /// How late each packet was handed to its host: from its due time, or, for one the
    /// model released at the same instant as the packet before it, from the end of that
    /// packet's hand-over (it could not start earlier).
    pub handover_lateness: LatenessSummary,
    /// Packets released at one instant: how long each waited behind those before it.
    pub burst_wait: LatenessSummary,
    /// How much later than their stamps arrivals entered the model (non-zero only when
    /// the engine fell behind: the packet's timing was shifted by that much).
    pub arrival_shift: LatenessSummary,
    /// The engine's own timer lateness measured at start, and the spin it chose from it.
    pub timer_calibration: Option<Calibration>,
    /// How late the timer woke the forwarding thread while it ran (from the time it was
    /// armed for: the due time minus the spin); each wake-up raises the spin to cover it.
    pub timer_lateness: LatenessSummary,
    /// The spin at the end of the run (µs).
    pub spin_final_us: f64,
    /// Real time from the kernel's receive timestamp to the engine reading the packet
    /// (veth attachment; a TUN has no kernel timestamp).
    pub read_delay: LatenessSummary,
    /// How each host is attached ("tun" or "veth").
    pub attach: Vec<String>,
    /// Frames stamped by the kernel when it wrote them into the ring rather than at
    /// netif_rx (a TCP packet keeps its sender's departure time in the skb, which the
    /// packet socket does not report): still the kernel's, in the sender's softirq.
    pub stamps_at_ring_write: u64,
    /// Time the forwarding thread spent spinning before due times (s), and how often the
    /// spin budget (half of each second) ran out.
    pub spin_s: f64,
    pub spin_budget_exhausted: u64,
    /// Seconds in which the forwarding thread left real-time scheduling for the rest of
    /// the second, having been busy for most of it (so the kernel never throttles it).
    #[serde(default)]
    pub realtime_yields: u64,
    pub wall_s: f64,
    pub cpu_s: f64,
    /// Hand-overs retried because a host could not take the packet at once (its
    /// receiving CPU's backlog or the engine's send buffer full), and the first hand-over
    /// error that was not (each such packet is a `host_write_failed` unintended drop).
    #[serde(default)]
    pub egress_retries: u64,
    #[serde(default)]
    pub egress_error: Option<String>,
    pub log_error: Option<String>,
    /// Frames sent to keep idle hand-over paths warm (`Config::warm_interval_ns`).
    #[serde(default)]
    pub warm_frames: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lateness_percentiles_by_hand() {
        let mut l = Lateness::default();
        for us in [1u64, 2, 3, 4, 100] {
            l.add(us * 1000 + 500);
        }
        let s = l.summary();
        assert_eq!(s.count, 5);
        assert!((s.mean_us - 22.5).abs() < 1e-9);
        assert_eq!(s.p50_us, 4.0); // 3rd of 5 lies in bucket [3,4) µs
        assert_eq!(s.p99_us, 101.0);
        assert_eq!(s.max_us, 100.5);
    }
}
