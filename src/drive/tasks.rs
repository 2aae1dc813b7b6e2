//! Tasks: the scan's input as a stream of [`FileTask`]s. A caller's blocking iterator is
//! pulled on tokio's blocking pool, at most 64 tasks or 2 ms at a time, and only when the
//! driver wants more, so a planner streaming 100k tasks is never collected first and planning
//! overlaps reading.
//!
//! Invariant: a panic in the caller's iterator ends the stream with an error at its position.

use std::future::Future;
use std::time::{Duration, Instant};

use futures::stream::BoxStream;
use futures::StreamExt;
use tokio::task::JoinHandle;

use crate::error::{Error, ErrorKind, Result};
use crate::task::FileTask;

/// The scan's tasks, in order, each or a planner's error.
pub(crate) type TaskStream = BoxStream<'static, Result<FileTask>>;

/// A blocking iterator of tasks as a stream: pulled on tokio's blocking pool, at most 64
/// tasks or 2 ms at a time, and only when the driver wants more.
pub(crate) fn iter_stream<I>(iter: I) -> TaskStream
where
    I: Iterator<Item = Result<FileTask>> + Send + 'static,
{
    type Chunk<I> = (Option<I>, Vec<Result<FileTask>>);
    let chunks = futures::stream::unfold(Some(iter), |iter| async move {
        let mut iter = iter?;
        let pulled: std::result::Result<Chunk<I>, _> = tokio::task::spawn_blocking(move || {
            let start = Instant::now();
            let mut out = Vec::new();
            while out.len() < 64 && (out.is_empty() || start.elapsed() < Duration::from_millis(2)) {
                match crate::panic::catch(|| iter.next()) {
                    Ok(Some(t)) => out.push(t),
                    Ok(None) => return (None, out),
                    Err(msg) => {
                        out.push(Err(crate::panic::panicked("the task iterator", msg)));
                        return (None, out);
                    }
                }
            }
            (Some(iter), out)
        })
        .await;
        match pulled {
            Ok((_, out)) if out.is_empty() => None,
            Ok((rest, out)) => Some((futures::stream::iter(out), rest)),
            Err(e) => Some((
                futures::stream::iter(vec![Err(Error::new(
                    ErrorKind::Panic,
                    format!("pulling tasks failed: {e}"),
                ))]),
                None,
            )),
        }
    });
    chunks.flatten().boxed()
}

/// Aborts a spawned task when dropped (a file opened ahead of a cancelled scan).
pub(crate) struct AbortOnDrop<T>(pub JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl<T> Future for AbortOnDrop<T> {
    type Output = std::result::Result<T, tokio::task::JoinError>;
    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        std::pin::Pin::new(&mut self.0).poll(cx)
    }
}
