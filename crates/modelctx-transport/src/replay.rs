//! What a reconnecting client transport repeats to a new server session besides
//! `initialize`.
//!
//! That is the state a 2025-era session built with requests: the log level and the resource
//! subscriptions (answered `resources/subscribe` minus `unsubscribe`).

use std::collections::{BTreeMap, HashMap};

use modelctx_types::{JsonRpcMessage, JsonRpcRequest, RawValue, RequestId};

/// The server-side state a session of protocol 2025 built with requests, which a new
/// session (a restarted server, a forgotten session) does not have: the log level
/// (`logging/setLevel`) and the resource subscriptions (`resources/subscribe` minus
/// `resources/unsubscribe`). A client transport that starts a new session by itself
/// feeds this every request it sends and every answer it receives, and after the
/// repeated handshake sends [`replay`](Self::replay) so that log messages and resource
/// updates keep coming. The 2026-07-28 era has none of these methods (its requests
/// carry their log level; `subscriptions/listen` is a request in flight, which fails
/// at a drop like any other): nothing is recorded there.
///
/// Plumbing for the client transports of the modelctx crates.
#[doc(hidden)]
#[derive(Debug, Default)]
pub struct SessionReplay {
    /// Requests sent, by id, that change the state once answered.
    pending: HashMap<RequestId, Change>,
    level: Option<Box<RawValue>>,
    /// Subscribed URIs, with the params that subscribed them.
    subscriptions: BTreeMap<String, Box<RawValue>>,
}

#[derive(Debug)]
enum Change {
    Level(Box<RawValue>),
    Subscribe(String, Box<RawValue>),
    Unsubscribe(String),
}

impl SessionReplay {
    /// Notes a request the client sends.
    pub fn sent(&mut self, request: &JsonRpcRequest) {
        let Some(params) = &request.params else {
            return;
        };
        let change = match request.method.as_ref() {
            "logging/setLevel" => Change::Level(params.clone()),
            "resources/subscribe" => match uri(params) {
                Some(uri) => Change::Subscribe(uri, params.clone()),
                None => return,
            },
            "resources/unsubscribe" => match uri(params) {
                Some(uri) => Change::Unsubscribe(uri),
                None => return,
            },
            _ => return,
        };
        self.pending.insert(request.id.clone(), change);
    }

    /// Notes a message the client receives: a success answer applies its request's
    /// change, an error answer drops it.
    pub fn received(&mut self, message: &JsonRpcMessage) {
        if self.pending.is_empty() {
            return;
        }
        let (id, ok) = match message {
            JsonRpcMessage::Response(r) => (&r.id, true),
            JsonRpcMessage::Error(e) => match &e.id {
                Some(id) => (id, false),
                None => return,
            },
            _ => return,
        };
        let Some(change) = self.pending.remove(id) else {
            return;
        };
        if !ok {
            return;
        }
        match change {
            Change::Level(params) => self.level = Some(params),
            Change::Subscribe(uri, params) => {
                self.subscriptions.insert(uri, params);
            }
            Change::Unsubscribe(uri) => {
                self.subscriptions.remove(&uri);
            }
        }
    }

    /// The requests that rebuild the state in a new session (ids from `id(n)`): the
    /// log level first, then each subscription.
    pub fn replay(&self, mut id: impl FnMut(usize) -> RequestId) -> Vec<JsonRpcRequest> {
        let level = self.level.iter().map(|p| ("logging/setLevel", p.clone()));
        let subscriptions = self
            .subscriptions
            .values()
            .map(|p| ("resources/subscribe", p.clone()));
        level
            .chain(subscriptions)
            .enumerate()
            .map(|(n, (method, params))| JsonRpcRequest::new(id(n), method, Some(params)))
            .collect()
    }
}

fn uri(params: &RawValue) -> Option<String> {
    let params = serde_json::from_str::<serde_json::Value>(params.get()).ok()?;
    params.get("uri")?.as_str().map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(id: i64, method: &'static str, params: &str) -> JsonRpcRequest {
        let params = RawValue::from_string(params.to_owned()).unwrap();
        JsonRpcRequest::new(RequestId::Number(id), method, Some(params))
    }

    fn ok(id: i64) -> JsonRpcMessage {
        format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#)
            .parse()
            .unwrap()
    }

    #[test]
    fn answered_subscriptions_and_the_level_are_replayed() {
        let mut replay = SessionReplay::default();
        replay.sent(&request(1, "resources/subscribe", r#"{"uri":"a://1"}"#));
        replay.sent(&request(2, "resources/subscribe", r#"{"uri":"a://2"}"#));
        replay.sent(&request(3, "logging/setLevel", r#"{"level":"debug"}"#));
        replay.sent(&request(
            4,
            "resources/subscribe",
            r#"{"uri":"a://refused"}"#,
        ));
        replay.sent(&request(5, "tools/list", "{}"));
        for id in [1, 2, 3] {
            replay.received(&ok(id));
        }
        replay.received(
            &r#"{"jsonrpc":"2.0","id":4,"error":{"code":-32602,"message":"no"}}"#
                .parse()
                .unwrap(),
        );
        replay.sent(&request(6, "resources/unsubscribe", r#"{"uri":"a://1"}"#));
        replay.received(&ok(6));

        let again = replay.replay(|n| RequestId::String(format!("r{n}").into()));
        let seen: Vec<_> = again
            .iter()
            .map(|r| {
                (
                    r.id.to_string(),
                    r.method.to_string(),
                    r.params.as_ref().unwrap().get().to_owned(),
                )
            })
            .collect();
        assert_eq!(
            seen,
            [
                (
                    "r0".to_owned(),
                    "logging/setLevel".to_owned(),
                    r#"{"level":"debug"}"#.to_owned()
                ),
                (
                    "r1".to_owned(),
                    "resources/subscribe".to_owned(),
                    r#"{"uri":"a://2"}"#.to_owned()
                ),
            ]
        );
    }
}
