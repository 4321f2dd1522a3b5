//! Run artefacts: the JSON summary and columnar Arrow IPC time series.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{Field, Schema};

/// Nanoseconds as seconds (summary fields `*_s`).
pub fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}

/// `bytes` over `ns` in bit/s for a summary; null when no time passed.
pub fn bps(bytes: u64, ns: u64) -> serde_json::Value {
    if ns == 0 {
        serde_json::Value::Null
    } else {
        serde_json::json!(bytes as f64 * 8.0 / secs(ns))
    }
}

/// Writes `value` as pretty JSON followed by a newline (write to a temp file, then rename,
/// so a reader never sees a half-written summary).
pub fn write_summary(path: &Path, value: &serde_json::Value) -> anyhow::Result<()> {
    let tmp = path.with_extension("json.tmp");
    {
        let f = File::create(&tmp)
            .with_context(|| format!("cannot create summary {}", tmp.display()))?;
        let mut w = BufWriter::new(f);
        serde_json::to_writer_pretty(&mut w, value)?;
        w.write_all(b"\n")?;
        w.flush()
            .with_context(|| format!("cannot write summary {}", tmp.display()))?;
    }
    std::fs::rename(&tmp, path)
        .with_context(|| format!("cannot write summary {}", path.display()))?;
    Ok(())
}

/// Writes one record batch with the given named columns as an Arrow IPC file (the format
/// pyarrow.ipc.open_file reads). All columns must have the same length.
pub fn write_series(path: &Path, columns: Vec<(&str, ArrayRef)>) -> anyhow::Result<()> {
    let fields: Vec<Field> = columns
        .iter()
        .map(|(name, a)| Field::new(*name, a.data_type().clone(), a.null_count() > 0))
        .collect();
    let schema = Arc::new(Schema::new(fields));
    let batch = RecordBatch::try_new(
        schema.clone(),
        columns.into_iter().map(|(_, a)| a).collect(),
    )
    .context("building series batch")?;
    let f =
        File::create(path).with_context(|| format!("cannot create series {}", path.display()))?;
    let mut w = arrow_ipc::writer::FileWriter::try_new(BufWriter::new(f), &schema)?;
    w.write(&batch)?;
    w.finish()
        .with_context(|| format!("cannot write series {}", path.display()))?;
    Ok(())
}

/// Common envelope of every summary.
pub fn envelope(
    subcommand: &str,
    params: serde_json::Value,
    start_ns: u64,
    end_ns: u64,
    stopped_by: &str,
    results: serde_json::Value,
) -> serde_json::Value {
    serde_json::json!({
        "subcommand": subcommand,
        "agent_version": env!("CARGO_PKG_VERSION"),
        "params": params,
        "start_ns": start_ns,
        "end_ns": end_ns,
        "stopped_by": stopped_by,
        "results": results,
    })
}

/// Prints the `READY <port>` line that tells the runner a server is listening.
pub fn announce_ready(port: u16) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "READY {port}");
    let _ = out.flush();
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Int64Array, UInt64Array};

    #[test]
    fn series_roundtrip() {
        let dir = std::env::temp_dir().join(format!("agent-series-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("s.arrow");
        write_series(
            &p,
            vec![
                (
                    "t_ns",
                    Arc::new(Int64Array::from(vec![1, 2, 3])) as ArrayRef,
                ),
                (
                    "x",
                    Arc::new(UInt64Array::from(vec![Some(4), None, Some(6)])) as ArrayRef,
                ),
            ],
        )
        .unwrap();
        let r = arrow_ipc::reader::FileReader::try_new(File::open(&p).unwrap(), None).unwrap();
        let batches: Vec<_> = r.map(|b| b.unwrap()).collect();
        assert_eq!(batches.len(), 1);
        assert_eq!(batches[0].num_rows(), 3);
        assert_eq!(batches[0].schema().field(1).name(), "x");
        assert_eq!(batches[0].column(1).null_count(), 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
