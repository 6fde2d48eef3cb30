//! The caching hints of cacheable results: the server's own, and how those of a
//! list's entries combine into a page's.

/// The caching hints a server puts on cacheable results its handlers leave without:
/// by default `ttlMs` 0 (stale at once) and `cacheScope` `"private"` (never shared
/// across authorization contexts) — nothing served stale, nothing shared, unless the
/// server says so.
#[derive(Debug, Clone)]
pub(crate) struct CacheHints {
    pub(crate) ttl_ms: u64,
    pub(crate) scope: modelctx_types::CacheScope,
}

impl CacheHints {
    pub(crate) fn new(ttl: std::time::Duration, scope: modelctx_types::CacheScope) -> Self {
        Self {
            ttl_ms: u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX),
            scope,
        }
    }

    /// How long one page of a list stays fresh: the shortest `ttl` among the page's
    /// entries, an entry without hints of its own having the server's (`self`); an
    /// empty page has the server's.
    pub(crate) fn page_ttl<'a>(&self, page: impl IntoIterator<Item = Option<&'a Self>>) -> u64 {
        page.into_iter()
            .map(|hints| hints.unwrap_or(self).ttl_ms)
            .min()
            .unwrap_or(self.ttl_ms)
    }

    /// Who may share a list's pages: the scope every entry of the whole list has
    /// (`public` only when all are), so every page of one list has the same scope, as
    /// the spec requires; `private` when they differ. An entry without hints of its own
    /// has the server's (`self`); an empty list has the server's.
    pub(crate) fn list_scope<'a>(
        &self,
        all: impl IntoIterator<Item = Option<&'a Self>>,
    ) -> modelctx_types::CacheScope {
        let mut all = all.into_iter().map(|hints| &hints.unwrap_or(self).scope);
        match all.next() {
            None => self.scope.clone(),
            Some(first) if all.all(|s| s == first) => first.clone(),
            Some(_) => modelctx_types::CacheScope::Private,
        }
    }
}

impl Default for CacheHints {
    fn default() -> Self {
        Self {
            ttl_ms: 0,
            scope: modelctx_types::CacheScope::Private,
        }
    }
}
