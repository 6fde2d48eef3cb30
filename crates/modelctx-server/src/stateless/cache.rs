//! The envelopes a server has read, shared by the requests that carry the same: found
//! by the text of their members, or by the transport's shared copy of the `_meta` text.
//!
//! A client sends the same envelope with every request, so a hit costs a hash and a lock
//! instead of decoding the capabilities and client info again. Keys are the four members'
//! text, hashed with a per-server random key; at most 64 envelopes of at most 4 KiB of
//! text, starting over when full. A `_meta` the transport hands down as shared text
//! (`RequestContext::unstable_shared_meta`) is also kept by the `Arc`'s address: the entry
//! holds the `Arc`, so the address cannot name another text while it lives, and a hit reads
//! nothing at all.

use modelctx_types::{ErrorData, Meta};

use super::envelope::{Envelope, Member, check_envelope, envelope, members_of};

/// [`envelope`], shared: a request whose envelope members are, as text, those of an
/// envelope read before (a client sends the same envelope with every request) gets
/// that envelope, without decoding its members again (the capabilities go through
/// serde's buffering of their open objects; the client's name and version are two
/// strings). Only an envelope that passed the checks is kept; anything the text reader
/// does not take goes the uncached way.
///
/// `shared`: the `_meta` text as the transport's shared copy
/// (`RequestContext::unstable_shared_meta`), the same `Arc` with every request that
/// carries the same `_meta`: an envelope read from it is kept by the `Arc`'s address
/// too, and found again without reading the text at all.
pub(crate) fn envelope_cached<'m>(
    cache: &EnvelopeCache,
    shared: Option<&std::sync::Arc<str>>,
    meta_text: Option<&str>,
    meta: impl FnOnce() -> Option<&'m Meta>,
) -> Result<std::sync::Arc<Envelope>, ErrorData> {
    if let Some(shared) = shared
        && let Some(known) = cache.get_shared(shared)
    {
        return Ok(known);
    }
    if let Some(members) = meta_text.and_then(members_of) {
        if let Some(known) = cache.get(&members) {
            if let Some(shared) = shared {
                cache.put_shared(shared, &known);
            }
            return Ok(known);
        }
        let [version, capabilities, info, log_level] = members;
        let envelope = std::sync::Arc::new(check_envelope(
            version.map(Member::Text),
            capabilities.map(Member::Text),
            info.map(Member::Text),
            log_level.map(Member::Text),
        )?);
        cache.put(&members, &envelope);
        if let Some(shared) = shared {
            cache.put_shared(shared, &envelope);
        }
        return Ok(envelope);
    }
    envelope(meta_text, meta).map(std::sync::Arc::new)
}

/// The envelopes a server has read, by the text of their four members (see
/// [`envelope_cached`]). Bounded: at most [`EnvelopeCache::MAX_ENTRIES`] envelopes whose
/// members total at most [`EnvelopeCache::MAX_TEXT`] bytes each; when full it starts
/// over. Keys are hashed with a random key per server, so nobody can aim collisions.
///
/// Envelopes read from a transport's shared `_meta` text are also kept by the text's
/// address (at most [`EnvelopeCache::MAX_ENTRIES`] too): the entry holds the `Arc`, so
/// the address names that text for as long as the entry lives.
#[derive(Default)]
pub(crate) struct EnvelopeCache {
    hasher: std::hash::RandomState,
    entries: std::sync::Mutex<foldhash::HashMap<u64, Cached>>,
    shared: std::sync::Mutex<SharedEntries>,
}

/// The envelopes of [`EnvelopeCache`] by the address of the shared text they were read
/// from, each with the text (which keeps the address from being reused).
type SharedEntries = foldhash::HashMap<usize, (std::sync::Arc<str>, std::sync::Arc<Envelope>)>;

/// One envelope of the cache and the member texts it was read from.
struct Cached {
    members: [Option<Box<str>>; 4],
    envelope: std::sync::Arc<Envelope>,
}

impl EnvelopeCache {
    /// How many envelopes are kept at most (clients of one server rarely differ).
    pub(crate) const MAX_ENTRIES: usize = 64;
    /// The longest member texts (together) of an envelope that is kept.
    pub(crate) const MAX_TEXT: usize = 4096;

    fn key(&self, members: &[Option<&str>; 4]) -> u64 {
        use std::hash::BuildHasher;
        self.hasher.hash_one(members)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, foldhash::HashMap<u64, Cached>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn get(&self, members: &[Option<&str>; 4]) -> Option<std::sync::Arc<Envelope>> {
        let key = self.key(members);
        let entries = self.lock();
        let cached = entries.get(&key)?;
        let same = cached
            .members
            .iter()
            .zip(members)
            .all(|(kept, asked)| kept.as_deref() == *asked);
        same.then(|| cached.envelope.clone())
    }

    fn lock_shared(&self) -> std::sync::MutexGuard<'_, SharedEntries> {
        self.shared.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn get_shared(&self, text: &std::sync::Arc<str>) -> Option<std::sync::Arc<Envelope>> {
        let address = std::sync::Arc::as_ptr(text).cast::<u8>() as usize;
        let entries = self.lock_shared();
        let (kept, envelope) = entries.get(&address)?;
        std::sync::Arc::ptr_eq(kept, text).then(|| envelope.clone())
    }

    fn put_shared(&self, text: &std::sync::Arc<str>, envelope: &std::sync::Arc<Envelope>) {
        if text.len() > Self::MAX_TEXT {
            return;
        }
        let address = std::sync::Arc::as_ptr(text).cast::<u8>() as usize;
        let mut entries = self.lock_shared();
        if entries.len() >= Self::MAX_ENTRIES && !entries.contains_key(&address) {
            entries.clear();
        }
        entries.insert(address, (text.clone(), envelope.clone()));
    }

    fn put(&self, members: &[Option<&str>; 4], envelope: &std::sync::Arc<Envelope>) {
        let size: usize = members.iter().flatten().map(|m| m.len()).sum();
        if size > Self::MAX_TEXT {
            return;
        }
        let key = self.key(members);
        let cached = Cached {
            members: members.map(|m| m.map(Box::from)),
            envelope: envelope.clone(),
        };
        let mut entries = self.lock();
        if entries.len() >= Self::MAX_ENTRIES && !entries.contains_key(&key) {
            entries.clear();
        }
        entries.insert(key, cached);
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use modelctx_types::{ErrorCode, LoggingLevel, RawValue, to_raw};
    use serde_json::{Value, json};

    use super::*;

    #[test]
    fn the_envelope_cache_shares_envelopes_read_from_the_same_text() {
        use std::sync::Arc;
        let cache = EnvelopeCache::default();
        let raw = |value: Value| to_raw(&value).unwrap();
        // The same envelope members, under progress token `token`.
        let meta = |token: i64| {
            raw(json!({
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
                "io.modelcontextprotocol/clientInfo": {"name": "c", "version": "1"},
                "progressToken": token,
            }))
        };
        let first = meta(1);
        let a = envelope_cached(&cache, None, Some(first.get()), || unreachable!()).unwrap();
        // The same members, other keys different: the same envelope.
        let again = meta(2);
        let b = envelope_cached(&cache, None, Some(again.get()), || unreachable!()).unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        assert!(a.capabilities.elicitation.is_some());
        assert_eq!(a.info.as_ref().unwrap().name, "c");
        // A member different, or one more: another envelope, read from its own text.
        let other = raw(json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "c", "version": "1"},
        }));
        let c = envelope_cached(&cache, None, Some(other.get()), || unreachable!()).unwrap();
        assert!(c.capabilities.elicitation.is_none());
        let leveled = raw(json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "c", "version": "1"},
            "io.modelcontextprotocol/logLevel": "info",
        }));
        let d = envelope_cached(&cache, None, Some(leveled.get()), || unreachable!()).unwrap();
        assert_eq!(d.log_level, Some(LoggingLevel::Info));
        assert_eq!(c.log_level, None);
        assert_eq!(cache.len(), 3);
        // Refused envelopes are refused every time, and not kept.
        let bad = raw(json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"roots": {"listChanged": 1}},
        }));
        for _ in 0..2 {
            let e = envelope_cached(&cache, None, Some(bad.get()), || unreachable!()).unwrap_err();
            assert_eq!(e.code, ErrorCode::INVALID_PARAMS);
        }
        assert_eq!(cache.len(), 3);
        // Bounded: the cache starts over when full.
        for n in 0..EnvelopeCache::MAX_ENTRIES {
            let each = raw(json!({
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "c", "version": n.to_string()},
            }));
            envelope_cached(&cache, None, Some(each.get()), || unreachable!()).unwrap();
            assert!(cache.len() <= EnvelopeCache::MAX_ENTRIES);
        }
        assert!(cache.len() < EnvelopeCache::MAX_ENTRIES);
        // Not an object: the map's way, uncached.
        let map = Meta::new();
        let text = RawValue::from_string("[1]".to_owned()).unwrap();
        assert!(envelope_cached(&cache, None, Some(text.get()), || Some(&map)).is_err());
    }

    #[test]
    fn an_envelope_read_from_a_shared_text_is_found_by_that_text() {
        use std::sync::Arc;
        let cache = EnvelopeCache::default();
        let text = |version: &str| -> Arc<str> {
            Arc::from(
                json!({
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientCapabilities": {},
                    "io.modelcontextprotocol/clientInfo": {"name": "c", "version": version},
                })
                .to_string(),
            )
        };
        let shared = text("1");
        let a = envelope_cached(&cache, Some(&shared), Some(&shared), || unreachable!()).unwrap();
        // Found by the address alone: the text passed along is not read again.
        let b =
            envelope_cached(&cache, Some(&shared), Some("not read"), || unreachable!()).unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        // The same text in another `Arc`: read (and matched by its members).
        let copy = text("1");
        let c = envelope_cached(&cache, Some(&copy), Some(&copy), || unreachable!()).unwrap();
        assert!(Arc::ptr_eq(&a, &c));
        // Another text: its own envelope.
        let other = text("2");
        let d = envelope_cached(&cache, Some(&other), Some(&other), || unreachable!()).unwrap();
        assert_eq!(d.info.as_ref().unwrap().version, "2");
        // A refused envelope is not kept by its address either.
        let bad: Arc<str> = Arc::from(r#"{"io.modelcontextprotocol/protocolVersion":1}"#);
        for _ in 0..2 {
            let e = envelope_cached(&cache, Some(&bad), Some(&bad), || unreachable!()).unwrap_err();
            assert_eq!(e.code, ErrorCode::INVALID_PARAMS);
        }
        assert_eq!(cache.lock_shared().len(), 3);
        // Bounded like the rest.
        for n in 0..EnvelopeCache::MAX_ENTRIES {
            let each = text(&n.to_string());
            envelope_cached(&cache, Some(&each), Some(&each), || unreachable!()).unwrap();
            assert!(cache.lock_shared().len() <= EnvelopeCache::MAX_ENTRIES);
        }
    }
}
