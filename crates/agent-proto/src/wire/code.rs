//! QUIC application error codes, carried by CONNECTION_CLOSE and RESET_STREAM.

/// Connection closed after a complete transfer.
pub const DONE: u32 = 0;
/// The sender stopped at the end of `--duration`, discarding data not yet sent.
pub const DURATION_OVER: u32 = 1;
/// The endpoint was stopped (signal or `--duration` of a server).
pub const STOPPED: u32 = 2;
/// The peer's request was malformed.
pub const BAD_REQUEST: u32 = 3;
