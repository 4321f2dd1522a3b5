//! `agent`: traffic endpoints that the transportlab runner starts inside host namespaces.
//!
//! Subcommands: tcp-server, tcp-client (bulk upload/download and request/response objects
//! over kernel TCP with a chosen congestion control), udp-send / udp-recv (constant bit
//! rate with per-packet one-way delay), echo / probe (RTT), quic-server / quic-client (bulk,
//! objects on parallel streams and paced messages over QUIC with the congestion controllers
//! of the `congestion` crate or quinn's BBR), utp-server / utp-client (uploads and downloads
//! over uTP with BitTorrent's reference libutp). Each writes a JSON summary and,
//! optionally, a columnar Arrow IPC time series. See docs/agent.md.

mod echo;
mod output;
mod quic;
mod sys;
mod tcp;
mod tcpinfo;
mod tcpstream;
mod udp;
mod units;
mod utp;

use agent::tls;

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{ArgGroup, Args, Parser, Subcommand, ValueEnum};

/// A bad-argument error detected after parsing (exit status 2, like clap's own errors).
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for UsageError {}

/// Returns early with a usage error (exit status 2).
#[macro_export]
macro_rules! usage {
    ($($t:tt)*) => { return Err(anyhow::Error::new($crate::UsageError(format!($($t)*)))) };
}

#[derive(Parser, Debug)]
#[command(
    name = "agent",
    version,
    about = "transportlab traffic endpoint (run inside a host namespace)"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// TCP server: serves upload, download and objects requests; prints `READY <port>`.
    TcpServer(TcpServerArgs),
    /// TCP client: one connection doing an upload, a download, a series of objects or paced records.
    TcpClient(TcpClientArgs),
    /// UDP sender: timestamped datagrams paced at a constant rate or interval.
    UdpSend(UdpSendArgs),
    /// UDP receiver: loss, duplicates, reordering, one-way delay, jitter; prints `READY <port>`.
    UdpRecv(UdpRecvArgs),
    /// UDP echo server: reflects every datagram; prints `READY <port>`.
    Echo(EchoArgs),
    /// RTT probe: timestamped datagrams to an echo server at a fixed interval.
    Probe(ProbeArgs),
    /// QUIC server: serves upload, download, objects and messages requests; prints `READY <port>`.
    QuicServer(QuicServerArgs),
    /// QUIC client: one connection doing a bulk transfer, parallel objects or paced messages.
    QuicClient(QuicClientArgs),
    /// uTP server (BitTorrent's libutp): serves one upload or download; prints `READY <port>`.
    UtpServer(UtpServerArgs),
    /// uTP client (BitTorrent's libutp): one connection doing an upload or a download.
    UtpClient(UtpClientArgs),
}

fn positive_duration(s: &str) -> Result<u64, String> {
    match units::parse_duration_ns(s)? {
        0 => Err(format!("'{s}': must be greater than zero")),
        v => Ok(v),
    }
}
fn size(s: &str) -> Result<u64, String> {
    units::parse_size_bytes(s)
}
fn positive_size(s: &str) -> Result<u64, String> {
    match units::parse_size_bytes(s)? {
        0 => Err(format!("'{s}': must be greater than zero")),
        v => Ok(v),
    }
}
fn rate(s: &str) -> Result<u64, String> {
    units::parse_rate_bps(s)
}
/// `KEY=VALUE` of `--cc-param`.
fn key_value(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
        _ => Err(format!("'{s}': expected KEY=VALUE")),
    }
}
/// Messages per second: a positive number, optionally followed by `/s`.
fn message_rate(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .strip_suffix("/s")
        .unwrap_or(s)
        .trim()
        .parse()
        .map_err(|_| format!("'{s}': expected messages per second, e.g. 50 or 50/s"))?;
    if !(v.is_finite() && v > 0.0 && v <= 1e9) {
        return Err(format!("'{s}': must be greater than zero (and at most 1e9)"));
    }
    Ok(v)
}

#[derive(Args, Debug)]
pub struct TcpServerArgs {
    /// Address and port to listen on (port 0 = ephemeral; the chosen port is printed).
    #[arg(long)]
    pub bind: SocketAddr,
    /// Congestion control for accepted connections (TCP_CONGESTION), e.g. cubic, bbr, reno.
    #[arg(long)]
    pub cc: Option<String>,
    /// TCP_INFO sampling interval.
    #[arg(long, default_value = "10ms", value_parser = positive_duration)]
    pub tcp_info_interval: u64,
    /// JSON summary path.
    #[arg(long)]
    pub summary: PathBuf,
    /// Arrow IPC time series path (TCP_INFO samples of every connection).
    #[arg(long)]
    pub series: Option<PathBuf>,
    /// Serve one connection, then exit.
    #[arg(long)]
    pub once: bool,
    /// Stop after this long even if no connection (or not all) completed.
    #[arg(long, value_parser = positive_duration)]
    pub duration: Option<u64>,
    /// TLS 1.3 over the connection (self-signed certificate, not verified by the client).
    #[arg(long)]
    pub tls: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Direction {
    /// Client sends, server receives.
    Upload,
    /// Server sends, client receives.
    Download,
}

#[derive(Args, Debug)]
#[command(group(ArgGroup::new("amount").required(true).args(["duration", "bytes", "objects"])))]
#[command(group(ArgGroup::new("received").args(["record_size", "page_primary"])))]
pub struct TcpClientArgs {
    /// Server address and port.
    #[arg(long)]
    pub connect: SocketAddr,
    /// Congestion control for this socket (TCP_CONGESTION), e.g. cubic, bbr, reno.
    #[arg(long)]
    pub cc: Option<String>,
    /// Transfer for this long (from connection establishment).
    #[arg(long, value_parser = positive_duration)]
    pub duration: Option<u64>,
    /// Transfer exactly this many bytes.
    #[arg(long, value_parser = positive_size)]
    pub bytes: Option<u64>,
    /// Request this many objects one after another on the connection.
    #[arg(long, requires = "object_size", value_parser = clap::value_parser!(u64).range(1..))]
    pub objects: Option<u64>,
    /// Size of each object (with --objects).
    #[arg(long, requires = "objects", value_parser = positive_size)]
    pub object_size: Option<u64>,
    /// Direction of a bulk transfer.
    #[arg(long, value_enum, default_value_t = Direction::Upload, conflicts_with = "objects")]
    pub direction: Direction,
    /// Records: the server sends one COBS-framed record of this many bytes (framing
    /// included, at least 19) every --record-interval for --duration; this client
    /// receives them as --delivery says.
    #[arg(long, requires_all = ["record_interval", "duration"], conflicts_with_all = ["bytes", "objects", "direction"],
          value_parser = positive_size)]
    pub record_size: Option<u64>,
    /// Time between the starts of consecutive records (with --record-size).
    #[arg(long, requires = "record_size", value_parser = positive_duration)]
    pub record_interval: Option<u64>,
    /// How records are received: `ordered` (from the socket's byte stream) or `unordered`
    /// (also from the connection's segments as they arrive, through a packet socket in
    /// this namespace; needs CAP_NET_RAW and an IPv4 server address).
    #[arg(long, value_enum, default_value_t = tcp::Delivery::Ordered, requires = "received")]
    pub delivery: tcp::Delivery,
    /// Arrow IPC per-record path (records: id, size, offset, send_ns, deliver_ns,
    /// latency_ns, via, wire_ns).
    #[arg(long, requires = "record_size")]
    pub record_series: Option<PathBuf>,
    /// Web pages: the primary object's size; the server sends it, then (once the client
    /// has it) the --page-secondaries, page after page for --duration, objects back to
    /// back (--delivery ordered) or each on an msTCP sub-stream received unordered
    /// (--delivery unordered).
    #[arg(long, requires = "duration", conflicts_with_all = ["bytes", "objects", "direction", "record_size"],
          value_parser = positive_size)]
    pub page_primary: Option<u64>,
    /// Sizes of the page's secondary objects, comma-separated (e.g. 10KB,10KB,20KB).
    #[arg(long, requires = "page_primary", value_delimiter = ',', value_parser = positive_size)]
    pub page_secondaries: Vec<u64>,
    /// How the server lays out a page's objects: `plain` (back to back) or `mstcp` (each
    /// on a sub-stream, the secondaries' chunks interleaved). Default: plain when
    /// --delivery is ordered, mstcp when unordered (which needs it).
    #[arg(long, value_enum, requires = "page_primary")]
    pub page_framing: Option<tcp::PageFraming>,
    /// Arrow IPC per-object path (pages: page, object, size, request_ns, first_byte_ns,
    /// complete_ns, page_start_ns, page_end_ns, via).
    #[arg(long, requires = "page_primary")]
    pub page_series: Option<PathBuf>,
    /// TCP_INFO sampling interval.
    #[arg(long, default_value = "10ms", value_parser = positive_duration)]
    pub tcp_info_interval: u64,
    /// TCP_MAXSEG set before connect (bytes).
    #[arg(long, value_parser = clap::value_parser!(u32).range(88..=65495))]
    pub mss: Option<u32>,
    /// TLS 1.3 over the connection (self-signed certificate, not verified by the client).
    #[arg(long)]
    pub tls: bool,
    /// Give up connecting after this long.
    #[arg(long, default_value = "10s", value_parser = positive_duration)]
    pub connect_timeout: u64,
    /// JSON summary path.
    #[arg(long)]
    pub summary: PathBuf,
    /// Arrow IPC time series path (TCP_INFO samples).
    #[arg(long)]
    pub series: Option<PathBuf>,
}

#[derive(Args, Debug)]
#[command(group(ArgGroup::new("pace").required(true).args(["rate", "interval"])))]
#[command(group(ArgGroup::new("stop").required(true).args(["duration", "count"])))]
pub struct UdpSendArgs {
    /// Destination address and port.
    #[arg(long)]
    pub to: SocketAddr,
    /// UDP payload size in bytes (at least 16: seq + timestamp).
    #[arg(long, value_parser = size)]
    pub size: u64,
    /// Payload bit rate (UDP payload bytes × 8 per second).
    #[arg(long, value_parser = rate)]
    pub rate: Option<u64>,
    /// Interval between bursts (between datagrams when --burst is 1).
    #[arg(long, value_parser = positive_duration)]
    pub interval: Option<u64>,
    /// Send for this long.
    #[arg(long, value_parser = positive_duration)]
    pub duration: Option<u64>,
    /// Send this many datagrams in total.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub count: Option<u64>,
    /// Datagrams sent back to back at each deadline.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    pub burst: u64,
    /// JSON summary path.
    #[arg(long)]
    pub summary: PathBuf,
}

/// The options both libutp ends take (utp-server and utp-client).
#[derive(Args, Debug)]
pub struct UtpArgs {
    /// libutp parameter KEY=VALUE (repeatable): target (LEDBAT target delay, ms, 1..10000;
    /// default 100), gain (window growth per RTT at zero delay, bytes, 1..1000000; default 3000).
    #[arg(long = "cc-param", value_name = "KEY=VALUE", value_parser = key_value)]
    pub cc_param: Vec<(String, String)>,
    /// UDP MTU libutp is told (UTP_GET_UDP_MTU): its largest datagram, uTP header included
    /// (576..1472 bytes). Default: libutp's own answer, 1402 over IPv4.
    #[arg(long, value_parser = size)]
    pub datagram_size: Option<u64>,
    /// Series sampling interval.
    #[arg(long, default_value = "10ms", value_parser = positive_duration)]
    pub sample_interval: u64,
    /// JSON summary path.
    #[arg(long)]
    pub summary: PathBuf,
    /// Arrow IPC time series path (payload bytes and libutp's window and delay over time).
    #[arg(long)]
    pub series: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct UtpServerArgs {
    /// Address and port to listen on (UDP; the port must be given).
    #[arg(long)]
    pub bind: SocketAddr,
    /// Stop after this long even if the connection did not end.
    #[arg(long, value_parser = positive_duration)]
    pub duration: Option<u64>,
    #[command(flatten)]
    pub libutp: UtpArgs,
}

#[derive(Args, Debug)]
pub struct UtpClientArgs {
    /// Server address and port.
    #[arg(long)]
    pub connect: SocketAddr,
    /// Transfer for this long (from connection establishment).
    #[arg(long, value_parser = positive_duration)]
    pub duration: Option<u64>,
    /// Transfer exactly this many bytes.
    #[arg(long, value_parser = positive_size)]
    pub bytes: Option<u64>,
    /// Which end sends the payload.
    #[arg(long, value_enum, default_value_t = Direction::Upload)]
    pub direction: Direction,
    /// Give up connecting after this long.
    #[arg(long, default_value = "10s", value_parser = positive_duration)]
    pub connect_timeout: u64,
    #[command(flatten)]
    pub libutp: UtpArgs,
}

#[derive(Args, Debug)]
pub struct UdpRecvArgs {
    /// Address and port to bind (port 0 = ephemeral; the chosen port is printed).
    #[arg(long)]
    pub bind: SocketAddr,
    /// Stop this long after binding.
    #[arg(long, value_parser = positive_duration)]
    pub duration: Option<u64>,
    /// Stop when no datagram arrived for this long (counted from the first datagram).
    #[arg(long, value_parser = positive_duration)]
    pub idle_timeout: Option<u64>,
    /// Socket receive buffer to request (UDP has no autotuning; a burst must fit).
    #[arg(long, default_value = "8MiB", value_parser = positive_size)]
    pub rcvbuf: u64,
    /// JSON summary path.
    #[arg(long)]
    pub summary: PathBuf,
    /// Arrow IPC per-packet series path.
    #[arg(long)]
    pub series: Option<PathBuf>,
    /// Arrow IPC per-record path: each datagram's first copy as a record (UDP records:
    /// one record per datagram), in the columns of tcp-client's --record-series (id =
    /// seq, deliver_ns = receive time, offset 0, via `datagram`).
    #[arg(long)]
    pub record_series: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct EchoArgs {
    /// Address and port to bind (port 0 = ephemeral; the chosen port is printed).
    #[arg(long)]
    pub bind: SocketAddr,
    /// Stop this long after binding (default: until SIGTERM/SIGINT).
    #[arg(long, value_parser = positive_duration)]
    pub duration: Option<u64>,
    /// Write the echo's CLOCK_MONOTONIC receive time (u64 BE) at payload offset 16 of
    /// datagrams of at least 24 bytes, so probes can split RTT into one-way delays.
    #[arg(long)]
    pub stamp: bool,
    /// Socket receive buffer to request.
    #[arg(long, default_value = "8MiB", value_parser = positive_size)]
    pub rcvbuf: u64,
    /// Optional JSON summary path (packet and byte counts).
    #[arg(long)]
    pub summary: Option<PathBuf>,
}

#[derive(Args, Debug)]
#[command(group(ArgGroup::new("stop").required(true).args(["count", "duration"])))]
pub struct ProbeArgs {
    /// Echo server address and port.
    #[arg(long)]
    pub to: SocketAddr,
    /// Interval between probes.
    #[arg(long, value_parser = positive_duration)]
    pub interval: u64,
    /// Number of probes.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub count: Option<u64>,
    /// Send probes for this long.
    #[arg(long, value_parser = positive_duration)]
    pub duration: Option<u64>,
    /// Probe payload size in bytes (at least 24).
    #[arg(long, default_value = "64", value_parser = size)]
    pub size: u64,
    /// A probe without an echo within this time of its sending is lost.
    #[arg(long, default_value = "1s", value_parser = positive_duration)]
    pub timeout: u64,
    /// JSON summary path.
    #[arg(long)]
    pub summary: PathBuf,
    /// Arrow IPC per-probe series path.
    #[arg(long)]
    pub series: Option<PathBuf>,
}

/// Options both QUIC ends take.
#[derive(Args, Debug)]
pub struct QuicCommonArgs {
    /// Congestion controller of this endpoint's connections: a `congestion` crate name
    /// (newreno, cubic, vegas, ledbat, delay-correlation) or quinn's own bbr, quinn-cubic,
    /// quinn-newreno.
    #[arg(long, default_value = "cubic")]
    pub cc: String,
    /// Controller parameter KEY=VALUE (repeatable); each controller checks its own keys.
    #[arg(long = "cc-param", value_name = "KEY=VALUE", value_parser = key_value)]
    pub cc_param: Vec<(String, String)>,
    /// Fixed QUIC datagram size (UDP payload bytes, 1200..65527); MTU discovery off.
    /// Default: start at 1200 and discover up to 1452.
    #[arg(long, value_parser = size)]
    pub datagram_size: Option<u64>,
    /// Sampling interval of the series.
    #[arg(long, default_value = "10ms", value_parser = positive_duration)]
    pub sample_interval: u64,
    /// UDP receive buffer to request (default: the namespace's net.core.rmem_default).
    #[arg(long, value_parser = positive_size)]
    pub rcvbuf: Option<u64>,
    /// UDP send buffer to request (default: the namespace's net.core.wmem_default).
    #[arg(long, value_parser = positive_size)]
    pub sndbuf: Option<u64>,
    /// JSON summary path.
    #[arg(long)]
    pub summary: PathBuf,
    /// Arrow IPC time series path (connection statistics every --sample-interval).
    #[arg(long)]
    pub series: Option<PathBuf>,
    /// Arrow IPC per-message path (messages mode, the receiving end: seq, send/recv time).
    #[arg(long)]
    pub message_series: Option<PathBuf>,
    /// qlog of each connection (JSON-SEQ, `.sqlog`; qvis opens it). A server's connection
    /// n > 0 writes beside it with `-n` before the extension.
    #[arg(long)]
    pub qlog: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct QuicServerArgs {
    /// Address and port to listen on (port 0 = ephemeral; the chosen port is printed).
    #[arg(long)]
    pub bind: SocketAddr,
    #[command(flatten)]
    pub common: QuicCommonArgs,
    /// Serve one connection, then exit.
    #[arg(long)]
    pub once: bool,
    /// Stop after this long even if no connection (or not all) completed.
    #[arg(long, value_parser = positive_duration)]
    pub duration: Option<u64>,
}

#[derive(Args, Debug)]
#[command(group(ArgGroup::new("amount").required(true).multiple(true)
    .args(["duration", "bytes", "objects", "message_size", "record_size"])))]
pub struct QuicClientArgs {
    /// Server address and port.
    #[arg(long)]
    pub connect: SocketAddr,
    #[command(flatten)]
    pub common: QuicCommonArgs,
    /// Bulk: transfer for this long (from connection establishment); messages: send for
    /// this long.
    #[arg(long, value_parser = positive_duration)]
    pub duration: Option<u64>,
    /// Bulk: transfer exactly this many bytes.
    #[arg(long, value_parser = positive_size, conflicts_with_all = ["duration", "objects", "message_size"])]
    pub bytes: Option<u64>,
    /// Download this many objects, each on its own bidirectional stream.
    #[arg(long, requires = "object_size", conflicts_with_all = ["duration", "message_size"],
          value_parser = clap::value_parser!(u64).range(1..))]
    pub objects: Option<u64>,
    /// Size of each object (with --objects).
    #[arg(long, requires = "objects", value_parser = positive_size)]
    pub object_size: Option<u64>,
    /// Objects: objects in flight at once (default: all of them). Upload and download: the
    /// streams of the transfer (default 1), --bytes split across them (the remainder on the
    /// first) or each sending until --duration.
    #[arg(long, conflicts_with = "message_size",
          value_parser = clap::value_parser!(u64).range(1..=agent_proto::wire::request::MAX_STREAMS))]
    pub streams: Option<u64>,
    /// Messages mode: size of each message (at least 16 bytes: seq + send time).
    #[arg(long, requires_all = ["message_rate", "duration"], value_parser = positive_size)]
    pub message_size: Option<u64>,
    /// Messages per second (with --message-size), e.g. 50 or 50/s.
    #[arg(long, requires = "message_size", value_parser = message_rate)]
    pub message_rate: Option<f64>,
    /// Which end sends the bulk payload or the messages.
    #[arg(long, value_enum, default_value_t = Direction::Upload, conflicts_with = "objects")]
    pub direction: Direction,
    /// Records: the server sends one COBS-framed record of this many bytes (framing
    /// included, at least 19) every --record-interval for --duration, as over TCP; this
    /// client receives them as --delivery says.
    #[arg(long, requires_all = ["record_interval", "duration"],
          conflicts_with_all = ["bytes", "objects", "message_size", "streams", "direction"],
          value_parser = positive_size)]
    pub record_size: Option<u64>,
    /// Time between the starts of consecutive records (with --record-size).
    #[arg(long, requires = "record_size", value_parser = positive_duration)]
    pub record_interval: Option<u64>,
    /// How records are received: `ordered` (one stream read in order), `unordered` (one
    /// stream, its chunks read unordered into the record assembler) or `streams` (a
    /// stream per record).
    #[arg(long, value_enum, default_value_t = quic::QuicDelivery::Ordered, requires = "record_size")]
    pub delivery: quic::QuicDelivery,
    /// Arrow IPC per-record path (records: id, size, offset, send_ns, deliver_ns,
    /// latency_ns, via, wire_ns, stream_ns), as tcp-client's.
    #[arg(long, requires = "record_size")]
    pub record_series: Option<PathBuf>,
    /// Give up connecting after this long.
    #[arg(long, default_value = "10s", value_parser = positive_duration)]
    pub connect_timeout: u64,
}

fn main() {
    let cli = Cli::parse(); // exits with status 2 on bad arguments
    sys::install_stop_handlers();
    sys::set_min_timer_slack();
    let (name, result) = match cli.cmd {
        Cmd::TcpServer(a) => ("tcp-server", tcp::server(a)),
        Cmd::TcpClient(a) => ("tcp-client", tcp::client(a)),
        Cmd::UdpSend(a) => ("udp-send", udp::send(a)),
        Cmd::UdpRecv(a) => ("udp-recv", udp::recv(a)),
        Cmd::Echo(a) => ("echo", echo::echo(a)),
        Cmd::Probe(a) => ("probe", echo::probe(a)),
        Cmd::QuicServer(a) => ("quic-server", quic::server(a)),
        Cmd::QuicClient(a) => ("quic-client", quic::client(a)),
        Cmd::UtpServer(a) => ("utp-server", utp::server(a)),
        Cmd::UtpClient(a) => ("utp-client", utp::client(a)),
    };
    if let Err(e) = result {
        let msg = format!("{e:#}").replace('\n', " ");
        eprintln!("agent {name}: error: {msg}");
        let code = if e.is::<UsageError>() { 2 } else { 1 };
        std::process::exit(code);
    }
}
