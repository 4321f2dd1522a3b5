//! The agents' time-series files: one Arrow IPC file per series (the format
//! `pyarrow.ipc.open_file` and `transportlab.artefacts.rundir` read), written by the agent
//! and by the simulator alike.

use std::fs::File;
use std::io::BufWriter;
use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{Field, Schema};

/// Writes one record batch with the given named columns as an Arrow IPC file. All
/// columns must have the same length.
pub fn write_series(path: &Path, columns: Vec<(&str, ArrayRef)>) -> anyhow::Result<()> {
    let fields: Vec<Field> = columns
        .iter()
        .map(|(name, a)| Field::new(*name, a.data_type().clone(), a.null_count() > 0))
        .collect();
    let schema = Arc::new(Schema::new(fields));
    let batch = RecordBatch::try_new(schema.clone(), columns.into_iter().map(|(_, a)| a).collect())
        .context("building series batch")?;
    let f = File::create(path).with_context(|| format!("cannot create series {}", path.display()))?;
    let mut w = arrow_ipc::writer::FileWriter::try_new(BufWriter::new(f), &schema)?;
    w.write(&batch)?;
    w.finish()
        .with_context(|| format!("cannot write series {}", path.display()))?;
    Ok(())
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
                ("t_ns", Arc::new(Int64Array::from(vec![1, 2, 3])) as ArrayRef),
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
