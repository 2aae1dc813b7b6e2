//! Claims: rows a scan's limit counts on statistics' word, until the filter has checked them.
//!
//! With a limit, the driver stops planning once the slots it started hold enough rows. A slot
//! whose rows all match by its statistics (`FilterStage::check_only`) still runs the filter
//! (statistics can be false), so its rows are not known until that check; counting none of
//! them would plan (and fetch) slots the limit never needs. Such a slot's rows are counted
//! as a [`Claim`]; before stopping, the driver waits for every claim to settle and takes back
//! the rows the checks removed, planning on if the limit is then no longer met.
//!
//! Invariant: every claim settles exactly once, with the rows its slot kept, or with none
//! when it is dropped unsettled (the slot failed or was cancelled), so the driver never waits
//! forever and never stops short of the limit on rows that were not delivered.

use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

/// The claims of one scan.
#[derive(Debug, Default)]
pub(crate) struct Claims {
    state: Mutex<State>,
    settled: Notify,
}

#[derive(Debug, Default)]
struct State {
    /// Claims not settled yet.
    pending: usize,
    /// Rows claimed by settled claims that their slots did not keep.
    shortfall: u64,
}

impl Claims {
    /// Count `rows` of a slot before its filter has checked them.
    pub fn claim(self: &Arc<Self>, rows: u64) -> Claim {
        self.state.lock().expect("claims lock").pending += 1;
        Claim {
            claims: Arc::clone(self),
            rows,
            settled: false,
        }
    }

    /// Wait until every claim has settled; the claimed rows their slots did not keep, since
    /// the last call.
    pub async fn shortfall(&self) -> u64 {
        loop {
            let notified = self.settled.notified();
            tokio::pin!(notified);
            // Registered before the state is read: a settlement in between still wakes us.
            notified.as_mut().enable();
            {
                let mut st = self.state.lock().expect("claims lock");
                if st.pending == 0 {
                    return std::mem::take(&mut st.shortfall);
                }
            }
            notified.await;
        }
    }

    fn settle(&self, shortfall: u64) {
        let mut st = self.state.lock().expect("claims lock");
        st.pending -= 1;
        st.shortfall += shortfall;
        drop(st);
        self.settled.notify_waiters();
    }
}

/// The rows one slot claimed, owed a settlement: [`Claim::kept`] once its filter ran, or,
/// when dropped unsettled, none kept.
#[derive(Debug)]
pub(crate) struct Claim {
    claims: Arc<Claims>,
    rows: u64,
    settled: bool,
}

impl Claim {
    /// The slot's filter kept `kept` of the claimed rows.
    pub fn kept(mut self, kept: u64) {
        self.settled = true;
        self.claims.settle(self.rows.saturating_sub(kept));
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        if !self.settled {
            self.claims.settle(self.rows);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_driver_waits_for_every_claim_and_takes_back_what_was_not_kept() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let claims = Arc::new(Claims::default());
        let (a, b, c) = (claims.claim(100), claims.claim(50), claims.claim(7));
        let waiter = {
            let claims = Arc::clone(&claims);
            rt.spawn(async move { claims.shortfall().await })
        };
        a.kept(100);
        b.kept(20);
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert!(!waiter.is_finished(), "settled before every claim was");
        // Dropped unsettled (its slot failed): none of its rows count.
        drop(c);
        assert_eq!(rt.block_on(waiter).unwrap(), 30 + 7);
        // Taken: the next wait starts from nothing, and returns at once with none pending.
        assert_eq!(rt.block_on(claims.shortfall()), 0);
    }
}
