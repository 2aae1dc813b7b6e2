//! Work units and the coordinator's planner.
//!
//! A [`Unit`] is one format-level piece of work: a Parquet file, an Iceberg task (data file
//! with its delete files and partition constants) or a Delta scan file (with its deletion
//! vector and the kernel's transform), as JSON in a protobuf envelope, never with credentials.
//! The [`Planner`] runs on the coordinator only: it starts the table's lazy planner (listing,
//! Iceberg's `plan_files`, Delta's log replay) when the first partition asks, and deals the
//! units out to the scan's tasks (in distributed runs, one per worker): unit `i` to task
//! `i mod tasks`, each task's partitions sharing its queue. datafusion-distributed streams a
//! task's units to its worker while the query runs.
//!
//! Invariants: every unit the planner yields goes to exactly one partition; an error from the
//! planner ends the partition that drew it (the query fails with it); nothing is planned
//! before a partition is polled.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
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

/// A table's units, planned lazily.
pub(crate) type Units = BoxStream<'static, rayquet::Result<UnitKind>>;

/// How units are produced: started once, on first demand.
pub(crate) type StartPlanning = Box<dyn FnOnce() -> Units + Send>;

/// The coordinator's planner of one scan (shared by all its partitions' feeds).
#[derive(Clone)]
pub struct Planner(Arc<PlannerState>);

struct PlannerState {
    /// Partitions of the scan node in each task.
    partitions: usize,
    start: Mutex<Option<StartPlanning>>,
    shared: tokio::sync::Mutex<Shared>,
    /// Units handed out, per task (what the coordinator sent each worker).
    dealt: Mutex<Vec<u64>>,
    total: AtomicU64,
}

#[derive(Default)]
struct Shared {
    units: Option<Units>,
    done: bool,
    /// Units drawn from the planner, for dealing.
    drawn: u64,
    /// Units waiting for a partition of each task.
    queues: Vec<VecDeque<rayquet::Result<UnitKind>>>,
}

impl std::fmt::Debug for Planner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Planner")
            .field("partitions", &self.0.partitions)
            .field("dealt", &self.dealt())
            .finish()
    }
}

impl Planner {
    /// A planner whose units come from `start()`, for a node of `partitions` partitions.
    pub(crate) fn new(partitions: usize, start: StartPlanning) -> Self {
        Planner(Arc::new(PlannerState {
            partitions: partitions.max(1),
            start: Mutex::new(Some(start)),
            shared: Default::default(),
            dealt: Default::default(),
            total: AtomicU64::new(0),
        }))
    }

    /// Units dealt so far, per task (in a distributed run, per worker task).
    pub fn dealt(&self) -> Vec<u64> {
        self.0.dealt.lock().expect("dealt lock").clone()
    }

    /// The next unit for `task` (of `tasks`), drawing from the planner as needed.
    async fn next(&self, task: usize, tasks: usize) -> Option<rayquet::Result<UnitKind>> {
        let mut shared = self.0.shared.lock().await;
        if shared.queues.len() < tasks {
            shared.queues.resize_with(tasks, VecDeque::new);
        }
        loop {
            if let Some(unit) = shared.queues[task].pop_front() {
                return Some(unit);
            }
            if shared.done {
                return None;
            }
            if shared.units.is_none() {
                let start = self.0.start.lock().expect("start lock").take();
                shared.units = Some(match start {
                    Some(start) => start(),
                    None => futures::stream::empty().boxed(),
                });
            }
            let drawn = shared.units.as_mut().expect("started").next().await;
            match drawn {
                None => shared.done = true,
                Some(Err(e)) => return Some(Err(e)),
                Some(Ok(unit)) => {
                    let to = (shared.drawn % tasks as u64) as usize;
                    shared.drawn += 1;
                    shared.queues[to].push_back(Ok(unit));
                    let mut dealt = self.0.dealt.lock().expect("dealt lock");
                    if dealt.len() < tasks {
                        dealt.resize(tasks, 0);
                    }
                    dealt[to] += 1;
                    self.0.total.fetch_add(1, Relaxed);
                }
            }
        }
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
        let planner = self.clone();
        Ok(futures::stream::unfold(planner, move |p| async move {
            let unit = p.next(task, tasks).await?;
            let unit = unit
                .map_err(|e| DataFusionError::External(Box::new(e)))
                .and_then(|u| u.encode());
            Some((unit, p))
        })
        .boxed())
    }
}
