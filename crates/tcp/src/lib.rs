//! `tcp`: a sans-IO TCP that behaves as Linux's does, for the simulator.
//!
//! Segments and time are passed in ([`Connection::receive`], [`Connection::poll`] at
//! virtual nanoseconds), segments come out; nothing reads a clock or draws randomness.
//! What it implements, each ported from Linux's `net/ipv4/tcp_*.c` with Linux's
//! constants (docs/simulator.md lists what it leaves out):
//!
//! - handshake with MSS (from the MTU, or `TCP_MAXSEG`), window scaling, SACK-permitted
//!   and timestamps: 1448-byte segments on a 1500-byte MTU;
//! - initial window 10; Reno and CUBIC ([`cc`]) as Linux's modules, CUBIC with HyStart;
//! - SACK scoreboard, RACK loss detection and the tail loss probe (RFC 8985), fast
//!   recovery with PRR (RFC 6937), D-SACKs sent and read (RFC 2883), spurious reductions
//!   undone (by D-SACKs and by timestamps, RFC 3522), RTO per RFC 6298 with Linux's estimator, 200 ms
//!   minimum and exponential backoff, timers on jiffies (HZ = 250 by default);
//! - delayed ACKs as Linux's (quick ACKs, every second segment, 40 ms `ato`, SACK
//!   compression), receive window from the receive buffer;
//! - ECN as Linux's default (`tcp_ecn = 2`): never requested by the connecting end, so
//!   connections between two of these never use it.

pub mod cc;
pub mod connection;
pub mod receiver;
pub mod rtt;
pub mod scoreboard;
pub mod segment;
pub mod send_buffer;
pub mod time;
pub mod undo;

pub use connection::{Config, Connection, State, Stats, TimerKind, UnknownCc};
pub use segment::{flags, SackBlocks, Segment, TcpRepr};
pub use time::Nanos;

/// The name runs record this stack by.
pub const STACK_NAME: &str = "transportlab-tcp";
