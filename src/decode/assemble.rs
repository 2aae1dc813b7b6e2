//! Assemble: turn a slot's decoded part batches into output batches, on the decode pool.
//!
//! A slot's parts decode disjoint sets of the file's columns in parallel, each in row order,
//! in batches of the batch size, or fewer rows where a batch's values would exceed the batch
//! byte limit ([`crate::decode::bound`]). The [`Assembler`] of a slot collects them; when every
//! part has rows queued, the task that completed the set joins the next rows (as many as the
//! shortest head batch holds; longer ones are sliced, zero-copy, their rest left queued),
//! produces the output columns through the file's [`crate::plan::mapping::Mapping`] (casts,
//! nested fields, constants, the row index), applies the task's transform, and sends the
//! batch to the consumer. Several decode tasks may finish batches of one slot at once: batches
//! carry their number `seq` and the consumer puts them back in order.
//!
//! Invariants: output batches hold consecutive runs of the slot's selected rows, in `seq`
//! order (their first row's position is counted, `rows_before`); each part batch's bytes are
//! reported once, with the output batch holding its last row; `SlotDone` is sent once, after the
//! last batch, with the number of batches; parts that end with different row counts are an
//! error.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use arrow::array::{ArrayRef, RecordBatch, RecordBatchOptions};

use crate::decode::positions::RowPositions;
use crate::decode::DecodeCtx;
use crate::error::{Error, ErrorKind, Result};
use crate::flow::event::Event;
use crate::plan::file::FileRun;

/// Collects one slot's part batches and emits output batches.
pub(crate) struct Assembler {
    ctx: Arc<DecodeCtx>,
    run: Arc<FileRun>,
    slot: usize,
    row_group: usize,
    /// For each root the mapping reads: where its column is.
    layout: Vec<Source>,
    /// Columns the filter stage decoded (the slot's delivered rows), by position.
    stage: Vec<ArrayRef>,
    positions: Option<RowPositions>,
    state: Mutex<State>,
}

/// Where a root's column comes from.
#[derive(Debug, Clone, Copy)]
enum Source {
    /// Column `.1` of part `.0`'s batches.
    Part(usize, usize),
    /// Column `.0` of the filter stage's output, sliced to the batch's rows.
    Stage(usize),
}

#[derive(Default)]
struct State {
    queues: Vec<VecDeque<(RecordBatch, u64)>>,
    done: Vec<bool>,
    /// Batches handed out for joining so far, and the selected rows before the next.
    next_seq: usize,
    rows_before: u64,
    /// Joins running now.
    joining: usize,
    /// `SlotDone` (or an error) was sent.
    finished: bool,
}

impl Assembler {
    /// The assembler of `slot` (row group `row_group` of `run`'s file), whose parts read the
    /// file roots `part_roots` and whose filter stage handed over `stage` (root, column of
    /// the slot's delivered rows); `positions`: file positions of the slot's delivered rows,
    /// needed when the mapping has a row index.
    pub fn new(
        ctx: Arc<DecodeCtx>,
        run: Arc<FileRun>,
        (slot, row_group): (usize, usize),
        (part_roots, stage): (&[Vec<usize>], Vec<(usize, ArrayRef)>),
        positions: Option<RowPositions>,
    ) -> Self {
        let layout = run
            .mapping
            .roots
            .iter()
            .map(|(root, _)| {
                if let Some(k) = stage.iter().position(|(r, _)| r == root) {
                    return Source::Stage(k);
                }
                part_roots
                    .iter()
                    .enumerate()
                    .find_map(|(p, roots)| {
                        roots
                            .iter()
                            .position(|r| r == root)
                            .map(|c| Source::Part(p, c))
                    })
                    .expect("every root read is in one part or the stage")
            })
            .collect();
        let stage = stage.into_iter().map(|(_, a)| a).collect();
        let parts = part_roots.len();
        Assembler {
            ctx,
            run,
            slot,
            row_group,
            layout,
            stage,
            positions,
            state: Mutex::new(State {
                queues: vec![VecDeque::new(); parts],
                done: vec![false; parts],
                ..Default::default()
            }),
        }
    }

    /// Part `part` decoded its next batch (of `bytes` decoded bytes).
    pub fn push(&self, part: usize, batch: RecordBatch, bytes: u64) {
        let mut st = self.state.lock().expect("assembler lock");
        if st.finished {
            return;
        }
        st.queues[part].push_back((batch, bytes));
        self.drain(st);
    }

    /// Part `part` has produced all its batches.
    pub fn part_done(&self, part: usize) {
        let mut st = self.state.lock().expect("assembler lock");
        st.done[part] = true;
        self.drain(st);
    }

    /// Join every complete row of batches; finish the slot when nothing is left.
    fn drain<'a>(&'a self, mut st: std::sync::MutexGuard<'a, State>) {
        loop {
            if st.finished {
                return;
            }
            let parts = st.queues.len();
            let complete = st.queues.iter().all(|q| !q.is_empty());
            if !complete {
                let empty_done = (0..parts).any(|p| st.done[p] && st.queues[p].is_empty());
                let any_queued = st.queues.iter().any(|q| !q.is_empty());
                if empty_done && any_queued {
                    st.finished = true;
                    drop(st);
                    return self.fail(Error::new(
                        ErrorKind::CorruptData,
                        "the column parts of a row group decoded to different row counts",
                    ));
                }
                if st.done.iter().all(|d| *d) && st.joining == 0 {
                    st.finished = true;
                    let batches = st.next_seq;
                    let short = self.stage.iter().any(|a| a.len() as u64 != st.rows_before);
                    drop(st);
                    if short {
                        return self.fail(Error::new(
                            ErrorKind::CorruptData,
                            "the filter stage and the column parts decoded different row counts",
                        ));
                    }
                    self.ctx.outbox.send(Event::SlotDone {
                        slot: self.slot,
                        batches,
                    });
                }
                return;
            }
            let batches = take_aligned(&mut st.queues);
            let seq = st.next_seq;
            let rows = batches[0].0.num_rows();
            let before = st.rows_before;
            st.next_seq += 1;
            st.rows_before += rows as u64;
            st.joining += 1;
            drop(st);
            let joined = crate::panic::catch(|| self.join(batches, before))
                .unwrap_or_else(|msg| Err(crate::panic::panicked("joining a batch", msg)));
            match joined {
                Ok((batch, bytes)) => self.ctx.outbox.send(Event::Batch {
                    slot: self.slot,
                    seq,
                    batch,
                    bytes,
                }),
                Err(e) => {
                    self.state.lock().expect("assembler lock").finished = true;
                    self.fail(e);
                }
            }
            st = self.state.lock().expect("assembler lock");
            st.joining -= 1;
        }
    }

    fn fail(&self, e: Error) {
        let name = &*self.run.meta.file.name;
        let e = if e.path().is_none() {
            e.with_path(name).with_row_group(self.row_group)
        } else {
            e
        };
        self.ctx.outbox.send(Event::Error {
            slot: self.slot,
            error: e,
        });
    }

    /// Join one batch of every part into an output batch (`before`: selected rows of the
    /// slot before it). Returns it with each part's decoded bytes (of the part batches it
    /// completes).
    fn join(
        &self,
        batches: Vec<(RecordBatch, Option<u64>)>,
        before: u64,
    ) -> Result<(RecordBatch, Vec<Option<u64>>)> {
        let name = &*self.run.meta.file.name;
        let rg = self.row_group;
        let rows = batches[0].0.num_rows();
        if batches.iter().any(|(b, _)| b.num_rows() != rows) {
            return Err(Error::new(
                ErrorKind::CorruptData,
                "the column parts of a row group decoded to different row counts",
            ));
        }
        let decoded = self
            .layout
            .iter()
            .map(|src| match *src {
                Source::Part(p, c) => Ok(Arc::clone(batches[p].0.column(c))),
                Source::Stage(k) => {
                    let a = &self.stage[k];
                    if before as usize + rows > a.len() {
                        return Err(Error::decode(
                            "the filter stage's columns hold fewer rows than the parts",
                            name,
                            rg,
                        ));
                    }
                    Ok(a.slice(before as usize, rows))
                }
            })
            .collect::<Result<Vec<ArrayRef>>>()?;
        let bytes = batches.iter().map(|(_, b)| *b).collect();
        let positions = || match &self.positions {
            Some(p) => p.range(before, rows),
            None => Arc::new(arrow::array::Int64Array::from(Vec::<i64>::new())),
        };
        let run = &self.run;
        let columns = run.mapping.apply(&decoded, rows, positions, (name, rg))?;
        let opts = RecordBatchOptions::new().with_row_count(Some(rows));
        let batch = RecordBatch::try_new_with_options(Arc::clone(&run.schema), columns, &opts)
            .map_err(|e| {
                Error::new(ErrorKind::SchemaMismatch, e.to_string())
                    .with_path(name)
                    .with_row_group(rg)
            })?;
        let batch = match &run.transform {
            None => batch,
            Some(t) => crate::panic::catch(|| t(batch))
                .map_err(|msg| crate::panic::panicked("the task's transform", msg))?
                .map_err(|e| e.with_path(name).with_row_group(rg))?,
        };
        let batch = match self.ctx.output.get() {
            Some(schema) if !Arc::ptr_eq(&batch.schema(), schema) && batch.schema() != *schema => {
                conform(batch, schema).map_err(|e| e.with_path(name).with_row_group(rg))?
            }
            _ => batch,
        };
        Ok((batch, bytes))
    }
}

/// The next rows of every queue (each non-empty): as many as the shortest head batch holds.
/// A head of that length is taken whole, with its bytes; a longer one gives a slice of its
/// first rows (bytes `None`) and keeps the rest, with its bytes, at the front of its queue.
fn take_aligned(queues: &mut [VecDeque<(RecordBatch, u64)>]) -> Vec<(RecordBatch, Option<u64>)> {
    let rows = queues
        .iter()
        .map(|q| q.front().map_or(0, |(b, _)| b.num_rows()))
        .min()
        .unwrap_or(0);
    queues
        .iter_mut()
        .map(|q| {
            let head = &mut q.front_mut().expect("checked non-empty").0;
            if head.num_rows() > rows {
                let first = head.slice(0, rows);
                *head = head.slice(rows, head.num_rows() - rows);
                return (first, None);
            }
            let (b, bytes) = q.pop_front().expect("checked non-empty");
            (b, Some(bytes))
        })
        .collect()
}

/// `batch` with the scan's output schema, when only fields' metadata differ, at any depth
/// (same column names, and types equal but for nested fields' names and metadata, such as
/// the field ids and physical names of Delta's column mapping); an error otherwise.
fn conform(batch: RecordBatch, schema: &arrow::datatypes::SchemaRef) -> Result<RecordBatch> {
    let mismatch = |e: &dyn std::fmt::Display| Error::new(ErrorKind::SchemaMismatch, e.to_string());
    let fields = batch.schema().fields().clone();
    if fields.len() != schema.fields().len()
        || !fields
            .iter()
            .zip(schema.fields())
            .all(|(a, b)| a.data_type().equals_datatype(b.data_type()) && a.name() == b.name())
    {
        return Err(mismatch(&format!(
            "a batch of {} does not have the scan's schema {schema}",
            batch.schema()
        )));
    }
    // Nested fields as the output schema has them (top-level metadata is the schema's).
    let columns = batch
        .columns()
        .iter()
        .zip(schema.fields())
        .map(|(c, f)| super::retype::retype(c, f.data_type()))
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| mismatch(&e))?;
    let options = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
    RecordBatch::try_new_with_options(Arc::clone(schema), columns, &options)
        .map_err(|e| mismatch(&e))
}
