//! Work units and the coordinator's planner.
//!
//! A [`Unit`] is one format-level piece of work: a Parquet file, an Iceberg task (data file
//! with its delete files and partition constants) or a Delta scan file (with its deletion
//! vector and the kernel's transform), as JSON in a protobuf envelope, never with credentials.
//! A unit may be part of a file: a run of its row groups ([`crate::units`]).
//! The [`Planner`] runs on the coordinator only: it holds the units the table planned (when
//! DataFusion planned the query: listing and footers, Iceberg's `plan_files`, Delta's log
//! replay) and deals them out to the scan's tasks (in distributed runs, one per worker) when
//! the first partition asks: unit `i` to task `(first + i) mod tasks`, and within a task to
//! its partitions in turn. datafusion-distributed streams a task's units to its worker while
//! the query runs.
//!
//! Why dealt to partitions, not first come first served: a partition's scan opens the files
//! of its next units ahead of need, so the partition that starts first would take a shared
//! queue whole (TPC-H Q1: one partition read 7 of 8 units, its aggregation on one thread).
//!
//! Invariant: every unit goes to exactly one partition; a task's partitions get unit counts
//! that differ by at most one.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use datafusion::common::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion_distributed::{DistributedWorkUnitFeedContext, WorkUnitFeedProvider};
use futures::stream::BoxStream;
use futures::StreamExt;
use serde::{Deserialize, Serialize};

/// One unit of work, as it travels from the coordinator to a worker.
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct Unit {
    /// The unit as JSON (a Parquet file, an Iceberg task or a Delta file, tagged by format).
    #[prost(bytes = "vec", tag = "1")]
    pub json: Vec<u8>,
}

/// What a unit holds, by table format.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) enum UnitKind {
    /// A Parquet file: a rayquet task (location and size; columns by name).
    Parquet(rayquet::FileTask),
    /// An Iceberg task.
    Iceberg(rayquet_iceberg::TaskUnit),
    /// A Delta scan file.
    Delta(rayquet_delta::FileUnit),
}

impl UnitKind {
    pub fn encode(&self) -> Result<Unit> {
        let json = serde_json::to_vec(self).map_err(|e| DataFusionError::External(e.into()))?;
        Ok(Unit { json })
    }

    pub fn decode(unit: &Unit) -> rayquet::Result<UnitKind> {
        serde_json::from_slice(&unit.json).map_err(|e| {
            rayquet::Error::new(
                rayquet::ErrorKind::InvalidArgument,
                format!("a work unit does not decode: {e}"),
            )
        })
    }

    /// The data file it reads.
    pub fn path(&self) -> &str {
        match self {
            UnitKind::Parquet(t) => t.location(),
            UnitKind::Iceberg(u) => &u.path,
            UnitKind::Delta(u) => &u.path,
        }
    }
}

/// The coordinator's planner of one scan (shared by all its partitions' feeds): the units
/// planned for it, dealt out to the tasks that ask.
#[derive(Clone)]
pub struct Planner(Arc<PlannerState>);

struct PlannerState {
    /// Partitions of the scan node in each task.
    partitions: usize,
    /// The task the first unit goes to (scans of one query start at different tasks, so that
    /// tables of one unit do not all land on the first worker).
    first: usize,
    state: Mutex<Dealing>,
}

struct Dealing {
    /// Units not dealt yet.
    units: Option<Vec<UnitKind>>,
    /// Units waiting for each partition of each task (`task * partitions + partition`).
    queues: Vec<VecDeque<UnitKind>>,
    /// Units handed out, per task (what the coordinator sent each worker).
    dealt: Vec<u64>,
}

impl std::fmt::Debug for Planner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Planner")
            .field("partitions", &self.0.partitions)
            .field("dealt", &self.dealt())
            .finish()
    }
}

/// Scans planned so far in this process (where their dealing starts).
static SCANS: AtomicUsize = AtomicUsize::new(0);

impl Planner {
    /// A planner of `units`, for a node of `partitions` partitions.
    pub(crate) fn new(partitions: usize, units: Vec<UnitKind>) -> Self {
        Planner(Arc::new(PlannerState {
            partitions: partitions.max(1),
            first: SCANS.fetch_add(1, Relaxed),
            state: Mutex::new(Dealing {
                units: Some(units),
                queues: Vec::new(),
                dealt: Vec::new(),
            }),
        }))
    }

    /// Units dealt so far, per task (in a distributed run, per worker task).
    pub fn dealt(&self) -> Vec<u64> {
        self.0.state.lock().expect("planner lock").dealt.clone()
    }

    /// The next unit for partition `partition` of `task` (of `tasks`). The units are dealt
    /// when the first partition asks: unit `i` to task `(first + i) mod tasks`, and a task's
    /// units to its partitions in turn (starting at `first` too, so that one-unit scans of one
    /// query do not all land on partition 0).
    fn next(&self, task: usize, partition: usize, tasks: usize) -> Option<UnitKind> {
        let parts = self.0.partitions;
        let mut state = self.0.state.lock().expect("planner lock");
        if let Some(units) = state.units.take() {
            state.queues = (0..tasks * parts).map(|_| VecDeque::new()).collect();
            state.dealt = vec![0; tasks];
            for (i, unit) in units.into_iter().enumerate() {
                let to = (self.0.first + i) % tasks;
                let part = (self.0.first + state.dealt[to] as usize) % parts;
                state.queues[to * parts + part].push_back(unit);
                state.dealt[to] += 1;
            }
        }
        state.queues.get_mut(task * parts + partition)?.pop_front()
    }
}

impl WorkUnitFeedProvider for Planner {
    type WorkUnit = Unit;

    fn feed(
        &self,
        partition: usize,
        ctx: Arc<TaskContext>,
    ) -> Result<BoxStream<'static, Result<Unit>>> {
        let tasks = DistributedWorkUnitFeedContext::from_ctx(&ctx)
            .fan_out_tasks
            .max(1);
        let task = (partition / self.0.partitions).min(tasks - 1);
        let part = partition % self.0.partitions;
        let planner = self.clone();
        Ok(futures::stream::iter(std::iter::from_fn(move || {
            planner.next(task, part, tasks).map(|u| u.encode())
        }))
        .boxed())
    }
}
