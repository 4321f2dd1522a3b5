//! Congestion control as Linux structures it (`tcp_congestion_ops`): the stack owns the
//! window (in segments, as Linux counts it) and its reductions (PRR, RTO), the algorithm
//! answers `ssthresh` at a congestion event and grows the window in `cong_avoid`.
//!
//! Why not the `congestion` crate's NewReno and CUBIC: those are RFC 9002's (QUIC)
//! controllers — byte windows, a per-packet interface, recovery periods, RFC 9438's
//! floating-point CUBIC aiming one smoothed RTT ahead with its α switch and no HyStart.
//! Linux's differ in every number that shows in a throughput: windows in whole
//! segments with a growth counter, CUBIC in fixed point on jiffies with its cube-root
//! table, K and W_max in segments, the target at t + min RTT, the 5 %-per-RTT cap before
//! the first loss, β = 717/1024, HyStart (ACK train and delay). Sharing them would change
//! the QUIC results the `congestion` crate is tested against, so these are Linux's own.

pub mod cubic;
pub mod reno;

use crate::time::Jiffies;

/// `TCP_INFINITE_SSTHRESH`.
pub const INFINITE_SSTHRESH: u32 = 0x7fff_ffff;

/// The window state the stack and the algorithm share (segments).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub cwnd: u32,
    pub ssthresh: u32,
    /// `snd_cwnd_cnt`: segments acknowledged toward the next +1.
    pub cwnd_cnt: u32,
    pub cwnd_clamp: u32,
}

impl Window {
    pub fn new(initial: u32) -> Window {
        Window {
            cwnd: initial,
            ssthresh: INFINITE_SSTHRESH,
            cwnd_cnt: 0,
            cwnd_clamp: u32::MAX / 2,
        }
    }

    pub fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }

    /// `tcp_slow_start`: grows by what was acknowledged up to ssthresh; returns the
    /// acknowledged segments left over for congestion avoidance.
    pub fn slow_start(&mut self, acked: u32) -> u32 {
        let cwnd = (self.cwnd + acked).min(self.ssthresh);
        let left = acked - (cwnd - self.cwnd);
        self.cwnd = cwnd.min(self.cwnd_clamp);
        left
    }

    /// What every `cong_avoid` does first: nothing when the window did not limit the sender
    /// (`tcp_is_cwnd_limited`), slow start while in it. Returns the acknowledged segments
    /// left for congestion avoidance; None when there is nothing more to do.
    pub fn slow_start_if_limited(&mut self, cwnd_limited: bool, acked: u32) -> Option<u32> {
        if !cwnd_limited {
            return None;
        }
        if !self.in_slow_start() {
            return Some(acked);
        }
        Some(self.slow_start(acked)).filter(|&left| left > 0)
    }

    /// `tcp_cong_avoid_ai`: +1 segment per `w` segments acknowledged.
    pub fn cong_avoid_ai(&mut self, w: u32, acked: u32) {
        let w = w.max(1);
        if self.cwnd_cnt >= w {
            self.cwnd_cnt = 0;
            self.cwnd += 1;
        }
        self.cwnd_cnt += acked;
        if self.cwnd_cnt >= w {
            let delta = self.cwnd_cnt / w;
            self.cwnd_cnt -= delta * w;
            self.cwnd += delta;
        }
        self.cwnd = self.cwnd.min(self.cwnd_clamp);
    }
}

/// Linux's congestion states (`tcp_ca_state`), in Linux's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum CaState {
    Open,
    Disorder,
    Cwr,
    Recovery,
    Loss,
}

/// What an algorithm may read of the connection.
#[derive(Debug, Clone, Copy)]
pub struct Context {
    /// `tcp_mstamp`: now, in µs.
    pub now_us: u64,
    /// `tcp_jiffies32`.
    pub jiffies: u64,
    pub clock: Jiffies,
    pub snd_una: u64,
    pub snd_nxt: u64,
    /// `tcp_is_cwnd_limited`.
    pub cwnd_limited: bool,
    /// `sk_pacing_rate` (bytes/s) as Linux computes it even when nothing paces.
    pub pacing_rate: u64,
}

/// One algorithm (`tcp_congestion_ops`).
pub trait CongestionOps: std::fmt::Debug {
    fn name(&self) -> &'static str;
    /// `.init`, when the connection is established.
    fn init(&mut self, _w: &mut Window, _ctx: &Context) {}
    /// `.ssthresh`: the window after a congestion event.
    fn ssthresh(&mut self, w: &Window) -> u32;
    /// `.cong_avoid`: grow on `acked` newly delivered segments.
    fn cong_avoid(&mut self, w: &mut Window, ctx: &Context, acked: u32);
    /// `.set_state`.
    fn set_state(&mut self, _w: &Window, _state: CaState, _ctx: &Context) {}
    /// `.pkts_acked`: `rtt_us` is the RTT of the newest (S)ACKed segment, if any.
    fn pkts_acked(&mut self, _w: &mut Window, _ctx: &Context, _rtt_us: Option<u64>) {}
    /// `CA_EVENT_TX_START`: sending resumes after `idle_jiffies` with nothing in flight.
    fn tx_start(&mut self, _ctx: &Context, _idle_jiffies: u64) {}
    /// Internal state worth a series column.
    fn diagnostics(&self) -> Vec<(&'static str, f64)> {
        Vec::new()
    }
}

/// The algorithms by the names scenarios give them.
pub const NAMES: [&str; 2] = ["reno", "cubic"];

pub fn build(name: &str) -> Option<Box<dyn CongestionOps>> {
    match name {
        "reno" => Some(Box::new(reno::Reno)),
        "cubic" => Some(Box::new(cubic::Cubic::default())),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slow_start_if_limited_leaves_what_congestion_avoidance_gets() {
        let w = Window {
            ssthresh: 12,
            ..Window::new(10)
        };
        // Not limited by the window: no growth at all.
        let mut v = w;
        assert_eq!(v.slow_start_if_limited(false, 5), None);
        assert_eq!(v, w);
        // Slow start up to ssthresh; 3 of the 5 are left.
        assert_eq!(v.slow_start_if_limited(true, 5), Some(3));
        assert_eq!(v.cwnd, 12);
        // Slow start takes them all: nothing left.
        let mut v = w;
        assert_eq!(v.slow_start_if_limited(true, 2), None);
        assert_eq!(v.cwnd, 12);
        // Past ssthresh every acknowledged segment goes to congestion avoidance.
        assert_eq!(v.slow_start_if_limited(true, 4), Some(4));
        assert_eq!(v.cwnd, 12);
    }
}
