//! The worker side of a distributed rayquet query: a datafusion-distributed [`Worker`] whose
//! codec rebuilds rayquet scan nodes with this process's [`ScanOptions`] (stores and
//! credentials from its own environment and options, its own pools and budget), and what it
//! scanned ([`WorkerStats`]).
//!
//! Invariant: a worker learns nothing from the coordinator but the plan and the units; it
//! reads every object through its own stores.

use std::sync::Arc;

use datafusion::common::{DataFusionError, Result};
use datafusion::execution::SessionState;
use datafusion_distributed::{DistributedExt, Worker, WorkerQueryContext};
use rayquet::ScanOptions;

use crate::codec::RayquetCodec;
use crate::guard::{check_plan, SecureChannels, WorkerGuard};
use crate::remote::Remote;
pub use crate::remote::{WorkerStats, RECENT_UNITS};

/// A datafusion-distributed worker that runs rayquet scan units with `options`, and the
/// counters of what it scanned. Serve it with `worker.into_worker_server()` on a tonic server,
/// or with [`serve`]. It runs any plan it is sent: see [`guarded_worker`] for one that checks.
pub fn worker(options: ScanOptions) -> (Worker, Arc<WorkerStats>) {
    make_worker(options, None).expect("an unguarded worker has no memory pool to build")
}

/// A worker as [`worker`] makes, checking what it lets in as `guard` says (see
/// [`crate::guard`]): every plan, every unit's paths, the peers it dials, its memory pool.
/// Serve it with [`serve_guarded`], which adds the credentials and the limits of the calls.
pub fn guarded_worker(
    options: ScanOptions,
    guard: &WorkerGuard,
) -> Result<(Worker, Arc<WorkerStats>)> {
    let (worker, stats) = make_worker(options, Some(guard))?;
    let worker = match guard.limits.memory_limit {
        Some(bytes) => worker.with_runtime_env(Arc::new(
            datafusion::execution::runtime_env::RuntimeEnvBuilder::new()
                .with_memory_limit(bytes, 1.0)
                .build()?,
        )),
        None => worker,
    };
    // FlightData chunks well below the largest message the peers decode.
    Ok((
        worker.with_max_message_size(guard.limits.max_message_bytes / 2),
        stats,
    ))
}

fn make_worker(
    options: ScanOptions,
    guard: Option<&WorkerGuard>,
) -> Result<(Worker, Arc<WorkerStats>)> {
    let stats = Arc::new(WorkerStats::default());
    let remote = Remote {
        stats: Arc::clone(&stats),
        roots: guard.map(|g| Arc::new(g.roots.clone())),
    };
    let codec = RayquetCodec::new(options).with_remote(remote);
    let channels = guard.map(|g| SecureChannels::new(g.peer_credentials.clone()).only(&g.peers));
    let worker = Worker::from_session_builder(move |ctx: WorkerQueryContext| {
        let (codec, channels) = (codec.clone(), channels.clone());
        async move { Ok::<SessionState, DataFusionError>(worker_session(ctx, codec, channels)) }
    });
    Ok((worker, stats))
}

/// The worker's session: the one datafusion-distributed prepared (its config carries the
/// query's work unit channels), with the rayquet codec; a guarded worker's also checks every
/// plan ([`check_plan`]) and dials only its peers, presenting its credentials.
fn worker_session(
    ctx: WorkerQueryContext,
    codec: RayquetCodec,
    channels: Option<SecureChannels>,
) -> SessionState {
    let builder = ctx.builder.with_distributed_user_codec(codec);
    match channels {
        None => builder.build(),
        Some(channels) => builder
            .with_distributed_channel_resolver(channels)
            .with_distributed_worker_plan_rewrite_handler(
                |ev: datafusion_distributed::WorkerPlanRewriteEvent| {
                    check_plan(&ev.plan)?;
                    Ok(datafusion_distributed::WorkerPlanRewriteEventResponse::new(
                        ev.plan,
                    ))
                },
            )
            .build(),
    }
}

/// Serve a rayquet worker with `options` on `listener` until the future is dropped or the
/// server fails.
///
/// ```no_run
/// # async fn example() -> datafusion::error::Result<()> {
/// let listener = tokio::net::TcpListener::bind("0.0.0.0:50051").await?;
/// rayquet_datafusion::serve(listener, rayquet::ScanOptions::new()).await
/// # }
/// ```
pub async fn serve(listener: tokio::net::TcpListener, options: ScanOptions) -> Result<()> {
    serve_worker(listener, self::worker(options).0).await
}

/// The connections a worker accepts on `listener`, with `TCP_NODELAY` set.
///
/// tonic's `serve_with_incoming` ignores the server builder's `tcp_nodelay` (on by default
/// for `serve`), and connections accepted from a plain listener keep Nagle's algorithm: the
/// last small frame of a reply then waited for the coordinator's delayed ACK, about 40 ms on
/// Linux, on every stream of every query (TPC-H Q6 on one loopback worker took 0.092 s
/// against 0.045 s in one process, with the same CPU time).
fn incoming(listener: tokio::net::TcpListener) -> tonic::transport::server::TcpIncoming {
    tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true))
}

/// [`serve`] a worker made with [`worker`] (to keep its [`WorkerStats`]).
pub async fn serve_worker(listener: tokio::net::TcpListener, worker: Worker) -> Result<()> {
    tonic::transport::Server::builder()
        .add_service(worker.into_worker_server())
        .serve_with_incoming(incoming(listener))
        .await
        .map_err(|e| DataFusionError::External(Box::new(e)))
}

/// Serve a worker made with [`guarded_worker`] on `listener` as `guard` says: TLS (and mutual
/// TLS) if set, its bearer token checked on every call, messages of at most
/// `limits.max_message_bytes` decoded, at most `limits.max_calls` calls at once (a call past
/// that is refused, the others go on), HTTP/2 keepalives that drop peers which stop answering.
///
/// ```no_run
/// # async fn example() -> datafusion::error::Result<()> {
/// use rayquet_datafusion::guard::{Token, WorkerGuard};
/// let guard = WorkerGuard {
///     token: Some(Token::from_file("/etc/rayquet/token".as_ref())?),
///     ..Default::default()
/// };
/// let (worker, _stats) = rayquet_datafusion::guarded_worker(rayquet::ScanOptions::new(), &guard)?;
/// let listener = tokio::net::TcpListener::bind("0.0.0.0:50051").await?;
/// rayquet_datafusion::serve_guarded(listener, worker, &guard).await
/// # }
/// ```
pub async fn serve_guarded(
    listener: tokio::net::TcpListener,
    worker: Worker,
    guard: &WorkerGuard,
) -> Result<()> {
    let err = |e: tonic::transport::Error| DataFusionError::External(Box::new(e));
    let limits = guard.limits;
    let mut server = tonic::transport::Server::builder()
        .http2_keepalive_interval(Some(limits.keepalive))
        .http2_keepalive_timeout(Some(limits.keepalive))
        .tcp_keepalive(Some(limits.keepalive * 3));
    if let Some(tls) = guard.tls_config() {
        server = server.tls_config(tls).map_err(err)?;
    }
    let service = worker
        .into_worker_server()
        .max_decoding_message_size(limits.max_message_bytes);
    let service =
        tonic::service::interceptor::InterceptedService::new(service, guard.interceptor());
    server
        .layer(tower::ServiceBuilder::new().load_shed().layer(
            tower::limit::GlobalConcurrencyLimitLayer::new(limits.max_calls),
        ))
        .add_service(service)
        .serve_with_incoming(incoming(listener))
        .await
        .map_err(err)
}

#[cfg(test)]
mod tests {
    use futures::StreamExt;

    /// Every connection a worker accepts has Nagle's algorithm off (a new socket has it on, as
    /// the client's shows).
    #[tokio::test]
    async fn accepted_connections_send_without_delay() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mut incoming = std::pin::pin!(super::incoming(listener));
        for _ in 0..2 {
            let client = tokio::net::TcpStream::connect(addr).await.unwrap();
            let accepted = incoming.next().await.unwrap().unwrap();
            assert!(accepted.nodelay().unwrap(), "Nagle's algorithm is off");
            assert!(!client.nodelay().unwrap(), "a new socket's default");
        }
    }
}
