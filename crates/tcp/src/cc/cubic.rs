//! Linux's CUBIC (`net/ipv4/tcp_cubic.c`) with HyStart, in its fixed-point arithmetic:
//! β = 717/1024, C = 41/1024·10 (`bic_scale`), time in 1/1024 s from jiffies, K from
//! Linux's cube-root table and one Newton step, the target taken at t + min RTT, at most
//! +5 % per RTT before the first loss, the Reno-friendly window, fast convergence, and
//! HyStart's ACK-train and delay-increase exits from slow start.

use super::{CaState, CongestionOps, Context, Window};

const BETA_SCALE: u64 = 1024;
const BETA: u64 = 717;
const BIC_SCALE: u64 = 41;
const BICTCP_HZ: u32 = 10;
/// `cube_rtt_scale` = bic_scale · 10.
const CUBE_RTT_SCALE: u64 = BIC_SCALE * 10;
/// `cube_factor` = 2^40 / (bic_scale · 10).
const CUBE_FACTOR: u64 = (1u64 << (10 + 3 * BICTCP_HZ)) / (BIC_SCALE * 10);
/// `beta_scale` = 8·(1024 + β) / 3 / (1024 − β).
const BETA_SCALE_FRIENDLY: u64 = 8 * (BETA_SCALE + BETA) / 3 / (BETA_SCALE - BETA);

const HYSTART_LOW_WINDOW: u32 = 16;
const HYSTART_ACK_DELTA_US: u64 = 2000;
const HYSTART_MIN_SAMPLES: u32 = 8;
const HYSTART_DELAY_MIN_US: u64 = 4000;
const HYSTART_DELAY_MAX_US: u64 = 16000;
/// `sk_gso_max_size` of a veth or TUN device (GSO_LEGACY_MAX_SIZE).
const GSO_MAX_SIZE: u64 = 65536;

/// Why slow start ended early, if HyStart ended it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HystartExit {
    AckTrain,
    Delay,
}

#[derive(Debug, Clone, Default)]
pub struct Cubic {
    cnt: u32,
    last_max_cwnd: u32,
    last_cwnd: u32,
    last_time: u64,
    bic_origin_point: u32,
    bic_k: u32,
    /// Minimum RTT (µs), 0 until sampled.
    delay_min: u64,
    epoch_start: Option<u64>,
    ack_cnt: u32,
    tcp_cwnd: u32,
    // HyStart.
    sample_cnt: u32,
    found: Option<HystartExit>,
    round_start: u64,
    end_seq: u64,
    last_ack: u64,
    curr_rtt: u64,
}

/// Linux's `cubic_root`: table lookup and one Newton–Raphson step (≈0.2 % error).
pub fn cubic_root(a: u64) -> u32 {
    const V: [u8; 64] = [
        0, 54, 54, 54, 118, 118, 118, 118, 123, 129, 134, 138, 143, 147, 151, 156, 157, 161, 164, 168, 170, 173, 176,
        179, 181, 185, 187, 190, 192, 194, 197, 199, 200, 202, 204, 206, 209, 211, 213, 215, 217, 219, 221, 222, 224,
        225, 227, 229, 231, 232, 234, 236, 237, 239, 240, 242, 244, 245, 246, 248, 250, 251, 252, 254,
    ];
    let b = 64 - a.leading_zeros(); // fls64
    if b < 7 {
        return (u32::from(V[a as usize]) + 35) >> 6;
    }
    let b = ((b * 84) >> 8) - 1;
    let shift = (a >> (b * 3)) as usize;
    let mut x = ((u32::from(V[shift]) + 10) << b) >> 6;
    let xx = u64::from(x) * u64::from(x - 1);
    x = 2 * x + (a / xx) as u32;
    (x * 341) >> 10
}

impl Cubic {
    fn reset(&mut self) {
        let hystart = (
            self.sample_cnt,
            self.round_start,
            self.end_seq,
            self.last_ack,
            self.curr_rtt,
        );
        *self = Cubic::default();
        (
            self.sample_cnt,
            self.round_start,
            self.end_seq,
            self.last_ack,
            self.curr_rtt,
        ) = hystart;
    }

    fn hystart_reset(&mut self, ctx: &Context) {
        self.round_start = ctx.now_us;
        self.last_ack = ctx.now_us;
        self.end_seq = ctx.snd_nxt;
        self.curr_rtt = u64::MAX;
        self.sample_cnt = 0;
    }

    /// Why HyStart left slow start, if it did.
    pub fn hystart_exit(&self) -> Option<HystartExit> {
        self.found
    }

    pub fn delay_min_us(&self) -> u64 {
        self.delay_min
    }

    pub fn last_max_cwnd(&self) -> u32 {
        self.last_max_cwnd
    }

    pub fn k(&self) -> u32 {
        self.bic_k
    }

    pub fn cnt(&self) -> u32 {
        self.cnt
    }

    fn ack_delay_us(ctx: &Context) -> u64 {
        if ctx.pacing_rate == 0 {
            return 0;
        }
        (GSO_MAX_SIZE * 4 * 1_000_000 / ctx.pacing_rate).min(1000)
    }

    /// `hystart_update` as Linux 6.x has it: the round is tracked on every ACK in slow
    /// start, and only then are windows below `hystart_low_window` left out. Rounds thus
    /// start at the first ACK of a flight (end_seq = snd_nxt then, the flight's end): the
    /// first delay samples of a round are the head of a flight, which met the least
    /// queue. (Resetting only once cwnd reaches 16, as kernels before did, starts every
    /// later round in the middle of a flight, and the round's first samples are the
    /// queued tail of the one before — a delay exit a round early.)
    fn hystart_update(&mut self, w: &mut Window, ctx: &Context, delay: u64) {
        if ctx.snd_una > self.end_seq {
            self.hystart_reset(ctx);
        }
        if w.cwnd < HYSTART_LOW_WINDOW {
            return;
        }
        let now = ctx.now_us;
        if now.saturating_sub(self.last_ack) <= HYSTART_ACK_DELTA_US {
            self.last_ack = now;
            // Not paced: the train must span half the minimum RTT.
            let threshold = (self.delay_min + Self::ack_delay_us(ctx)) >> 1;
            if now.saturating_sub(self.round_start) > threshold {
                self.found = Some(HystartExit::AckTrain);
                w.ssthresh = w.cwnd;
            }
        }
        self.curr_rtt = self.curr_rtt.min(delay);
        if self.sample_cnt < HYSTART_MIN_SAMPLES {
            self.sample_cnt += 1;
        } else if self.curr_rtt
            > self.delay_min + (self.delay_min >> 3).clamp(HYSTART_DELAY_MIN_US, HYSTART_DELAY_MAX_US)
        {
            self.found = Some(HystartExit::Delay);
            w.ssthresh = w.cwnd;
        }
    }

    fn update(&mut self, cwnd: u32, acked: u32, ctx: &Context) {
        let hz = ctx.clock.hz();
        let jiffies = ctx.jiffies;
        self.ack_cnt += acked;
        if self.last_cwnd == cwnd && jiffies.saturating_sub(self.last_time) <= hz / 32 {
            return;
        }
        if !(self.epoch_start.is_some() && jiffies == self.last_time) {
            self.last_cwnd = cwnd;
            self.last_time = jiffies;
            let epoch_start = match self.epoch_start {
                Some(e) => e,
                None => {
                    self.ack_cnt = acked;
                    self.tcp_cwnd = cwnd;
                    if self.last_max_cwnd <= cwnd {
                        self.bic_k = 0;
                        self.bic_origin_point = cwnd;
                    } else {
                        self.bic_k = cubic_root(CUBE_FACTOR * u64::from(self.last_max_cwnd - cwnd));
                        self.bic_origin_point = self.last_max_cwnd;
                    }
                    self.epoch_start = Some(jiffies);
                    jiffies
                }
            };
            let mut t = jiffies - epoch_start + ctx.clock.from_us(self.delay_min);
            t = (t << BICTCP_HZ) / hz;
            let k = u64::from(self.bic_k);
            let offs = t.abs_diff(k);
            let delta = (CUBE_RTT_SCALE.wrapping_mul(offs).wrapping_mul(offs).wrapping_mul(offs)
                >> (10 + 3 * BICTCP_HZ)) as u32;
            let target = if t < k {
                self.bic_origin_point.wrapping_sub(delta)
            } else {
                self.bic_origin_point.wrapping_add(delta)
            };
            self.cnt = if target > cwnd {
                cwnd / (target - cwnd)
            } else {
                100 * cwnd
            };
            if self.last_max_cwnd == 0 && self.cnt > 20 {
                self.cnt = 20;
            }
        }
        // TCP friendliness.
        let delta = ((u64::from(cwnd) * BETA_SCALE_FRIENDLY) >> 3) as u32;
        while delta > 0 && self.ack_cnt > delta {
            self.ack_cnt -= delta;
            self.tcp_cwnd += 1;
        }
        if self.tcp_cwnd > cwnd {
            let max_cnt = cwnd / (self.tcp_cwnd - cwnd);
            if self.cnt > max_cnt {
                self.cnt = max_cnt;
            }
        }
        self.cnt = self.cnt.max(2);
    }
}

impl CongestionOps for Cubic {
    fn name(&self) -> &'static str {
        "cubic"
    }

    fn init(&mut self, _w: &mut Window, ctx: &Context) {
        *self = Cubic::default();
        self.hystart_reset(ctx);
    }

    fn ssthresh(&mut self, w: &Window) -> u32 {
        self.epoch_start = None;
        self.last_max_cwnd = if w.cwnd < self.last_max_cwnd {
            ((u64::from(w.cwnd) * (BETA_SCALE + BETA)) / (2 * BETA_SCALE)) as u32
        } else {
            w.cwnd
        };
        ((u64::from(w.cwnd) * BETA / BETA_SCALE) as u32).max(2)
    }

    fn cong_avoid(&mut self, w: &mut Window, ctx: &Context, acked: u32) {
        let Some(acked) = w.slow_start_if_limited(ctx.cwnd_limited, acked) else {
            return;
        };
        self.update(w.cwnd, acked, ctx);
        let cnt = self.cnt;
        w.cong_avoid_ai(cnt, acked);
    }

    fn set_state(&mut self, _w: &Window, state: CaState, ctx: &Context) {
        if state == CaState::Loss {
            self.reset();
            self.hystart_reset(ctx);
        }
    }

    fn pkts_acked(&mut self, w: &mut Window, ctx: &Context, rtt_us: Option<u64>) {
        let Some(rtt) = rtt_us else { return };
        if let Some(e) = self.epoch_start {
            if ctx.jiffies.saturating_sub(e) < ctx.clock.hz() {
                return;
            }
        }
        let delay = rtt.max(1);
        if self.delay_min == 0 || self.delay_min > delay {
            self.delay_min = delay;
        }
        if self.found.is_none() && w.in_slow_start() {
            self.hystart_update(w, ctx, delay);
        }
    }

    fn tx_start(&mut self, ctx: &Context, idle_jiffies: u64) {
        if let Some(e) = self.epoch_start.as_mut() {
            if idle_jiffies > 0 {
                *e = (*e + idle_jiffies).min(ctx.jiffies);
            }
        }
    }

    fn diagnostics(&self) -> Vec<(&'static str, f64)> {
        vec![
            ("last_max_cwnd", f64::from(self.last_max_cwnd)),
            ("delay_min_us", self.delay_min as f64),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cube_root_is_linuxs() {
        // Exact cubes and Linux's table/Newton rounding.
        assert_eq!(cubic_root(0), 0);
        assert_eq!(cubic_root(27), 3);
        assert_eq!(cubic_root(1 << 30), 1024);
        // K for W_max − cwnd = 30 segments: (30 / 0.4004)^(1/3) s = 4.216 s = 4317 in
        // 1/1024 s; Linux's table and one Newton step give 4316.
        assert_eq!(cubic_root(CUBE_FACTOR * 30), 4316);
    }

    #[test]
    fn loss_keeps_717_of_1024_and_remembers_the_maximum() {
        let mut c = Cubic::default();
        let w = Window {
            cwnd: 100,
            ..Window::new(10)
        };
        assert_eq!(c.ssthresh(&w), 70);
        assert_eq!(c.last_max_cwnd(), 100);
        // A loss below the last maximum: fast convergence remembers 80·1741/2048 = 68.
        let w = Window { cwnd: 80, ..w };
        assert_eq!(c.ssthresh(&w), 56);
        assert_eq!(c.last_max_cwnd(), 68);
    }
}

#[cfg(test)]
mod hystart_tests {
    use super::*;
    use crate::time::Jiffies;

    fn ctx(now_us: u64, snd_una: u64, snd_nxt: u64) -> Context {
        Context {
            now_us,
            jiffies: now_us / 4000,
            clock: Jiffies::new(250),
            snd_una,
            snd_nxt,
            cwnd_limited: true,
            pacing_rate: 0,
        }
    }

    /// HyStart's delay rule: after 8 samples in a round, leave slow start when the
    /// round's minimum RTT exceeds the minimum RTT by clamp(min/8, 4 ms, 16 ms) — here
    /// 100 ms + 12.5 ms. ACKs 3 ms apart never make an ACK train (2 ms).
    #[test]
    fn hystart_leaves_slow_start_when_the_delay_grows() {
        let mut c = Cubic::default();
        let mut w = Window::new(16);
        c.init(&mut w, &ctx(0, 1, 100));
        let mut now = 1000;
        // Round 1 (ends when snd_una passes 100): 9 samples at the path's 100 ms.
        for _ in 0..9 {
            now += 3000;
            c.pkts_acked(&mut w, &ctx(now, 50, 200), Some(100_000));
        }
        assert_eq!((c.hystart_exit(), c.delay_min_us()), (None, 100_000));
        // Round 2: the queue adds 12.5 ms — not more than the threshold: stays.
        for _ in 0..9 {
            now += 3000;
            c.pkts_acked(&mut w, &ctx(now, 150, 300), Some(112_500));
        }
        assert_eq!((c.hystart_exit(), w.ssthresh), (None, crate::cc::INFINITE_SSTHRESH));
        // Round 3: 112.501 ms — the 9th sample of the round ends slow start at cwnd.
        w.cwnd = 40;
        for i in 0..9 {
            now += 3000;
            c.pkts_acked(&mut w, &ctx(now, 350, 400), Some(112_501));
            assert_eq!(c.hystart_exit().is_some(), i == 8, "sample {i}");
        }
        assert_eq!((c.hystart_exit(), w.ssthresh), (Some(HystartExit::Delay), 40));
        assert!(!w.in_slow_start());
    }

    /// Rounds are tracked below 16 segments, so each starts at the first ACK of a flight.
    /// Three flights of 10, 20 and 40 segments (sequence in segments, flight f sent at
    /// once and ACKed one segment per ACK, 100 µs apart, at f·40 ms); the first 4 ACKs of
    /// every flight carry an RTT of 40 ms, the rest (the queued tail) 46 ms — above the
    /// delay exit's 40 + clamp(40/8, 4, 16) = 45 ms. Rounds start at each flight's first
    /// ACK: each round's 9th sample finds its minimum at 40 ms, so slow start goes on.
    /// Started only at cwnd 16 (flight 1's 7th ACK, end_seq = snd_nxt = 23), the rounds
    /// would begin at flight 2's 13th ACK (end_seq 55) and at flight 3's 25th: samples
    /// 25..=40 of flight 3 are all tail, and the 9th of them (ACK 33, cwnd 72) would exit.
    #[test]
    fn hystart_rounds_start_at_a_flights_first_ack() {
        let mut c = Cubic::default();
        let mut w = Window::new(10);
        c.init(&mut w, &ctx(0, 1, 1));
        // (first segment, segments) of each flight.
        for (f, (start, len)) in [(1u64, 10u64), (11, 20), (31, 40)].into_iter().enumerate() {
            let f = f as u64 + 1;
            for j in 1..=len {
                let now = f * 40_000 + 100 * j;
                // Before this ACK: 2 new segments sent per ACK of the flight so far.
                let snd_nxt = start + len + 2 * (j - 1);
                w.cwnd = (10u32 << (f - 1)) + j as u32 - 1;
                let rtt = if j <= 4 { 40_000 } else { 46_000 };
                c.pkts_acked(&mut w, &ctx(now, start + j, snd_nxt), Some(rtt));
                if j == 1 {
                    // The round that begins here ends with this flight.
                    assert_eq!((c.round_start, c.end_seq), (now, start + len), "flight {f}");
                }
            }
        }
        assert_eq!(c.hystart_exit(), None);
        assert_eq!(w.ssthresh, crate::cc::INFINITE_SSTHRESH);
    }

    /// Below 16 segments HyStart does not look at all.
    #[test]
    fn hystart_waits_for_a_window_of_16() {
        let mut c = Cubic::default();
        let mut w = Window::new(10);
        c.init(&mut w, &ctx(0, 1, 100));
        for i in 0..20 {
            c.pkts_acked(
                &mut w,
                &ctx(1000 + i * 3000, 50, 200),
                Some(if i == 0 { 100_000 } else { 200_000 }),
            );
        }
        assert_eq!(c.hystart_exit(), None);
    }
}
