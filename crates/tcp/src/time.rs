//! Time as the stack sees it: virtual nanoseconds passed in by the driver, and Linux's
//! jiffies (the tick of its retransmission, delayed-ACK and CUBIC clocks), whose rate
//! `hz` is a setting because it changes timer values (HZ = 250 on Debian's kernels:
//! every such timer is a whole number of 4 ms ticks).

/// Nanoseconds since an origin the driver chose.
pub type Nanos = u64;

pub const NANOS_PER_US: u64 = 1_000;

/// Linux's jiffies at `hz` ticks per second.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Jiffies {
    hz: u64,
}

impl Jiffies {
    pub fn new(hz: u64) -> Jiffies {
        assert!(
            hz > 0 && 1_000_000_000 % hz == 0,
            "hz must divide a second in nanoseconds"
        );
        Jiffies { hz }
    }

    pub fn hz(&self) -> u64 {
        self.hz
    }

    /// One tick in nanoseconds.
    pub fn tick(&self) -> Nanos {
        1_000_000_000 / self.hz
    }

    /// The jiffies counter at `now` (it starts at 0 at time 0).
    pub fn at(&self, now: Nanos) -> u64 {
        now / self.tick()
    }

    /// `usecs_to_jiffies`: rounds up.
    pub fn from_us(&self, us: u64) -> u64 {
        (us * self.hz).div_ceil(1_000_000)
    }

    /// `jiffies_to_usecs`.
    pub fn to_us(&self, j: u64) -> u64 {
        j * 1_000_000 / self.hz
    }

    /// When a timer set at `now` for `j` jiffies fires: at the tick `j` after the current
    /// one (Linux's timers run when the counter reaches their expiry).
    pub fn expiry(&self, now: Nanos, j: u64) -> Nanos {
        (self.at(now) + j) * self.tick()
    }
}
