//! Window sizes every controller shares (RFC 9002 §7.2), in bytes.

/// RFC 9002 §7.2 initial window: min(10·MSS, max(14720, 2·MSS)).
pub fn initial_window(mss: u64) -> u64 {
    (10 * mss).min(14_720.max(2 * mss))
}

/// RFC 9002 §7.2 kMinimumWindow: 2·MSS. Every controller here floors its window at it.
pub fn minimum_window(mss: u64) -> u64 {
    2 * mss
}
