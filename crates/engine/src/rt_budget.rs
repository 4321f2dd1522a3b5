//! How much of each stretch of time the forwarding thread may spin, and run real-time.
//!
//! A real-time thread that runs for more than `kernel.sched_rt_runtime_us` (950 ms) of one
//! of the kernel's 1 s periods is stopped for the rest of that period (docs/architecture.md,
//! "What this machine kind does"). The kernel's periods are not aligned with the engine's
//! clock, so a budget kept per second of the engine's own lets a period straddling two of
//! them hold up to twice the per-second cap: with 850 ms per second, bulk runs at 100
//! Mbit/s saw the kernel throttle the engine and hand-overs 41 ms late. Kept per window of
//! 100 ms, at most 85 ms of it real-time, any 1 s holds at most 9 × 85 ms + 100 ms = 865 ms.

/// The length of a budget window.
pub const WINDOW_NS: u64 = 100_000_000;
/// Spinning stops for the rest of a window once the thread has spun this much of it…
pub const SPIN_CAP_NS: u64 = WINDOW_NS / 2;
/// …or been busy (spinning or working, i.e. not sleeping) this much of it.
pub const SPIN_BUSY_CAP_NS: u64 = 70_000_000;
/// Once busy this much of a window, the thread runs under normal scheduling for its rest.
pub const RT_BUSY_CAP_NS: u64 = 85_000_000;

/// The current window: when it began, and how long the thread has slept and spun in it.
#[derive(Debug, Clone)]
pub struct Budget {
    window: u64,
    start: u64,
    slept: u64,
    spun: u64,
}

impl Budget {
    pub fn new(now: u64) -> Self {
        Budget::with_window(now, WINDOW_NS)
    }

    /// A budget over windows of `window` ns, its caps the same shares of it as
    /// [`WINDOW_NS`]'s (the engine's is `new`; tests compare others).
    fn with_window(now: u64, window: u64) -> Self {
        Budget {
            window,
            start: now,
            slept: 0,
            spun: 0,
        }
    }

    fn cap(&self, of_window_ns: u64) -> u64 {
        of_window_ns * (self.window / 1_000_000) / (WINDOW_NS / 1_000_000)
    }

    /// Begins a new window if the current one is over; true when it did (the thread may
    /// return to real-time scheduling).
    pub fn roll(&mut self, now: u64) -> bool {
        if now.saturating_sub(self.start) < self.window {
            return false;
        }
        *self = Budget::with_window(now, self.window);
        true
    }

    pub fn slept(&mut self, ns: u64) {
        self.slept += ns;
    }

    pub fn spun(&mut self, ns: u64) {
        self.spun += ns;
    }

    fn busy(&self, now: u64) -> u64 {
        now.saturating_sub(self.start).saturating_sub(self.slept)
    }

    /// Whether the thread may still spin before a due time in this window.
    pub fn may_spin(&self, now: u64) -> bool {
        self.spun < self.cap(SPIN_CAP_NS) && self.busy(now) < self.cap(SPIN_BUSY_CAP_NS)
    }

    /// Whether the thread must leave real-time scheduling for the rest of this window.
    pub fn must_leave_realtime(&self, now: u64) -> bool {
        self.busy(now) >= self.cap(RT_BUSY_CAP_NS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    /// A thread stepped 1 ms at a time from time 0 that sleeps through the milliseconds
    /// `idle` says and works through the others: the milliseconds it ran real-time.
    fn real_time_ms(mut b: Budget, ms: u64, idle: impl Fn(u64) -> bool) -> Vec<bool> {
        let mut realtime = true;
        (0..ms)
            .map(|i| {
                let now = i * MS;
                if b.roll(now) {
                    realtime = true;
                }
                if idle(i) {
                    b.slept(MS);
                    return false;
                }
                if realtime && b.must_leave_realtime(now) {
                    realtime = false;
                }
                realtime
            })
            .collect()
    }

    /// The most real-time milliseconds in any 1 s stretch, at every 1 ms offset.
    fn worst_second(rt: &[bool]) -> usize {
        (0..=rt.len() - 1000)
            .map(|i| rt[i..i + 1000].iter().filter(|&&r| r).count())
            .max()
            .unwrap()
    }

    #[test]
    fn any_second_holds_less_real_time_than_the_kernel_allows() {
        // Idle for the first 150 ms of every other second, busy for the rest: with the
        // budget kept per second (as before), the idle second's last 850 ms and the next
        // one's first 850 ms are real-time, and the second across them holds 1000 ms, over
        // the kernel's 950; with 100 ms windows, at most 865 ms.
        let idle = |i: u64| i % 2000 < 150;
        assert!(worst_second(&real_time_ms(Budget::with_window(0, 1_000 * MS), 5_000, idle)) > 950);
        for phase in [0, 37, 150, 999] {
            let rt = real_time_ms(Budget::new(0), 5_000, |i| idle(i + phase));
            assert!(worst_second(&rt) <= 865, "phase {phase}: {} ms", worst_second(&rt));
        }
        // Always busy: real-time for 85 of each 100 ms.
        let rt = real_time_ms(Budget::new(0), 5_000, |_| false);
        assert!(worst_second(&rt) <= 865);
        assert_eq!(rt[..100].iter().filter(|&&r| r).count(), 85);
    }

    #[test]
    fn spinning_stops_at_half_a_window_or_when_busy_for_most_of_it() {
        let mut b = Budget::new(0);
        b.spun(SPIN_CAP_NS - 1);
        assert!(b.may_spin(SPIN_CAP_NS));
        b.spun(1);
        assert!(!b.may_spin(SPIN_CAP_NS));
        let mut b = Budget::new(0);
        b.slept(10 * MS);
        assert!(b.may_spin(79 * MS) && !b.may_spin(80 * MS)); // 70 ms busy
        assert!(!b.must_leave_realtime(94 * MS) && b.must_leave_realtime(95 * MS)); // 85 ms busy
        assert!(!b.roll(99 * MS) && b.roll(100 * MS));
        assert!(b.may_spin(100 * MS) && !b.must_leave_realtime(100 * MS));
    }
}
