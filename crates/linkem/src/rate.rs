//! The bottleneck: a drop-tail queue ahead of a link of constant or trace-driven rate.
//!
//! Serialisation is computed eagerly: when a packet is admitted its finish time is fixed
//! at once (the link is FIFO and work-conserving, so nothing that arrives later can
//! change it). The packet is due when its last bit has left, i.e. at its finish time.
//!
//! * Constant rate: a packet of L bytes occupies the link for 8L/rate seconds, starting
//!   at max(arrival, previous finish). The link's busy-until time is kept exactly as
//!   integer nanoseconds plus a remainder in units of 1/rate ns, and due times are its
//!   floor, so there is no cumulative rounding drift: the k-th finish of a back-to-back
//!   burst starting at 0 is exactly ⌊k·8L·10⁹/rate⌋ ns.
//! * Trace (Mahimahi's `link_queue`): each timestamp is one opportunity to deliver
//!   [`OPPORTUNITY_BYTES`] bytes; the trace repeats with a period equal to its last
//!   timestamp. A packet larger than what is left of an opportunity uses the rest of it
//!   and continues in the next ones; bytes of an opportunity left over when no packet is
//!   waiting for them are wasted; an opportunity at τ serves only packets that arrived at
//!   or before τ. Trace time 0 is the stage's `origin` (0 unless set with
//!   [`RateQueue::with_origin`]).

use std::collections::VecDeque;

use crate::queue::{Backlog, DropTail, QueueLimit};
use crate::{DropReason, Dropped, Nanos, Packet, Stage};

/// Bytes one trace opportunity can deliver (Mahimahi's MTU-sized opportunity).
pub const OPPORTUNITY_BYTES: u32 = 1500;

const NS_PER_MS: u64 = 1_000_000;
const NS_PER_S: u128 = 1_000_000_000;

/// Parses a Mahimahi trace: one millisecond timestamp per line, non-decreasing, the last
/// one > 0 (it is the period) and at most [`MAX_TRACE_MS`]. Blank lines and surrounding
/// whitespace are ignored.
pub fn parse_mahimahi_trace(text: &str) -> Result<Vec<u64>, String> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let s = line.trim();
        if s.is_empty() {
            continue;
        }
        let v: u64 = s.parse().map_err(|_| {
            format!(
                "trace line {}: {s:?} is not a timestamp in milliseconds (a non-negative integer)",
                i + 1
            )
        })?;
        if let Some(&prev) = out.last() {
            if v < prev {
                return Err(format!("trace line {}: timestamp {v} is earlier than the previous one ({prev}); timestamps must not decrease", i + 1));
            }
        }
        out.push(v);
    }
    validate_trace(&out)?;
    Ok(out)
}

/// The longest trace period accepted, in ms (2^40 ms, about 35 years): no trace file means
/// a longer one, and it keeps a period in nanoseconds far inside u64, which the search
/// for the first opportunity after an arrival relies on.
pub const MAX_TRACE_MS: u64 = 1 << 40;

/// Checks a trace given as timestamps: non-empty, non-decreasing, last timestamp > 0 and
/// at most [`MAX_TRACE_MS`].
pub fn validate_trace(opportunities_ms: &[u64]) -> Result<(), String> {
    let last = *opportunities_ms.last().ok_or("trace has no delivery opportunity")?;
    if last == 0 {
        return Err("trace must last a non-zero time: its last timestamp (the period) is 0 ms".into());
    }
    if last > MAX_TRACE_MS {
        return Err(format!(
            "trace period (its last timestamp) of {last} ms is longer than the {MAX_TRACE_MS} ms supported"
        ));
    }
    if let Some(i) = opportunities_ms.windows(2).position(|w| w[1] < w[0]) {
        return Err(format!(
            "trace timestamp #{} ({} ms) is earlier than the one before it ({} ms)",
            i + 2,
            opportunities_ms[i + 1],
            opportunities_ms[i]
        ));
    }
    Ok(())
}

/// The link's timeline after the last admitted packet.
#[derive(Debug, Clone)]
enum Link {
    Constant {
        bits_per_sec: u64,
        /// Busy until `busy_ns + busy_rem / bits_per_sec` ns (`busy_rem < bits_per_sec`).
        busy_ns: Nanos,
        busy_rem: u64,
    },
    Trace(TraceLink),
}

#[derive(Debug, Clone)]
struct TraceLink {
    opportunities_ms: Vec<u64>,
    period_ms: u64,
    origin: Nanos,
    /// Global index (period · len + position) of the opportunity the last admitted packet
    /// finished in, and the bytes it left unused there.
    cursor: Option<u64>,
    left: u32,
}

impl TraceLink {
    /// Saturates at `Nanos::MAX`: a queue can book opportunities past the end of u64 time
    /// (e.g. jumbo packets on a sparse trace), and those must stay "later than anything"
    /// rather than wrap around to the past.
    fn time_of(&self, g: u64) -> Nanos {
        let n = self.opportunities_ms.len() as u64;
        let ms = (g / n)
            .saturating_mul(self.period_ms)
            .saturating_add(self.opportunities_ms[(g % n) as usize]);
        self.origin.saturating_add(ms.saturating_mul(NS_PER_MS))
    }

    /// The first opportunity at or after `at`.
    fn first_at_or_after(&self, at: Nanos) -> u64 {
        let n = self.opportunities_ms.len() as u64;
        let rel = at.saturating_sub(self.origin);
        let period_ns = self.period_ms * NS_PER_MS;
        // The last opportunity of period k−1 is at k·period, so it can equal `rel`:
        // search from the period before the one `rel` falls in.
        let mut k = (rel / period_ns).saturating_sub(1);
        loop {
            let base = k.saturating_mul(period_ns);
            let i = self
                .opportunities_ms
                .partition_point(|&ms| base.saturating_add(ms * NS_PER_MS) < rel);
            if i < self.opportunities_ms.len() {
                return k.saturating_mul(n).saturating_add(i as u64);
            }
            k += 1;
        }
    }

    fn schedule(&mut self, size: u32, at: Nanos) -> Nanos {
        let (mut g, mut avail) = match self.cursor {
            Some(c) if self.left > 0 && self.time_of(c) >= at => (c, self.left),
            Some(c) => (c.saturating_add(1).max(self.first_at_or_after(at)), OPPORTUNITY_BYTES),
            None => (self.first_at_or_after(at), OPPORTUNITY_BYTES),
        };
        let mut remaining = size;
        while remaining > avail {
            remaining -= avail;
            g = g.saturating_add(1);
            avail = OPPORTUNITY_BYTES;
        }
        self.cursor = Some(g);
        self.left = avail - remaining;
        self.time_of(g)
    }
}

impl Link {
    /// Admits a packet of `size` bytes arriving at `at`; returns its finish time.
    fn schedule(&mut self, size: u32, at: Nanos) -> Nanos {
        match self {
            Link::Constant {
                bits_per_sec,
                busy_ns,
                busy_rem,
            } => {
                let idle = at > *busy_ns || (at == *busy_ns && *busy_rem == 0);
                if idle {
                    *busy_ns = at;
                    *busy_rem = 0;
                }
                let rate = u128::from(*bits_per_sec);
                let total = u128::from(*busy_rem) + u128::from(size) * 8 * NS_PER_S;
                // Saturates like the trace link: finish times past the end of u64 time.
                *busy_ns = busy_ns.saturating_add((total / rate) as u64);
                *busy_rem = (total % rate) as u64;
                *busy_ns
            }
            Link::Trace(t) => t.schedule(size, at),
        }
    }
}

/// Drop-tail queue + rate-limited link, as one stage (they share the timeline: a packet
/// leaves the queue's occupancy when its serialisation finishes).
pub struct RateQueue<P> {
    link: Link,
    discipline: DropTail,
    /// Admitted packets with their finish times (non-decreasing), not yet dequeued.
    entries: VecDeque<(Packet<P>, Nanos)>,
    /// `entries[..finished]` had finished by the last `enqueue` time and are no longer
    /// counted in `backlog`.
    finished: usize,
    backlog: Backlog,
}

impl<P> RateQueue<P> {
    fn with_link(link: Link, limit: QueueLimit) -> Self {
        RateQueue {
            link,
            discipline: DropTail::new(limit),
            entries: VecDeque::new(),
            finished: 0,
            backlog: Backlog::default(),
        }
    }

    /// A constant-rate link of `bits_per_sec` (> 0) behind a drop-tail queue.
    pub fn constant(bits_per_sec: u64, limit: QueueLimit) -> Result<Self, String> {
        if bits_per_sec == 0 {
            return Err("rate must be > 0 bit/s".into());
        }
        Ok(Self::with_link(
            Link::Constant {
                bits_per_sec,
                busy_ns: 0,
                busy_rem: 0,
            },
            limit,
        ))
    }

    /// A Mahimahi trace-driven link behind a drop-tail queue (see [`validate_trace`]).
    pub fn trace(opportunities_ms: Vec<u64>, limit: QueueLimit) -> Result<Self, String> {
        validate_trace(&opportunities_ms)?;
        let period_ms = *opportunities_ms.last().unwrap();
        let t = TraceLink {
            opportunities_ms,
            period_ms,
            origin: 0,
            cursor: None,
            left: 0,
        };
        Ok(Self::with_link(Link::Trace(t), limit))
    }

    /// Sets the time at which the trace starts (trace time 0). No effect at constant rate.
    /// Call before the first packet.
    pub fn with_origin(mut self, origin: Nanos) -> Self {
        if let Link::Trace(t) = &mut self.link {
            t.origin = origin;
        }
        self
    }

    /// The queue's occupancy as of the last `enqueue` (packets not yet fully serialised,
    /// including the one on the wire).
    pub fn backlog(&self) -> Backlog {
        self.backlog
    }

    /// Stops counting packets whose serialisation finished by `at`.
    fn retire(&mut self, at: Nanos) {
        while let Some((p, finish)) = self.entries.get(self.finished) {
            if *finish > at {
                break;
            }
            self.backlog.remove(p.size);
            self.finished += 1;
        }
    }
}

impl<P> Stage<P> for RateQueue<P> {
    fn enqueue(&mut self, packet: Packet<P>, at: Nanos) -> Result<(), Dropped<P>> {
        self.retire(at);
        if !self.discipline.admits(&self.backlog, packet.size) {
            return Err(Dropped {
                packet,
                reason: DropReason::QueueFull,
            });
        }
        let finish = self.link.schedule(packet.size, at);
        self.backlog.add(packet.size);
        self.entries.push_back((packet, finish));
        Ok(())
    }

    fn dequeue(&mut self, now: Nanos) -> Option<(Packet<P>, Nanos)> {
        match self.entries.front() {
            Some(&(_, due)) if due <= now => {
                let (p, due) = self.entries.pop_front().unwrap();
                if self.finished > 0 {
                    self.finished -= 1;
                } else {
                    self.backlog.remove(p.size);
                }
                Some((p, due))
            }
            _ => None,
        }
    }

    fn next_due(&self) -> Option<Nanos> {
        self.entries.front().map(|&(_, due)| due)
    }

    fn len(&self) -> usize {
        self.entries.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parser_reports_line_and_value() {
        assert_eq!(parse_mahimahi_trace("1\n1\n\n 5 \n").unwrap(), vec![1, 1, 5]);
        let e = parse_mahimahi_trace("1\n2\nx3\n").unwrap_err();
        assert!(e.contains("line 3") && e.contains("x3"), "{e}");
        let e = parse_mahimahi_trace("4\n2\n").unwrap_err();
        assert!(e.contains("line 2") && e.contains('2') && e.contains('4'), "{e}");
        assert!(parse_mahimahi_trace("").is_err());
        assert!(parse_mahimahi_trace("0\n0\n").is_err());
        assert!(parse_mahimahi_trace("-1\n").unwrap_err().contains("line 1"));
    }

    #[test]
    fn first_opportunity_search_handles_period_boundaries() {
        let t = TraceLink {
            opportunities_ms: vec![0, 5, 10],
            period_ms: 10,
            origin: 0,
            cursor: None,
            left: 0,
        };
        // Opportunities: 0,5,10 | 10,15,20 | 20,25,30 ...
        assert_eq!(t.first_at_or_after(0), 0);
        assert_eq!(t.first_at_or_after(1), 1);
        assert_eq!(t.first_at_or_after(10 * NS_PER_MS), 2);
        assert_eq!(t.first_at_or_after(10 * NS_PER_MS + 1), 4);
        assert_eq!(t.first_at_or_after(20 * NS_PER_MS), 5);
        assert_eq!(t.time_of(5), 20 * NS_PER_MS);
        assert_eq!(t.time_of(6), 20 * NS_PER_MS);
    }
}
