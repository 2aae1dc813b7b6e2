//! The process-wide pool of byte buffers that decompressed pages (and local reads) go into, so
//! that a long-running process reuses the same memory scan after scan instead of asking the
//! allocator (and, for fresh memory, the kernel) for it again.
//!
//! A buffer is taken for `n` bytes from the free list of its size class (powers of two from
//! 4 KiB to 64 MiB; larger requests are not pooled), handed out as a [`PoolBuf`], turned into a
//! `Bytes` with [`PoolBuf::freeze`], and comes back to the pool when the last `Bytes` (or Arrow
//! buffer) referencing it drops.
//!
//! Invariants: the idle bytes the pool keeps (buffers not in use) never exceed
//! [`POOL_IDLE_BYTES`] — a buffer returned beyond that is freed; buffers in use are owned by
//! the pages and arrays holding them and counted wherever those are counted (the scan budget
//! counts delivered arrays); a pooled buffer is always fully initialized (zero-filled once,
//! when it is first allocated, by `calloc`, which fresh memory from the kernel gets for free),
//! so reusing it never zero-fills again and no unsafe code is needed.

use std::sync::{Mutex, OnceLock};

use bytes::Bytes;

/// The most bytes of idle buffers the process-wide pool keeps (64 MiB).
pub(crate) const POOL_IDLE_BYTES: usize = 64 << 20;
/// The smallest size class.
const MIN_CLASS: u32 = 12;
/// The largest size class: larger buffers are allocated and freed as usual.
const MAX_CLASS: u32 = 26;

/// A pool of byte buffers by size class, keeping at most `cap` idle bytes.
#[derive(Debug)]
pub(crate) struct BufferPool {
    cap: usize,
    state: Mutex<Free>,
}

#[derive(Debug, Default)]
struct Free {
    /// Idle buffers per size class (index: class - MIN_CLASS).
    lists: Vec<Vec<Vec<u8>>>,
    idle: usize,
}

/// A buffer of at least `len` bytes from a [`BufferPool`] (or, when too large, of its own).
#[derive(Debug)]
pub(crate) struct PoolBuf {
    buf: Vec<u8>,
    len: usize,
    pool: Option<&'static BufferPool>,
}

impl BufferPool {
    /// A pool keeping at most `cap` idle bytes.
    pub const fn new(cap: usize) -> Self {
        BufferPool {
            cap,
            state: Mutex::new(Free {
                lists: Vec::new(),
                idle: 0,
            }),
        }
    }

    /// A buffer whose first `len` bytes the caller overwrites ([`PoolBuf::with_spare`]).
    pub fn take(&'static self, len: usize) -> PoolBuf {
        let Some(class) = class_of(len) else {
            return PoolBuf {
                buf: vec![0; len],
                len,
                pool: None,
            };
        };
        let reused = {
            let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
            let i = (class - MIN_CLASS) as usize;
            let got = st.lists.get_mut(i).and_then(Vec::pop);
            if let Some(b) = &got {
                st.idle -= b.len();
            }
            got
        };
        let buf = reused.unwrap_or_else(|| vec![0; 1 << class]);
        PoolBuf {
            buf,
            len,
            pool: Some(self),
        }
    }

    fn give(&self, buf: Vec<u8>) {
        let Some(class) = class_of(buf.len()).filter(|c| buf.len() == 1 << c) else {
            return;
        };
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if st.idle + buf.len() > self.cap {
            return;
        }
        let i = (class - MIN_CLASS) as usize;
        if st.lists.len() <= i {
            st.lists.resize_with(i + 1, Vec::new);
        }
        st.idle += buf.len();
        st.lists[i].push(buf);
    }

    /// Bytes of idle buffers held now.
    #[cfg(test)]
    pub fn idle_bytes(&self) -> usize {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).idle
    }
}

/// The size class (log2 of the buffer size) serving `len` bytes, or `None` when too large.
fn class_of(len: usize) -> Option<u32> {
    let class = len
        .max(1)
        .next_power_of_two()
        .trailing_zeros()
        .max(MIN_CLASS);
    (class <= MAX_CLASS).then_some(class)
}

impl PoolBuf {
    /// The whole buffer (at least `len` bytes; a pooled one is a power of two long), for
    /// writers that may write past `len` (snappy's fast loop, [`crate::decode::snappy`]).
    pub fn with_spare(&mut self) -> &mut [u8] {
        &mut self.buf
    }

    /// The buffer as `Bytes`; it returns to its pool when the last reference drops.
    pub fn freeze(self) -> Bytes {
        Bytes::from_owner(self)
    }
}

impl AsRef<[u8]> for PoolBuf {
    fn as_ref(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

impl Drop for PoolBuf {
    fn drop(&mut self) {
        if let Some(pool) = self.pool {
            pool.give(std::mem::take(&mut self.buf));
        }
    }
}

/// The process-wide pool, shared by every scan (at most [`POOL_IDLE_BYTES`] idle).
pub(crate) fn pool() -> &'static BufferPool {
    static POOL: OnceLock<BufferPool> = OnceLock::new();
    POOL.get_or_init(|| BufferPool::new(POOL_IDLE_BYTES))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_reused_and_bounded() {
        static POOL: BufferPool = BufferPool::new(3 << 20);
        let mut a = POOL.take(1 << 20);
        a.with_spare().fill(7);
        let ptr = a.as_ref().as_ptr();
        let bytes = a.freeze();
        assert_eq!(bytes.len(), 1 << 20);
        assert_eq!(POOL.idle_bytes(), 0, "in use");
        let clone = bytes.slice(10..20);
        drop(bytes);
        assert_eq!(POOL.idle_bytes(), 0, "a slice still holds it");
        drop(clone);
        assert_eq!(
            POOL.idle_bytes(),
            1 << 20,
            "back once the last reference dropped"
        );
        // The same buffer serves the next request of its class, with its old contents.
        let mut b = POOL.take((1 << 20) - 5);
        assert_eq!(b.as_ref().as_ptr(), ptr);
        assert_eq!(b.as_ref().len(), (1 << 20) - 5);
        assert_eq!(b.with_spare().len(), 1 << 20, "the class's spare bytes");
        assert_eq!(POOL.idle_bytes(), 0);
        // Idle bytes stay within the cap: four 1 MiB buffers returned, three kept.
        let bufs: Vec<PoolBuf> = (0..4).map(|_| POOL.take(1 << 20)).collect();
        drop(b);
        drop(bufs);
        assert_eq!(POOL.idle_bytes(), 3 << 20);
        // Too large to pool: allocated and freed as usual.
        let big = POOL.take((64 << 20) + 1);
        assert!(big.pool.is_none());
        drop(big);
        assert_eq!(POOL.idle_bytes(), 3 << 20);
    }

    #[test]
    fn size_classes() {
        assert_eq!(class_of(0), Some(12));
        assert_eq!(class_of(4096), Some(12));
        assert_eq!(class_of(4097), Some(13));
        assert_eq!(class_of(64 << 20), Some(26));
        assert_eq!(class_of((64 << 20) + 1), None);
    }
}
