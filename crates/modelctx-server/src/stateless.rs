//! The stateless era (2026-07-28): every request carries its own envelope in `_meta`
//! (protocol version, client capabilities, optionally client info and log level) and is
//! served on it alone; there is no handshake and no per-session client state.
//!
//! The same handlers serve both eras. This module checks the envelope, answers what the
//! era changes (`server/discover`; methods the era removed are unknown methods), and
//! finishes every result the way the era wants it (`resultType`, the server's identity
//! in `_meta`, caching hints) and every error (resource-not-found is `-32602`).

use modelctx_types::{
    ClientCapabilities, DiscoverResult, ErrorCode, ErrorData, Implementation, LoggingLevel, Meta,
    ProtocolVersion, RawValue, ServerCapabilities, members, mirror, to_raw,
};
use serde_json::{Map, Value, json};

/// The protocol versions served without a handshake.
pub(crate) const VERSIONS: [ProtocolVersion; 1] = [ProtocolVersion::V2026_07_28];

/// Methods of the handshake era that 2026-07-28 removed: unknown methods here.
const REMOVED: &[&str] = &[
    "initialize",
    "ping",
    "logging/setLevel",
    "resources/subscribe",
    "resources/unsubscribe",
    "tasks/get",
    "tasks/result",
    "tasks/list",
    "tasks/cancel",
];

/// Methods whose complete results carry caching hints (`ttlMs`, `cacheScope`).
const CACHEABLE: &[&str] = &[
    "server/discover",
    "tools/list",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
];

/// What one request says about its client.
#[derive(Debug, Clone)]
pub(crate) struct Envelope {
    pub(crate) version: ProtocolVersion,
    pub(crate) capabilities: ClientCapabilities,
    pub(crate) info: Option<Implementation>,
    /// The lowest level the client wants log messages at; none are sent without it.
    pub(crate) log_level: Option<LoggingLevel>,
}

/// Reads and checks a request's envelope from its `_meta` text (`meta_text`, see
/// `RequestContext::unstable_meta_text`), falling back to the decoded map (`meta`) for
/// a `_meta` the reader of the four keys does not take (not an object, or a key twice:
/// the map keeps the last). Reading the text decodes only the envelope's members, each
/// straight into its type: no map of the whole `_meta`, no JSON trees.
///
/// Missing or malformed members are `-32602`; a version this server does not serve is
/// `-32022` with the versions it serves in `data.supported` and the one asked for in
/// `data.requested`.
pub(crate) fn envelope<'m>(
    meta_text: Option<&str>,
    meta: impl FnOnce() -> Option<&'m Meta>,
) -> Result<Envelope, ErrorData> {
    if let Some([version, capabilities, info, log_level]) = meta_text.and_then(members_of) {
        return check_envelope(
            version.map(Member::Text),
            capabilities.map(Member::Text),
            info.map(Member::Text),
            log_level.map(Member::Text),
        );
    }
    let meta = meta();
    let get = |key: &str| meta.and_then(|m| m.get(key)).map(Member::Value);
    check_envelope(
        get(Meta::PROTOCOL_VERSION),
        get(Meta::CLIENT_CAPABILITIES),
        get(Meta::CLIENT_INFO),
        get(Meta::LOG_LEVEL),
    )
}

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

/// The envelope's four members of a `_meta` (its JSON text), each as its JSON text (an
/// explicit `null` is kept: it is a malformed member, not a missing one), in the
/// order protocol version, capabilities, client info, log level: found by a quick scan
/// ([`members::find`]), or, where that does not settle them (a key spelled with
/// escapes), by serde. `None` for a `_meta` that is not an object, or that names a key
/// twice (the caller then reads the decoded map, which keeps the last).
fn members_of(text: &str) -> Option<[Option<&str>; 4]> {
    const KEYS: [&str; 4] = [
        Meta::PROTOCOL_VERSION,
        Meta::CLIENT_CAPABILITIES,
        Meta::CLIENT_INFO,
        Meta::LOG_LEVEL,
    ];
    // (A derived struct would also read an array as its fields in order: objects only.)
    if !text.trim_start().starts_with('{') {
        return None;
    }
    if let Some(found) = members::find(text, KEYS) {
        return Some(found);
    }
    let keys = serde_json::from_str::<Keys<'_>>(text).ok()?;
    Some(
        [keys.version, keys.capabilities, keys.info, keys.log_level]
            .map(|member| member.map(RawValue::get)),
    )
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
    entries: std::sync::Mutex<std::collections::HashMap<u64, Cached>>,
    shared: std::sync::Mutex<SharedEntries>,
}

/// The envelopes of [`EnvelopeCache`] by the address of the shared text they were read
/// from, each with the text (which keeps the address from being reused).
type SharedEntries =
    std::collections::HashMap<usize, (std::sync::Arc<str>, std::sync::Arc<Envelope>)>;

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

    fn lock(&self) -> std::sync::MutexGuard<'_, std::collections::HashMap<u64, Cached>> {
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

/// The envelope's members of a `_meta`, as their JSON text (an explicit `null` is
/// kept: it is a malformed member, not a missing one); other keys are skipped unread.
#[derive(serde::Deserialize)]
struct Keys<'a> {
    #[serde(
        rename = "io.modelcontextprotocol/protocolVersion",
        default,
        borrow,
        deserialize_with = "present"
    )]
    version: Option<&'a RawValue>,
    #[serde(
        rename = "io.modelcontextprotocol/clientCapabilities",
        default,
        borrow,
        deserialize_with = "present"
    )]
    capabilities: Option<&'a RawValue>,
    #[serde(
        rename = "io.modelcontextprotocol/clientInfo",
        default,
        borrow,
        deserialize_with = "present"
    )]
    info: Option<&'a RawValue>,
    #[serde(
        rename = "io.modelcontextprotocol/logLevel",
        default,
        borrow,
        deserialize_with = "present"
    )]
    log_level: Option<&'a RawValue>,
}

/// A member that is there, whatever its value (`null` included).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&'de RawValue as serde::Deserialize>::deserialize(d).map(Some)
}

/// One member of the envelope: its JSON text, or its value in the decoded `_meta`.
#[derive(Clone, Copy)]
enum Member<'a> {
    Text(&'a str),
    Value(&'a Value),
}

impl Member<'_> {
    /// The member as a string, if it is one.
    fn as_str(&self) -> Option<std::borrow::Cow<'_, str>> {
        match self {
            Member::Value(v) => v.as_str().map(std::borrow::Cow::Borrowed),
            Member::Text(raw) => json_str(raw),
        }
    }

    /// The member decoded as `T`. An error is reported the same way whichever form the
    /// member is in (the text's is decoded again from its value: no line and column).
    fn decode<T: serde::de::DeserializeOwned>(&self) -> Result<T, String> {
        match self {
            Member::Value(v) => T::deserialize(*v).map_err(|e| e.to_string()),
            Member::Text(raw) => serde_json::from_str::<T>(raw).map_err(|e| {
                match serde_json::from_str::<Value>(raw) {
                    Ok(value) => T::deserialize(&value)
                        .err()
                        .map_or_else(|| e.to_string(), |e| e.to_string()),
                    Err(_) => e.to_string(),
                }
            }),
        }
    }

    /// The member as compact JSON, for error messages.
    fn shown(&self) -> String {
        match self {
            Member::Value(v) => v.to_string(),
            Member::Text(raw) => serde_json::from_str::<Value>(raw)
                .map_or_else(|_| (*raw).to_owned(), |v| v.to_string()),
        }
    }
}

/// A JSON string's text, borrowed unless it has escapes; `None` for any other value.
fn json_str(raw: &str) -> Option<std::borrow::Cow<'_, str>> {
    if let Ok(s) = serde_json::from_str::<&str>(raw) {
        return Some(std::borrow::Cow::Borrowed(s));
    }
    serde_json::from_str::<String>(raw)
        .ok()
        .map(std::borrow::Cow::Owned)
}

fn check_envelope(
    version: Option<Member<'_>>,
    capabilities: Option<Member<'_>>,
    info: Option<Member<'_>>,
    log_level: Option<Member<'_>>,
) -> Result<Envelope, ErrorData> {
    let missing = |key: &str| {
        ErrorData::invalid_params(format!(
            "Invalid params: the request's _meta must carry \"{key}\" (protocol version 2026-07-28 has no initialize handshake: every request says who is asking)"
        ))
    };
    let version = version.ok_or_else(|| missing(Meta::PROTOCOL_VERSION))?;
    let Some(requested) = version.as_str() else {
        return Err(ErrorData::invalid_params(format!(
            "Invalid params: \"{}\" must be a string, got {}",
            Meta::PROTOCOL_VERSION,
            version.shown()
        )));
    };
    let Some(version) = VERSIONS.iter().find(|v| v.as_str() == requested).cloned() else {
        return Err(unsupported_version(&requested));
    };
    let capabilities = capabilities
        .ok_or_else(|| missing(Meta::CLIENT_CAPABILITIES))?
        .decode::<ClientCapabilities>()
        .map_err(|e| {
            ErrorData::invalid_params(format!(
                "Invalid params: \"{}\" is not a capabilities object: {e}",
                Meta::CLIENT_CAPABILITIES
            ))
        })?;
    let info = match info {
        None => None,
        Some(member) => Some(member.decode::<Implementation>().map_err(|e| {
            ErrorData::invalid_params(format!(
                "Invalid params: \"{}\" is not a name and version: {e}",
                Meta::CLIENT_INFO
            ))
        })?),
    };
    let log_level = match log_level {
        None => None,
        Some(member) => {
            let level = member
                .decode::<LoggingLevel>()
                .ok()
                .filter(|l| l.severity().is_some())
                .ok_or_else(|| {
                    ErrorData::invalid_params(format!(
                        "Invalid params: \"{}\" must be one of debug, info, notice, warning, error, critical, alert, emergency; got {}",
                        Meta::LOG_LEVEL,
                        member.shown()
                    ))
                })?;
            Some(level)
        }
    };
    Ok(Envelope {
        version,
        capabilities,
        info,
        log_level,
    })
}

/// `-32022`: the versions this server serves and the one asked for.
pub(crate) fn unsupported_version(requested: &str) -> ErrorData {
    ErrorData::new(
        ErrorCode::UNSUPPORTED_PROTOCOL_VERSION,
        format!(
            "Unsupported protocol version {requested:?}: this server serves {} without a handshake",
            VERSIONS.map(|v| v.as_str().to_owned()).join(", ")
        ),
    )
    .with_data(json!({
        "supported": VERSIONS.map(|v| v.as_str().to_owned()),
        "requested": requested,
    }))
}

/// Whether the era removed `method` (it is then an unknown method).
pub(crate) fn removed(method: &str) -> bool {
    REMOVED.contains(&method)
}

/// The answer to `server/discover`.
pub(crate) fn discover(
    capabilities: &ServerCapabilities,
    instructions: Option<&str>,
    hints: &CacheHints,
) -> Result<Box<RawValue>, ErrorData> {
    let mut result = DiscoverResult::new(
        VERSIONS.map(|v| v.as_str().to_owned()).to_vec(),
        capabilities.clone(),
        hints.ttl_ms,
        hints.scope.clone(),
    );
    if let Some(text) = instructions {
        result = result.with_instructions(text);
    }
    to_raw(&result).map_err(|e| ErrorData::internal_error(format!("cannot encode: {e}")))
}

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

/// The members of a result [`finish_result`] may add, as the handler left them.
struct Present<'a> {
    result_type: Option<std::borrow::Cow<'a, str>>,
    ttl_ms: bool,
    cache_scope: bool,
}

/// [`finish_result`] without building the result as a map: when the handler's object
/// has no `_meta`, every member to add is new, so it is appended to the object's text
/// (one scan of the result's top level, no tree). `None` leaves the result to the
/// general path (a `_meta` to add to, a `resultType` that is not a plain string, or
/// what the scan does not settle: not an object, a key with escapes or twice).
fn finish_by_appending(
    method: &str,
    raw: &RawValue,
    server_info: &RawValue,
    hints: &CacheHints,
) -> Option<Box<RawValue>> {
    let text = raw.get().trim();
    const NAMES: [&str; 4] = ["resultType", "ttlMs", "cacheScope", "_meta"];
    // A result that names none of the members anywhere, and has no escapes (a key may
    // be spelled with them), has none of them: nothing to read.
    let [result_type, ttl_ms, cache_scope, meta] = if may_name(text, &NAMES) {
        members::find(text, NAMES)?
    } else if text.starts_with('{') {
        [None; 4]
    } else {
        return None;
    };
    if meta.is_some() || !text.ends_with('}') {
        return None;
    }
    // Present means named, whatever the value (`null` included), as on the general path.
    let present = Present {
        result_type: match result_type {
            None => None,
            Some(kind) => Some(json_str(kind)?),
        },
        ttl_ms: ttl_ms.is_some(),
        cache_scope: cache_scope.is_some(),
    };
    let head = text[..text.len() - 1].trim_end();
    let info = server_info.get();
    let complete = match &present.result_type {
        None => true,
        Some(kind) => kind == "complete",
    };
    let cacheable = complete && CACHEABLE.contains(&method);
    let ttl = (cacheable && !present.ttl_ms).then(|| hints.ttl_ms.to_string());
    let scope = match cacheable && !present.cache_scope {
        true => Some(serde_json::to_string(hints.scope.as_str()).ok()?),
        false => None,
    };
    // Every member is `,"name":value`; the server's identity is
    // `,"_meta":{"<SERVER_INFO>":<info>}` (the key needs no escaping).
    let member_len = |name: &str, value: &str| name.len() + value.len() + 4;
    let result_type_len = if present.result_type.is_none() {
        member_len("resultType", "\"complete\"")
    } else {
        0
    };
    let len = head.len()
        + result_type_len
        + ttl.as_deref().map_or(0, |v| member_len("ttlMs", v))
        + scope.as_deref().map_or(0, |v| member_len("cacheScope", v))
        + member_len("_meta", "")
        + Meta::SERVER_INFO.len()
        + info.len()
        + 5
        + 1;
    // `len` exactly (one more when the object was empty: no comma): the text becomes
    // the result without a copy or a reallocation.
    let mut out = String::with_capacity(len);
    out.push_str(head);
    let member = |out: &mut String, name: &str, value: &str| {
        if !out.ends_with('{') {
            out.push(',');
        }
        out.push('"');
        out.push_str(name);
        out.push_str("\":");
        out.push_str(value);
    };
    if present.result_type.is_none() {
        member(&mut out, "resultType", "\"complete\"");
    }
    if let Some(ttl) = &ttl {
        member(&mut out, "ttlMs", ttl);
    }
    if let Some(scope) = &scope {
        member(&mut out, "cacheScope", scope);
    }
    member(&mut out, "_meta", "{\"");
    out.push_str(Meta::SERVER_INFO);
    out.push_str("\":");
    out.push_str(info);
    out.push('}');
    out.push('}');
    // Built from valid pieces: the handler's object (a `RawValue`) without its `}`,
    // members whose values are JSON already; no second parse.
    crate::built_raw::built_raw(out)
}

/// Whether `text` may name one of `names`: it holds one as a JSON string (`"name"`)
/// somewhere, or it has a backslash (an escape may spell one). One pass, no search per
/// name.
fn may_name(text: &str, names: &[&str]) -> bool {
    // One loop over the bytes: a result is short, and a search call per quote costs
    // more than the bytes between them.
    let b = text.as_bytes();
    for (i, &c) in b.iter().enumerate() {
        if c == b'\\' {
            return true;
        }
        if c != b'"' {
            continue;
        }
        let rest = &b[i + 1..];
        let named = names.iter().any(|n| {
            let n = n.as_bytes();
            rest.first() == n.first() && rest.starts_with(n) && rest.get(n.len()) == Some(&b'"')
        });
        if named {
            return true;
        }
    }
    false
}

/// Finishes a result for the era: `resultType` (`"complete"` unless the handler said
/// otherwise), the server's identity in `_meta`, and for a complete result of a
/// cacheable method the caching hints `hints` unless the handler set its own.
/// `server_info` is the server's `Implementation`, encoded once when the server was
/// built.
pub(crate) fn finish_result(
    method: &str,
    raw: &RawValue,
    server_info: &RawValue,
    hints: &CacheHints,
) -> Result<Box<RawValue>, ErrorData> {
    if let Some(done) = finish_by_appending(method, raw, server_info, hints) {
        return Ok(done);
    }
    let mut result: Map<String, Value> = serde_json::from_str(raw.get()).map_err(|e| {
        ErrorData::internal_error(format!("the handler's result is not a JSON object: {e}"))
    })?;
    let complete = match result.get("resultType") {
        None => {
            result.insert("resultType".to_owned(), Value::from("complete"));
            true
        }
        Some(kind) => kind == "complete",
    };
    if complete && CACHEABLE.contains(&method) {
        result
            .entry("ttlMs")
            .or_insert_with(|| Value::from(hints.ttl_ms));
        result
            .entry("cacheScope")
            .or_insert_with(|| Value::from(hints.scope.as_str()));
    }
    let meta = result
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(meta) = meta
        && !meta.contains_key(Meta::SERVER_INFO)
    {
        let info = serde_json::from_str::<Value>(server_info.get())
            .map_err(|e| ErrorData::internal_error(format!("cannot encode: {e}")))?;
        meta.insert(Meta::SERVER_INFO.to_owned(), info);
    }
    to_raw(&result).map_err(|e| ErrorData::internal_error(format!("cannot encode: {e}")))
}

/// Checks a `tools/call`'s `Mcp-Param-{Name}` headers (`mirrored`: lower-cased names
/// without the prefix) against the arguments its tool marks with `x-mcp-header`
/// (`marked`, see `mirror::mirrored_params`): an argument that has a value needs its
/// header, equal to it (after `=?base64?…?=` decoding; integers in decimal, booleans as
/// `true`/`false`), else `-32020`.
pub(crate) fn check_param_headers(
    marked: &[mirror::MirroredParam],
    arguments: Option<&Map<String, Value>>,
    mirrored: &[(String, String)],
) -> Result<(), ErrorData> {
    if marked.is_empty() {
        return Ok(());
    }
    let arguments = arguments.map(|a| Value::Object(a.clone()));
    for marked in marked {
        // No value (or one a header cannot mirror): no header is expected.
        let Some(expected) = mirror::argument_text(arguments.as_ref(), &marked.path) else {
            continue;
        };
        let header = &marked.header;
        let name = header.to_ascii_lowercase();
        let mut sent = mirrored.iter().filter(|(n, _)| *n == name);
        let Some((_, raw)) = sent.next() else {
            return Err(ErrorData::header_mismatch(format!(
                "Header mismatch: the Mcp-Param-{header} header is required (argument {:?} has a value)",
                marked.path.join(".")
            )));
        };
        // Sent twice, it has no one value to compare: refused, never read first-wins
        // (a proxy reading the other line would see another request).
        if sent.next().is_some() {
            return Err(ErrorData::header_mismatch(format!(
                "Header mismatch: the Mcp-Param-{header} header is sent on more than one line; it must be sent once"
            )));
        }
        let got = mirror::decode_header_value(raw).ok_or_else(|| {
            ErrorData::header_mismatch(format!(
                "Header mismatch: the Mcp-Param-{header} header value is not valid (bad characters or Base64)"
            ))
        })?;
        if got != expected {
            return Err(ErrorData::header_mismatch(format!(
                "Header mismatch: Mcp-Param-{header} header value {got:?} does not match the argument's value {expected:?}"
            )));
        }
    }
    Ok(())
}

/// Finishes an error for the era: resource-not-found is `-32602` with `data.uri`
/// (2026-07-28 must not send `-32002`).
pub(crate) fn finish_error(mut error: ErrorData) -> ErrorData {
    if error.code == ErrorCode::RESOURCE_NOT_FOUND {
        error.code = ErrorCode::RESOURCE_NOT_FOUND_V2026_07_28;
    }
    error
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The envelope of `_meta` `value`, read from its text; checked to be what the
    /// decoded map gives (the fallback path), error messages included.
    fn envelope_of(value: Value) -> Result<Envelope, ErrorData> {
        let text = to_raw(&value).unwrap();
        let map: Option<Meta> = serde_json::from_value(value).ok();
        let from_text = envelope(Some(text.get()), || {
            unreachable!("an object is read as text")
        });
        let from_map = envelope(None, || map.as_ref());
        match (&from_text, &from_map) {
            (Ok(a), Ok(b)) => {
                assert_eq!(a.version, b.version);
                assert_eq!(a.capabilities, b.capabilities);
                assert_eq!(a.info, b.info);
                assert_eq!(a.log_level, b.log_level);
            }
            (Err(a), Err(b)) => assert_eq!(a, b),
            _ => panic!("text {from_text:?} against map {from_map:?}"),
        }
        from_text
    }

    #[test]
    fn the_envelope_needs_a_served_version_and_capabilities() {
        let ok = envelope_of(json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
            "io.modelcontextprotocol/clientInfo": {"name": "c", "version": "1"},
            "io.modelcontextprotocol/logLevel": "info",
            "other": [1, {"x": null}],
        }))
        .unwrap();
        assert_eq!(ok.version, ProtocolVersion::V2026_07_28);
        assert!(ok.capabilities.elicitation.is_some());
        assert_eq!(ok.info.unwrap().name, "c");
        assert_eq!(ok.log_level, Some(LoggingLevel::Info));

        let e = envelope(None, || None).unwrap_err();
        assert_eq!(e.code, ErrorCode::INVALID_PARAMS);
        let e = envelope_of(json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28"
        }))
        .unwrap_err();
        assert_eq!(e.code, ErrorCode::INVALID_PARAMS);
        assert!(e.message.contains("clientCapabilities"));

        let e = envelope_of(json!({
            "io.modelcontextprotocol/protocolVersion": "2099-01-01",
            "io.modelcontextprotocol/clientCapabilities": {},
        }))
        .unwrap_err();
        assert_eq!(e.code, ErrorCode::UNSUPPORTED_PROTOCOL_VERSION);
        assert_eq!(
            e.data,
            Some(json!({"supported": ["2026-07-28"], "requested": "2099-01-01"}))
        );

        for bad in [
            json!({
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/logLevel": "loud",
            }),
            json!({
                "io.modelcontextprotocol/protocolVersion": null,
                "io.modelcontextprotocol/clientCapabilities": {},
            }),
            json!({
                "io.modelcontextprotocol/protocolVersion": 2026,
                "io.modelcontextprotocol/clientCapabilities": {},
            }),
            json!({
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": null,
            }),
            json!({
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {"roots": {"listChanged": 1}},
            }),
            json!({
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "c"},
            }),
        ] {
            let e = envelope_of(bad.clone()).unwrap_err();
            assert_eq!(e.code, ErrorCode::INVALID_PARAMS, "{bad}");
        }
    }

    #[test]
    fn an_envelope_the_text_reader_does_not_take_is_read_from_the_map() {
        // Escapes in a key and in a value: still read from the text.
        let text = RawValue::from_string(
            r#"{"io.modelcontextprotocol/protocolVersio\u006e": "2026-07\u002d28", "io.modelcontextprotocol/clientCapabilities": {}}"#
                .to_owned(),
        )
        .unwrap();
        let ok = envelope(Some(text.get()), || unreachable!()).unwrap();
        assert_eq!(ok.version, ProtocolVersion::V2026_07_28);
        // A key twice: the map keeps the last, and so does the envelope.
        let twice = r#"{"io.modelcontextprotocol/protocolVersion": "1999-01-01", "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}"#;
        let text = RawValue::from_string(twice.to_owned()).unwrap();
        let map: Meta = serde_json::from_str(twice).unwrap();
        let ok = envelope(Some(text.get()), || Some(&map)).unwrap();
        assert_eq!(ok.version, ProtocolVersion::V2026_07_28);
        // Not an object (an array is not read as the members in order): no map either,
        // so the version is missing.
        for not_object in ["[1]", r#"["2026-07-28", {}]"#] {
            let text = RawValue::from_string(not_object.to_owned()).unwrap();
            let e = envelope(Some(text.get()), || None).unwrap_err();
            assert!(e.message.contains("protocolVersion"), "{}", e.message);
        }
    }

    #[test]
    fn the_envelope_cache_shares_envelopes_read_from_the_same_text() {
        use std::sync::Arc;
        let cache = EnvelopeCache::default();
        let raw = |value: Value| to_raw(&value).unwrap();
        let first = raw(json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
            "io.modelcontextprotocol/clientInfo": {"name": "c", "version": "1"},
            "progressToken": 1,
        }));
        let a = envelope_cached(&cache, None, Some(first.get()), || unreachable!()).unwrap();
        // The same members, other keys different: the same envelope.
        let again = raw(json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
            "io.modelcontextprotocol/clientInfo": {"name": "c", "version": "1"},
            "progressToken": 2,
        }));
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

    #[test]
    fn appending_finishes_results_as_the_general_path_does() {
        let info = to_raw(&Implementation::new("s", "1")).unwrap();
        let hints = CacheHints::new(
            std::time::Duration::from_secs(2),
            modelctx_types::CacheScope::Public,
        );
        for (method, result) in [
            ("tools/list", json!({"tools": []})),
            ("tools/list", json!({})),
            ("tools/list", json!({"tools": [], "ttlMs": 5})),
            (
                "resources/read",
                json!({"contents": [], "cacheScope": "private"}),
            ),
            (
                "tools/call",
                json!({"content": [{"type": "text", "text": "x"}]}),
            ),
            (
                "tools/call",
                json!({"resultType": "input_required", "requestState": "s"}),
            ),
            ("tools/call", json!({"resultType": null, "content": []})),
            (
                "tools/call",
                json!({"content": [], "structuredContent": {"resultType": 1}}),
            ),
            (
                "tools/call",
                json!({"content": [], "structuredContent": {"_meta": 1}}),
            ),
        ] {
            let raw = to_raw(&result).unwrap();
            let general = {
                let mut map: Map<String, Value> = serde_json::from_value(result.clone()).unwrap();
                let complete = match map.get("resultType") {
                    None => {
                        map.insert("resultType".into(), json!("complete"));
                        true
                    }
                    Some(kind) => kind == "complete",
                };
                if complete && CACHEABLE.contains(&method) {
                    map.entry("ttlMs").or_insert(json!(2000));
                    map.entry("cacheScope").or_insert(json!("public"));
                }
                map.insert(
                    "_meta".into(),
                    json!({Meta::SERVER_INFO: {"name": "s", "version": "1"}}),
                );
                Value::Object(map)
            };
            let done: Value =
                serde_json::from_str(finish_result(method, &raw, &info, &hints).unwrap().get())
                    .unwrap();
            assert_eq!(done, general, "{method} {result}");
            // No member twice (a parsed value would hide it): each name occurs as often
            // in the text as in the general path's.
            let text = finish_result(method, &raw, &info, &hints).unwrap();
            let expected = serde_json::to_string(&general).unwrap();
            for name in ["\"resultType\"", "\"ttlMs\"", "\"cacheScope\"", "\"_meta\""] {
                assert_eq!(
                    text.get().matches(name).count(),
                    expected.matches(name).count(),
                    "{name} in {}",
                    text.get()
                );
            }
        }
    }

    #[test]
    fn a_member_spelled_with_escapes_is_found_before_anything_is_appended() {
        let info = to_raw(&Implementation::new("s", "1")).unwrap();
        let finish = |text: &str| -> Value {
            let raw = RawValue::from_string(text.to_owned()).unwrap();
            let done = finish_result("tools/call", &raw, &info, &CacheHints::default()).unwrap();
            serde_json::from_str(done.get()).unwrap()
        };
        // The handler's own `_meta`, its key escaped: kept, the identity added to it.
        let done = finish(r#"{"\u005fmeta":{"a":1},"content":[]}"#);
        assert_eq!(done["_meta"]["a"], 1, "{done}");
        assert_eq!(done["_meta"][Meta::SERVER_INFO]["name"], "s", "{done}");
        let done = finish(r#"{"result\u0054ype":"input_required","content":[]}"#);
        assert_eq!(done["resultType"], "input_required", "{done}");
        // Escapes elsewhere, and the names as values, change nothing.
        let done = finish(r#"{"content":[{"type":"text","text":"say \"_meta\""}]}"#);
        assert_eq!(done["resultType"], "complete", "{done}");
        assert_eq!(done["content"][0]["text"], "say \"_meta\"", "{done}");
        let done = finish(r#"{"content":[{"type":"text","text":"resultType"}]}"#);
        assert_eq!(done["resultType"], "complete", "{done}");
        assert!(may_name(r#"{"a":"\n"}"#, &["b"]));
        assert!(may_name(r#"{"a":{"b":1}}"#, &["b"]));
        assert!(!may_name(r#"{"a":"bc","bb":1}"#, &["b"]));
    }

    #[test]
    fn results_get_their_type_identity_and_caching_hints() {
        let info = to_raw(&Implementation::new("s", "1")).unwrap();
        let raw = to_raw(&json!({"tools": []})).unwrap();
        let done: Value = serde_json::from_str(
            finish_result("tools/list", &raw, &info, &CacheHints::default())
                .unwrap()
                .get(),
        )
        .unwrap();
        assert_eq!(
            done,
            json!({"tools": [], "resultType": "complete", "ttlMs": 0, "cacheScope": "private",
                "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1"}}})
        );
        let raw = to_raw(&json!({"content": [], "_meta": {"k": 1}})).unwrap();
        let done: Value = serde_json::from_str(
            finish_result("tools/call", &raw, &info, &CacheHints::default())
                .unwrap()
                .get(),
        )
        .unwrap();
        assert_eq!(done["resultType"], "complete");
        assert_eq!(done["_meta"]["k"], 1);
        assert!(done.get("ttlMs").is_none());
        let raw = to_raw(&json!({"resultType": "input_required", "requestState": "x"})).unwrap();
        let done: Value = serde_json::from_str(
            finish_result("resources/read", &raw, &info, &CacheHints::default())
                .unwrap()
                .get(),
        )
        .unwrap();
        assert!(
            done.get("ttlMs").is_none(),
            "interim results are not cacheable"
        );
    }

    #[test]
    fn marked_arguments_need_matching_headers() {
        let schema = json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "limit": {"type": "integer", "x-mcp-header": "Limit"},
            "query": {"type": "string"},
        }});
        let schema = &mirror::mirrored_params(&schema);
        let args = json!({"region": "us-west1", "limit": 42, "query": "q"});
        let args = args.as_object();
        let h = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
            pairs
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect()
        };
        assert!(
            check_param_headers(schema, args, &h(&[("region", "us-west1"), ("limit", "42")]))
                .is_ok()
        );
        assert!(
            check_param_headers(
                schema,
                args,
                &h(&[("region", "=?base64?dXMtd2VzdDE=?="), ("limit", "42")])
            )
            .is_ok()
        );
        for bad in [
            h(&[("limit", "42")]),
            h(&[("region", "us-east1"), ("limit", "42")]),
            h(&[("region", "=?base64?dXMtd2VzdDE?="), ("limit", "42")]),
            h(&[("region", "us-west1"), ("limit", "\u{0}")]),
            // Twice, the first line matching: no one value, refused.
            h(&[
                ("region", "us-west1"),
                ("region", "us-east1"),
                ("limit", "42"),
            ]),
            h(&[("region", "us-west1"), ("limit", "42"), ("limit", "42")]),
        ] {
            let e = check_param_headers(schema, args, &bad).unwrap_err();
            assert_eq!(e.code, ErrorCode::HEADER_MISMATCH, "{bad:?}");
        }
        // No value: no header expected.
        assert!(check_param_headers(schema, json!({}).as_object(), &[]).is_ok());
    }

    #[test]
    fn resource_not_found_is_invalid_params_with_the_uri() {
        let e = finish_error(ErrorData::resource_not_found("file:///x"));
        assert_eq!(e.code, ErrorCode::INVALID_PARAMS);
        assert_eq!(e.data, Some(json!({"uri": "file:///x"})));
        assert!(e.is_resource_not_found());
    }
}
