//! Run artefacts: the JSON summary and columnar Arrow IPC time series. Summaries are
//! structs serialised with serde; their field names are the summary's keys, which the
//! Python side reads (docs/agent.md).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use anyhow::Context;
use serde::Serialize;

use crate::stats::{self, Scaled};

/// Nanoseconds as seconds (summary fields `*_s`).
pub fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}

/// `bytes` over `ns` in bit/s for a summary; null when no time passed.
pub fn bps(bytes: u64, ns: u64) -> Option<f64> {
    (ns != 0).then(|| bytes as f64 * 8.0 / secs(ns))
}

/// Writes `value` as pretty JSON followed by a newline (write to a temp file, then rename,
/// so a reader never sees a half-written summary).
pub fn write_summary(path: &Path, value: &impl Serialize) -> anyhow::Result<()> {
    let tmp = path.with_extension("json.tmp");
    {
        let f = File::create(&tmp).with_context(|| format!("cannot create summary {}", tmp.display()))?;
        let mut w = BufWriter::new(f);
        serde_json::to_writer_pretty(&mut w, value)?;
        w.write_all(b"\n")?;
        w.flush()
            .with_context(|| format!("cannot write summary {}", tmp.display()))?;
    }
    std::fs::rename(&tmp, path).with_context(|| format!("cannot write summary {}", path.display()))?;
    Ok(())
}

pub use agent::series::write_series;

/// Common envelope of every summary.
#[derive(Serialize)]
pub struct Envelope<'a, P, R> {
    pub subcommand: &'a str,
    pub agent_version: &'static str,
    pub params: P,
    pub start_ns: u64,
    pub end_ns: u64,
    pub stopped_by: &'a str,
    pub results: R,
}

pub fn envelope<'a, P: Serialize, R: Serialize>(
    subcommand: &'a str,
    params: P,
    start_ns: u64,
    end_ns: u64,
    stopped_by: &'a str,
    results: R,
) -> Envelope<'a, P, R> {
    Envelope {
        subcommand,
        agent_version: env!("CARGO_PKG_VERSION"),
        params,
        start_ns,
        end_ns,
        stopped_by,
        results,
    }
}

/// One object of a client's objects mode, as the summary lists it.
#[derive(Serialize)]
pub struct ObjectSummary {
    pub index: u64,
    pub size: u64,
    pub request_ns: u64,
    pub first_byte_ns: u64,
    pub complete_ns: u64,
    pub ttfb_s: f64,
    pub completion_s: f64,
}

impl ObjectSummary {
    pub fn new(index: u64, size: u64, request_ns: u64, first_byte_ns: u64, complete_ns: u64) -> ObjectSummary {
        ObjectSummary {
            index,
            size,
            request_ns,
            first_byte_ns,
            complete_ns,
            ttfb_s: secs(first_byte_ns - request_ns),
            completion_s: secs(complete_ns - request_ns),
        }
    }
}

/// The objects-mode fields of tcp-client and quic-client `results`.
#[derive(Serialize)]
pub struct ObjectsSummary {
    pub objects: Vec<ObjectSummary>,
    pub objects_completed: usize,
    pub ttfb: Option<Scaled>,
    pub object_completion: Option<Scaled>,
}

impl ObjectsSummary {
    pub fn new(objects: Vec<ObjectSummary>) -> ObjectsSummary {
        let ttfb: Vec<f64> = objects
            .iter()
            .map(|o| (o.first_byte_ns - o.request_ns) as f64)
            .collect();
        let completion: Vec<f64> = objects.iter().map(|o| (o.complete_ns - o.request_ns) as f64).collect();
        ObjectsSummary {
            objects_completed: objects.len(),
            ttfb: stats::scaled(&ttfb, 1e6, "ms"),
            object_completion: stats::scaled(&completion, 1e6, "ms"),
            objects,
        }
    }
}

/// Prints the `READY <port>` line that tells the runner a server is listening.
pub fn announce_ready(port: u16) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "READY {port}");
    let _ = out.flush();
}
