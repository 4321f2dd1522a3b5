//! tcp-client: one connection doing an upload, a download or a series of objects.

use std::io;
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use agent_proto::summary::TcpClientResults;
use agent_proto::wire::object::ObjectRequest;
use agent_proto::wire::page::{Framing, PageRequest};
use agent_proto::wire::records::RecordsRequest;
use agent_proto::wire::request::{Mode, Request, Transport};
use anyhow::{bail, Context};
use serde::Serialize;
use socket2::{Domain, Protocol, Socket, Type};

use super::page::{self, PageReceiver, PagesSummary};
use super::records::{self, Delivery, ReceivedRecords, RecordReceiver, Sink, TapReader, Via};
use super::sampler::{Progress, Sampler};
use super::transfer::{close_after_sending, prepare, read_some, send_bulk, write_all};
use super::{series, BUF_LEN};
use crate::output::{self, bps, goodput_bps, secs, ObjectSummary, ObjectsSummary};
use crate::sys::Cpu;
use crate::tcpinfo::{self, TcpInfoSummary};
use crate::tcpstream::{Stopped, Stream};
use crate::{sys, usage, Direction, TcpClientArgs};

#[derive(Serialize)]
struct Params<'a> {
    connect: String,
    cc: Option<&'a str>,
    mode: &'static str,
    direction: Option<&'static str>,
    duration_ns: Option<u64>,
    bytes: Option<u64>,
    objects: Option<u64>,
    object_size: Option<u64>,
    record_size: Option<u64>,
    record_interval_ns: Option<u64>,
    delivery: Option<Delivery>,
    record_series: Option<&'a Path>,
    page_primary: Option<u64>,
    page_secondaries: Option<Vec<u64>>,
    page_framing: Option<&'static str>,
    page_series: Option<&'a Path>,
    tcp_info_interval_ns: u64,
    mss: Option<u32>,
    tls: bool,
    connect_timeout_ns: u64,
    summary: &'a Path,
    series: Option<&'a Path>,
}

#[derive(Serialize)]
struct Results<'a> {
    #[serde(flatten)]
    common: TcpClientResults<'a>,
    local: Option<String>,
    remote: String,
    connect_start_ns: u64,
    connected_ns: u64,
    first_byte_ns: Option<u64>,
    end_ns: u64,
    connect_s: f64,
    tls: bool,
    tls_handshake_s: Option<f64>,
    duration_s: f64,
    throughput_bps: Option<f64>,
    tcp_info: Option<TcpInfoSummary>,
    samples: usize,
    /// CPU time of this process (getrusage), taken as the summary is built.
    #[serde(flatten)]
    cpu: Cpu,
    #[serde(flatten)]
    objects: Option<ObjectsSummary>,
    /// Records mode: what was received, and how.
    records: Option<ReceivedRecords>,
    /// Page mode: the pages and their objects' times.
    page: Option<PagesSummary>,
}

pub fn client(a: TcpClientArgs) -> anyhow::Result<()> {
    if a.cc.as_deref() == Some("") {
        usage!("--cc must not be empty");
    }
    let records_req = match (a.record_size, a.record_interval) {
        (Some(record_size), Some(interval_ns)) => {
            let r = RecordsRequest {
                record_size,
                interval_ns,
            };
            if let Err(e) = r.validate() {
                usage!("--record-size {record_size} / --record-interval {interval_ns}ns: {e}");
            }
            Some(r)
        }
        _ => None,
    };
    let framing = match (a.page_framing, a.delivery) {
        (Some(f), _) => f.wire(),
        (None, Delivery::Ordered) => Framing::Plain,
        (None, Delivery::Unordered) => Framing::Mstcp,
    };
    if a.page_primary.is_some() && framing == Framing::Plain && a.delivery == Delivery::Unordered {
        usage!("--delivery unordered needs --page-framing mstcp (plain objects have no boundaries to find in out-of-order bytes)");
    }
    let page_req = a.page_primary.map(|primary| PageRequest {
        framing,
        primary,
        secondaries: a.page_secondaries.clone(),
    });
    if let Some(Err(e)) = page_req.as_ref().map(PageRequest::validate) {
        usage!("--page-primary / --page-secondaries: {e}");
    }
    if page_req.is_some() && a.tls && a.delivery == Delivery::Unordered {
        usage!("--delivery unordered reads the segments' payload, which --tls encrypts");
    }
    let unordered = (records_req.is_some() || page_req.is_some()) && a.delivery == Delivery::Unordered;
    let server_v4 = match a.connect {
        SocketAddr::V4(v4) => Some(v4),
        SocketAddr::V6(_) => None,
    };
    if unordered && server_v4.is_none() {
        usage!(
            "--delivery unordered needs an IPv4 --connect address, not {}",
            a.connect
        );
    }
    let header = match (a.objects, a.object_size) {
        _ if page_req.is_some() => Request {
            duration_ns: a.duration.unwrap_or(0),
            ..Request::new(Mode::Page)
        },
        _ if records_req.is_some() => Request {
            duration_ns: a.duration.unwrap_or(0),
            ..Request::new(Mode::Records)
        },
        (Some(count), Some(size)) => Request {
            object_size: size,
            object_count: count,
            ..Request::new(Mode::Objects)
        },
        _ => Request {
            bytes: a.bytes.unwrap_or(0),
            duration_ns: a.duration.unwrap_or(0),
            ..Request::new(if a.direction == Direction::Upload {
                Mode::Upload
            } else {
                Mode::Download
            })
        },
    };
    let params = Params {
        connect: a.connect.to_string(),
        cc: a.cc.as_deref(),
        mode: header.mode.name(),
        direction: matches!(header.mode, Mode::Upload | Mode::Download).then(|| header.mode.name()),
        duration_ns: a.duration,
        bytes: a.bytes,
        objects: a.objects,
        object_size: a.object_size,
        record_size: a.record_size,
        record_interval_ns: a.record_interval,
        delivery: (records_req.is_some() || page_req.is_some()).then_some(a.delivery),
        page_primary: a.page_primary,
        page_secondaries: page_req.as_ref().map(|p| p.secondaries.clone()),
        page_framing: page_req.as_ref().map(|p| page::framing_name(p.framing)),
        page_series: a.page_series.as_deref(),
        record_series: a.record_series.as_deref(),
        tcp_info_interval_ns: a.tcp_info_interval,
        mss: a.mss,
        tls: a.tls,
        connect_timeout_ns: a.connect_timeout,
        summary: &a.summary,
        series: a.series.as_deref(),
    };

    let start_ns = sys::now_ns();
    let sock = Socket::new(Domain::for_address(a.connect), Type::STREAM, Some(Protocol::TCP))
        .context("cannot create TCP socket")?;
    if let Some(cc) = &a.cc {
        sys::set_congestion(&sock, cc)?;
    }
    if let Some(mss) = a.mss {
        sys::set_mss(&sock, mss).with_context(|| format!("cannot set TCP_MAXSEG to {mss}"))?;
    }
    let receiver = Arc::new(RecordReceiver::default());
    let pages = page_req.clone().map(|p| Arc::new(PageReceiver::new(p)));
    let sink: Arc<dyn Sink> = match &pages {
        Some(p) => p.clone(),
        None => receiver.clone(),
    };
    let local_ip = Arc::new(OnceLock::new());
    // Unordered: the tap is open before connect() so it sees the SYN-ACK (the server's
    // initial sequence number) and every segment after it.
    let tap = match server_v4.filter(|_| unordered) {
        Some(server) => {
            sock.bind(&SocketAddr::from((Ipv4Addr::UNSPECIFIED, 0)).into())
                .context("cannot bind the client socket")?;
            let port = sock
                .local_addr()?
                .as_socket()
                .map(|s| s.port())
                .context("the bound socket has no port")?;
            Some(TapReader::start(server, port, local_ip.clone(), sink.clone())?)
        }
        None => None,
    };
    let connect_start_ns = sys::now_ns();
    sock.connect_timeout(&a.connect.into(), Duration::from_nanos(a.connect_timeout))
        .with_context(|| format!("cannot connect to {}", a.connect))?;
    let connected_ns = sys::now_ns();
    let tcp: TcpStream = sock.into();
    if let Ok(SocketAddr::V4(l)) = tcp.local_addr() {
        let _ = local_ip.set(*l.ip());
    }
    prepare(&tcp)?;
    let cc_name = sys::get_congestion(&tcp);
    let local = tcp.local_addr().ok().map(|x| x.to_string());

    let sampler = Sampler::start(Arc::new(Progress::new(&tcp, 0, a.tcp_info_interval)?))?;
    let mut tls_done_ns = None;
    let outcome = match open_stream(&tcp, a.tls) {
        Err(e) => Err(e),
        Ok(Err(Stopped)) => Ok(ClientTransfer {
            stopped: true,
            ..Default::default()
        }),
        Ok(Ok(mut stream)) => {
            if stream.is_tls() {
                tls_done_ns = Some(sys::now_ns());
            }
            let records = records_req.map(|r| (r, receiver.as_ref()));
            let page = match (&page_req, &pages) {
                (Some(r), Some(p)) => Some((r, p.as_ref(), tcp.try_clone().context("cannot duplicate the socket")?)),
                _ => None,
            };
            run_client_transfer(&mut stream, &header, records, page, connected_ns, &sampler.progress)
        }
    };
    let samples = sampler.finish();
    // A failing tap ends in exit 1 after the summary, like a transfer failing midway.
    let (tap_counts, tap_error) = match tap.map(TapReader::finish) {
        Some(Ok(c)) => (Some(c), None),
        Some(Err(e)) => (None, Some(format!("{e:#}"))),
        None => (None, None),
    };
    let final_info = tcpinfo::read(&tcp).ok();
    drop(tcp);
    let closed_ns = sys::now_ns();
    let t = outcome?;

    let end_ns = t.eof_ns.unwrap_or(closed_ns);
    let sender_is_client = header.mode == Mode::Upload;
    let bytes = if sender_is_client {
        t.bytes_sent
    } else {
        t.bytes_received
    };
    let transfer_ns = end_ns.saturating_sub(connected_ns);
    let completion_ns = end_ns.saturating_sub(connect_start_ns);
    let stopped_by = if t.stopped {
        "signal"
    } else if header.mode == Mode::Objects {
        "objects"
    } else if header.duration_ns > 0 {
        "duration"
    } else {
        "bytes"
    };
    let complete = !t.stopped
        && t.eof_ns.is_some()
        && match header.mode {
            Mode::Objects => t.objects.len() as u64 == header.object_count,
            Mode::Page => pages.as_ref().is_some_and(|p| p.done() && p.error().is_none()),
            _ => header.bytes == 0 || bytes == header.bytes,
        };
    let records = match records_req {
        Some(r) => Some(records::finish_receiver(
            &receiver,
            a.delivery.name(),
            r,
            tap_counts,
            a.record_series.as_deref(),
        )?),
        None => None,
    };
    let page = match &pages {
        Some(p) => Some(page::finish_client(p, tap_counts, a.page_series.as_deref())?),
        None => None,
    };
    let objects = (header.mode == Mode::Objects).then(|| {
        ObjectsSummary::new(
            t.objects
                .iter()
                .enumerate()
                .map(|(i, o)| ObjectSummary::new(i as u64, o.size, o.request_ns, o.first_byte_ns, o.complete_ns))
                .collect(),
        )
    });
    let results = Results {
        common: TcpClientResults {
            mode: header.mode.name(),
            sender: if sender_is_client { "client" } else { "server" },
            cc: cc_name.as_deref(),
            complete,
            bytes,
            bytes_sent: t.bytes_sent,
            bytes_received: t.bytes_received,
            completion_s: complete.then(|| secs(completion_ns)),
            goodput_bps: goodput_bps(bytes, connect_start_ns, end_ns),
            retransmits: final_info
                .filter(|_| sender_is_client)
                .map(|i| i.raw.total_retrans.into()),
        },
        local,
        remote: a.connect.to_string(),
        connect_start_ns,
        connected_ns,
        first_byte_ns: t.first_byte_ns,
        end_ns,
        connect_s: secs(connected_ns - connect_start_ns),
        tls: a.tls,
        tls_handshake_s: tls_done_ns.map(|t| secs(t - connected_ns)),
        duration_s: secs(transfer_ns),
        throughput_bps: bps(bytes, transfer_ns),
        tcp_info: final_info.map(|i| i.summary()),
        samples: samples.len(),
        cpu: Cpu::now(),
        objects,
        records,
        page,
    };
    let summary = output::envelope("tcp-client", params, start_ns, sys::now_ns(), stopped_by, results);
    if let Some(p) = &a.series {
        series::write(p, &samples)?;
    }
    output::write_summary(&a.summary, &summary)?;
    let page_error = pages.as_ref().and_then(|p| p.error());
    if let Some(e) = t.error.or(tap_error).or(page_error) {
        bail!("{e}");
    }
    Ok(())
}

/// The client's byte stream over the connected socket (a duplicate of it, so the socket
/// stays readable for TCP_INFO): plain, or TLS after a handshake.
fn open_stream(tcp: &TcpStream, tls: bool) -> anyhow::Result<Result<Stream, Stopped>> {
    let dup = tcp.try_clone().context("cannot duplicate the socket")?;
    if tls {
        Stream::tls_client(dup).context("TLS handshake failed")
    } else {
        Ok(Ok(Stream::Plain(dup)))
    }
}

struct ObjectRecord {
    size: u64,
    request_ns: u64,
    first_byte_ns: u64,
    complete_ns: u64,
}

#[derive(Default)]
struct ClientTransfer {
    bytes_sent: u64,
    bytes_received: u64,
    first_byte_ns: Option<u64>,
    /// When the server's FIN arrived (end of the transfer).
    eof_ns: Option<u64>,
    stopped: bool,
    objects: Vec<ObjectRecord>,
    /// A failure after some data moved: the summary is still written, then exit 1.
    error: Option<String>,
}

/// The stream path of records and pages: every byte read, fed to `sink` at its stream
/// offset, until the server's end of stream (its time in `t.eof_ns`; returns true) or a
/// stop (`t.stopped`; returns false).
fn feed_stream(
    s: &mut Stream,
    buf: &mut [u8],
    sink: &dyn Sink,
    t: &mut ClientTransfer,
    counter: &Progress,
) -> io::Result<bool> {
    loop {
        match read_some(s, buf)? {
            None => {
                t.stopped = true;
                return Ok(false);
            }
            Some(0) => {
                t.eof_ns = Some(sys::now_ns());
                return Ok(true);
            }
            Some(n) => {
                t.first_byte_ns.get_or_insert_with(sys::now_ns);
                sink.feed(t.bytes_received, &buf[..n], Via::Stream, None);
                t.bytes_received += n as u64;
                counter.add(n);
            }
        }
    }
}

fn run_client_transfer(
    s: &mut Stream,
    h: &Request,
    records: Option<(RecordsRequest, &RecordReceiver)>,
    page: Option<(&PageRequest, &PageReceiver, TcpStream)>,
    connected_ns: u64,
    counter: &Progress,
) -> anyhow::Result<ClientTransfer> {
    let mut t = ClientTransfer::default();
    let mut buf = vec![0u8; BUF_LEN];
    let request = h.encode(Transport::Tcp)?;
    if !write_all(s, &request).context("cannot send request header")? {
        t.stopped = true;
        return Ok(t);
    }
    let r: io::Result<()> = (|| {
        match h.mode {
            Mode::Upload => {
                let limit = (h.bytes > 0).then_some(h.bytes);
                let deadline = (h.duration_ns > 0).then(|| connected_ns + h.duration_ns);
                let (_, stopped) = send_bulk(s, &buf, limit, deadline, counter, &mut t.bytes_sent)?;
                match close_after_sending(s, &mut buf, stopped)? {
                    None => t.stopped = true,
                    Some((n, at)) => {
                        t.bytes_received = n;
                        t.eof_ns = Some(at);
                    }
                }
            }
            Mode::Download => loop {
                match read_some(s, &mut buf)? {
                    None => {
                        t.stopped = true;
                        break;
                    }
                    Some(0) => {
                        t.eof_ns = Some(sys::now_ns());
                        // The server waits for our end (with TLS: a close_notify).
                        s.shutdown_write()?;
                        break;
                    }
                    Some(n) => {
                        if t.first_byte_ns.is_none() {
                            t.first_byte_ns = Some(sys::now_ns());
                        }
                        t.bytes_received += n as u64;
                        counter.add(n);
                    }
                }
            },
            Mode::Objects => {
                for i in 0..h.object_count {
                    let req = ObjectRequest { size: h.object_size }.encode();
                    let request_ns = sys::now_ns();
                    if !write_all(s, &req)? {
                        t.stopped = true;
                        return Ok(());
                    }
                    t.bytes_sent += req.len() as u64;
                    let mut got = 0u64;
                    let mut first = 0u64;
                    while got < h.object_size {
                        let want = (h.object_size - got).min(BUF_LEN as u64) as usize;
                        match read_some(s, &mut buf[..want])? {
                            None => {
                                t.stopped = true;
                                return Ok(());
                            }
                            Some(0) => {
                                return Err(io::Error::new(
                                    io::ErrorKind::UnexpectedEof,
                                    format!("server closed the connection during object {i} after {got} bytes"),
                                ))
                            }
                            Some(n) => {
                                if got == 0 {
                                    first = sys::now_ns();
                                    t.first_byte_ns.get_or_insert(first);
                                }
                                got += n as u64;
                                t.bytes_received += n as u64;
                                counter.add(n);
                            }
                        }
                    }
                    t.objects.push(ObjectRecord {
                        size: h.object_size,
                        request_ns,
                        first_byte_ns: first,
                        complete_ns: sys::now_ns(),
                    });
                }
                match close_after_sending(s, &mut buf, false)? {
                    None => t.stopped = true,
                    Some((_, at)) => t.eof_ns = Some(at),
                }
            }
            Mode::Records => {
                let Some((req, receiver)) = records else {
                    return Err(io::Error::other("records mode without record parameters"));
                };
                if !write_all(s, &req.encode())? {
                    t.stopped = true;
                    return Ok(());
                }
                if feed_stream(s, &mut buf, receiver, &mut t, counter)? {
                    s.shutdown_write()?;
                }
            }
            Mode::Page => {
                let Some((req, receiver, writer)) = page else {
                    return Err(io::Error::other("page mode without a page"));
                };
                if !write_all(s, &req.encode())? {
                    t.stopped = true;
                    return Ok(());
                }
                receiver.start(writer, connected_ns + h.duration_ns);
                // The last page's completion shuts our side; the server then closes its side.
                feed_stream(s, &mut buf, receiver, &mut t, counter)?;
            }
            // The request was encoded for TCP above, which refuses this mode.
            Mode::Messages => return Err(io::Error::other("messages mode is QUIC only")),
        }
        Ok(())
    })();
    if let Err(e) = r {
        if t.bytes_sent == 0 && t.bytes_received == 0 {
            return Err(e).context("transfer failed");
        }
        t.error = Some(format!("transfer failed: {e}"));
    }
    Ok(t)
}
