//! Drive: the async side of a scan, on the IO runtime. One driver task per scan
//! ([`driver`]) pulls the scan's tasks ([`tasks`]), opens their files ahead of need ([`open`]:
//! footer, deleted rows, bloom filters), plans each file's slots, admits them under the budget
//! in delivery order and fetches each slot's bytes, then hands them to the decoders
//! ([`materialize`]), in one round or two around a filter stage ([`rounds`]), as the scan's
//! first slots decided ([`late`]); under a limit, rows counted before their filter checked
//! them are settled by it ([`claims`]).
//!
//! The orchestrator: it imports every stage below it (`input`, `io`, `footer`, `plan`,
//! `decode`, `flow`); nothing imports it but `scan`. Invariant: nothing here decodes; every
//! CPU step is sent to the decode pool.

pub(crate) mod claims;
pub(crate) mod driver;
pub(crate) mod fetched;
pub(crate) mod late;
pub(crate) mod materialize;
pub(crate) mod open;
pub(crate) mod rounds;
pub(crate) mod tasks;

use std::sync::{Arc, Mutex};

use crate::decode::DecodeCtx;
use crate::error::Result;
use crate::input::Stores;
use crate::io::fetch::Fetcher;
use crate::metrics::Metrics;
use crate::options::ScanOptions;
use crate::plan::file::Mode;

/// What the IO side of one scan shares: its options and schema mode, the stores and the
/// fetcher, what late materialization has saved, the rows a limit counted on statistics'
/// word, and the decoders' context.
#[derive(Debug)]
pub(crate) struct DriveCtx {
    pub opts: ScanOptions,
    pub mode: Mode,
    pub fetcher: Fetcher,
    pub stores: Mutex<Stores>,
    pub late: late::LateStats,
    pub claims: Arc<claims::Claims>,
    pub decode: Arc<DecodeCtx>,
    /// Footers of plain files read with the first one's ([`open::read_footers_early`]).
    pub early: open::EarlyFooters,
}

impl DriveCtx {
    pub fn metrics(&self) -> &Arc<Metrics> {
        self.decode.metrics()
    }

    /// Run `f` on the decode pool and await its result; a panic becomes an error about `what`
    /// in file `name`.
    pub async fn on_pool<T: Send + 'static>(
        &self,
        (name, what): (&str, &str),
        f: impl FnOnce() -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let guard = Some(self.metrics().task_started());
        crate::panic::on_pool(&self.decode.pool, guard, what, f)
            .await
            .map_err(|e| {
                if e.path().is_none() {
                    e.with_path(name)
                } else {
                    e
                }
            })
    }
}
