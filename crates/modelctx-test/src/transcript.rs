//! A readable conversation transcript: every message one side sent and received, one
//! block each, in order, with stable request ids and pretty JSON, to snapshot (say with
//! `insta::assert_snapshot!`) so that a change of what goes over the wire shows in review.
//!
//! Request ids are renumbered `1, 2, …` in the order the requests appear (each side's
//! requests in one count), and the responses carry their request's number: a
//! transcript does not change when only the id scheme does.

use std::collections::HashMap;
use std::fmt;

use modelctx_types::JsonRpcMessage;
use serde_json::Value;

use crate::record::{Direction, Recorded};

/// A rendered conversation, seen from the recorded side (the client, for a
/// `TestClient`). `Display` writes it.
///
/// ```
/// use modelctx_test::record::{Direction, Recorded};
/// use modelctx_test::Transcript;
/// use modelctx_types::{JsonRpcMessage, JsonRpcNotification};
///
/// let note: JsonRpcMessage = JsonRpcNotification::new("notifications/initialized", None).into();
/// let transcript = Transcript::from_messages([(Direction::Sent, note)]);
/// assert_eq!(
///     transcript.to_string(),
///     "--> notification notifications/initialized\n{\n  \"jsonrpc\": \"2.0\",\n  \"method\": \"notifications/initialized\"\n}\n"
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transcript {
    blocks: Vec<String>,
}

impl Transcript {
    /// The transcript of a recording's log.
    pub fn new(log: &[Recorded]) -> Self {
        Self::from_messages(log.iter().map(|r| (r.direction, r.message.message.clone())))
    }

    /// The transcript of `messages`, each with the way it went.
    pub fn from_messages(messages: impl IntoIterator<Item = (Direction, JsonRpcMessage)>) -> Self {
        let mut ids = StableIds::default();
        let blocks = messages
            .into_iter()
            .map(|(direction, message)| block(&mut ids, direction, &message))
            .collect();
        Self { blocks }
    }

    /// Each message's block, in order.
    pub fn blocks(&self) -> &[String] {
        &self.blocks
    }
}

impl fmt::Display for Transcript {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, block) in self.blocks.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            writeln!(f, "{block}")?;
        }
        Ok(())
    }
}

/// Request ids as they are numbered in a transcript: by the side that sent the request
/// and its id on the wire.
#[derive(Default)]
struct StableIds {
    numbers: HashMap<(Direction, String), usize>,
}

impl StableIds {
    /// The number of the request `id` sent in `direction` (a new one when unseen).
    fn number(&mut self, direction: Direction, id: &Value) -> usize {
        let next = self.numbers.len() + 1;
        *self
            .numbers
            .entry((direction, id.to_string()))
            .or_insert(next)
    }
}

/// The other way: a response goes the opposite way to its request.
fn opposite(direction: Direction) -> Direction {
    match direction {
        Direction::Sent => Direction::Received,
        Direction::Received => Direction::Sent,
    }
}

fn block(ids: &mut StableIds, direction: Direction, message: &JsonRpcMessage) -> String {
    let arrow = match direction {
        Direction::Sent => "-->",
        Direction::Received => "<--",
    };
    let mut json: Value = serde_json::from_slice(&message.to_vec()).unwrap_or(Value::Null);
    let wire_id = json.get("id").cloned().filter(|id| !id.is_null());
    let (request_of, head) = match message {
        JsonRpcMessage::Request(r) => (Some(direction), format!("request {}", r.method)),
        JsonRpcMessage::Notification(n) => (None, format!("notification {}", n.method)),
        JsonRpcMessage::Response(_) => (Some(opposite(direction)), "response".to_owned()),
        JsonRpcMessage::Error(_) => (Some(opposite(direction)), "error".to_owned()),
    };
    let number = request_of
        .zip(wire_id)
        .map(|(sender, id)| ids.number(sender, &id));
    let head = match number {
        Some(n) => {
            json["id"] = Value::from(n);
            format!("{arrow} {head} #{n}")
        }
        None => format!("{arrow} {head}"),
    };
    let body = serde_json::to_string_pretty(&sorted(json)).unwrap_or_default();
    format!("{head}\n{body}")
}

/// `value` with every object's keys in order, whatever order serde_json keeps them in
/// (insertion order where a crate of the build turns its `preserve_order` on).
fn sorted(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<_> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(entries.into_iter().map(|(k, v)| (k, sorted(v))).collect())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
        other => other,
    }
}
