//! The agents' time-series files: one Arrow IPC file per series (the format
//! `pyarrow.ipc.open_file` and `transportlab.artefacts.rundir` read), written by the agent
//! and by the simulator alike.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use arrow_array::{ArrayRef, RecordBatch};
use arrow_ipc::writer::FileWriter;
use arrow_schema::{Field, Schema, SchemaRef};

/// Writes one record batch with the given named columns as an Arrow IPC file. All
/// columns must have the same length; a column is marked nullable when it holds a null.
pub fn write_series(path: &Path, columns: Vec<(&str, ArrayRef)>) -> anyhow::Result<()> {
    let fields: Vec<Field> = columns
        .iter()
        .map(|(name, a)| Field::new(*name, a.data_type().clone(), a.null_count() > 0))
        .collect();
    let mut w = SeriesWriter::new(path, Arc::new(Schema::new(fields)));
    w.write(columns.into_iter().map(|(_, a)| a).collect())?;
    w.finish()
}

/// An Arrow IPC file of one fixed schema written a record batch at a time, so that a
/// long series need not be held in memory until it ends (the simulator writes its
/// endpoints' series this way). The file is created at the first batch; `finish` writes
/// the footer (and one empty batch if none was written, as `write_series` of no rows
/// does). The file reads as before with `pyarrow.ipc.open_file(..).read_all()`: one table,
/// one chunk per batch.
pub struct SeriesWriter {
    path: PathBuf,
    schema: SchemaRef,
    writer: Option<FileWriter<BufWriter<File>>>,
}

impl SeriesWriter {
    pub fn new(path: &Path, schema: SchemaRef) -> SeriesWriter {
        SeriesWriter {
            path: path.to_path_buf(),
            schema,
            writer: None,
        }
    }

    /// The file's schema.
    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// Appends one record batch (the schema's columns, in order, of equal length).
    pub fn write(&mut self, columns: Vec<ArrayRef>) -> anyhow::Result<()> {
        let batch = RecordBatch::try_new(self.schema.clone(), columns)
            .with_context(|| format!("building a batch of series {}", self.path.display()))?;
        let w = match &mut self.writer {
            Some(w) => w,
            None => {
                let f = File::create(&self.path)
                    .with_context(|| format!("cannot create series {}", self.path.display()))?;
                self.writer
                    .insert(FileWriter::try_new(BufWriter::new(f), &self.schema)?)
            }
        };
        w.write(&batch)
            .with_context(|| format!("cannot write series {}", self.path.display()))
    }

    /// Ends the file (footer, buffered bytes written out).
    pub fn finish(mut self) -> anyhow::Result<()> {
        if self.writer.is_none() {
            let empty = RecordBatch::new_empty(self.schema.clone());
            self.write(empty.columns().to_vec())?;
        }
        let w = self.writer.as_mut().expect("a batch was written");
        // Writes the footer and flushes the buffer.
        w.finish()
            .with_context(|| format!("cannot write series {}", self.path.display()))
    }
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

    #[test]
    fn series_in_batches_read_as_one_table() {
        use arrow_array::Array;
        let dir = std::env::temp_dir().join(format!("agent-series-batches-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("s.arrow");
        let schema = Arc::new(Schema::new(vec![
            Field::new("t_ns", arrow_schema::DataType::Int64, false),
            Field::new("x", arrow_schema::DataType::UInt64, true),
        ]));
        let mut w = SeriesWriter::new(&p, schema);
        assert!(!p.exists(), "created at the first batch");
        w.write(vec![
            Arc::new(Int64Array::from(vec![1, 2])) as ArrayRef,
            Arc::new(UInt64Array::from(vec![None, Some(5)])) as ArrayRef,
        ])
        .unwrap();
        w.write(vec![
            Arc::new(Int64Array::from(vec![3])) as ArrayRef,
            Arc::new(UInt64Array::from(vec![Some(6)])) as ArrayRef,
        ])
        .unwrap();
        w.finish().unwrap();
        let r = arrow_ipc::reader::FileReader::try_new(File::open(&p).unwrap(), None).unwrap();
        let batches: Vec<_> = r.map(|b| b.unwrap()).collect();
        assert_eq!(batches.iter().map(|b| b.num_rows()).collect::<Vec<_>>(), vec![2, 1]);
        assert!(batches[1].schema().field(1).is_nullable());
        let t = batches[1].column(0).as_any().downcast_ref::<Int64Array>().unwrap();
        assert_eq!(t.value(0), 3);
        assert_eq!(batches[0].column(1).null_count(), 1);

        // No batch at all: one empty batch, as `write_series` of no rows writes.
        let q = dir.join("empty.arrow");
        SeriesWriter::new(&q, batches[0].schema()).finish().unwrap();
        let r = arrow_ipc::reader::FileReader::try_new(File::open(&q).unwrap(), None).unwrap();
        let batches: Vec<_> = r.map(|b| b.unwrap()).collect();
        assert_eq!(batches.len(), 1);
        assert_eq!(batches[0].num_rows(), 0);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
