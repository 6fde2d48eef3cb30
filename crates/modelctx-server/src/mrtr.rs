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
//! JSON sealed with HMAC-SHA256 under the server's key, bound to the method and a digest
//! of the request's params, and expiring. A state that fails any check is refused with
//! `-32602`, never trusted.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hmac::{Hmac, Mac};
use modelctx_types::{
    ErrorCode, ErrorData, InputRequest, InputRequests, InputRequiredResult, RawValue, to_raw,
};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::base64;

/// The methods that may answer with an `InputRequiredResult`.
pub(crate) const METHODS: [&str; 3] = ["tools/call", "prompts/get", "resources/read"];

/// How long a `requestState` stays valid.
const STATE_LIFETIME: Duration = Duration::from_secs(15 * 60);

/// The key `requestState` is sealed with: one random key per process unless the server
/// is given one (servers in several processes behind one endpoint share one).
#[derive(Clone)]
pub(crate) struct StateKey([u8; 32]);

impl std::fmt::Debug for StateKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StateKey(..)")
    }
}

impl StateKey {
    /// A key given by the application.
    pub(crate) fn new(key: [u8; 32]) -> Self {
        Self(key)
    }

    /// This process's random key, drawn on first use; `None` when the OS has no
    /// randomness to give.
    pub(crate) fn process() -> Option<Self> {
        static KEY: std::sync::OnceLock<Option<StateKey>> = std::sync::OnceLock::new();
        KEY.get_or_init(|| {
            let mut key = [0u8; 32];
            getrandom::fill(&mut key).ok()?;
            Some(Self(key))
        })
        .clone()
    }

    fn mac(&self, payload: &[u8]) -> Hmac<Sha256> {
        let mut mac =
            <Hmac<Sha256> as Mac>::new_from_slice(&self.0).expect("HMAC takes a key of any length");
        mac.update(payload);
        mac
    }
}

/// What `requestState` carries.
#[derive(Serialize, Deserialize)]
struct Sealed {
    /// The method and the digest of the params the state belongs to.
    method: String,
    digest: String,
    /// Seconds since the Unix epoch after which the state is refused.
    expires: u64,
    /// Every answer of the earlier rounds, by key.
    answers: BTreeMap<String, Value>,
}

/// The params of a retry, split: the request's own params (what the handler sees), and
/// the answers and state the client sent back.
pub(crate) struct Split {
    pub(crate) params: Option<Box<RawValue>>,
    responses: Option<Map<String, Value>>,
    state: Option<String>,
}

/// Takes `inputResponses` and `requestState` out of a request's params.
pub(crate) fn split(params: Option<Box<RawValue>>) -> Result<Split, ErrorData> {
    let Some(raw) = params else {
        return Ok(Split {
            params: None,
            responses: None,
            state: None,
        });
    };
    if !raw.get().contains("\"inputResponses\"") && !raw.get().contains("\"requestState\"") {
        return Ok(Split {
            params: Some(raw),
            responses: None,
            state: None,
        });
    }
    let mut map: Map<String, Value> = serde_json::from_str(raw.get())
        .map_err(|e| ErrorData::invalid_params(format!("Invalid params: {e}")))?;
    let responses = match map.remove("inputResponses") {
        None => None,
        Some(Value::Object(responses)) => Some(responses),
        Some(other) => {
            return Err(ErrorData::invalid_params(format!(
                "Invalid params: inputResponses must be an object of answers by key, got {other}"
            )));
        }
    };
    let state = match map.remove("requestState") {
        None => None,
        Some(Value::String(state)) => Some(state),
        Some(other) => {
            return Err(ErrorData::invalid_params(format!(
                "Invalid params: requestState must be the string the server sent, got {other}"
            )));
        }
    };
    let params = to_raw(&map).map_err(|e| ErrorData::internal_error(e.to_string()))?;
    Ok(Split {
        params: Some(params),
        responses,
        state,
    })
}

/// One round of a request that may ask for input.
#[derive(Debug)]
pub(crate) struct Round {
    method: String,
    /// The request's own params, for the digest a state is bound to.
    params: Option<Box<RawValue>>,
    /// The digest, computed when a state is checked or sealed (most requests that may
    /// ask for input never do).
    digest: std::sync::OnceLock<String>,
    /// What the client answered so far, by key.
    answers: BTreeMap<String, Value>,
    inner: Mutex<Asking>,
    /// Fires when the handler asks for input it does not have, or is refused for good.
    pub(crate) wake: tokio::sync::Notify,
}

#[derive(Debug, Default)]
struct Asking {
    /// How many unnamed inputs the handler asked for so far.
    unnamed: usize,
    /// The inputs asked for and not answered yet.
    requests: InputRequests,
    /// A refusal that fails the request whatever the handler does with it.
    fatal: Option<ErrorData>,
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
        split: &Split,
        now: SystemTime,
    ) -> Result<Self, ErrorData> {
        let digest = std::sync::OnceLock::new();
        let mut answers = BTreeMap::new();
        if let Some(state) = &split.state {
            let sealed = unseal(key, state)?;
            let now = seconds(now);
            let own = digest.get_or_init(|| self::digest(method, split.params.as_deref()));
            if sealed.method != method || sealed.digest != *own {
                return Err(ErrorData::invalid_params(
                    "Invalid params: requestState belongs to another request",
                ));
            }
            if now > sealed.expires {
                return Err(ErrorData::invalid_params(
                    "Invalid params: requestState has expired; send the request again without it",
                ));
            }
            answers = sealed.answers;
        }
        // The retry's answers join them (an earlier answer is not replaced). Answers to
        // inputs the handler never asks for are ignored, as the spec wants; answers
        // without a state are taken as they come: they are the client's input like any
        // other param, and the state only carries what earlier rounds already took.
        if let Some(responses) = &split.responses {
            for (key, answer) in responses {
                answers.entry(key.clone()).or_insert_with(|| answer.clone());
            }
        }
        Ok(Self {
            method: method.to_owned(),
            params: split.params.clone(),
            digest,
            answers,
            inner: Mutex::new(Asking::default()),
            wake: tokio::sync::Notify::new(),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Asking> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Asks for one input under `key` (or the next unnamed key): its answer, decoded as
    /// `R`, when the client gave it; otherwise it joins this round's requests.
    pub(crate) fn ask<R: DeserializeOwned>(
        &self,
        key: Option<&str>,
        request: InputRequest,
    ) -> Result<Asked<R>, ErrorData> {
        let mut asking = self.lock();
        let key = match key {
            Some(key) => key.to_owned(),
            None => {
                let key = format!("input-{}", asking.unnamed);
                asking.unnamed += 1;
                key
            }
        };
        if let Some(answer) = self.answers.get(&key) {
            return serde_json::from_value::<R>(answer.clone())
                .map(Asked::Answered)
                .map_err(|e| {
                    let error = ErrorData::invalid_params(format!(
                        "Invalid params: inputResponses[{key:?}] does not answer {}: {e}",
                        request.method()
                    ));
                    asking.fatal.get_or_insert(error.clone());
                    self.wake.notify_one();
                    error
                });
        }
        asking.requests.insert(key, request);
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
        let asking = self.lock();
        if let Some(error) = &asking.fatal {
            return Err(error.clone());
        }
        let sealed = Sealed {
            method: self.method.clone(),
            digest: self
                .digest
                .get_or_init(|| digest(&self.method, self.params.as_deref()))
                .clone(),
            expires: seconds(now) + STATE_LIFETIME.as_secs(),
            answers: self.answers.clone(),
        };
        let state = seal(key, &sealed)?;
        let result = InputRequiredResult::new(asking.requests.clone()).with_request_state(state);
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
/// `_meta`), keys sorted.
fn digest(method: &str, params: Option<&RawValue>) -> String {
    // No params and empty params are the same request.
    let mut value = params
        .and_then(|p| serde_json::from_str::<Value>(p.get()).ok())
        .unwrap_or_else(|| Value::Object(Map::new()));
    if let Value::Object(map) = &mut value {
        map.remove("_meta");
    }
    let mut canonical = String::new();
    write_canonical(&value, &mut canonical);
    let mut hash = Sha256::new();
    hash.update(method.as_bytes());
    hash.update([0]);
    hash.update(canonical.as_bytes());
    base64::encode(&hash.finalize())
}

/// JSON with object keys in sorted order, whatever map type serde_json was built with.
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
                out.push_str(&Value::String(key.clone()).to_string());
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
        other => out.push_str(&other.to_string()),
    }
}

/// `base64(payload).base64(hmac)`.
fn seal(key: &StateKey, sealed: &Sealed) -> Result<String, ErrorData> {
    let payload = serde_json::to_vec(sealed)
        .map_err(|e| ErrorData::internal_error(format!("cannot encode requestState: {e}")))?;
    let payload = base64::encode(&payload);
    let tag = key.mac(payload.as_bytes()).finalize().into_bytes();
    Ok(format!("{payload}.{}", base64::encode(&tag)))
}

fn unseal(key: &StateKey, state: &str) -> Result<Sealed, ErrorData> {
    let refused = || {
        ErrorData::invalid_params(
            "Invalid params: requestState failed verification (it must be echoed exactly as the server sent it)",
        )
    };
    let (payload, tag) = state.split_once('.').ok_or_else(refused)?;
    let tag = base64::decode(tag).ok_or_else(refused)?;
    key.mac(payload.as_bytes())
        .verify_slice(&tag)
        .map_err(|_| refused())?;
    let payload = base64::decode(payload).ok_or_else(refused)?;
    serde_json::from_slice(&payload).map_err(|_| refused())
}

#[cfg(test)]
mod tests {
    use super::*;
    use modelctx_types::{ElicitRequest, ElicitRequestParams, ElicitResult, RequestedSchema};

    fn elicit() -> InputRequest {
        InputRequest::from(ElicitRequest::without_id(ElicitRequestParams::Form(
            modelctx_types::ElicitRequestFormParams::new("Name?", RequestedSchema::new()),
        )))
    }

    fn params(value: Value) -> Option<Box<RawValue>> {
        Some(to_raw(&value).unwrap())
    }

    fn key() -> StateKey {
        StateKey([7; 32])
    }

    #[test]
    fn a_round_asks_then_the_retry_answers() {
        let now = SystemTime::now();
        let first = split(params(json!({"name": "greet", "arguments": {}}))).unwrap();
        let round = Round::open(&key(), "tools/call", &first, now).unwrap();
        assert!(matches!(
            round
                .ask::<ElicitResult>(Some("user_name"), elicit())
                .unwrap(),
            Asked::Pending
        ));
        assert!(round.must_end());
        let interim: Value = serde_json::from_str(round.end(&key(), now).unwrap().get()).unwrap();
        assert_eq!(interim["resultType"], "input_required");
        assert_eq!(
            interim["inputRequests"]["user_name"]["method"],
            "elicitation/create"
        );
        let state = interim["requestState"].as_str().unwrap().to_owned();

        let retry = split(params(json!({
            "name": "greet", "arguments": {},
            "inputResponses": {"user_name": {"action": "accept", "content": {"name": "Ada"}},
                "stray": {"anything": 1}},
            "requestState": state,
        })))
        .unwrap();
        let seen: Value = serde_json::from_str(retry.params.as_deref().unwrap().get()).unwrap();
        assert_eq!(seen, json!({"name": "greet", "arguments": {}}));
        let round = Round::open(&key(), "tools/call", &retry, now).unwrap();
        let Asked::Answered(answer) = round
            .ask::<ElicitResult>(Some("user_name"), elicit())
            .unwrap()
        else {
            panic!("answered on the retry")
        };
        assert_eq!(
            serde_json::to_value(answer.content.unwrap()).unwrap(),
            json!({"name": "Ada"})
        );
        assert!(!round.must_end());
    }

    #[test]
    fn a_state_is_bound_to_its_key_request_and_lifetime() {
        let now = SystemTime::now();
        let round = Round::open(
            &key(),
            "tools/call",
            &split(params(json!({"name": "a"}))).unwrap(),
            now,
        )
        .unwrap();
        let _ = round.ask::<ElicitResult>(None, elicit()).unwrap();
        let interim: Value = serde_json::from_str(round.end(&key(), now).unwrap().get()).unwrap();
        let state = interim["requestState"].as_str().unwrap().to_owned();
        let retry = |name: &str, state: String| {
            split(params(json!({"name": name, "requestState": state}))).unwrap()
        };
        // Tampered, signed with another key, for another request, too late.
        let tampered = format!("{state}-TAMPERED");
        for (split, key, at) in [
            (retry("a", tampered), key(), now),
            (retry("a", state.clone()), StateKey([8; 32]), now),
            (retry("b", state.clone()), key(), now),
            (retry("a", state.clone()), key(), now + STATE_LIFETIME * 2),
        ] {
            let error = Round::open(&key, "tools/call", &split, at).unwrap_err();
            assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
        }
        assert!(Round::open(&key(), "tools/call", &retry("a", state), now).is_ok());
    }

    #[test]
    fn a_malformed_answer_or_responses_field_is_refused() {
        assert!(split(params(json!({"inputResponses": null}))).is_err());
        assert!(split(params(json!({"requestState": 3}))).is_err());
        let now = SystemTime::now();
        let round = Round::open(&key(), "tools/call", &split(None).unwrap(), now).unwrap();
        let _ = round.ask::<ElicitResult>(Some("k"), elicit()).unwrap();
        let interim: Value = serde_json::from_str(round.end(&key(), now).unwrap().get()).unwrap();
        let retry = split(params(json!({
            "inputResponses": {"k": 12345},
            "requestState": interim["requestState"],
        })))
        .unwrap();
        // The digest covers the params without the two MRTR fields: none here either.
        let round = Round::open(&key(), "tools/call", &retry, now).unwrap();
        assert!(round.ask::<ElicitResult>(Some("k"), elicit()).is_err());
        assert_eq!(round.fatal().unwrap().code, ErrorCode::INVALID_PARAMS);
    }
}
