//! Multi round-trip requests (protocol 2026-07-28, SEP-2322): how a handler written
//! once asks its client for input in both eras.
//!
//! In a session (2025-11-25 and earlier) `Context::sample`, `elicit_*` and
//! `list_roots` send requests to the client and wait for the answers. In the stateless
//! era the server sends no requests: a `tools/call`, `prompts/get` or `resources/read`
//! whose handler asks for input ends its round with an `InputRequiredResult` naming the
//! input it needs, and the client retries the request with the answers. The handler is
//! run again from the start on each retry; the answers it already has are handed back
//! at once, in the order it asks, by key (its own key from `Context::with_input_key`, or
//! `input-N` for the N-th unnamed ask). Input asked for concurrently (`join!`) is asked
//! for in one round.
//!
//! The rule handlers follow: code before an input call may run once per round, so it
//! keeps side effects after the last input call (or makes them idempotent), and a
//! handler asks for the same inputs in the same order given the same answers.
//!
//! The answers of earlier rounds travel in `requestState`, which the client echoes:
//! sealed with HMAC-SHA256 under the server's key, bound to a digest of the method and
//! the request's params (canonical JSON without `_meta`) and of the authenticated caller
//! when a layer in front names one (`modelctx_types::Principal`), and expiring. A state that
//! fails any check is refused with `-32602`, never trusted. The state is small bytes
//! (a layout byte, the expiry, the digest, the answers as JSON), so that every POST of
//! the exchange carries and scans little.
//!
//! The state carries only what the server asked: the answers its handler asked for
//! (by key) and was handed, in this round or an earlier one. An answer nobody asked
//! for (in `inputResponses`, or in a state sealed before a handler changed) is
//! dropped, not refused: the spec has the server ignore answers to inputs it never
//! asks for, a client may well answer ahead of an ask, and a refusal would fail a
//! request that can be served. Dropped, such an answer costs its one POST and never
//! grows the state, so a client cannot make the server seal (and make every later
//! POST of the exchange carry) what it never asked for.
//!
//! A state is good for its whole lifetime, and may be sent again: a round whose retry
//! has effects (an approval, a payment) can be made single-use
//! (`ServerBuilder::single_use_rounds`). Each state then carries a random id, and a
//! retry is served only if the [`SingleUseIds`] store says its id is new — before the
//! handler runs; a state sent again, to this process or any other sharing the store,
//! is refused with `-32602`, and so is a state sealed without an id. A retry that
//! fails after its check (a dropped connection) has used its state: the client starts
//! the request over without one.
//!
//! On `tools/call`, `prompts/get` and `resources/read` the dispatcher opens a `Round` from
//! the params' `inputResponses` and `requestState` (both removed before the handler sees
//! the params). An input call whose answer the round has returns it; otherwise it registers
//! the input request and never returns: `run_round` sees the wake-up, polls the handler
//! once more (so inputs asked concurrently land in one round), drops it, and answers
//! `InputRequiredResult`. The state's digest is written into one buffer from the params
//! read as members (`_meta` skipped, never decoded); the keyed HMAC is built once per key.
//! Asking for input the client did not declare fails the request with `-32021` (the round's
//! fatal slot wins over whatever the handler does with the error). The key is random per
//! process unless `ServerBuilder::request_state_key` gives one: processes behind one
//! endpoint must share it.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hmac::{Hmac, Mac};
use modelctx_store::SingleUseIds;
use modelctx_types::{
    ErrorCode, ErrorData, InputRequest, InputRequests, InputRequiredResult, RawValue, to_raw,
};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::base64;

mod once;
use once::{OnceStore, once_id};

/// The methods that may answer with an `InputRequiredResult`.
pub(crate) const METHODS: [&str; 3] = ["tools/call", "prompts/get", "resources/read"];

/// How long a `requestState` stays valid unless the server is told otherwise
/// (`ServerBuilder::request_state_lifetime`).
pub(crate) const STATE_LIFETIME: Duration = Duration::from_secs(15 * 60);

/// The key `requestState` is sealed with: one random key per process unless the server
/// is given one (servers in several processes behind one endpoint share one). Held as
/// the HMAC already keyed (its padded key blocks hashed once, not on every seal and
/// open), shared: each request's copy is a reference.
#[derive(Clone)]
pub(crate) struct StateKey(Arc<Hmac<Sha256>>);

impl std::fmt::Debug for StateKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StateKey(..)")
    }
}

impl StateKey {
    /// A key given by the application.
    pub(crate) fn new(key: [u8; 32]) -> Self {
        Self(Arc::new(
            <Hmac<Sha256> as Mac>::new_from_slice(&key).expect("HMAC takes a key of any length"),
        ))
    }

    /// This process's random key, drawn on first use; `None` when the OS has no
    /// randomness to give.
    pub(crate) fn process() -> Option<Self> {
        static KEY: std::sync::OnceLock<Option<StateKey>> = std::sync::OnceLock::new();
        KEY.get_or_init(|| {
            let mut key = [0u8; 32];
            getrandom::fill(&mut key).ok()?;
            Some(Self::new(key))
        })
        .clone()
    }

    fn mac(&self, payload: &[u8]) -> Hmac<Sha256> {
        let mut mac = (*self.0).clone();
        mac.update(payload);
        mac
    }
}

/// What `requestState` carries, sealed as bytes: [`FORMAT`] (or [`FORMAT_ONCE`]),
/// `expires` (8 bytes, big endian), `digest` (32 bytes), with `FORMAT_ONCE` the `once`
/// id (16 bytes), then `answers` as JSON.
struct Sealed {
    /// The digest of the method and params the state belongs to.
    digest: Digest32,
    /// Seconds since the Unix epoch after which the state is refused.
    expires: u64,
    /// Every answer of the earlier rounds, by key.
    answers: BTreeMap<String, Value>,
    /// The random id of a state of a single-use round.
    once: Option<OnceId>,
}

/// The random id of a single-use round's state.
type OnceId = [u8; 16];

/// The first byte of a sealed state: its layout (a state of another layout is refused).
const FORMAT: u8 = 1;
/// The layout of a single-use round's state: [`FORMAT`]'s with the id.
const FORMAT_ONCE: u8 = 2;
/// The bytes before a sealed state's answers.
const HEAD: usize = 1 + 8 + 32;
/// The bytes before the answers of a single-use round's state.
const HEAD_ONCE: usize = HEAD + 16;

/// A SHA-256 digest.
type Digest32 = [u8; 32];

/// The params of a retry, split: the request's own params (what the handler sees), and
/// the answers and state the client sent back.
pub(crate) struct Split {
    pub(crate) params: Option<Box<RawValue>>,
    responses: Option<Map<String, Value>>,
    state: Option<String>,
    /// The digest of the request's own params, when a state came back to check against
    /// it: computed from the one read of the params the split makes anyway.
    digest: Option<Digest32>,
}

/// A member name of a JSON object, borrowed from the text unless written with escapes.
#[derive(Deserialize, PartialEq, Eq, PartialOrd, Ord)]
struct Key<'a>(#[serde(borrow)] Cow<'a, str>);

/// The members of a JSON object by name (of a name given twice, the last, as a parser's
/// map keeps), each value as its text: read without decoding the values.
type Members<'a> = BTreeMap<Key<'a>, &'a RawValue>;

/// Whether `params` names either member a retry adds, `"inputResponses"` or
/// `"requestState"` (anywhere in the text): the check every request of the era passes,
/// in one pass ([`modelctx_types::members::holds`]).
fn names_retry_member(params: &str) -> bool {
    modelctx_types::members::holds(params, ["\"inputResponses\"", "\"requestState\""])
}

/// Takes `inputResponses` and `requestState` out of the params of a `method` request.
/// The other members keep their text as sent (`_meta`, the largest, is not decoded).
pub(crate) fn split(method: &str, params: Option<Box<RawValue>>) -> Result<Split, ErrorData> {
    let Some(raw) = params else {
        return Ok(Split {
            params: None,
            responses: None,
            state: None,
            digest: None,
        });
    };
    if !names_retry_member(raw.get()) {
        return Ok(Split {
            params: Some(raw),
            responses: None,
            state: None,
            digest: None,
        });
    }
    let mut members: Members<'_> = serde_json::from_str(raw.get())
        .map_err(|e| ErrorData::invalid_params(format!("Invalid params: {e}")))?;
    let mut take = |name: &'static str| -> Result<Option<Value>, ErrorData> {
        members
            .remove(&Key(Cow::Borrowed(name)))
            .map(|text| serde_json::from_str(text.get()))
            .transpose()
            .map_err(|e| ErrorData::invalid_params(format!("Invalid params: {e}")))
    };
    let responses = match take("inputResponses")? {
        None => None,
        Some(Value::Object(responses)) => Some(responses),
        Some(other) => {
            return Err(ErrorData::invalid_params(format!(
                "Invalid params: inputResponses must be an object of answers by key, got {other}"
            )));
        }
    };
    let state = match take("requestState")? {
        None => None,
        Some(Value::String(state)) => Some(state),
        Some(other) => {
            return Err(ErrorData::invalid_params(format!(
                "Invalid params: requestState must be the string the server sent, got {other}"
            )));
        }
    };
    let digest = state.is_some().then(|| digest_members(method, &members));
    let mut text = String::with_capacity(raw.get().len());
    text.push('{');
    for (i, (key, value)) in members.iter().enumerate() {
        if i > 0 {
            text.push(',');
        }
        push_json_string(&mut text, &key.0);
        text.push(':');
        text.push_str(value.get());
    }
    text.push('}');
    // Built from valid pieces (each key encoded, each value the text a parser took): no
    // second parse.
    let params = crate::built_raw::built_raw(text)
        .ok_or_else(|| ErrorData::internal_error("cannot rebuild the request's params"))?;
    Ok(Split {
        params: Some(params),
        responses,
        state,
        digest,
    })
}

/// One round of a request that may ask for input.
#[derive(Debug)]
pub(crate) struct Round {
    /// The request's method (one of [`METHODS`]: no copy).
    method: Cow<'static, str>,
    /// The request's own params, for the digest a state is bound to (`None` once the
    /// digest is known).
    params: Option<Box<RawValue>>,
    /// The digest, computed when a state is checked or sealed (most requests that may
    /// ask for input never do), bound to the caller when one is known.
    digest: std::sync::OnceLock<Digest32>,
    /// The authenticated caller ([`modelctx_types::Principal`]) the state is bound
    /// to: another caller's retry with the same params is another request.
    principal: Option<Arc<str>>,
    /// What the client answered so far, by key.
    answers: BTreeMap<String, Value>,
    inner: Mutex<Asking>,
    /// Fires when the handler asks for input it does not have, or is refused for good.
    pub(crate) wake: tokio::sync::Notify,
    /// Where single-use rounds' ids are remembered, when rounds are single-use.
    once: Option<OnceStore>,
    /// The state the retry brought back: its id (none for a state of a round that was
    /// not single-use) and expiry.
    presented: Option<(Option<OnceId>, u64)>,
    /// How long the state this round ends with stays valid.
    lifetime: Duration,
}

#[derive(Debug, Default)]
struct Asking {
    /// How many unnamed inputs the handler asked for so far.
    unnamed: usize,
    /// The inputs asked for and not answered yet.
    requests: InputRequests,
    /// A refusal that fails the request whatever the handler does with it.
    fatal: Option<ErrorData>,
    /// The keys of the answers handed to the handler: all the next state carries.
    used: std::collections::BTreeSet<String>,
}

/// What an ask comes to.
pub(crate) enum Asked<R> {
    /// The client answered it on this retry or an earlier one.
    Answered(R),
    /// Not answered yet: the round ends asking for it.
    Pending,
}

impl Round {
    /// The round of one request: its own params (for the digest), and what the client
    /// sent back. A `requestState` that fails verification, expired, or belongs to
    /// another request is refused.
    pub(crate) fn open(
        key: &StateKey,
        method: &str,
        split: &mut Split,
        principal: Option<&str>,
        now: SystemTime,
    ) -> Result<Self, ErrorData> {
        let digest = std::sync::OnceLock::new();
        let mut answers = BTreeMap::new();
        let mut presented = None;
        if let Some(state) = &split.state {
            let sealed = unseal(key, state)?;
            let now = seconds(now);
            let own = match split.digest.take() {
                Some(known) => digest.get_or_init(|| bound(known, principal)),
                None => digest.get_or_init(|| {
                    bound(self::digest(method, split.params.as_deref()), principal)
                }),
            };
            if sealed.digest != *own {
                return Err(ErrorData::invalid_params(
                    "Invalid params: requestState belongs to another request",
                ));
            }
            // Valid while `now` is before the expiry, to the second: a lifetime of zero
            // is over at once.
            if now >= sealed.expires {
                return Err(ErrorData::invalid_params(
                    "Invalid params: requestState has expired; send the request again without it",
                ));
            }
            answers = sealed.answers;
            presented = Some((sealed.once, sealed.expires));
        }
        // The retry's answers join them (an earlier answer is not replaced). Answers to
        // inputs the handler never asks for are ignored, as the spec wants, and never
        // sealed into the next state (see `end`); answers
        // without a state are taken as they come: they are the client's input like any
        // other param, and the state only carries what earlier rounds already took.
        if let Some(responses) = split.responses.take() {
            for (key, answer) in responses {
                answers.entry(key).or_insert(answer);
            }
        }
        Ok(Self {
            method: match METHODS.iter().find(|m| **m == method) {
                Some(known) => Cow::Borrowed(known),
                None => Cow::Owned(method.to_owned()),
            },
            params: match digest.get() {
                Some(_) => None,
                None => split.params.clone(),
            },
            digest,
            principal: principal.map(Arc::from),
            answers,
            inner: Mutex::new(Asking::default()),
            wake: tokio::sync::Notify::new(),
            once: None,
            presented,
            lifetime: STATE_LIFETIME,
        })
    }

    /// Sets how long the state this round ends with stays valid (whole seconds).
    pub(crate) fn set_lifetime(&mut self, lifetime: Duration) {
        self.lifetime = lifetime;
    }

    /// Makes this round single-use when `store` is given: the state it brought back
    /// must be new to the store ([`claim`](Self::claim)), and the state it ends with
    /// carries an id of its own.
    pub(crate) fn set_single_use(&mut self, store: Option<Arc<dyn SingleUseIds>>) {
        self.once = store.map(OnceStore);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Asking> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Asks for one input under `key` (or the next unnamed key): its answer, decoded as
    /// `R`, when the client gave it; otherwise it joins this round's requests.
    /// `request` is made only when the input is asked for.
    pub(crate) fn ask<R: DeserializeOwned>(
        &self,
        key: Option<&str>,
        request: impl FnOnce() -> InputRequest,
    ) -> Result<Asked<R>, ErrorData> {
        let mut asking = self.lock();
        let key = match key {
            Some(key) => Cow::Borrowed(key),
            None => {
                let key = format!("input-{}", asking.unnamed);
                asking.unnamed += 1;
                Cow::Owned(key)
            }
        };
        if let Some(answer) = self.answers.get(key.as_ref()) {
            if !asking.used.contains(key.as_ref()) {
                asking.used.insert(key.clone().into_owned());
            }
            return R::deserialize(answer).map(Asked::Answered).map_err(|e| {
                let error = ErrorData::invalid_params(format!(
                    "Invalid params: inputResponses[{key:?}] does not answer {}: {e}",
                    request().method()
                ));
                asking.fatal.get_or_insert(error.clone());
                self.wake.notify_one();
                error
            });
        }
        asking.requests.insert(key.into_owned(), request());
        self.wake.notify_one();
        Ok(Asked::Pending)
    }

    /// Fails the request with `error` whatever the handler does with it.
    pub(crate) fn fail(&self, error: ErrorData) {
        self.lock().fatal.get_or_insert(error);
        self.wake.notify_one();
    }

    /// How the round ends once its handler has asked for input (or was refused): the
    /// refusal, or the `InputRequiredResult` asking for every input still missing, with
    /// the state a retry brings back.
    pub(crate) fn end(&self, key: &StateKey, now: SystemTime) -> Result<Box<RawValue>, ErrorData> {
        let mut asking = self.lock();
        if let Some(error) = &asking.fatal {
            return Err(error.clone());
        }
        let sealed = Sealed {
            digest: *self.digest.get_or_init(|| {
                bound(
                    digest(&self.method, self.params.as_deref()),
                    self.principal.as_deref(),
                )
            }),
            expires: seconds(now).saturating_add(self.lifetime.as_secs()),
            // Only what the handler asked for (see the module's docs).
            answers: self
                .answers
                .iter()
                .filter(|(key, _)| asking.used.contains(*key))
                .map(|(key, answer)| (key.clone(), answer.clone()))
                .collect(),
            once: match self.once {
                Some(_) => Some(once_id()?),
                None => None,
            },
        };
        let state = seal(key, &sealed)?;
        // The round ends here: what it asked for goes into its result, not a copy.
        let requests = std::mem::take(&mut asking.requests);
        let result = InputRequiredResult::new(requests).with_request_state(state);
        to_raw(&result).map_err(|e| ErrorData::internal_error(format!("cannot encode: {e}")))
    }

    /// Whether the round has something to end with: inputs to ask for, or a refusal.
    pub(crate) fn must_end(&self) -> bool {
        let asking = self.lock();
        asking.fatal.is_some() || !asking.requests.is_empty()
    }

    /// The refusal that fails the request, if any.
    pub(crate) fn fatal(&self) -> Option<ErrorData> {
        self.lock().fatal.clone()
    }
}

/// `-32021`: the request needs a client capability the client did not declare.
pub(crate) fn missing_capability(what: &str, required: Value) -> ErrorData {
    ErrorData::new(
        ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
        format!("Missing required client capability: this request needs {what}"),
    )
    .with_data(json!({ "requiredCapabilities": required }))
}

fn seconds(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// The digest that binds a state to its request: the method and the params (without
/// `_meta`) as canonical JSON, object keys sorted.
fn digest(method: &str, params: Option<&RawValue>) -> Digest32 {
    // No params and empty params are the same request.
    let Some(params) = params else {
        return digest_members(method, &Members::new());
    };
    match serde_json::from_str::<Members<'_>>(params.get()) {
        Ok(members) => digest_members(method, &members),
        // Not an object: its canonical form as a whole.
        Err(_) => {
            let value = serde_json::from_str::<Value>(params.get())
                .unwrap_or_else(|_| Value::Object(Map::new()));
            let mut text = digest_start(method, params.get().len());
            write_canonical(&value, &mut text);
            Sha256::digest(text.as_bytes()).into()
        }
    }
}

/// A request's digest bound to its authenticated caller, when there is one: a state
/// sealed for one caller belongs to another request for any other (the spec's defence
/// against replay binds the principal into the state).
fn bound(digest: Digest32, principal: Option<&str>) -> Digest32 {
    match principal {
        None => digest,
        Some(principal) => {
            let mut hash = Sha256::new();
            hash.update(digest);
            hash.update(b"\0principal\0");
            hash.update(principal.as_bytes());
            hash.finalize().into()
        }
    }
}

/// The hashed text's start, with room for `len` more bytes.
fn digest_start(method: &str, len: usize) -> String {
    let mut text = String::with_capacity(method.len() + 1 + len);
    text.push_str(method);
    text.push('\0');
    text
}

/// [`digest`] of params read as members: the same canonical JSON, written member by
/// member; only the values kept are decoded (a string without escapes is its own
/// canonical form), and `_meta` is skipped unread.
fn digest_members(method: &str, members: &Members<'_>) -> Digest32 {
    let len = members
        .iter()
        .filter(|(key, _)| key.0 != "_meta")
        .map(|(key, value)| key.0.len() + value.get().len() + 4)
        .sum::<usize>();
    let mut text = digest_start(method, len + 2);
    text.push('{');
    let mut first = true;
    for (key, value) in members {
        if key.0 == "_meta" {
            continue;
        }
        if !first {
            text.push(',');
        }
        first = false;
        push_json_string(&mut text, &key.0);
        text.push(':');
        let raw = value.get();
        if raw.starts_with('"') && !raw.contains('\\') {
            text.push_str(raw);
        } else {
            match serde_json::from_str::<Value>(raw) {
                Ok(value) => write_canonical(&value, &mut text),
                // A raw value is valid JSON: not reached.
                Err(_) => text.push_str(raw),
            }
        }
    }
    text.push('}');
    Sha256::digest(text.as_bytes()).into()
}

/// Whether `text` is written in JSON as itself between quotes.
fn plain(text: &str) -> bool {
    !text.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20)
}

/// Writes `text` as a JSON string.
fn push_json_string(out: &mut String, text: &str) {
    if plain(text) {
        out.push('"');
        out.push_str(text);
        out.push('"');
    } else {
        // Serialising a string cannot fail.
        out.push_str(&serde_json::to_string(text).unwrap_or_default());
    }
}

/// Writes `value` as JSON with object keys in sorted order, whatever map type serde_json
/// was built with.
fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                push_json_string(out, key);
                out.push(':');
                write_canonical(&map[key], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        Value::String(text) => push_json_string(out, text),
        // Numbers, booleans, null: their JSON text (`Display`), no string built.
        other => {
            use std::fmt::Write;
            let _ = write!(out, "{other}");
        }
    }
}

/// `base64(payload).base64(hmac(payload))`.
fn seal(key: &StateKey, sealed: &Sealed) -> Result<String, ErrorData> {
    let mut payload = Vec::with_capacity(HEAD_ONCE + 64);
    payload.push(if sealed.once.is_some() {
        FORMAT_ONCE
    } else {
        FORMAT
    });
    payload.extend_from_slice(&sealed.expires.to_be_bytes());
    payload.extend_from_slice(&sealed.digest);
    if let Some(id) = &sealed.once {
        payload.extend_from_slice(id);
    }
    serde_json::to_writer(&mut payload, &sealed.answers)
        .map_err(|e| ErrorData::internal_error(format!("cannot encode requestState: {e}")))?;
    let tag = key.mac(&payload).finalize().into_bytes();
    let mut state = base64::encode(&payload);
    state.push('.');
    state.push_str(&base64::encode(&tag));
    Ok(state)
}

fn unseal(key: &StateKey, state: &str) -> Result<Sealed, ErrorData> {
    let refused = || {
        ErrorData::invalid_params(
            "Invalid params: requestState failed verification (it must be echoed exactly as the server sent it)",
        )
    };
    let (payload, tag) = state.split_once('.').ok_or_else(refused)?;
    let payload = base64::decode(payload).ok_or_else(refused)?;
    let tag = base64::decode(tag).ok_or_else(refused)?;
    key.mac(&payload)
        .verify_slice(&tag)
        .map_err(|_| refused())?;
    let head_len = match payload.first() {
        Some(&FORMAT) => HEAD,
        Some(&FORMAT_ONCE) => HEAD_ONCE,
        _ => return Err(refused()),
    };
    if payload.len() < head_len {
        return Err(refused());
    }
    let (head, answers) = payload.split_at(head_len);
    let mut expires = [0u8; 8];
    expires.copy_from_slice(&head[1..9]);
    let mut digest = [0u8; 32];
    digest.copy_from_slice(&head[9..HEAD]);
    let once = (head_len == HEAD_ONCE).then(|| {
        let mut id = [0u8; 16];
        id.copy_from_slice(&head[HEAD..HEAD_ONCE]);
        id
    });
    Ok(Sealed {
        digest,
        expires: u64::from_be_bytes(expires),
        // Read as a `str`: the server's other JSON reading is of text, so no second
        // parser (for bytes) is built.
        answers: std::str::from_utf8(answers)
            .ok()
            .and_then(|text| serde_json::from_str(text).ok())
            .ok_or_else(refused)?,
        once,
    })
}

#[cfg(test)]
mod tests;
