//! Typed values a transport attaches to the messages it delivers.

use std::any::{Any, TypeId};
use std::fmt;
use std::sync::Arc;

/// A small type map a transport attaches to each inbound message: what it knows about
/// the message beyond its JSON (streamable HTTP carries what layers in front of it,
/// such as an OAuth resource server, put in the HTTP request's extensions). Handlers
/// read it from their request context; the session runtime passes it through
/// untouched and never looks inside.
///
/// Cheap to clone (one `Arc`); empty costs nothing. One value per type.
///
/// ```
/// use modelctx_transport::Extensions;
///
/// #[derive(Debug, PartialEq)]
/// struct Caller(&'static str);
///
/// let mut ext = Extensions::new();
/// assert!(ext.get::<Caller>().is_none());
/// ext.insert(Caller("alice"));
/// assert_eq!(ext.get::<Caller>(), Some(&Caller("alice")));
/// ```
#[derive(Clone, Default)]
pub struct Extensions {
    /// One entry per type, in insertion order. A list, not a hash map: a message
    /// carries a handful of values at most, and comparing a few `TypeId`s costs less
    /// than hashing one (the map's SipHash was ~1k instructions per HTTP request). The
    /// first few entries live in the shared allocation itself, so the usual one or two
    /// values cost one allocation for the list and one per value.
    map: Option<Arc<Entries>>,
}

type Entry = (TypeId, Arc<dyn Any + Send + Sync>);

/// The entries of [`Extensions`]: the first [`Entries::INLINE`] in place, the rest in a
/// vector.
#[derive(Clone, Default)]
struct Entries {
    inline: [Option<Entry>; Entries::INLINE],
    more: Vec<Entry>,
}

impl Entries {
    const INLINE: usize = 3;

    fn iter(&self) -> impl Iterator<Item = &Entry> {
        self.inline
            .iter()
            .map_while(Option::as_ref)
            .chain(&self.more)
    }

    fn len(&self) -> usize {
        self.iter().count()
    }

    fn insert(&mut self, entry: Entry) {
        let existing = self
            .inline
            .iter_mut()
            .map_while(Option::as_mut)
            .chain(&mut self.more)
            .find(|(k, _)| *k == entry.0);
        match existing {
            Some(slot) => *slot = entry,
            None => match self.inline.iter_mut().find(|slot| slot.is_none()) {
                Some(slot) => *slot = Some(entry),
                None => self.more.push(entry),
            },
        }
    }
}

impl Extensions {
    /// No values.
    pub fn new() -> Self {
        Self::default()
    }

    /// Stores `value`, replacing the value of the same type, if any.
    pub fn insert<T: Any + Send + Sync>(&mut self, value: T) {
        let entries = Arc::make_mut(self.map.get_or_insert_with(Default::default));
        entries.insert((TypeId::of::<T>(), Arc::new(value)));
    }

    /// The value of type `T`, if one was stored.
    pub fn get<T: Any + Send + Sync>(&self) -> Option<&T> {
        let key = TypeId::of::<T>();
        self.map
            .as_ref()?
            .iter()
            .find(|(k, _)| *k == key)
            .and_then(|(_, v)| v.downcast_ref::<T>())
    }

    /// Whether no value is stored.
    pub fn is_empty(&self) -> bool {
        self.map.as_ref().is_none_or(|m| m.inline[0].is_none())
    }
}

impl fmt::Debug for Extensions {
    /// Only the count: the values may be secrets (credentials, claims).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Extensions")
            .field("len", &self.map.as_ref().map_or(0, |m| m.len()))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clones_share_until_written() {
        let mut a = Extensions::new();
        a.insert(1u32);
        let mut b = a.clone();
        b.insert(2u32);
        b.insert("x");
        b.insert(3u32);
        assert_eq!(format!("{b:?}"), "Extensions { len: 2 }");
        assert_eq!(a.get::<u32>(), Some(&1));
        assert_eq!(b.get::<u32>(), Some(&3));
        assert_eq!(b.get::<&str>(), Some(&"x"));
        assert!(a.get::<&str>().is_none());
        assert!(Extensions::new().is_empty());
        assert_eq!(format!("{a:?}"), "Extensions { len: 1 }");
        // Past the entries kept in place, and replacing one there.
        b.insert(4u8);
        b.insert(5u16);
        b.insert(6u8);
        b.insert("y");
        assert_eq!(format!("{b:?}"), "Extensions { len: 4 }");
        assert_eq!(b.get::<u8>(), Some(&6));
        assert_eq!(b.get::<u16>(), Some(&5));
        assert_eq!(b.get::<&str>(), Some(&"y"));
        assert_eq!(b.get::<u32>(), Some(&3));
    }
}
