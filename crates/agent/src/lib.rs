//! The agent's library: the parts of the `agent` binary that tests, fuzz targets and the
//! simulator (`tlab-sim`, which runs the same QUIC stack sans-IO) use without starting a
//! process: the congestion controllers behind quinn's interface, the transport settings,
//! TLS, the series writer. The endpoint protocol itself (wire formats, transfer
//! arithmetic, one-way delay exchange, summaries) is the `agent-proto` crate.

pub mod cc;
pub mod series;
pub mod tls;
pub mod transport;
