//! The link of a bottleneck: serialises one packet at a time, at a constant or a
//! trace-driven rate. It holds no packets; [`crate::rate::RateQueue`] asks it when the
//! next packet may start ([`Link::next_start`]) and when a packet started then finishes
//! ([`Link::schedule`]).
//!
//! * Constant rate: a packet of L bytes occupies the link for 8L/rate seconds, starting
//!   at max(its start, previous finish). The link's busy-until time is kept exactly as
//!   integer nanoseconds plus a remainder in units of 1/rate ns, and finish times are its
//!   floor, so there is no cumulative rounding drift: the k-th finish of a back-to-back
//!   burst starting at 0 is exactly ⌊k·8L·10⁹/rate⌋ ns.
//! * Trace (Mahimahi's `link_queue`): each timestamp is one opportunity to deliver
//!   [`OPPORTUNITY_BYTES`] bytes; the trace repeats with a period equal to its last
//!   timestamp. A packet larger than what is left of an opportunity uses the rest of it
//!   and continues in the next ones; bytes of an opportunity left over when no packet is
//!   waiting for them are wasted; an opportunity at τ serves only packets that arrived at
//!   or before τ. Trace time 0 is the link's `origin` (0 unless set with
//!   [`Link::set_origin`]; the driver sets it to the scenario's time 0, so one seed replays
//!   one sequence of opportunities): at the origin the trace is at its `offset` (0 unless
//!   set with [`Link::with_offset`]), and a packet arriving before the origin waits for
//!   the first opportunity from there on.

use crate::Nanos;

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
                return Err(format!(
                    "trace line {}: timestamp {v} is earlier than the previous one ({prev}); timestamps must not decrease",
                    i + 1
                ));
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

/// A link's timeline after the last packet it started.
#[derive(Debug, Clone)]
pub struct Link(Kind);

#[derive(Debug, Clone)]
enum Kind {
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
    /// Where in the trace the origin falls (the offset, modulo the period), in ns.
    phase: Nanos,
    /// Global index (period · len + position) of the opportunity the last packet finished
    /// in, and the bytes it left unused there.
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
        // Opportunities asked about are never before the phase (see `first_at_or_after`).
        self.origin
            .saturating_add(ms.saturating_mul(NS_PER_MS).saturating_sub(self.phase))
    }

    /// The first opportunity at or after `at`.
    fn first_at_or_after(&self, at: Nanos) -> u64 {
        let n = self.opportunities_ms.len() as u64;
        let rel = at.saturating_sub(self.origin) + self.phase;
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

    /// The opportunity a packet ready at `at` gets its first byte in, and the bytes
    /// available to it there: what the last packet left of its opportunity if that is not
    /// earlier than `at`, else the next whole opportunity from `at` on.
    fn first_for(&self, at: Nanos) -> (u64, u32) {
        match self.cursor {
            Some(c) if self.left > 0 && self.time_of(c) >= at => (c, self.left),
            Some(c) => (c.saturating_add(1).max(self.first_at_or_after(at)), OPPORTUNITY_BYTES),
            None => (self.first_at_or_after(at), OPPORTUNITY_BYTES),
        }
    }

    fn schedule(&mut self, size: u32, at: Nanos) -> Nanos {
        let (mut g, mut avail) = self.first_for(at);
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
    /// A link of `bits_per_sec` (> 0).
    pub fn constant(bits_per_sec: u64) -> Result<Link, String> {
        if bits_per_sec == 0 {
            return Err("rate must be > 0 bit/s".into());
        }
        Ok(Link(Kind::Constant {
            bits_per_sec,
            busy_ns: 0,
            busy_rem: 0,
        }))
    }

    /// A Mahimahi trace-driven link (see [`validate_trace`]).
    pub fn trace(opportunities_ms: Vec<u64>) -> Result<Link, String> {
        validate_trace(&opportunities_ms)?;
        let period_ms = *opportunities_ms.last().expect("validated: not empty");
        Ok(Link(Kind::Trace(TraceLink {
            opportunities_ms,
            period_ms,
            origin: 0,
            phase: 0,
            cursor: None,
            left: 0,
        })))
    }

    /// Starts the trace `offset` ns into it: at the origin the trace is at time `offset`
    /// (taken modulo the period, as the trace repeats). No effect at constant rate.
    pub fn with_offset(mut self, offset: Nanos) -> Self {
        if let Kind::Trace(t) = &mut self.0 {
            t.phase = offset % (t.period_ms * NS_PER_MS);
        }
        self
    }

    /// Sets the time at which the trace starts (see [`Link::set_origin`]).
    pub fn with_origin(mut self, origin: Nanos) -> Self {
        self.set_origin(origin);
        self
    }

    /// Sets the time at which the trace starts (where it is at its offset). No effect at
    /// constant rate. Meant for before the first packet; a packet already started keeps
    /// its finish time, and the next one starts on the new timeline (what was left of
    /// the last opportunity is not carried over).
    pub fn set_origin(&mut self, origin: Nanos) {
        if let Kind::Trace(t) = &mut self.0 {
            t.origin = origin;
            t.cursor = None;
            t.left = 0;
        }
    }

    /// The earliest time, not before `at`, at which a packet can start: at constant rate
    /// when the previous one is handed out (its finish, floored to whole ns); on a trace,
    /// the opportunity it would get its first byte in. A queue discipline hands the link
    /// its next packet at that time.
    pub fn next_start(&self, at: Nanos) -> Nanos {
        match &self.0 {
            Kind::Constant { busy_ns, .. } => at.max(*busy_ns),
            Kind::Trace(t) => t.time_of(t.first_for(at).0),
        }
    }

    /// A packet of `size` bytes starts at `at` (not before [`Link::next_start`] of it);
    /// returns its finish time, when its last bit has left.
    pub fn schedule(&mut self, size: u32, at: Nanos) -> Nanos {
        match &mut self.0 {
            Kind::Constant {
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
            Kind::Trace(t) => t.schedule(size, at),
        }
    }

    /// The mean time the link takes to send `bytes` (a trace: its mean rate, one
    /// [`OPPORTUNITY_BYTES`] per opportunity over the period). RED ages its average
    /// over idle time in units of this.
    pub fn mean_tx_ns(&self, bytes: u32) -> f64 {
        match &self.0 {
            Kind::Constant { bits_per_sec, .. } => f64::from(bytes) * 8e9 / *bits_per_sec as f64,
            Kind::Trace(t) => {
                let per_byte_ns = t.period_ms as f64 * NS_PER_MS as f64
                    / (t.opportunities_ms.len() as f64 * f64::from(OPPORTUNITY_BYTES));
                f64::from(bytes) * per_byte_ns
            }
        }
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
            phase: 0,
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

    #[test]
    fn next_start_is_where_schedule_starts() {
        // Opportunities at 10, 20, 30 ms.
        let mut l = Link::trace(vec![10, 20, 30]).unwrap();
        assert_eq!(l.next_start(0), 10 * NS_PER_MS);
        assert_eq!(l.schedule(1000, 10 * NS_PER_MS), 10 * NS_PER_MS); // 500 left of @10
        assert_eq!(l.next_start(10 * NS_PER_MS), 10 * NS_PER_MS);
        assert_eq!(l.next_start(10 * NS_PER_MS + 1), 20 * NS_PER_MS);
        assert_eq!(l.schedule(500, 10 * NS_PER_MS), 10 * NS_PER_MS); // @10 used up
        assert_eq!(l.next_start(10 * NS_PER_MS), 20 * NS_PER_MS);
        // Constant: 7 Mbit/s, 1 byte = 1142.857 ns; the next start is the floored finish.
        let mut c = Link::constant(7_000_000).unwrap();
        assert_eq!(c.schedule(1, 0), 1142);
        assert_eq!(c.next_start(0), 1142);
        assert_eq!(c.next_start(5000), 5000);
        assert_eq!(c.schedule(1, 1142), 2285); // continues from 1142.857
        assert!((c.mean_tx_ns(7) - 8000.0).abs() < 1e-9);
        assert!((l.mean_tx_ns(1500) - 10.0 * NS_PER_MS as f64).abs() < 1e-6);
    }
}
