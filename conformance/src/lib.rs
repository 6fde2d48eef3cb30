//! The modelctx conformance suite.
//!
//! `requirements.toml` lists every interaction requirement (one `[[requirement]]` per
//! ID, the same IDs as the reference manifest); `requirements.lock` pins its sha256. Each
//! conformance test names the requirement IDs it covers, is written once against a
//! [`Connector`], and runs once per transport those requirements apply to. A contract
//! keeps manifest and tests honest both ways, and `cargo xtask conformance` reports.
//!
//! # Writing a conformance test
//!
//! Put it in the area's file under `tests/conformance/` (`tools.rs`, `lifecycle.rs`, …;
//! `tests/conformance.rs` declares each with `#[path = "conformance/<area>.rs"] mod <area>;`
//! and concatenates their lists), add it to that file's `tests()` list, and read it like
//! the conversation it checks:
//!
//! ```no_run
//! use modelctx_conformance::{Connector, Test, conformance_test, record, within};
//! use modelctx_transport::{MessageSink, MessageStream, TransportMessage};
//! use modelctx_types::JsonRpcNotification;
//!
//! /// This area's tests; `tests/conformance.rs` concatenates every area's list.
//! pub(crate) fn tests() -> Vec<Test> {
//!     vec![conformance_test!(initialized_reaches_the_server, ["lifecycle:initialized"])]
//! }
//!
//! async fn initialized_reaches_the_server(connect: Connector) {
//!     let (client, (_server_sink, mut server_stream)) = connect.transport_pair().await;
//!     let ((client_sink, _client_stream), wire) = record(client);
//!
//!     let note = JsonRpcNotification::new("notifications/initialized", None);
//!     client_sink.send(TransportMessage::new(note.into())).await.unwrap();
//!
//!     let got = within("the notification", server_stream.recv()).await.unwrap().unwrap();
//!     assert_eq!(got.message.method(), Some("notifications/initialized"));
//!     assert_eq!(wire.sent().len(), 1);
//! }
//! # fn main() {}
//! ```
//!
//! - [`conformance_test!`] names the test `<area>::<function>`; the harness runs it as
//!   `lifecycle::initialized_reaches_the_server[in-memory]`, so
//!   `cargo test -p modelctx-conformance -- lifecycle::` filters as usual.
//! - An ID missing from the manifest stops the whole run before anything runs.
//! - [`Connector::transport_pair`] gives a fresh `(client side, server side)` pair; the
//!   role-level helpers (serve a server, connect a client) join the `Connector` once the
//!   server and client crates land. [`Connector::kind`] tells a test which transport it is
//!   on, for the few that need the concrete one.
//! - [`record`] wraps a side's transport and logs both directions in order, for
//!   wire-level invariants ([`Recording::messages`], [`Recording::wait_for`]).
//! - Never sleep to synchronise: await the event under [`within`] (or
//!   [`Recording::wait_for`]); each trial also has an overall [`TRIAL_TIMEOUT`](harness::TRIAL_TIMEOUT).
//!
//! # The contract
//!
//! Run as `contract::*` trials with the suite and again by the report:
//! every non-deferred requirement has a test on each transport it applies to that the SDK
//! has (one that applies only to transports the SDK lacks must be deferred); no deferred
//! requirement has a test (a stale deferral fails); every test names a known requirement
//! (only the [`SELF_TESTS`](contract::SELF_TESTS) name none); a divergent requirement has
//! a test; `requirements.lock` matches `requirements.toml`; and the ID set equals the
//! reference `../shared/interaction-manifest/requirements.json` (when that file is absent
//! outside CI the check says so and relies on the lock; with `CI=true` absence fails).
//! After reviewing a manifest change, re-pin with `cargo xtask conformance --update-lock`.
//!
//! # Reading the report
//!
//! `cargo xtask conformance [--json PATH]` runs every trial, then prints one row per
//! manifest section: how many requirements it has (`total`), how many are `covered`
//! (every transport they apply to passed), `divergent`, `deferred`, and `open` (neither:
//! a run failed or a transport has no run), then per SDK transport `pass/fail` — how many
//! of the section's requirements passed or failed there. Below the table: the trial
//! totals (self-tests included) and each contract rule with its violations. It exits
//! non-zero on any failed run or contract violation. The JSON form is
//! [`report::JsonReport`]: per requirement a `status` (`covered`, `divergent`,
//! `deferred`, or `uncovered`) and a result per transport it applies to (`pass`, `fail`,
//! `missing`).
//!
//! # The divergence lifecycle
//!
//! When the SDK knowingly does something other than a requirement says, the requirement
//! gets `divergence = "what we do instead"` and a test that pins *what the SDK does now*.
//! When someone fixes the behaviour, that pinned test fails — by design: re-pin the test
//! to the required behaviour, delete the `divergence` entry, and re-pin the lock. The
//! requirement then counts as covered.
//!
//! # Features
//!
//! | feature | what it adds |
//! |---|---|
//! | `runner` (default) | [`Connector`], [`record`], the registry and the [`harness`]: everything a test needs |
//!
//! Without `runner` the crate is SDK-free: [`manifest`], [`pin`], [`contract`] and
//! [`report`] need only serde, toml and sha2. `xtask` depends on it that way, so
//! `cargo xtask tidy` builds no SDK crate, and the report shares one implementation with
//! the harness instead of a copy in xtask.

pub mod contract;
mod kind;
pub mod manifest;
pub mod pin;
pub mod report;

#[cfg(feature = "runner")]
mod connect;
#[cfg(feature = "runner")]
pub mod harness;
#[cfg(feature = "runner")]
mod record;
#[cfg(feature = "runner")]
mod registry;
#[cfg(feature = "runner")]
mod selftest;
#[cfg(feature = "runner")]
mod wait;

pub use kind::TransportKind;

#[cfg(feature = "runner")]
pub use connect::Connector;
#[cfg(feature = "runner")]
pub use record::{Direction, Recorded, Recording, record};
#[cfg(feature = "runner")]
#[doc(hidden)]
pub use registry::__test_name;
#[cfg(feature = "runner")]
pub use registry::Test;
#[cfg(feature = "runner")]
pub use wait::{WAIT_TIMEOUT, within};
