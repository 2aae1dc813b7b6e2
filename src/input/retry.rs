//! Retries of transient store failures, and counting them.
//!
//! Requests to S3, GCS and Azure are retried by object_store itself, under the scan's
//! `RetryConfig` (`Scan::retry`; object_store's default: 10 retries within 3 minutes, with
//! exponential backoff) and `ClientOptions` (`Scan::client_options`: timeouts, proxies...).
//! rayquet installs an HTTP connector that counts every HTTP attempt and every repeat of an
//! identical request (a retry) in the scan's metrics. A listing whose page body breaks part
//! way, which object_store does not retry, is started again here ([`Http::again`]) within
//! the same bounds.
//!
//! Invariant: a failure that cannot pass (not found, permission denied, a bad path) is never
//! retried; every retry loop is bounded by both a count and a total time.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::metrics::Metrics;

/// How the stores a scan builds retry and connect.
#[derive(Debug, Clone, Default)]
pub(crate) struct Http {
    #[cfg(feature = "cloud")]
    pub retry: Option<object_store::RetryConfig>,
    #[cfg(feature = "cloud")]
    pub client: Option<object_store::ClientOptions>,
    /// Where HTTP attempts and retries are counted.
    pub metrics: Option<Arc<Metrics>>,
}

/// Whether a store error may pass if the request is made again *by rayquet*: a transport
/// failure after the response started (a body cut off, a connection reset while reading),
/// which object_store does not retry. A request that failed as a whole (an error status, or
/// no response) was already retried by object_store under the scan's `RetryConfig`; those,
/// and permanent errors (not found, denied, bad path), are final.
pub(crate) fn transient(e: &object_store::Error) -> bool {
    use object_store::Error as E;
    if !matches!(e, E::Generic { .. }) {
        return false;
    }
    #[cfg_attr(not(feature = "cloud"), allow(unused_mut))]
    let mut http = false;
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(s) = source {
        // object_store's retry loop reports "Error performing GET <url> ...": already retried.
        if s.to_string().starts_with("Error performing ") {
            return false;
        }
        #[cfg(feature = "cloud")]
        if s.is::<object_store::client::HttpError>() {
            http = true;
        }
        source = s.source();
    }
    http
}

impl Http {
    /// The retry configuration of the stores built for the scan.
    #[cfg(feature = "cloud")]
    pub fn retry(&self) -> object_store::RetryConfig {
        self.retry.clone().unwrap_or_default()
    }

    /// The scan's HTTP client options, if it set any.
    #[cfg(feature = "cloud")]
    pub fn client_options(&self) -> Option<object_store::ClientOptions> {
        self.client.clone()
    }

    /// A connector that counts the scan's HTTP attempts and retries.
    #[cfg(feature = "cloud")]
    pub fn connector(&self) -> counting::Connector {
        counting::Connector {
            metrics: self.metrics.clone(),
        }
    }

    /// (retries, total time, first backoff, largest backoff) of [`Http::again`].
    fn bounds(&self) -> (usize, Duration, Duration, Duration) {
        #[cfg(feature = "cloud")]
        {
            let r = self.retry();
            (
                r.max_retries,
                r.retry_timeout,
                r.backoff.init_backoff,
                r.backoff.max_backoff,
            )
        }
        #[cfg(not(feature = "cloud"))]
        {
            (
                10,
                Duration::from_secs(180),
                Duration::from_millis(100),
                Duration::from_secs(15),
            )
        }
    }

    /// Run `f` until it succeeds, fails for good, or the retry bounds are reached, sleeping
    /// with exponential backoff between attempts.
    pub async fn again<T, E, F, Fut>(
        &self,
        mut f: F,
        transient: impl Fn(&E) -> bool,
    ) -> Result<T, E>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T, E>>,
    {
        let (max, total, mut backoff, largest) = self.bounds();
        let start = Instant::now();
        let mut tries = 0;
        loop {
            match f().await {
                Ok(v) => return Ok(v),
                Err(e) => {
                    if tries >= max || !transient(&e) || start.elapsed() + backoff > total {
                        return Err(e);
                    }
                }
            }
            tries += 1;
            if let Some(m) = &self.metrics {
                Metrics::add(&m.retries, 1);
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(largest);
        }
    }
}

#[cfg(feature = "cloud")]
mod counting {
    use std::collections::{HashMap, HashSet};
    use std::hash::{Hash, Hasher};
    use std::sync::{Arc, Mutex};

    use object_store::client::{
        HttpClient, HttpConnector, HttpError, HttpRequest, HttpResponse, HttpService,
        ReqwestConnector,
    };
    use object_store::ClientOptions;

    use crate::metrics::Metrics;

    /// Builds object_store's usual reqwest client, wrapped to count attempts.
    #[derive(Debug)]
    pub struct Connector {
        pub metrics: Option<Arc<Metrics>>,
    }

    impl HttpConnector for Connector {
        fn connect(&self, options: &ClientOptions) -> object_store::Result<HttpClient> {
            let inner = ReqwestConnector::default().connect(options)?;
            Ok(match &self.metrics {
                Some(m) => HttpClient::new(Counted {
                    inner,
                    metrics: Arc::clone(m),
                    seen: Mutex::default(),
                    ranges: Mutex::default(),
                }),
                None => inner,
            })
        }
    }

    /// Counts every attempt, and as a retry an attempt identical to an earlier one (same
    /// method, URL and range) or one that resumes an earlier GET whose body broke off
    /// (object_store asks for the rest: the same URL and range end, a later start inside it).
    #[derive(Debug)]
    struct Counted {
        inner: HttpClient,
        metrics: Arc<Metrics>,
        seen: Mutex<HashSet<u64>>,
        /// Per method and URL, the byte ranges asked for.
        ranges: Mutex<HashMap<u64, Vec<(u64, u64)>>>,
    }

    /// `bytes=S-E` as (S, E).
    fn bounded(range: &[u8]) -> Option<(u64, u64)> {
        let r = std::str::from_utf8(range).ok()?.strip_prefix("bytes=")?;
        let (s, e) = r.split_once('-')?;
        Some((s.trim().parse().ok()?, e.trim().parse().ok()?))
    }

    #[async_trait::async_trait]
    impl HttpService for Counted {
        async fn call(&self, req: HttpRequest) -> Result<HttpResponse, HttpError> {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            req.method().as_str().hash(&mut h);
            req.uri().to_string().hash(&mut h);
            let target = h.finish();
            let range = req.headers().get("range").map(|v| v.as_bytes().to_vec());
            range.hash(&mut h);
            let mut repeat = !self.seen.lock().expect("seen lock").insert(h.finish());
            if let Some((start, end)) = range.as_deref().and_then(bounded) {
                let mut ranges = self.ranges.lock().expect("ranges lock");
                let asked = ranges.entry(target).or_default();
                repeat |= asked.iter().any(|&(s, e)| e == end && s < start);
                asked.push((start, end));
            }
            Metrics::add(&self.metrics.http_requests, 1);
            if repeat {
                Metrics::add(&self.metrics.retries, 1);
            }
            self.inner.execute(req).await
        }
    }
}
