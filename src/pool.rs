//! The process-wide pool of byte buffers that decompressed pages (and local reads) go into, so
//! that a long-running process reuses the same memory scan after scan instead of asking the
//! allocator (and, for fresh memory, the kernel) for it again.
//!
//! A buffer is taken for `n` bytes from the free list of its size class, handed out as a
//! [`PoolBuf`], turned into a `Bytes` with [`PoolBuf::freeze`], and comes back to the pool when
//! the last `Bytes` (or Arrow buffer) referencing it drops. Size classes run from 4 KiB to
//! 64 MiB (larger requests are not pooled), four per power of two (5/4, 6/4, 7/4 and 8/4 of
//! it), so that a buffer over 4 KiB is at most a quarter larger than the bytes asked for: the
//! scan budget counts those bytes, and the memory it bounds is then at most a quarter more
//! (pure powers of two would let a page of just over 1 MiB hold 2 MiB).
//!
//! Two ways in: [`BufferPool::take`] for a buffer the caller overwrites (a decompressed page),
//! [`BufferPool::fill`] for one a reader appends to (a local file read), so that a read into
//! fresh memory is never zero-filled first.
//!
//! Invariants: the idle bytes the pool keeps (buffers not in use) never exceed
//! [`POOL_IDLE_BYTES`] — a buffer returned beyond that is freed, and
//! [`crate::release_idle_buffers`] frees them all; buffers in use are owned by
//! the pages and arrays holding them and counted wherever those are counted (the scan budget
//! counts fetched bytes and delivered arrays); a pooled buffer is always fully initialized
//! (`take` allocates it zero-filled by `calloc`, which fresh memory from the kernel gets for
//! free; `fill` zero-fills what its reader did not write), so reusing it never zero-fills
//! again and no unsafe code is needed.

use std::sync::{Mutex, OnceLock};

use bytes::Bytes;

/// The most bytes of idle buffers the process-wide pool keeps (64 MiB).
pub(crate) const POOL_IDLE_BYTES: usize = 64 << 20;
/// The smallest buffer (log2): smaller requests get one this size.
const MIN_SHIFT: u32 = 12;
/// The largest buffer (log2): larger requests are allocated and freed as usual.
const MAX_SHIFT: u32 = 26;
/// Size classes per power of two.
const STEPS: u32 = 4;

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

    /// A buffer whose first `len` bytes the caller overwrites, with at least `spare` more
    /// after them for writers that run past `len` ([`PoolBuf::with_spare`]).
    pub fn take(&'static self, len: usize, spare: usize) -> PoolBuf {
        let want = len.saturating_add(spare);
        let Some(class) = class_of(want) else {
            return PoolBuf {
                buf: vec![0; want],
                len,
                pool: None,
            };
        };
        let buf = self
            .pop(class)
            .unwrap_or_else(|| vec![0; class_size(class)]);
        PoolBuf {
            buf,
            len,
            pool: Some(self),
        }
    }

    /// A buffer holding the bytes `fill` appends to the empty `Vec` it is given (which has room
    /// for `len`; `fill` should append at most that many), e.g. a file read with
    /// `Read::read_to_end`. A pooled buffer's bytes past what `fill` wrote are zero-filled
    /// (pooled buffers are always initialized), but the bytes it writes never are: a read into
    /// fresh memory costs no zero-filling. A failed fill's buffer returns to the pool.
    pub fn fill<E>(
        &'static self,
        len: usize,
        fill: impl FnOnce(&mut Vec<u8>) -> Result<(), E>,
    ) -> Result<PoolBuf, E> {
        let class = class_of(len);
        let mut buf = match class {
            Some(c) => self.pop(c).unwrap_or_default(),
            None => Vec::new(),
        };
        buf.clear();
        buf.reserve_exact(class.map_or(len, class_size));
        let filled = fill(&mut buf);
        let got = buf.len();
        let pool = match class {
            // Only a buffer of exactly its class's size goes back to the pool.
            Some(c) if got <= class_size(c) => {
                buf.resize(class_size(c), 0);
                Some(self)
            }
            _ => None,
        };
        let out = PoolBuf {
            buf,
            len: got,
            pool,
        };
        // A failed fill's buffer goes back to the pool as it drops.
        filled.map(|()| out)
    }

    /// An idle buffer of class `class`, if any.
    fn pop(&self, class: usize) -> Option<Vec<u8>> {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let got = st.lists.get_mut(class).and_then(Vec::pop);
        if let Some(b) = &got {
            st.idle -= b.len();
        }
        got
    }

    fn give(&self, buf: Vec<u8>) {
        let Some(i) = class_of(buf.len()).filter(|&c| buf.len() == class_size(c)) else {
            return;
        };
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if st.idle + buf.len() > self.cap {
            return;
        }
        if st.lists.len() <= i {
            st.lists.resize_with(i + 1, Vec::new);
        }
        st.idle += buf.len();
        st.lists[i].push(buf);
    }

    /// Free every idle buffer; returns their bytes.
    pub fn clear(&self) -> usize {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let freed = std::mem::take(&mut st.idle);
        let lists = std::mem::take(&mut st.lists);
        drop(st);
        drop(lists);
        freed
    }

    /// Bytes of idle buffers held now.
    #[cfg(test)]
    pub fn idle_bytes(&self) -> usize {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).idle
    }
}

/// The size class (an index into the free lists) serving `len` bytes: the smallest class at
/// least `len` long, or `None` when `len` is over the largest.
fn class_of(len: usize) -> Option<usize> {
    if len <= 1 << MIN_SHIFT {
        return Some(0);
    }
    if len > 1 << MAX_SHIFT {
        return None;
    }
    // 2^b < len <= 2^(b+1): the classes of this octave are 5..=8 steps of 2^b / 4.
    let b = usize::BITS - 1 - (len - 1).leading_zeros();
    let steps = (len - 1) >> (b - 2);
    // steps is 4..=7 (len - 1 >= 2^b); the class is one step more.
    Some(1 + ((b - MIN_SHIFT) * STEPS) as usize + (steps - 4))
}

/// The buffer size of class `class` ([`class_of`]).
fn class_size(class: usize) -> usize {
    if class == 0 {
        return 1 << MIN_SHIFT;
    }
    let (octave, step) = ((class - 1) / STEPS as usize, (class - 1) % STEPS as usize);
    (5 + step) << (MIN_SHIFT as usize + octave - 2)
}

impl PoolBuf {
    /// The whole buffer (at least `len` bytes, and the spare asked for), for writers that may
    /// write past `len` (snappy's fast loop, [`crate::decode::snappy`]).
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
        let mut a = POOL.take(1 << 20, 0);
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
        let mut b = POOL.take((1 << 20) - 5, 0);
        assert_eq!(b.as_ref().as_ptr(), ptr);
        assert_eq!(b.as_ref().len(), (1 << 20) - 5);
        assert_eq!(b.with_spare().len(), 1 << 20, "the class's spare bytes");
        assert_eq!(POOL.idle_bytes(), 0);
        // Idle bytes stay within the cap: four 1 MiB buffers returned, three kept.
        let bufs: Vec<PoolBuf> = (0..4).map(|_| POOL.take(1 << 20, 0)).collect();
        drop(b);
        drop(bufs);
        assert_eq!(POOL.idle_bytes(), 3 << 20);
        // Too large to pool: allocated and freed as usual.
        let big = POOL.take((64 << 20) + 1, 0);
        assert!(big.pool.is_none());
        drop(big);
        assert_eq!(POOL.idle_bytes(), 3 << 20);
    }

    #[test]
    fn spare_bytes_and_fills() {
        static POOL: BufferPool = BufferPool::new(8 << 20);
        // Spare bytes asked for move a request up a class when the class has too few.
        let mut a = POOL.take((1 << 20) - 5, 80);
        assert_eq!(a.as_ref().len(), (1 << 20) - 5);
        assert_eq!(a.with_spare().len(), 5 << 18);
        let b = POOL.take((1 << 20) - 100, 80);
        assert_eq!(b.buf.len(), 1 << 20, "enough spare in its own class");
        drop((a, b));
        assert_eq!(POOL.idle_bytes(), (5 << 18) + (1 << 20));
        // A fill reuses an idle buffer of its class, keeps what it wrote, zeroes the rest.
        let mut reader: &[u8] = &[3; 900_000];
        let c = POOL
            .fill(1 << 20, |v| {
                std::io::Read::read_to_end(&mut reader, v).map(drop)
            })
            .unwrap();
        assert_eq!(c.as_ref(), &[3; 900_000][..]);
        assert_eq!(c.buf.len(), 1 << 20);
        assert!(
            c.buf[900_000..].iter().all(|&x| x == 0),
            "the rest is zeroed"
        );
        assert_eq!(POOL.idle_bytes(), 5 << 18, "the 1 MiB buffer was reused");
        drop(c);
        // A fill that fails gives its buffer back; one too large for the pool is its own.
        let e = POOL.fill(1 << 20, |v| {
            v.push(9);
            Err("no")
        });
        assert!(e.is_err());
        assert_eq!(POOL.idle_bytes(), (5 << 18) + (1 << 20));
        let big = POOL.fill((64 << 20) + 1, |v| {
            v.push(1);
            Ok::<_, ()>(())
        });
        assert!(big.unwrap().pool.is_none());
        assert_eq!(POOL.clear(), (5 << 18) + (1 << 20));
        assert_eq!(POOL.idle_bytes(), 0);
        assert_eq!(POOL.clear(), 0);
    }

    #[test]
    fn size_classes() {
        assert_eq!(class_of(0), Some(0));
        assert_eq!(class_size(0), 4096);
        assert_eq!(class_of(4096), Some(0));
        assert_eq!(class_size(class_of(4097).unwrap()), 5 << 10);
        assert_eq!(class_size(class_of((1 << 20) + 1).unwrap()), 5 << 18);
        assert_eq!(class_size(class_of(64 << 20).unwrap()), 64 << 20);
        assert_eq!(class_of((64 << 20) + 1), None);
        // Brute force: the smallest class that fits, at most 25% larger (4 KiB for the small).
        let sizes: Vec<usize> = (0..=class_of(64 << 20).unwrap()).map(class_size).collect();
        assert!(sizes.windows(2).all(|w| w[0] < w[1]));
        let mut lens: Vec<usize> = sizes.iter().flat_map(|&s| [s - 1, s, s + 1]).collect();
        lens.extend((0..5000).map(|i| (i * 2_654_435_761usize) % (64 << 20)));
        for len in lens.into_iter().filter(|&l| l <= 64 << 20) {
            let c = class_of(len).unwrap();
            let size = class_size(c);
            assert!(size >= len, "{len}: class {c} of {size}");
            assert!(
                c == 0 || class_size(c - 1) < len,
                "{len}: a smaller class fits"
            );
            assert!(
                size <= (len + len / 4).max(4096),
                "{len}: {size} wastes over 25%"
            );
            assert_eq!(
                class_of(size),
                Some(c),
                "a buffer goes back to its own class"
            );
        }
    }
}
