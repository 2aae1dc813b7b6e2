//! What a worker's rebuilt scan nodes share: [`WorkerStats`] (what its scans read) and
//! [`Remote`] (those counters, and the roots every unit's paths must lie under on a guarded
//! worker). The scan node ([`crate::exec`]) admits each unit through it.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use crate::feed::UnitKind;
use crate::guard::Roots;
use crate::spec::{Plan, ScanSpec};

/// The data files of this many recent units are kept ([`WorkerStats::files`]): a worker that
/// runs for months keeps a bounded list.
pub const RECENT_UNITS: usize = 4096;

/// What a worker's rayquet scans have read: units (data files or splits) and rows delivered.
#[derive(Debug, Default)]
pub struct WorkerStats {
    units: AtomicU64,
    rows: AtomicU64,
    files: Mutex<VecDeque<String>>,
}

impl WorkerStats {
    pub(crate) fn unit(&self, path: &str) {
        self.units.fetch_add(1, Relaxed);
        let mut files = self.files.lock().unwrap_or_else(|e| e.into_inner());
        if files.len() == RECENT_UNITS {
            files.pop_front();
        }
        files.push_back(path.to_string());
    }

    pub(crate) fn rows(&self, n: usize) {
        self.rows.fetch_add(n as u64, Relaxed);
    }

    /// Units received so far.
    pub fn units(&self) -> u64 {
        self.units.load(Relaxed)
    }

    /// Rows delivered so far.
    pub fn rows_scanned(&self) -> u64 {
        self.rows.load(Relaxed)
    }

    /// The data files of the last [`RECENT_UNITS`] units received, oldest first (a file
    /// appears once per unit of it).
    pub fn files(&self) -> Vec<String> {
        let files = self.files.lock().unwrap_or_else(|e| e.into_inner());
        files.iter().cloned().collect()
    }
}

/// What a worker's rebuilt scan nodes share: its counters, and (a guarded worker's) the roots
/// every path of a unit must lie under.
#[derive(Clone, Debug)]
pub(crate) struct Remote {
    pub stats: Arc<WorkerStats>,
    pub roots: Option<Arc<Roots>>,
}

impl Remote {
    /// A unit received for the scan `spec`: its paths checked against the roots (an error
    /// naming the first outside them, before anything is opened), then counted.
    pub fn admit(&self, unit: &UnitKind, spec: &ScanSpec) -> rayquet::Result<()> {
        if let Some(roots) = &self.roots {
            let paths: Vec<String> = match (unit, &spec.plan) {
                (UnitKind::Parquet(t), _) => vec![t.location().to_string()],
                (UnitKind::Iceberg(u), _) => u.paths().into_iter().map(String::from).collect(),
                (UnitKind::Delta(u), Plan::Delta(plan)) => plan.paths(u)?,
                (UnitKind::Delta(u), _) => vec![u.path.clone()],
            };
            for p in paths {
                roots.check(&p).map_err(|e| {
                    rayquet::Error::new(rayquet::ErrorKind::PermissionDenied, e.to_string())
                        .with_path(p.clone())
                })?;
            }
        }
        self.stats.unit(unit.path());
        Ok(())
    }

    pub fn rows(&self, n: usize) {
        self.stats.rows(n);
    }
}
