//! tcp-server: accepts connections, serves each on its own thread, and writes one summary
//! (and series) covering all of them.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::Duration;

use agent_proto::wire::object::{self, ObjectRequest};
use agent_proto::wire::records::{self as records_wire, RecordsRequest};
use agent_proto::wire::request::{self, Mode, Request, Transport};
use anyhow::{bail, Context};
use serde::Serialize;
use socket2::{Domain, Protocol, Socket, Type};

use super::page::{serve_pages, ServedPages};
use super::records::{send_records, SentRecords};
use super::sampler::{Progress, Sample, Sampler};
use super::transfer::{close_after_sending, prepare, read_full, read_some, send_bulk, Filled};
use super::{series, BUF_LEN, POLL};
use crate::output::{self, bps, secs, RequestSummary, ServedTransfer};
use crate::sys::Cpu;
use crate::tcpinfo::{self, TcpInfoSummary};
use crate::tcpstream::{Stopped, Stream};
use crate::{sys, usage, TcpServerArgs};

#[derive(Serialize)]
struct Params<'a> {
    bind: String,
    cc: Option<&'a str>,
    tcp_info_interval_ns: u64,
    once: bool,
    tls: bool,
    duration_ns: Option<u64>,
    summary: &'a Path,
    series: Option<&'a Path>,
}

#[derive(Serialize)]
struct Results {
    port: u16,
    connections: Vec<ConnSummary>,
    bytes_received: u64,
    bytes_sent: u64,
    samples: usize,
    /// CPU time of this process (getrusage), taken after every connection ended.
    #[serde(flatten)]
    cpu: Cpu,
}

/// One accepted connection in the server's `results.connections`.
#[derive(Serialize)]
struct ConnSummary {
    conn: u32,
    peer: String,
    cc: Option<String>,
    tls: bool,
    request: Option<RequestSummary>,
    #[serde(flatten)]
    transfer: ServedTransfer,
    objects_served: u64,
    accepted_ns: u64,
    tls_handshake_s: Option<f64>,
    header_ns: u64,
    first_byte_ns: Option<u64>,
    last_byte_ns: Option<u64>,
    end_ns: u64,
    duration_s: f64,
    throughput_bps: Option<f64>,
    retransmits: Option<u32>,
    tcp_info: Option<TcpInfoSummary>,
    samples: usize,
    /// Records mode: what was sent.
    records: Option<SentRecords>,
    /// Page mode: what was served.
    page: Option<ServedPages>,
}

pub fn server(a: TcpServerArgs) -> anyhow::Result<()> {
    if a.cc.as_deref() == Some("") {
        usage!("--cc must not be empty");
    }
    let params = Params {
        bind: a.bind.to_string(),
        cc: a.cc.as_deref(),
        tcp_info_interval_ns: a.tcp_info_interval,
        once: a.once,
        tls: a.tls,
        duration_ns: a.duration,
        summary: &a.summary,
        series: a.series.as_deref(),
    };
    let sock = Socket::new(Domain::for_address(a.bind), Type::STREAM, Some(Protocol::TCP))
        .context("cannot create TCP socket")?;
    sock.set_reuse_address(true)?;
    if let Some(cc) = &a.cc {
        // Accepted sockets inherit the listener's congestion control.
        sys::set_congestion(&sock, cc)?;
    }
    sock.bind(&a.bind.into())
        .with_context(|| format!("cannot bind {}", a.bind))?;
    sock.listen(1024).context("listen failed")?;
    sock.set_read_timeout(Some(POLL))?; // makes accept() time out
    let listener: TcpListener = sock.into();
    let tls = match a.tls {
        true => Some(Arc::new(crate::tls::server_config()?)),
        false => None,
    };
    let port = listener.local_addr()?.port();
    let start_ns = sys::now_ns();
    let deadline = a.duration.map(|d| start_ns + d);
    output::announce_ready(port);

    let mut handles: Vec<JoinHandle<ConnOutcome>> = Vec::new();
    let mut next_conn = 0u32;
    let past_deadline = || deadline.is_some_and(|d| sys::now_ns() >= d);
    let stopped_by = loop {
        if sys::stop_requested() {
            break "signal";
        }
        if past_deadline() {
            sys::request_stop();
            break "duration";
        }
        match listener.accept() {
            Ok((stream, peer)) => {
                let conn = next_conn;
                next_conn += 1;
                let interval = a.tcp_info_interval;
                let tls = tls.clone();
                let h = thread::Builder::new()
                    .name(format!("conn-{conn}"))
                    .spawn(move || serve_connection(stream, peer, conn, interval, tls))?;
                if a.once {
                    while !h.is_finished() {
                        if past_deadline() {
                            sys::request_stop();
                        }
                        thread::sleep(Duration::from_millis(5));
                    }
                    handles.push(h);
                    break if sys::stop_requested() { "signal" } else { "once" };
                }
                handles.push(h);
            }
            Err(e) if sys::is_retry(&e) => continue,
            Err(e) => return Err(e).context("accept failed"),
        }
    };
    drop(listener);

    let mut conns = Vec::new();
    let mut samples = Vec::new();
    let mut first_error = None;
    for h in handles {
        let o = h.join().map_err(|_| anyhow::anyhow!("connection thread panicked"))?;
        if first_error.is_none() {
            first_error = o.error.clone();
        }
        conns.push(o.summary);
        samples.extend(o.samples);
    }
    let results = Results {
        port,
        bytes_received: conns.iter().map(|c| c.transfer.bytes_received).sum(),
        bytes_sent: conns.iter().map(|c| c.transfer.bytes_sent).sum(),
        connections: conns,
        samples: samples.len(),
        cpu: Cpu::now(),
    };
    let summary = output::envelope("tcp-server", params, start_ns, sys::now_ns(), stopped_by, results);
    if let Some(p) = &a.series {
        series::write(p, &samples)?;
    }
    output::write_server_summary(&a.summary, &summary, a.once, first_error)
}

struct ConnOutcome {
    summary: ConnSummary,
    samples: Vec<Sample>,
    error: Option<String>,
}

#[derive(Default)]
struct ServerTransfer {
    header: Option<Request>,
    header_ns: u64,
    bytes_sent: u64,
    bytes_received: u64,
    first_byte_ns: Option<u64>,
    last_byte_ns: Option<u64>,
    objects_served: u64,
    records: Option<SentRecords>,
    page: Option<ServedPages>,
    complete: bool,
    stopped: bool,
}

fn serve_connection(
    tcp: TcpStream,
    peer: SocketAddr,
    conn: u32,
    interval_ns: u64,
    tls: Option<Arc<rustls::ServerConfig>>,
) -> ConnOutcome {
    let accepted_ns = sys::now_ns();
    let mut t = ServerTransfer::default();
    let mut sampler = None;
    let mut tls_done_ns = None;
    let r = (|| -> anyhow::Result<()> {
        prepare(&tcp)?;
        let s = sampler.insert(Sampler::start(Arc::new(Progress::new(&tcp, conn, interval_ns)?))?);
        // A duplicate of the socket, so `tcp` stays readable for TCP_INFO.
        let dup = tcp.try_clone()?;
        let mut stream = match tls {
            None => Stream::Plain(dup),
            Some(cfg) => match Stream::tls_server(dup, cfg).context("TLS handshake failed")? {
                Ok(s) => {
                    tls_done_ns = Some(sys::now_ns());
                    s
                }
                Err(Stopped) => {
                    t.stopped = true;
                    return Ok(());
                }
            },
        };
        serve_transfer(&mut stream, &mut t, &s.progress)
    })();
    let samples = sampler.map(|s| s.finish()).unwrap_or_default();
    let final_info = tcpinfo::read(&tcp).ok();
    let cc = sys::get_congestion(&tcp);
    drop(tcp);
    let end_ns = sys::now_ns();
    let error = r.err().map(|e| format!("connection {conn} from {peer}: {e:#}"));

    let mode = t.header.map(|h| h.mode);
    let sender_is_server = matches!(mode, Some(Mode::Download | Mode::Objects | Mode::Records | Mode::Page));
    let bytes = if sender_is_server {
        t.bytes_sent
    } else {
        t.bytes_received
    };
    let (transfer_start, transfer_end) = match mode {
        Some(Mode::Upload) => (t.first_byte_ns.unwrap_or(t.header_ns), t.last_byte_ns.unwrap_or(end_ns)),
        _ => (t.header_ns, end_ns),
    };
    let transfer_ns = transfer_end.saturating_sub(transfer_start);
    let summary = ConnSummary {
        conn,
        peer: peer.to_string(),
        cc,
        tls: tls_done_ns.is_some(),
        request: t.header.map(|h| RequestSummary::of(&h, Transport::Tcp)),
        transfer: ServedTransfer {
            complete: t.complete,
            stopped: t.stopped,
            error: error.clone(),
            bytes,
            bytes_sent: t.bytes_sent,
            bytes_received: t.bytes_received,
            ..ServedTransfer::requested(mode, sender_is_server)
        },
        objects_served: t.objects_served,
        accepted_ns,
        tls_handshake_s: tls_done_ns.map(|d| secs(d - accepted_ns)),
        header_ns: t.header_ns,
        first_byte_ns: t.first_byte_ns,
        last_byte_ns: t.last_byte_ns,
        end_ns,
        duration_s: secs(transfer_ns),
        throughput_bps: bps(bytes, transfer_ns),
        retransmits: final_info.filter(|_| sender_is_server).map(|i| i.raw.total_retrans),
        tcp_info: final_info.map(|i| i.summary()),
        samples: samples.len(),
        records: t.records,
        page: t.page,
    };
    ConnOutcome {
        summary,
        samples,
        error,
    }
}

/// Reads what the client must send whole (`what`, for the error): `false` if this end was
/// stopped first (the transfer says so), an error if the client closed before the end.
fn read_whole(s: &mut Stream, buf: &mut [u8], what: &str, t: &mut ServerTransfer) -> anyhow::Result<bool> {
    match read_full(s, buf)? {
        Filled::Full => Ok(true),
        Filled::Stopped => {
            t.stopped = true;
            Ok(false)
        }
        Filled::Eof(n) => bail!("client closed the connection after {n} of {} {what} bytes", buf.len()),
    }
}

fn serve_transfer(s: &mut Stream, t: &mut ServerTransfer, counter: &Progress) -> anyhow::Result<()> {
    let mut hdr = [0u8; request::TCP_LEN];
    if !read_whole(s, &mut hdr, "header", t)? {
        return Ok(());
    }
    let h = Request::decode(Transport::Tcp, &hdr).map_err(|e| anyhow::anyhow!("bad request header: {e}"))?;
    t.header = Some(h);
    t.header_ns = sys::now_ns();
    h.validate()?;
    let mut buf = vec![0u8; BUF_LEN];
    match h.mode {
        Mode::Upload => {
            loop {
                match read_some(s, &mut buf)? {
                    None => {
                        t.stopped = true;
                        return Ok(());
                    }
                    Some(0) => break,
                    Some(n) => {
                        let now = sys::now_ns();
                        t.first_byte_ns.get_or_insert(now);
                        t.last_byte_ns = Some(now);
                        t.bytes_received += n as u64;
                        counter.add(n);
                    }
                }
            }
            // Everything is read: our FIN tells the client all bytes were delivered.
            s.shutdown_write()?;
            t.complete = h.bytes == 0 || t.bytes_received == h.bytes;
        }
        Mode::Download => {
            let limit = (h.bytes > 0).then_some(h.bytes);
            let deadline = (h.duration_ns > 0).then(|| t.header_ns + h.duration_ns);
            t.first_byte_ns = Some(t.header_ns);
            let (_, stopped) = send_bulk(s, &buf, limit, deadline, counter, &mut t.bytes_sent)?;
            t.last_byte_ns = Some(sys::now_ns());
            match close_after_sending(s, &mut buf, stopped)? {
                None => t.stopped = true,
                Some(_) => t.complete = true,
            }
        }
        Mode::Objects => loop {
            let mut req = [0u8; object::LEN];
            match read_full(s, &mut req)? {
                Filled::Full => {}
                Filled::Stopped => {
                    t.stopped = true;
                    return Ok(());
                }
                Filled::Eof(0) => {
                    s.shutdown_write()?;
                    t.complete = h.object_count == 0 || t.objects_served == h.object_count;
                    break;
                }
                Filled::Eof(n) => {
                    bail!("client closed the connection inside an object request ({n} bytes)")
                }
            }
            t.bytes_received += req.len() as u64;
            let size = ObjectRequest::decode(&req)?.size;
            let now = sys::now_ns();
            t.first_byte_ns.get_or_insert(now);
            let (_, stopped) = send_bulk(s, &buf, Some(size), None, counter, &mut t.bytes_sent)?;
            t.last_byte_ns = Some(sys::now_ns());
            if stopped {
                t.stopped = true;
                return Ok(());
            }
            t.objects_served += 1;
        },
        Mode::Records => {
            let mut p = [0u8; records_wire::LEN];
            if !read_whole(s, &mut p, "record parameter", t)? {
                return Ok(());
            }
            t.bytes_received += p.len() as u64;
            let req = RecordsRequest::decode(&p)?;
            req.validate()
                .map_err(|e| anyhow::anyhow!("bad records request: {e}"))?;
            let start = sys::now_ns();
            t.first_byte_ns = Some(start);
            let end = start.saturating_add(h.duration_ns);
            let (sent, stopped) = send_records(s, req, start, end, counter, &mut t.bytes_sent)?;
            t.records = Some(sent);
            t.last_byte_ns = Some(sys::now_ns());
            match close_after_sending(s, &mut buf, stopped)? {
                None => t.stopped = true,
                Some(_) => t.complete = true,
            }
        }
        Mode::Page => {
            let start = sys::now_ns();
            t.first_byte_ns = Some(start);
            let (served, stopped) = serve_pages(s, counter, &mut t.bytes_sent, &mut t.bytes_received)?;
            t.page = Some(served);
            t.last_byte_ns = Some(sys::now_ns());
            if stopped {
                t.stopped = true;
                return Ok(());
            }
            // The client closed its side after its last page: close ours.
            s.shutdown_write()?;
            t.complete = true;
        }
        // The TCP request has no such mode; decode refuses it.
        Mode::Messages => bail!("messages mode is QUIC only"),
    }
    Ok(())
}
