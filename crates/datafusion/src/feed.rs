//! Work units and the coordinator's planner.
//!
//! A [`Unit`] is one format-level piece of work: a Parquet file, an Iceberg task (data file
//! with its delete files and partition constants) or a Delta scan file (with its deletion
//! vector and the kernel's transform), as JSON in a protobuf envelope, never with credentials.
//! A unit may be part of a file: a run of its row groups ([`crate::units`]).
//! The [`Planner`] runs on the coordinator only: it holds the units the table planned (when
//! DataFusion planned the query: listing and footers, Iceberg's `plan_files`, Delta's log
//! replay), each with its bytes (of the columns read, for a Parquet run of row groups; the
//! split's or file's size for Iceberg and Delta), and deals them out when the first partition
//! asks, in order: each unit to the task (in distributed runs, one per worker) with the fewest
//! bytes so far, and within it to the partition with the fewest. datafusion-distributed
//! streams a task's units to its worker while the query runs.
//!
//! Why dealt to partitions, not first come first served: a partition's scan opens the files
//! of its next units ahead of need, so the partition that starts first would take a shared
//! queue whole (TPC-H Q1: one partition read 7 of 8 units, its aggregation on one thread).
//! Why by bytes, not in turn: units differ in size (a file's last run, small files beside
//! large ones), and dealing in turn could give one partition every large unit.
//!
//! Invariants: every unit goes to exactly one partition, and a partition's units keep the
//! planned order; the bytes dealt to two tasks, or to two partitions of a task, differ by at
//! most the largest unit's (units of equal bytes are dealt in turn, from task and partition
//! `first`).

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

    /// An Iceberg task and its bytes (the split's length), as the planner deals it: without
    /// its column statistics (for planning; they never travel).
    pub fn iceberg(mut task: rayquet_iceberg::TaskUnit) -> (Self, u64) {
        task.stats = Vec::new();
        let bytes = task.length;
        (UnitKind::Iceberg(task), bytes)
    }

    /// A Delta scan file and its bytes (the file's size), as the planner deals it: without
    /// its column statistics (for planning; they never travel).
    pub fn delta(mut file: rayquet_delta::FileUnit) -> (Self, u64) {
        file.stats = Vec::new();
        let bytes = file.size;
        (UnitKind::Delta(file), bytes)
    }

    /// The same unit reading only the row groups `run` of its file.
    pub fn with_row_groups(&self, run: std::ops::Range<usize>) -> Self {
        match self {
            UnitKind::Parquet(t) => UnitKind::Parquet(t.clone().row_groups(run)),
            UnitKind::Iceberg(u) => UnitKind::Iceberg(rayquet_iceberg::TaskUnit {
                row_groups: Some(run),
                ..u.clone()
            }),
            UnitKind::Delta(u) => UnitKind::Delta(rayquet_delta::FileUnit {
                row_groups: Some(run),
                ..u.clone()
            }),
        }
    }

    /// An Iceberg unit that is a whole file whose row groups' first bytes the table's
    /// metadata records (the manifest's split offsets): cutting it needs no footer.
    pub fn with_split_offsets(&self) -> Option<&rayquet_iceberg::TaskUnit> {
        match self {
            UnitKind::Iceberg(u)
                if u.start == 0
                    && u.length == u.size
                    && u.row_groups.is_none()
                    && !u.split_offsets.is_empty() =>
            {
                Some(u)
            }
            _ => None,
        }
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
    /// Units not dealt yet, with their bytes.
    units: Option<Vec<(UnitKind, u64)>>,
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
    /// A planner of `units` (each with its bytes), for a node of `partitions` partitions.
    pub(crate) fn new(partitions: usize, units: Vec<(UnitKind, u64)>) -> Self {
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
    /// when the first partition asks, in order: each to the task with the fewest bytes so
    /// far, then to its partition with the fewest; ties go to the first from `first` on, so
    /// that units of equal bytes are dealt in turn and one-unit scans of one query do not all
    /// land on task 0 and partition 0. A unit counts at least one byte.
    fn next(&self, task: usize, partition: usize, tasks: usize) -> Option<UnitKind> {
        let parts = self.0.partitions;
        let mut state = self.0.state.lock().expect("planner lock");
        if let Some(units) = state.units.take() {
            state.queues = (0..tasks * parts).map(|_| VecDeque::new()).collect();
            state.dealt = vec![0; tasks];
            let first = self.0.first;
            let mut task_bytes = vec![0u64; tasks];
            let mut part_bytes = vec![0u64; tasks * parts];
            for (unit, bytes) in units {
                let to = fewest(&task_bytes, first);
                let part = fewest(&part_bytes[to * parts..(to + 1) * parts], first);
                let bytes = bytes.max(1);
                task_bytes[to] += bytes;
                part_bytes[to * parts + part] += bytes;
                state.queues[to * parts + part].push_back(unit);
                state.dealt[to] += 1;
            }
        }
        state.queues.get_mut(task * parts + partition)?.pop_front()
    }
}

/// The index of the smallest of `loads` (not empty), the first from `first` on among equals.
fn fewest(loads: &[u64], first: usize) -> usize {
    let n = loads.len();
    (0..n)
        .map(|k| (first + k) % n)
        .min_by_key(|&i| loads[i])
        .unwrap_or(0)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Units named by their position, with these bytes.
    fn units(bytes: &[u64]) -> Vec<(UnitKind, u64)> {
        bytes
            .iter()
            .enumerate()
            .map(|(i, &b)| (UnitKind::Parquet(rayquet::FileTask::new(format!("{i}"))), b))
            .collect()
    }

    /// Each partition's units (positions), drained as the feeds would.
    fn deal(bytes: &[u64], tasks: usize, parts: usize) -> Vec<Vec<usize>> {
        let planner = Planner::new(parts, units(bytes));
        let mut out = Vec::new();
        for t in 0..tasks {
            for p in 0..parts {
                let got = std::iter::from_fn(|| planner.next(t, p, tasks));
                out.push(got.map(|u| u.path().parse().unwrap()).collect());
            }
        }
        out
    }

    /// Every unit once, in order within its partition, and bytes within the largest unit's
    /// between partitions of a task and between tasks.
    #[test]
    fn units_are_dealt_by_bytes_each_once_in_order() {
        let alternating: Vec<u64> = (0..16)
            .map(|i| if i % 2 == 0 { 8 << 20 } else { 1 << 10 })
            .collect();
        // A file's runs of 8 MiB and its last short one, four times; then small files.
        let runs: Vec<u64> = (0..4)
            .flat_map(|_| [8 << 20, 8 << 20, 8 << 20, 3 << 20])
            .chain([1 << 20; 5])
            .collect();
        let equal = vec![100; 7];
        for bytes in [alternating, runs, equal, vec![0, 0, 0], vec![5]] {
            let largest = bytes.iter().copied().max().unwrap().max(1);
            for (tasks, parts) in [(1, 2), (1, 3), (3, 2), (2, 1)] {
                let got = deal(&bytes, tasks, parts);
                let mut all: Vec<usize> = got.iter().flatten().copied().collect();
                assert!(
                    got.iter().all(|p| p.windows(2).all(|w| w[0] < w[1])),
                    "{got:?}"
                );
                all.sort_unstable();
                assert_eq!(all, (0..bytes.len()).collect::<Vec<_>>(), "each once");
                let sum = |p: &Vec<usize>| p.iter().map(|&i| bytes[i].max(1)).sum::<u64>();
                let spread = |s: &[u64]| s.iter().max().unwrap() - s.iter().min().unwrap();
                let per_task: Vec<u64> =
                    got.chunks(parts).map(|t| t.iter().map(sum).sum()).collect();
                assert!(spread(&per_task) <= largest, "tasks {per_task:?}");
                for t in got.chunks(parts) {
                    let per_part: Vec<u64> = t.iter().map(sum).collect();
                    assert!(spread(&per_part) <= largest, "partitions {per_part:?}");
                }
            }
        }
        // Before, in turn: one partition of two got every large unit of `alternating`.
        let got = deal(
            &(0..16)
                .map(|i| if i % 2 == 0 { 8 << 20 } else { 1 << 10 })
                .collect::<Vec<_>>(),
            1,
            2,
        );
        assert!(got.iter().all(|p| p.iter().any(|i| i % 2 == 0)), "{got:?}");
    }
}
