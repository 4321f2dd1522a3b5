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

    fn cong_avoid(&mut self, w: &mut Window, ctx: &Context, acked: u32) {
        let Some(acked) = w.slow_start_if_limited(ctx.cwnd_limited, acked) else {
            return;
        };
        let cwnd = w.cwnd;
        w.cong_avoid_ai(cwnd, acked);
    }
}
