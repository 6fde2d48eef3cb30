//! A managed roots list: the client's answer to `roots/list`, and, when the client
//! declared `roots.listChanged`, a `notifications/roots/list_changed` on every change.

use std::fmt;
use std::sync::{Arc, Mutex};

use modelctx_session::Peer;
use modelctx_types::{Root, RootsListChangedNotification};

/// The roots a client exposes. Cheap to clone: clones share the list.
///
/// Every root must be a `file://` URI. Changing the list notifies each connected session
/// whose client declared `roots.listChanged`.
///
/// ```
/// use modelctx_client::RootsList;
/// use modelctx_types::Root;
///
/// let roots = RootsList::new(vec![Root::new("file:///work/project").with_name("project")]).unwrap();
/// assert_eq!(roots.roots().len(), 1);
/// assert!(RootsList::new(vec![Root::new("https://example.test/repo")]).unwrap_err().is_invalid_uri());
/// ```
#[derive(Clone, Default)]
pub struct RootsList {
    inner: Arc<Mutex<State>>,
}

#[derive(Default)]
struct State {
    roots: Vec<Root>,
    /// Sessions to notify on change (only those that declared `listChanged`).
    watchers: Vec<Peer>,
}

impl fmt::Debug for RootsList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.lock();
        f.debug_struct("RootsList")
            .field("roots", &state.roots)
            .field("watchers", &state.watchers.len())
            .finish()
    }
}

impl RootsList {
    /// A list holding `roots`; fails on a URI that is not `file://`.
    pub fn new(roots: Vec<Root>) -> Result<Self, RootsError> {
        check_all(&roots)?;
        Ok(Self {
            inner: Arc::new(Mutex::new(State {
                roots,
                watchers: Vec::new(),
            })),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The current roots.
    pub fn roots(&self) -> Vec<Root> {
        self.lock().roots.clone()
    }

    /// Replaces the whole list, then notifies.
    pub async fn set(&self, roots: Vec<Root>) -> Result<(), RootsError> {
        check_all(&roots)?;
        self.lock().roots = roots;
        self.changed().await;
        Ok(())
    }

    /// Adds a root (replacing one with the same URI), then notifies.
    pub async fn add(&self, root: Root) -> Result<(), RootsError> {
        check_uri(&root.uri)?;
        {
            let mut state = self.lock();
            match state.roots.iter_mut().find(|r| r.uri == root.uri) {
                Some(existing) => *existing = root,
                None => state.roots.push(root),
            }
        }
        self.changed().await;
        Ok(())
    }

    /// Removes the root with this URI; notifies and returns `true` if there was one.
    pub async fn remove(&self, uri: &str) -> bool {
        let removed = {
            let mut state = self.lock();
            let before = state.roots.len();
            state.roots.retain(|r| r.uri != uri);
            state.roots.len() != before
        };
        if removed {
            self.changed().await;
        }
        removed
    }

    /// Notifies every watching session once; sessions that ended are dropped.
    async fn changed(&self) {
        let watchers: Vec<Peer> = {
            let mut state = self.lock();
            state.watchers.retain(|p| !p.is_closed());
            state.watchers.clone()
        };
        for peer in watchers {
            // A session closing meanwhile is not the caller's error: it is pruned next time.
            let _ = peer.notify::<RootsListChangedNotification>(None).await;
        }
    }

    /// Notifies `peer` of future changes.
    pub(crate) fn watch(&self, peer: &Peer) {
        self.lock().watchers.push(peer.clone());
    }
}

/// A root that is not a `file://` URI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RootsError {
    uri: String,
}

impl RootsError {
    /// Whether a root's URI was not `file://` (the only kind this error reports).
    pub fn is_invalid_uri(&self) -> bool {
        true
    }

    /// The offending URI.
    pub fn uri(&self) -> &str {
        &self.uri
    }
}

impl fmt::Display for RootsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "root URI {:?} is not a file:// URI", self.uri)
    }
}

impl std::error::Error for RootsError {}

/// Refuses a URI whose scheme is not `file` (compared case-insensitively) or that has
/// nothing after `file://`.
pub(crate) fn check_uri(uri: &str) -> Result<(), RootsError> {
    let ok = uri
        .get(..7)
        .is_some_and(|scheme| scheme.eq_ignore_ascii_case("file://"))
        && uri.len() > 7;
    if ok {
        Ok(())
    } else {
        Err(RootsError {
            uri: uri.to_owned(),
        })
    }
}

pub(crate) fn check_all(roots: &[Root]) -> Result<(), RootsError> {
    roots.iter().try_for_each(|r| check_uri(&r.uri))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_file_uris() {
        assert!(check_uri("file:///home/u/p").is_ok());
        assert!(check_uri("FILE:///C:/p").is_ok());
        assert!(check_uri("file://").is_err());
        assert!(check_uri("https://x/y").is_err());
        assert!(check_uri("/home/u/p").is_err());
        let err = check_uri("s3://b").unwrap_err();
        assert!(err.is_invalid_uri());
        assert_eq!(err.uri(), "s3://b");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn edits_keep_one_root_per_uri() {
        let list = RootsList::default();
        list.add(Root::new("file:///a")).await.unwrap();
        list.add(Root::new("file:///a").with_name("A"))
            .await
            .unwrap();
        assert_eq!(list.roots().len(), 1);
        assert_eq!(list.roots()[0].name.as_deref(), Some("A"));
        assert!(list.add(Root::new("http://a")).await.is_err());
        assert!(list.remove("file:///a").await);
        assert!(!list.remove("file:///a").await);
        assert!(list.roots().is_empty());
    }
}
