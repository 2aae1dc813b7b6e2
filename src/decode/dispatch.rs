//! Runtime CPU dispatch of rayquet's own hot loops ([`dispatched!`]): each is compiled twice,
//! for the build's target (generic x86-64, what a crate depending on rayquet gets) and for
//! x86-64-v3's instructions (AVX2, BMI1, BMI2, LZCNT, POPCNT), and the second runs when the CPU
//! has them, chosen once per process ([`v3`]).
//!
//! Why not the `multiversion` crate: the kernels are a handful of non-generic functions with
//! one extra target, which a 20-line macro covers; the crate would add a proc-macro dependency
//! to every user's build and still need the override below for tests.
//!
//! The choice: `is_x86_feature_detected!` for every feature the v3 copies are compiled with,
//! on first use; the environment variable `RAYQUET_KERNELS=portable` keeps the portable copies
//! (a benchmark of one binary both ways). Tests force a path for the whole process
//! ([`force`], hidden in the public API as `rayquet::__kernels`) or for the calling thread only
//! ([`on_thread`]: the fuzz checks, which decode on their own thread, compare both paths with
//! their reference). Forcing v3 on a CPU without it keeps the portable path. On other
//! architectures (aarch64) only the portable copy exists.
//!
//! Invariants: both copies of a kernel are the same source (one `#[inline(always)]` body), so
//! they give the same results; a v3 copy is called only after every feature it is compiled
//! with was detected (calling a `#[target_feature]` function is unsafe until then).

use std::sync::atomic::{AtomicU8, Ordering};

/// Which copies of the kernels run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kernels {
    /// Compiled for the build's target.
    Portable,
    /// Compiled with AVX2, BMI1, BMI2, LZCNT and POPCNT (x86-64 only).
    V3,
}

const UNSET: u8 = 0;
const PORTABLE: u8 = 1;
const V3: u8 = 2;

/// The process's choice: [`UNSET`] until first use.
static CHOSEN: AtomicU8 = AtomicU8::new(UNSET);

std::thread_local! {
    /// A thread's own choice ([`on_thread`]), over the process's when set.
    static LOCAL: std::cell::Cell<u8> = const { std::cell::Cell::new(UNSET) };
}

/// Whether this CPU has every feature the v3 copies are compiled with (cached by the standard
/// library after the first call).
pub(crate) fn detected() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("bmi1")
            && std::arch::is_x86_feature_detected!("bmi2")
            && std::arch::is_x86_feature_detected!("lzcnt")
            && std::arch::is_x86_feature_detected!("popcnt")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

fn code(k: Kernels) -> u8 {
    match k {
        Kernels::V3 if detected() => V3,
        _ => PORTABLE,
    }
}

#[cold]
fn choose() -> u8 {
    let portable = std::env::var_os("RAYQUET_KERNELS").is_some_and(|v| v == "portable");
    let c = code(if portable {
        Kernels::Portable
    } else {
        Kernels::V3
    });
    // A concurrent `force` wins.
    match CHOSEN.compare_exchange(UNSET, c, Ordering::Relaxed, Ordering::Relaxed) {
        Ok(_) => c,
        Err(now) => now,
    }
}

/// Whether the v3 copies run (on this thread, now): true only when the CPU has every feature
/// they are compiled with.
#[inline]
pub(crate) fn v3() -> bool {
    if !cfg!(target_arch = "x86_64") {
        return false;
    }
    let local = LOCAL.with(|c| c.get());
    let c = if local != UNSET {
        local
    } else {
        match CHOSEN.load(Ordering::Relaxed) {
            UNSET => choose(),
            c => c,
        }
    };
    c == V3
}

/// The kernels that run now (on this thread).
pub fn kernels() -> Kernels {
    if v3() {
        Kernels::V3
    } else {
        Kernels::Portable
    }
}

/// Use `k` in the whole process from now on (v3 only where detected); returns what ran
/// before. For tests and benchmarks: scans running meanwhile may mix both.
pub fn force(k: Kernels) -> Kernels {
    let before = kernels();
    CHOSEN.store(code(k), Ordering::Relaxed);
    before
}

#[cfg(any(test, feature = "fuzzing"))]
/// Run `f` with `k` on the calling thread only (v3 only where detected): decoders called on
/// this thread, not the decode pool's threads.
pub fn on_thread<T>(k: Kernels, f: impl FnOnce() -> T) -> T {
    struct Restore(u8);
    impl Drop for Restore {
        fn drop(&mut self) {
            LOCAL.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(LOCAL.with(|c| c.replace(code(k))));
    f()
}

#[cfg(any(test, feature = "fuzzing"))]
/// Whether both copies exist and differ here (x86-64 with v3 detected): tests that compare the
/// two paths say when they compared only one.
pub fn both() -> bool {
    detected()
}

/// `$vis fn $name(args) -> ret`, running `$body` (an `#[inline(always)]` function of the same
/// arguments, no generics: name an instance, `body::<T>`) compiled for x86-64-v3 when [`v3`]
/// says so, for the build's target otherwise. `$body` inlines into both copies; what it calls
/// without `#[inline(always)]` may stay one shared, portable copy.
macro_rules! dispatched {
    ($(#[$m:meta])* $vis:vis fn $name:ident($($a:ident: $t:ty),* $(,)?) $(-> $r:ty)? => $body:path;) => {
        $(#[$m])*
        #[inline]
        $vis fn $name($($a: $t),*) $(-> $r)? {
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
                unsafe fn v3($($a: $t),*) $(-> $r)? {
                    $body($($a),*)
                }
                if $crate::decode::dispatch::v3() {
                    debug_assert!($crate::decode::dispatch::detected(), "v3 without its features");
                    // SAFETY: `v3()` is true only when `is_x86_feature_detected!` found every
                    // feature this copy is compiled with (asserted above); the body itself is
                    // safe code.
                    return unsafe { v3($($a),*) };
                }
            }
            $body($($a),*)
        }
    };
}
pub(crate) use dispatched;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_thread_override_wins_and_is_restored() {
        let outside = kernels();
        on_thread(Kernels::Portable, || {
            assert_eq!(kernels(), Kernels::Portable);
            let inner = on_thread(Kernels::V3, kernels);
            assert_eq!(inner == Kernels::V3, both());
            assert_eq!(kernels(), Kernels::Portable);
        });
        assert_eq!(kernels(), outside);
    }
}
