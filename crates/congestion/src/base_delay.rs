//! LEDBAT's base-delay history (RFC 6817 §2.4.2 `update_base_delay`): the minimum delay
//! per one-minute bucket over the last few minutes, so the base can rise again when the
//! path changes (a route change, or a standing queue that was never drained).

use crate::Nanos;
use std::collections::VecDeque;

const MINUTE: Nanos = 60_000_000_000;

/// Generic over the sample type: RTTs are [`Nanos`]; one-way delays are `i64`, since the
/// difference of two unsynchronised clocks may be negative.
#[derive(Debug, Clone)]
pub(crate) struct BaseDelayHistory<T = Nanos> {
    /// Bucket boundaries are whole minutes from here (the controller's creation time).
    origin: Nanos,
    /// How many one-minute buckets to keep, the current one included.
    capacity: u64,
    /// (minute index, minimum sample in that minute), oldest first.
    buckets: VecDeque<(u64, T)>,
}

impl<T: Ord + Copy> BaseDelayHistory<T> {
    pub fn new(origin: Nanos, capacity: u64) -> Self {
        BaseDelayHistory {
            origin,
            capacity: capacity.max(1),
            buckets: VecDeque::new(),
        }
    }

    /// Adds a delay sample taken at `now`. Minutes without samples leave no bucket but
    /// still age the older ones out: the history covers the last `capacity` minutes of
    /// time, not of samples.
    pub fn record(&mut self, now: Nanos, delay: T) {
        let minute = now.saturating_sub(self.origin) / MINUTE;
        match self.buckets.back_mut() {
            Some((last, min)) if *last >= minute => *min = (*min).min(delay),
            _ => self.buckets.push_back((minute, delay)),
        }
        while self
            .buckets
            .front()
            .is_some_and(|&(first, _)| first + self.capacity <= minute)
        {
            self.buckets.pop_front();
        }
    }

    /// The base delay: the minimum over the kept buckets, `None` before any sample.
    pub fn minimum(&self) -> Option<T> {
        self.buckets.iter().map(|&(_, min)| min).min()
    }
}
