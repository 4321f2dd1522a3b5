//! quic-server and quic-client: bulk, objects on parallel streams, constant-rate
//! messages and paced records (`records`) over QUIC (quinn), with the congestion controller chosen per endpoint.
//!
//! Everything asynchronous lives here: each subcommand runs one tokio current-thread
//! runtime (so a transfer uses one core, like a single-threaded QUIC stack, and CPU per
//! gigabit is comparable), the rest of the agent stays synchronous.

mod client;
mod one_way;
pub(crate) mod records;
mod series;
mod server;
mod transfer;

use std::net::{SocketAddr, UdpSocket};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use quinn::TransportConfig;
use quinn_proto::QlogStream;
use serde::Serialize;
use socket2::{Domain, Protocol, Socket, Type};

pub use cc::CcChoice;
pub use client::client;
pub use records::QuicDelivery;
pub use server::server;

use crate::{sys, QuicCommonArgs};
use agent::cc;

/// How long a closing endpoint waits for its CONNECTION_CLOSE to go out and drain.
pub const CLOSE_WAIT: Duration = Duration::from_secs(3);
/// How often the stop flag (set by SIGTERM/SIGINT) is polled.
const STOP_POLL: Duration = Duration::from_millis(10);

/// Options both ends share.
#[derive(Clone, Debug)]
pub struct Options {
    pub cc: CcChoice,
    /// `--datagram-size`: fixed QUIC datagram size (UDP payload), MTU discovery off.
    pub datagram_size: Option<u16>,
    pub rcvbuf: Option<u64>,
    pub sndbuf: Option<u64>,
}

impl Options {
    /// Validates what clap cannot: the controller name and parameters, the datagram size.
    pub fn parse(c: &QuicCommonArgs) -> anyhow::Result<Options> {
        let cc = match CcChoice::parse(&c.cc, &c.cc_param) {
            Ok(c) => c,
            Err(e) => crate::usage!("{e}"),
        };
        let datagram_size = match c.datagram_size {
            None => None,
            Some(n @ 1200..=65527) => Some(n as u16),
            Some(n) => crate::usage!("--datagram-size {n}: must be between 1200 (QUIC's minimum) and 65527 bytes"),
        };
        Ok(Options {
            cc,
            datagram_size,
            rcvbuf: c.rcvbuf,
            sndbuf: c.sndbuf,
        })
    }

    /// The `params` fields both ends share: these options and the rest of `c`, the
    /// arguments they were parsed from.
    pub fn params<'a>(&'a self, c: &'a QuicCommonArgs) -> OptionsParams<'a> {
        OptionsParams {
            sample_interval_ns: c.sample_interval,
            summary: &c.summary,
            series: c.series.as_deref(),
            message_series: c.message_series.as_deref(),
            cc: &self.cc.name,
            cc_params: &self.cc.params,
            datagram_size: self.datagram_size,
            rcvbuf: self.rcvbuf,
            sndbuf: self.sndbuf,
        }
    }

    /// Transport parameters of one connection, with its own controller factory and probe,
    /// and its qlog written to `qlog` if given.
    pub fn transport(&self, probe: Arc<cc::Probe>, qlog: Option<QlogStream>) -> TransportConfig {
        agent::transport::config(&self.cc, probe, self.datagram_size, qlog)
    }
}

/// A qlog stream into a new file at `path` (`transport::qlog_file`), its event times
/// relative to now.
pub fn qlog_file(path: &Path, end: &str) -> anyhow::Result<QlogStream> {
    agent::transport::qlog_file(
        path,
        agent::transport::QlogWriter::Agent,
        end,
        std::time::Instant::now(),
    )
    .map_err(|e| anyhow::anyhow!("--qlog {e}"))
}

#[derive(Serialize)]
pub struct OptionsParams<'a> {
    pub sample_interval_ns: u64,
    pub summary: &'a Path,
    pub series: Option<&'a Path>,
    pub message_series: Option<&'a Path>,
    pub cc: &'a str,
    pub cc_params: &'a congestion::Params,
    pub datagram_size: Option<u16>,
    pub rcvbuf: Option<u64>,
    pub sndbuf: Option<u64>,
}

/// The endpoint's UDP socket. Buffers are only set when asked for (`--rcvbuf`,
/// `--sndbuf`): experiments compare the namespace's defaults with enlarged buffers, and
/// quinn-udp itself never resizes them (it only enables GRO and sets IP_MTU_DISCOVER).
pub struct EndpointSocket {
    /// A duplicate of the socket quinn uses, for reading buffer sizes and drop counts.
    observer: Socket,
}

impl EndpointSocket {
    pub fn bind(addr: SocketAddr, o: &Options) -> anyhow::Result<(UdpSocket, EndpointSocket)> {
        let s = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))
            .context("cannot create UDP socket")?;
        if let Some(b) = o.rcvbuf {
            sys::set_rcvbuf(&s, b).with_context(|| format!("cannot set --rcvbuf {b}"))?;
        }
        if let Some(b) = o.sndbuf {
            sys::set_sndbuf(&s, b).with_context(|| format!("cannot set --sndbuf {b}"))?;
        }
        s.bind(&addr.into()).with_context(|| format!("cannot bind {addr}"))?;
        let observer = s.try_clone().context("cannot duplicate the UDP socket")?;
        Ok((s.into(), EndpointSocket { observer }))
    }

    pub fn port(&self) -> u16 {
        self.observer
            .local_addr()
            .ok()
            .and_then(|a| a.as_socket())
            .map_or(0, |a| a.port())
    }

    pub fn summary(&self) -> SocketSummary {
        SocketSummary {
            udp_rcvbuf: self.observer.recv_buffer_size().ok(),
            udp_sndbuf: self.observer.send_buffer_size().ok(),
            socket_drops: sys::udp_socket_drops(&self.observer),
        }
    }
}

/// The socket's fields of both ends' `results`.
#[derive(Serialize)]
pub struct SocketSummary {
    /// Kernel values, which count overhead (≈ 2 × the request).
    pub udp_rcvbuf: Option<usize>,
    pub udp_sndbuf: Option<usize>,
    /// Datagrams the kernel dropped on this socket (receive buffer full).
    pub socket_drops: Option<u64>,
}

pub fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

/// Why an endpoint stops early.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    Signal,
    Duration,
}

impl Stop {
    pub fn name(self) -> &'static str {
        match self {
            Stop::Signal => "signal",
            Stop::Duration => "duration",
        }
    }
}

/// Raises `Stop` on the returned channel when SIGTERM/SIGINT arrives or `deadline_ns`
/// (CLOCK_MONOTONIC) passes. Every waiting loop selects on it.
pub fn spawn_stopper(deadline_ns: Option<u64>) -> tokio::sync::watch::Receiver<Option<Stop>> {
    let (tx, rx) = tokio::sync::watch::channel(None);
    tokio::spawn(async move {
        loop {
            if sys::stop_requested() {
                let _ = tx.send(Some(Stop::Signal));
                return;
            }
            if deadline_ns.is_some_and(|d| sys::now_ns() >= d) {
                let _ = tx.send(Some(Stop::Duration));
                return;
            }
            tokio::time::sleep(STOP_POLL).await;
        }
    });
    rx
}

/// Resolves when the stopper fired.
pub async fn stopped(rx: &mut tokio::sync::watch::Receiver<Option<Stop>>) -> Stop {
    let stop = rx.wait_for(|s| s.is_some()).await.ok().and_then(|s| *s);
    match stop {
        Some(s) => s,
        // The stopper never exits without sending; if it did, never resolve.
        None => std::future::pending().await,
    }
}

/// A tokio instant for a CLOCK_MONOTONIC deadline in ns.
pub fn tokio_instant(deadline_ns: u64) -> tokio::time::Instant {
    tokio::time::Instant::now() + Duration::from_nanos(deadline_ns.saturating_sub(sys::now_ns()))
}

pub use agent_proto::summary::QuicStats;

/// Connection counters for the summary (`quic`), from quinn's statistics and the
/// controller probe.
pub fn quic_stats(conn: &quinn::Connection, probe: &cc::Probe) -> QuicStats {
    QuicStats::new(&conn.stats(), probe.counters())
}
