//! Tables of a long-running server that give their memory back as they drain.
//!
//! A hash map or a vector keeps the capacity of its highest length: a table of live
//! sessions (or streams, or requests) that once held 10,000 entries keeps room for
//! them after every one of them ended. [`shrink_drained`], called where entries are
//! removed, gives that room back once the table is mostly empty.
//!
//! Invariant: a table that grows with the number of sessions, streams or requests gives its
//! memory back as it drains. Every such table calls [`shrink_drained`] where entries leave
//! (directly, or through [`take_all`] when it is emptied at once), or is dropped with its
//! session: the streamable HTTP service's sessions, the in-memory event store's sessions,
//! a hosted session's routes, the legacy SSE service's sessions, the server's announcer,
//! the session runtime's in-flight requests and pending table, the task host's live tasks
//! and the in-memory task store. A new table of that kind must do the same.
//!
//! An empty table frees its memory altogether rather than keeping a small floor: a small
//! table reallocated while a round's last sessions end lands wherever malloc finds room,
//! often near the top of an arena about to be trimmed, and pins it.

use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::{BuildHasher, Hash};

/// Up to this capacity a table that still holds entries is left as it is (a few KiB at
/// most, and a table that small would otherwise be reallocated as a handful of
/// entries come and go).
pub const KEPT_CAPACITY: usize = 64;

/// What [`shrink_drained`] needs of a table.
pub trait Table {
    /// Entries held.
    fn len(&self) -> usize;
    /// Whether it holds none.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Entries the table has room for without growing.
    fn capacity(&self) -> usize;
    /// Shrinks the room to at least `min` (and at least the length).
    fn shrink_to(&mut self, min: usize);
}

/// Called after entries were removed from `table`: when fewer than a quarter of its
/// capacity is in use, an empty table frees its memory, and one that still holds
/// entries (with a capacity over [`KEPT_CAPACITY`]) shrinks to twice its length (at
/// least a quarter of [`KEPT_CAPACITY`]). True when it shrank.
///
/// The cost on the removal path is one comparison. Amortised: a table that shrank
/// to twice its length grows again only after as many insertions as it has entries,
/// and shrinks again only after half its entries are removed, so a table whose length
/// hovers around a threshold is never reallocated back and forth, and the rehash a
/// shrink costs is paid for by the removals before it. A table with room for 3
/// entries or fewer is never shrunk (a quarter of it is 0), so one whose length goes
/// 0, 1, 0 keeps its allocation.
///
/// Why an empty table frees everything rather than keeping a small one: a table
/// reallocated small while the last of a round's sessions were ending lands wherever
/// the allocator finds room, often near the top of a heap that is about to be given
/// back, and pins it (the soak measured 60–70 MB, once 116 MB, resident after a
/// round with such small tables kept, 11 MB with them freed).
///
/// Plumbing for the server transports and roles of the modelctx crates.
pub fn shrink_drained<T: Table + ?Sized>(table: &mut T) -> bool {
    let capacity = table.capacity();
    let len = table.len();
    if len >= capacity / 4 {
        return false;
    }
    if len == 0 {
        table.shrink_to(0);
        return true;
    }
    if capacity <= KEPT_CAPACITY {
        return false;
    }
    table.shrink_to(len.saturating_mul(2).max(KEPT_CAPACITY / 4));
    true
}

/// Removes every entry of `table` and gives its memory back (see
/// [`shrink_drained`]): the values, for the caller to end once the table's lock is
/// released.
///
/// Plumbing for the server transports of the modelctx crates.
pub fn take_all<K: Eq + Hash, V, S: BuildHasher>(table: &mut HashMap<K, V, S>) -> Vec<V> {
    let taken = table.drain().map(|(_, v)| v).collect();
    shrink_drained(table);
    taken
}

/// Implements [`Table`] for collections through their own methods of the same names.
macro_rules! collection_tables {
    ($([$($generics:tt)*] $table:ty),* $(,)?) => {$(
        impl<$($generics)*> Table for $table {
            fn len(&self) -> usize {
                <$table>::len(self)
            }
            fn capacity(&self) -> usize {
                <$table>::capacity(self)
            }
            fn shrink_to(&mut self, min: usize) {
                <$table>::shrink_to(self, min);
            }
        }
    )*};
}

collection_tables!(
    [K: Eq + Hash, V, S: BuildHasher] HashMap<K, V, S>,
    [T: Eq + Hash, S: BuildHasher] HashSet<T, S>,
    [T] Vec<T>,
    [T] VecDeque<T>,
);

#[cfg(test)]
mod tests {
    use super::*;

    /// Fills `table` to `n` entries with `insert`, then drains it with `remove`,
    /// calling [`shrink_drained`] after each removal as the servers do. Returns the
    /// capacity at the peak and after the drain, and how many times it shrank.
    fn fill_and_drain<T: Table>(
        table: &mut T,
        n: usize,
        mut insert: impl FnMut(&mut T, usize),
        mut remove: impl FnMut(&mut T, usize),
    ) -> (usize, usize, usize) {
        for i in 0..n {
            insert(table, i);
        }
        let peak = table.capacity();
        let mut shrinks = 0;
        for i in 0..n {
            remove(table, i);
            shrinks += usize::from(shrink_drained(table));
            // Never more room than the larger of 4 × the length and the kept floor
            // (once the first removal past the quarter line has shrunk it).
            if shrinks > 0 {
                assert!(
                    table.capacity() < (4 * (table.len() + 1)).max(KEPT_CAPACITY),
                    "{} entries in room for {}",
                    table.len(),
                    table.capacity()
                );
            }
        }
        (peak, table.capacity(), shrinks)
    }

    #[test]
    fn a_drained_map_gives_its_room_back() {
        let mut map = HashMap::new();
        let (peak, after, shrinks) = fill_and_drain(
            &mut map,
            10_000,
            |m, i| {
                m.insert(i, [0u64; 4]);
            },
            |m, i| {
                m.remove(&i);
            },
        );
        assert!(peak >= 10_000, "{peak}");
        assert_eq!(after, 0);
        // Halving (or better) each time: a handful of shrinks, not one per removal.
        assert!((1..=12).contains(&shrinks), "{shrinks}");

        let mut set = HashSet::new();
        let (_, after, _) = fill_and_drain(
            &mut set,
            5_000,
            |s, i| {
                s.insert(i);
            },
            |s, i| {
                s.remove(&i);
            },
        );
        assert_eq!(after, 0);
    }

    #[test]
    fn a_drained_vector_gives_its_room_back() {
        let mut vec = Vec::new();
        let (peak, after, _) = fill_and_drain(
            &mut vec,
            10_000,
            |v, i| v.push(i),
            |v, _| {
                v.pop();
            },
        );
        assert!(peak >= 10_000, "{peak}");
        assert_eq!(after, 0);

        let mut deque = VecDeque::new();
        let (_, after, _) = fill_and_drain(
            &mut deque,
            10_000,
            |d, i| d.push_back(i),
            |d, _| {
                d.pop_front();
            },
        );
        assert_eq!(after, 0);
    }

    #[test]
    fn a_table_around_a_threshold_is_not_reallocated_back_and_forth() {
        // Drained to a few hundred entries it shrinks once; then one entry in, one
        // out, many times over, never shrinks (nor grows) it again.
        let mut map: HashMap<usize, u64> = (0..4_096).map(|i| (i, 0)).collect();
        for i in 300..4_096 {
            map.remove(&i);
            shrink_drained(&mut map);
        }
        let settled = map.capacity();
        assert!(settled < 4 * 301, "{settled}");
        for i in 0..10_000 {
            map.insert(100_000 + i, 0);
            map.remove(&(100_000 + i));
            assert!(!shrink_drained(&mut map));
            // (A map's reported room dips while removed entries leave tombstones,
            // until it rehashes them away in place: never more than it settled at.)
            assert!(map.capacity() <= settled);
        }
    }

    #[test]
    fn small_tables_are_left_alone_and_empty_ones_freed() {
        // Room for 3: never shrunk, so a length going 0, 1, 0 allocates once.
        let mut map: HashMap<u32, u32> = HashMap::new();
        map.insert(1, 1);
        let capacity = map.capacity();
        map.remove(&1);
        assert!(!shrink_drained(&mut map));
        assert_eq!(map.capacity(), capacity);
        let mut vec: Vec<u8> = Vec::with_capacity(3);
        vec.push(1);
        vec.pop();
        assert!(!shrink_drained(&mut vec));
        assert_eq!(vec.capacity(), 3);
        let mut empty: Vec<u8> = Vec::new();
        assert!(!shrink_drained(&mut empty));

        // Up to KEPT_CAPACITY a table that holds entries keeps its room ... (A hash
        // map's `capacity()` is not compared here: hashbrown counts the tombstones
        // some removals leave against it, depending on the hashes, so it may read
        // lower with the same allocation. A vector's is exact.)
        let mut map: HashMap<u32, u32> = (0..40).map(|i| (i, i)).collect();
        assert!(map.capacity() <= KEPT_CAPACITY, "{}", map.capacity());
        for i in 1..40 {
            map.remove(&i);
            assert!(!shrink_drained(&mut map));
        }
        let mut vec: Vec<u32> = (0..40).collect();
        let capacity = vec.capacity();
        while vec.len() > 1 {
            vec.pop();
            assert!(!shrink_drained(&mut vec));
        }
        assert_eq!(vec.capacity(), capacity);
        // ... and gives it all back once empty.
        map.remove(&0);
        assert!(shrink_drained(&mut map));
        assert_eq!(map.capacity(), 0);
        vec.pop();
        assert!(shrink_drained(&mut vec));
        assert_eq!(vec.capacity(), 0);
    }
}
