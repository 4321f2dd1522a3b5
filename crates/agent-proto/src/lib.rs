//! The agents' endpoint protocol, sans-IO: everything two transportlab endpoints agree on
//! that is not sockets, threads or clocks. The agent (real sockets, `crates/agent`) and the
//! simulator's endpoints (virtual time, `crates/sim`) both speak it, so an emulated and a
//! simulated run of one scenario exchange the same bytes and write the same summaries.
//!
//! - [`wire`]: the request a client sends first and every other message, byte for byte.
//! - [`transfer`]: the arithmetic of a transfer (each stream's share of the bytes).
//! - [`one_way`]: the one-way delay exchange over QUIC DATAGRAM frames.
//! - [`summary`]: the summary structures both write, under one set of field names.
//! - [`stats`]: the descriptive statistics the summaries hold.
//!
//! Times are arguments (nanoseconds on the caller's clock); nothing here reads a clock,
//! sends or receives.

pub mod one_way;
pub mod stats;
pub mod summary;
pub mod transfer;
pub mod wire;
