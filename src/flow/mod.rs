//! Flow: the control state one scan's stages share, and nothing else. Memory (the
//! [`Budget`](budget::Budget) and what slots hold, [`Held`](held::Held)), load (how many decode
//! tasks run, [`Decoding`](held::Decoding)), per-part flow control between decoders and the
//! consumer ([`PartCtl`](part::PartCtl)) and the channel to the consumer
//! ([`Outbox`](event::Outbox)).
//!
//! A leaf of the crate: it imports no stage (only `error`, `metrics`, `task`), so the driver,
//! the decoders and the reader all depend on it and never on each other's internals.

pub(crate) mod budget;
pub(crate) mod event;
pub(crate) mod held;
pub(crate) mod part;

use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use crate::metrics::Metrics;

/// What the driver, the decoders and the reader of one scan share to bound memory and keep
/// the pool busy.
#[derive(Debug)]
pub(crate) struct Flow {
    pub budget: budget::Budget,
    pub decoding: Arc<held::Decoding>,
    pub window: part::DecodeWindow,
    pub expansion: Expansion,
    pub metrics: Arc<Metrics>,
}

/// Arrow bytes decoded per uncompressed Parquet byte, learnt from the parts finished so far:
/// it sharpens the estimate of what later slots decode to.
#[derive(Debug, Default)]
pub(crate) struct Expansion {
    decoded: AtomicU64,
    uncompressed: AtomicU64,
}

impl Expansion {
    /// A part decoded `uncompressed` Parquet bytes into `decoded` Arrow bytes.
    pub fn record(&self, decoded: u64, uncompressed: u64) {
        self.decoded.fetch_add(decoded, Relaxed);
        self.uncompressed.fetch_add(uncompressed, Relaxed);
    }

    /// The ratio (1.0 before any part has finished).
    pub fn ratio(&self) -> f64 {
        let decoded = self.decoded.load(Relaxed) as f64;
        let uncompressed = self.uncompressed.load(Relaxed) as f64;
        if uncompressed > 0.0 {
            (decoded / uncompressed).clamp(0.1, 64.0)
        } else {
            1.0
        }
    }
}
