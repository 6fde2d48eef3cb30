//! A legacy session's handshake: its event stream holds a place under the session cap
//! from the `GET`, so a stream whose `initialize` fails, or that sends none in time,
//! is ended rather than kept for as long as its client holds the connection.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use modelctx_types::{JsonRpcMessage, RequestId};

/// Where a session's handshake stands: the `initialize` request POSTed for it, until
/// its answer passes, and whether that answer was a result.
#[derive(Default)]
pub(crate) struct Handshake {
    pending: Mutex<Option<RequestId>>,
    done: AtomicBool,
}

/// What an outbound message means for the handshake.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Not the answer to `initialize`.
    Other,
    /// `initialize` was answered with a result: the session is established.
    Established,
    /// `initialize` was answered with an error: the session ends once it is sent.
    Failed,
}

impl Handshake {
    /// Notes a message POSTed for the session: an `initialize` request starts the
    /// handshake (one that is already established keeps it).
    pub(crate) fn inbound(&self, message: &JsonRpcMessage) {
        if let JsonRpcMessage::Request(r) = message
            && r.method == "initialize"
            && !self.is_established()
        {
            *self.pending.lock().unwrap_or_else(|p| p.into_inner()) = Some(r.id.clone());
        }
    }

    /// What `message`, on its way to the client, does to the handshake.
    pub(crate) fn outbound(&self, message: &JsonRpcMessage) -> Outcome {
        let (id, ok) = match message {
            JsonRpcMessage::Response(r) => (Some(&r.id), true),
            JsonRpcMessage::Error(e) => (e.id.as_ref(), false),
            _ => return Outcome::Other,
        };
        let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        if id.is_none() || pending.as_ref() != id {
            return Outcome::Other;
        }
        *pending = None;
        if ok {
            self.done.store(true, Ordering::Release);
            Outcome::Established
        } else {
            Outcome::Failed
        }
    }

    /// Whether `initialize` was answered with a result.
    pub(crate) fn is_established(&self) -> bool {
        self.done.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(s: &str) -> JsonRpcMessage {
        s.parse().unwrap()
    }

    #[test]
    fn only_the_answer_to_initialize_settles_it() {
        let h = Handshake::default();
        h.inbound(&m(r#"{"jsonrpc":"2.0","method":"initialize"}"#));
        assert_eq!(
            h.outbound(&m(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#)),
            Outcome::Other,
            "a notification named initialize starts nothing"
        );
        h.inbound(&m(r#"{"jsonrpc":"2.0","id":1,"method":"initialize"}"#));
        assert_eq!(
            h.outbound(&m(r#"{"jsonrpc":"2.0","id":2,"result":{}}"#)),
            Outcome::Other
        );
        assert_eq!(
            h.outbound(&m(
                r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"x"}}"#
            )),
            Outcome::Failed
        );
        h.inbound(&m(r#"{"jsonrpc":"2.0","id":3,"method":"initialize"}"#));
        assert_eq!(
            h.outbound(&m(r#"{"jsonrpc":"2.0","id":3,"result":{}}"#)),
            Outcome::Established
        );
        assert!(h.is_established());
    }
}
