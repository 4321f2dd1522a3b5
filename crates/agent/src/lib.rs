//! The agent's library: the parts of the `agent` binary that tests, fuzz targets and the
//! simulator (`tlab-sim`, which runs the same QUIC stack sans-IO) use without starting a
//! process: the request wire, the congestion controllers behind quinn's interface, TLS.

pub mod cc;
pub mod one_way;
pub mod series;
pub mod stats;
pub mod tls;
pub mod transport;
pub mod wire;
