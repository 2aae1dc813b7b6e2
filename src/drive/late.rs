//! Late: whether a scan's filtered row groups fetch in two rounds (the filter's columns, then
//! the pages of the others that hold matches) or in one, decided the same way every run.
//!
//! The second round costs a round trip per row group; it pays when the filter's matches leave
//! many pages of the other columns out. The first [`PROBES`] slots of the scan are probes:
//! they fetch in one round, evaluate the filter, and report the bytes of the other columns'
//! pages (`before`) and of those holding matches (`after`): what a second round would have
//! fetched, measured without paying its round trip. Every later slot waits for all probes to
//! report, then goes on in two rounds only if a second round would have saved at least a
//! tenth of those bytes (or nothing was measured).
//!
//! Invariants: the decision depends on which slots are probes (their numbers) and on their
//! outcomes, never on the order slots finish in, so the same scan makes the same requests
//! every run; every probe reports exactly once, also when it fails, is dropped or never
//! reaches its filter stage ([`Probe`]'s `Drop`), so no slot waits forever; waiting happens on
//! the IO runtime, never on the decode pool.

use std::sync::Mutex;

use tokio::sync::Notify;

/// Slots whose outcome decides the rest of the scan.
pub(crate) const PROBES: usize = 4;

/// The probes' reports, and the slots waiting on them.
#[derive(Debug, Default)]
pub(crate) struct LateStats {
    state: Mutex<State>,
    reported: Notify,
}

#[derive(Debug, Default)]
struct State {
    /// Probes that have reported (with an outcome or without one).
    reported: usize,
    before: u64,
    after: u64,
    /// Probes that reported an outcome.
    measured: usize,
}

impl LateStats {
    /// The report slot number `slot` owes, if it is a probe. Take it before the slot's first
    /// await point, so that it is dropped (and reported) whatever happens to the slot.
    pub fn probe(&self, slot: usize) -> Option<Probe<'_>> {
        // `then`, not `then_some`: a Probe made for a later slot would be dropped at once,
        // reporting "no outcome" in a probe's place.
        (slot < PROBES).then(|| Probe {
            stats: self,
            done: false,
        })
    }

    /// Whether slot number `slot` (not a probe: probes measure instead of asking) should
    /// fetch in two rounds: it waits until every probe has reported, then does if their
    /// second rounds would have saved at least a tenth of the bytes, or none measured.
    pub async fn worth_it(&self, slot: usize) -> bool {
        debug_assert!(slot >= PROBES, "probes measure instead of asking");
        loop {
            let notified = self.reported.notified();
            tokio::pin!(notified);
            // Registered before the state is read: a report in between still wakes us.
            notified.as_mut().enable();
            {
                let st = self.state.lock().expect("late stats lock");
                if st.reported >= PROBES {
                    return st.measured == 0 || st.after * 10 < st.before * 9;
                }
            }
            notified.await;
        }
    }

    fn report(&self, outcome: Option<(u64, u64)>) {
        let mut st = self.state.lock().expect("late stats lock");
        st.reported += 1;
        if let Some((before, after)) = outcome {
            st.before += before;
            st.after += after;
            st.measured += 1;
        }
        drop(st);
        self.reported.notify_waiters();
    }
}

/// A probe slot's report, owed once: with [`Probe::record`], or without an outcome when
/// dropped.
#[derive(Debug)]
pub(crate) struct Probe<'a> {
    stats: &'a LateStats,
    done: bool,
}

impl Probe<'_> {
    /// The probe's second round could have fetched `before` bytes and would have fetched
    /// `after`.
    pub fn record(mut self, before: u64, after: u64) {
        self.done = true;
        self.stats.report(Some((before, after)));
    }
}

impl Drop for Probe<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.stats.report(None);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap()
    }

    #[test]
    fn later_slots_wait_for_every_probe_and_follow_their_outcome() {
        let rt = runtime();
        for (outcomes, expect) in [
            // A second round would have fetched everything: one round from now on.
            (vec![Some((100, 100)); PROBES], false),
            // It would have saved half the bytes: two rounds.
            (vec![Some((100, 50)); PROBES], true),
            // Probes that failed or never reached a filter stage: no evidence, two rounds.
            (vec![None; PROBES], true),
            // Only one measured, saving nothing.
            (
                [vec![Some((10, 10))], vec![None; PROBES - 1]].concat(),
                false,
            ),
        ] {
            let stats = Arc::new(LateStats::default());
            let waiter = {
                let stats = Arc::clone(&stats);
                rt.spawn(async move { stats.worth_it(PROBES + 3).await })
            };
            std::thread::sleep(std::time::Duration::from_millis(20));
            assert!(
                !waiter.is_finished(),
                "a later slot decided before the probes"
            );
            for (slot, outcome) in outcomes.into_iter().enumerate() {
                let probe = stats.probe(slot).expect("a probe");
                match outcome {
                    Some((b, a)) => probe.record(b, a),
                    None => drop(probe),
                }
            }
            assert_eq!(rt.block_on(waiter).unwrap(), expect);
            assert!(stats.probe(PROBES).is_none());
            // Asking for a later slot's probe reports nothing.
            assert_eq!(stats.state.lock().unwrap().reported, PROBES);
        }
    }

    /// Later slots start (and ask whether they are probes) before the probes report: the
    /// decision is still the probes'.
    #[test]
    fn later_slots_starting_first_do_not_stand_in_for_probes() {
        let rt = runtime();
        let stats = Arc::new(LateStats::default());
        for slot in PROBES..PROBES + 8 {
            assert!(stats.probe(slot).is_none());
        }
        let waiter = {
            let stats = Arc::clone(&stats);
            rt.spawn(async move { stats.worth_it(PROBES).await })
        };
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert!(!waiter.is_finished(), "decided before any probe reported");
        for slot in 0..PROBES {
            stats.probe(slot).expect("a probe").record(100, 100);
        }
        assert!(!rt.block_on(waiter).unwrap(), "no bytes saved: one round");
    }
}
