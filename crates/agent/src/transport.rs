//! The QUIC transport settings every connection of the lab uses, emulated (the agent) or
//! simulated (`tlab-sim`): flow-control windows that never limit a transfer before the
//! congestion window does, the controller chosen, the datagram size.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use quinn_proto::{MtuDiscoveryConfig, QlogConfig, QlogStream, TransportConfig, VarInt};

use crate::cc::{CcChoice, Factory, Probe};

/// Receive windows (per stream and per connection) and the send window: 64 MiB, more than
/// the bandwidth-delay product of a 1 Gbit/s × 200 ms path (25 MB) plus the data a receiver
/// holds while a loss is repaired, so flow control never limits a transfer before the
/// congestion window does.
pub const WINDOW_BYTES: u64 = 64 * 1024 * 1024;
/// Concurrent bidirectional streams, and unidirectional streams, each end allows its peer
/// (objects mode opens a bidirectional one per object in flight, plus the control stream;
/// a bulk transfer on N streams opens N − 1 unidirectional ones beside the control stream).
pub const MAX_STREAMS: u64 = 10_000;
const _: () = assert!(agent_proto::wire::request::MAX_STREAMS < MAX_STREAMS);
/// Connections go idle (and fail) after this long without any packet.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(30);

/// Transport parameters of one connection: controller `cc` (its own factory and probe),
/// a fixed `datagram_size` (MTU discovery off) or quinn's discovery from 1200 bytes, and
/// its qlog written to `qlog` if given.
pub fn config(
    cc: &CcChoice,
    probe: Arc<Probe>,
    datagram_size: Option<u16>,
    qlog: Option<QlogStream>,
) -> TransportConfig {
    let mut t = TransportConfig::default();
    t.qlog_stream(qlog);
    let window = VarInt::from_u64(WINDOW_BYTES).expect("fits a varint");
    t.stream_receive_window(window)
        .receive_window(window)
        .send_window(WINDOW_BYTES)
        .max_concurrent_bidi_streams(VarInt::from_u64(MAX_STREAMS).expect("fits"))
        .max_concurrent_uni_streams(VarInt::from_u64(MAX_STREAMS).expect("fits"))
        .max_idle_timeout(Some(IDLE_TIMEOUT.try_into().expect("fits")))
        .congestion_controller_factory(Arc::new(Factory::new(cc.clone(), probe)));
    if let Some(n) = datagram_size {
        t.initial_mtu(n).min_mtu(n).mtu_discovery_config(None);
    } else {
        // quinn's default: start at 1200 bytes, discover up to 1452.
        t.mtu_discovery_config(Some(MtuDiscoveryConfig::default()));
    }
    t
}

/// Who writes a qlog through quinn-proto. Its title is the writer's prefix and the end
/// (`transportlab quic-client`); readers know quinn-proto's qlogs by these prefixes, listed
/// in contracts/contract.json `quinn_qlog_title_prefixes`, because quinn-proto 0.11 writes
/// their RTTs in seconds where qlog 0.3 says milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QlogWriter {
    Agent,
    Simulator,
}

impl QlogWriter {
    pub const ALL: [QlogWriter; 2] = [QlogWriter::Agent, QlogWriter::Simulator];

    pub fn title_prefix(self) -> &'static str {
        match self {
            QlogWriter::Agent => "transportlab quic-",
            QlogWriter::Simulator => "tlab-sim quic-",
        }
    }
}

/// A qlog stream (JSON-SEQ) into a new file at `path`, titled for `writer` and `end`
/// (`client` or `server`), its event times in ms since `start` (the agent's: when it
/// opened the file; the simulator's: virtual time 0).
pub fn qlog_file(path: &Path, writer: QlogWriter, end: &str, start: Instant) -> Result<QlogStream, String> {
    let file = std::fs::File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut cfg = QlogConfig::default();
    cfg.writer(Box::new(std::io::BufWriter::new(file)))
        .title(Some(format!("{}{end}", writer.title_prefix())))
        .start_time(start);
    cfg.into_stream()
        .ok_or_else(|| format!("{}: quinn made no qlog stream", path.display()))
}

/// Where a server writes the qlog of its connection `index`: `path` itself for the first,
/// `stem-index.ext` beside it for later ones.
pub fn qlog_path(path: &Path, index: u32) -> PathBuf {
    if index == 0 {
        return path.to_path_buf();
    }
    let stem = path.file_stem().map(|s| s.to_string_lossy()).unwrap_or_default();
    let name = match path.extension() {
        Some(ext) => format!("{stem}-{index}.{}", ext.to_string_lossy()),
        None => format!("{stem}-{index}"),
    };
    path.with_file_name(name)
}
