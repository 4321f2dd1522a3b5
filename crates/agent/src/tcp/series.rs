//! The TCP series: one row per TCP_INFO sample of every connection.

use std::path::Path;
use std::sync::Arc;

use arrow_array::{ArrayRef, BooleanArray, Int64Array, UInt32Array, UInt64Array};

use super::sampler::Sample;
use crate::output;
use crate::tcpinfo;

pub fn write(path: &Path, samples: &[Sample]) -> anyhow::Result<()> {
    fn u32s(samples: &[Sample], f: impl Fn(&Sample) -> u32) -> ArrayRef {
        Arc::new(UInt32Array::from_iter_values(samples.iter().map(f)))
    }
    fn u64s(samples: &[Sample], f: impl Fn(&Sample) -> u64) -> ArrayRef {
        Arc::new(UInt64Array::from_iter_values(samples.iter().map(f)))
    }
    fn opt_u64s(samples: &[Sample], end: usize, f: impl Fn(&Sample) -> u64) -> ArrayRef {
        Arc::new(UInt64Array::from_iter(
            samples.iter().map(|s| s.info.has(end).then(|| f(s))),
        ))
    }
    use tcpinfo::{END_BYTES_RETRANS, END_RCV_WND, END_SNDBUF_LIMITED, END_SND_WND};
    let s = samples;
    output::write_series(
        path,
        vec![
            ("conn", u32s(s, |x| x.conn)),
            (
                "t_ns",
                Arc::new(Int64Array::from_iter_values(s.iter().map(|x| x.t_ns as i64))) as ArrayRef,
            ),
            ("bytes", u64s(s, |x| x.bytes)),
            ("state", u32s(s, |x| x.info.raw.state as u32)),
            ("ca_state", u32s(s, |x| x.info.raw.ca_state as u32)),
            ("cwnd", u32s(s, |x| x.info.raw.snd_cwnd)),
            ("cwnd_bytes", u64s(s, |x| x.info.cwnd_bytes())),
            ("ssthresh", u32s(s, |x| x.info.raw.snd_ssthresh)),
            ("snd_mss", u32s(s, |x| x.info.raw.snd_mss)),
            ("srtt_us", u32s(s, |x| x.info.raw.rtt)),
            ("rttvar_us", u32s(s, |x| x.info.raw.rttvar)),
            ("min_rtt_us", u32s(s, |x| x.info.raw.min_rtt)),
            ("rcv_rtt_us", u32s(s, |x| x.info.raw.rcv_rtt)),
            ("unacked", u32s(s, |x| x.info.raw.unacked)),
            ("lost", u32s(s, |x| x.info.raw.lost)),
            ("retrans", u32s(s, |x| x.info.raw.retrans)),
            ("total_retrans", u32s(s, |x| x.info.raw.total_retrans)),
            ("pacing_rate_Bps", u64s(s, |x| x.info.raw.pacing_rate)),
            ("delivery_rate_Bps", u64s(s, |x| x.info.raw.delivery_rate)),
            (
                "delivery_rate_app_limited",
                Arc::new(BooleanArray::from_iter(s.iter().map(|x| Some(x.info.app_limited())))) as ArrayRef,
            ),
            ("bytes_acked", u64s(s, |x| x.info.raw.bytes_acked)),
            ("bytes_received", u64s(s, |x| x.info.raw.bytes_received)),
            ("notsent_bytes", u32s(s, |x| x.info.raw.notsent_bytes)),
            (
                "busy_time_us",
                opt_u64s(s, END_SNDBUF_LIMITED, |x| x.info.raw.busy_time),
            ),
            (
                "rwnd_limited_us",
                opt_u64s(s, END_SNDBUF_LIMITED, |x| x.info.raw.rwnd_limited),
            ),
            (
                "sndbuf_limited_us",
                opt_u64s(s, END_SNDBUF_LIMITED, |x| x.info.raw.sndbuf_limited),
            ),
            (
                "bytes_retrans",
                opt_u64s(s, END_BYTES_RETRANS, |x| x.info.raw.bytes_retrans),
            ),
            ("snd_wnd", opt_u64s(s, END_SND_WND, |x| x.info.raw.snd_wnd as u64)),
            // The receiving side's window and its autotuning (`tcp_rcv_space_adjust`).
            ("rcv_ssthresh", u32s(s, |x| x.info.raw.rcv_ssthresh)),
            ("rcv_space", u32s(s, |x| x.info.raw.rcv_space)),
            ("rcv_wnd", opt_u64s(s, END_RCV_WND, |x| x.info.raw.rcv_wnd as u64)),
        ],
    )
}
