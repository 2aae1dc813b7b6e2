//! Deliver: the blocking iterators the caller pulls batches from ([`ScanReader`], and
//! [`TaggedReader`] which also tells each batch's task), on the caller's thread, and the
//! async stream of the same batches ([`ScanStream`]) for a caller that polls.
//!
//! The last stage: it imports only `flow` (the events, the budget, part flow control) and the
//! leaf modules, and is the only place that waits.

pub(crate) mod reader;
pub(crate) mod stream;
pub(crate) mod tagged;

pub use reader::{Canceller, ScanReader};
pub use stream::ScanStream;
pub use tagged::TaggedReader;
