//! Self-delimiting records for unordered delivery over a byte stream (uCOBS, see
//! docs/agent.md, "Records: ordered and unordered receive"). No I/O: the
//! caller feeds bytes and reads results.
//!
//! - [`cobs`]: Consistent Overhead Byte Stuffing (Cheshire & Baker): a record becomes bytes
//!   without a zero, at most one byte longer per 254.
//! - [`frame`]: `0x00 ‖ COBS(record) ‖ 0x00`, one write per record.
//! - [`header`]: what a record carries so a receiver measures its latency: record id and
//!   send time (CLOCK_MONOTONIC ns), then zero padding to the requested size.
//! - [`assembler`]: takes `(stream offset, bytes)` ranges in any order, overlapping or
//!   repeated, and hands over each complete record exactly once, as soon as all bytes
//!   between its two delimiters are there; malformed frames are counted and skipped.
//! - [`mstcp`]: msTCP, ordered sub-streams multiplexed as chunks (stream id, sequence)
//!   over one stream received unordered; each sub-stream ordered only within itself.

pub mod assembler;
pub mod cobs;
pub mod frame;
pub mod header;
pub mod mstcp;

pub use assembler::{Assembler, Delivered};
pub use header::RecordHeader;
