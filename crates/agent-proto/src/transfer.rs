//! The arithmetic of a transfer, the same at every end that runs one.

/// Stream `stream`'s share of `total` bytes split over `streams` streams: `total / streams`
/// each, the remainder on the first (the control stream). `u64::MAX` stands for "until the
/// end" and is every stream's share.
pub fn share(total: u64, streams: u64, stream: u64) -> u64 {
    if total == u64::MAX {
        return u64::MAX;
    }
    let streams = streams.max(1);
    total / streams + if stream == 0 { total % streams } else { 0 }
}

/// Nanoseconds as seconds (summary fields `*_s`).
pub fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}

/// `bytes` over `ns` in bit/s for a summary; None when no time passed.
pub fn bps(bytes: u64, ns: u64) -> Option<f64> {
    (ns != 0).then(|| bytes as f64 * 8.0 / secs(ns))
}

/// Goodput as every end reports it (docs/metrics.md): `bytes` over the time from just
/// before connecting to `end_ns`, so the handshake counts; None when no time passed.
pub fn goodput_bps(bytes: u64, connect_start_ns: u64, end_ns: u64) -> Option<f64> {
    bps(bytes, end_ns.saturating_sub(connect_start_ns))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_add_up_and_the_remainder_goes_first() {
        for (total, streams) in [(10, 3), (0, 4), (7, 1), (1, 9), (1 << 40, 7)] {
            let s: Vec<u64> = (0..streams).map(|k| share(total, streams, k)).collect();
            assert_eq!(s.iter().sum::<u64>(), total, "{total} over {streams}");
            assert!(s[1..].iter().all(|&x| x == total / streams));
        }
        assert_eq!(share(10, 3, 0), 4);
        assert_eq!(share(u64::MAX, 5, 3), u64::MAX);
    }

    #[test]
    fn rates_and_seconds() {
        assert_eq!(secs(1_500_000_000), 1.5);
        assert_eq!(bps(1_000, 1_000_000_000), Some(8_000.0));
        assert_eq!(bps(1_000, 0), None);
        // 1 000 bytes from a connect at 2 s to the last byte at 3 s: the handshake counts.
        assert_eq!(goodput_bps(1_000, 2_000_000_000, 3_000_000_000), Some(8_000.0));
        assert_eq!(goodput_bps(1_000, 5, 5), None);
    }
}
