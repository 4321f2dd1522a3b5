//! Run artefacts: the JSON summary and columnar Arrow IPC time series. Summaries are
//! structs serialised with serde; their field names are the summary's keys, which the
//! Python side reads (docs/agent.md).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use anyhow::Context;
use serde::Serialize;

pub use agent_proto::transfer::{bps, goodput_bps, secs};

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

/// A server's summary written; with `--once`, the connection's error (if any) is then
/// the server's.
pub fn write_server_summary(
    path: &Path,
    summary: &impl Serialize,
    once: bool,
    first_error: Option<String>,
) -> anyhow::Result<()> {
    write_summary(path, summary)?;
    match first_error {
        Some(e) if once => anyhow::bail!("{e}"),
        _ => Ok(()),
    }
}

pub use agent::series::write_series;

pub use agent_proto::summary::{Envelope, ObjectSummary, ObjectsSummary, RequestSummary, ServedTransfer};

/// The agent's summary envelope (`agent_proto::summary::Envelope`).
pub fn envelope<'a, P: Serialize, R: Serialize>(
    subcommand: &'a str,
    params: P,
    start_ns: u64,
    end_ns: u64,
    stopped_by: &'a str,
    results: R,
) -> Envelope<'a, P, R> {
    Envelope::new(subcommand, params, start_ns, end_ns, stopped_by, results)
}

/// Prints the `READY <port>` line that tells the runner a server is listening.
pub fn announce_ready(port: u16) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "READY {port}");
    let _ = out.flush();
}
