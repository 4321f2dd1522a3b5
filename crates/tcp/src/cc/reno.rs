//! Linux's Reno (`tcp_reno_ssthresh`, `tcp_reno_cong_avoid`): halve on a congestion
//! event, slow start to ssthresh, then +1 segment per window acknowledged.

use super::{CongestionOps, Context, Window};

#[derive(Debug, Clone, Copy, Default)]
pub struct Reno;

impl CongestionOps for Reno {
    fn name(&self) -> &'static str {
        "reno"
    }

    fn ssthresh(&mut self, w: &Window) -> u32 {
        (w.cwnd >> 1).max(2)
    }

    fn cong_avoid(&mut self, w: &mut Window, ctx: &Context, mut acked: u32) {
        if !ctx.cwnd_limited {
            return;
        }
        if w.in_slow_start() {
            acked = w.slow_start(acked);
            if acked == 0 {
                return;
            }
        }
        let cwnd = w.cwnd;
        w.cong_avoid_ai(cwnd, acked);
    }
}
