//! Which caller each MCP session belongs to: a session id used with another caller's
//! token is answered as unknown, so a leaked session id is of no use to another user
//! (the security best practices' session hijacking; the spec's "bind session IDs to
//! user-specific information").

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use super::AuthInfo;

/// The caller a session belongs to: issuer, subject and client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Owner(Option<String>, Option<String>, Option<String>);

impl Owner {
    pub(crate) fn of(info: &AuthInfo) -> Self {
        Self(
            info.issuer.clone(),
            info.subject.clone(),
            info.client_id.clone(),
        )
    }
}

/// Session id → owner, the oldest forgotten first past `MAX` (a forgotten session is
/// bound again to the next caller that uses it).
#[derive(Debug, Default)]
pub(crate) struct Sessions {
    inner: Mutex<(HashMap<String, Owner>, VecDeque<String>)>,
}

impl Sessions {
    const MAX: usize = 100_000;

    /// Whether `owner` may use session `id` (binding it when unknown).
    pub(crate) fn admit(&self, id: &str, owner: &Owner) -> bool {
        let mut guard = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        match guard.0.get(id) {
            Some(known) => known == owner,
            None => {
                Self::insert(&mut guard, id, owner.clone());
                true
            }
        }
    }

    /// Binds a session the endpoint just created.
    pub(crate) fn bind(&self, id: &str, owner: Owner) {
        let mut guard = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if !guard.0.contains_key(id) {
            Self::insert(&mut guard, id, owner);
        }
    }

    /// Forgets a session that ended.
    pub(crate) fn end(&self, id: &str) {
        let mut guard = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        guard.0.remove(id);
        // Its place in the order is dropped lazily, when it comes up for eviction.
    }

    fn insert(guard: &mut (HashMap<String, Owner>, VecDeque<String>), id: &str, owner: Owner) {
        let (map, order) = guard;
        while map.len() >= Self::MAX {
            match order.pop_front() {
                Some(old) => {
                    map.remove(&old);
                }
                None => break,
            }
        }
        if order.len() >= 2 * Self::MAX {
            order.retain(|k| map.contains_key(k));
        }
        map.insert(id.to_owned(), owner);
        order.push_back(id.to_owned());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner(sub: &str) -> Owner {
        Owner(Some("iss".into()), Some(sub.into()), Some("c".into()))
    }

    #[test]
    fn a_session_stays_with_its_caller() {
        let s = Sessions::default();
        s.bind("s1", owner("alice"));
        assert!(s.admit("s1", &owner("alice")));
        assert!(!s.admit("s1", &owner("mallory")));
        // Unknown: bound to the first caller.
        assert!(s.admit("s2", &owner("bob")));
        assert!(!s.admit("s2", &owner("alice")));
        s.end("s1");
        assert!(s.admit("s1", &owner("carol")));
    }
}
