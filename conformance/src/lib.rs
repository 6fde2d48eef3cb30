//! The modelctx conformance suite.
//!
//! `requirements.toml` lists every interaction requirement (one `[[requirement]]` per
//! ID, the same IDs as the reference manifest) and the matrix: the era axis
//! (`spec_versions`), the transports' era locks, and the (transport, version) cells the
//! SDK runs today (`[sdk_cells]`). `requirements.lock` pins its sha256 and the reference's.
//! The reference's unreleased next version runs beside it from the same trials:
//! `requirements-next.toml` holds only what it changes ([`next`]), pinned by
//! `requirements-next.lock`.
//! Each conformance test names the requirement IDs it covers, is written once against a
//! [`Connector`], and runs once per cell those requirements apply to and the SDK has. A
//! contract keeps manifest and tests honest both ways, and `cargo xtask conformance`
//! reports.
//!
//! # Writing a conformance test
//!
//! Put it in the area's file under `tests/conformance/` (`tools.rs`, `lifecycle.rs`, …;
//! `tests/conformance/main.rs` declares each with `mod <area>;`
//! and concatenates their lists), add it to that file's `tests()` list, and read it like
//! the conversation it checks:
//!
//! ```no_run
//! use modelctx_conformance::{Connector, Test, conformance_test, record, within};
//! use modelctx_transport::{MessageSink, MessageStream, TransportMessage};
//! use modelctx_types::JsonRpcNotification;
//!
//! /// This area's tests; `tests/conformance/main.rs` concatenates every area's list.
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
//!   `lifecycle::initialized_reaches_the_server[in-memory@2025-11-25]`, so
//!   `cargo test -p modelctx-conformance -- lifecycle::` (or `-- @2025-11-25`) filters as
//!   usual.
//! - An ID missing from the manifest stops the whole run before anything runs.
//! - [`Connector::transport_pair`] gives a fresh `(client side, server side)` pair (not on
//!   the session-less HTTP leg, which has a server session per POST: there
//!   [`Connector::serve_stateless_http`] serves a factory; nor on the shared leg, two
//!   services sharing sessions through Redis: there [`Connector::serve_shared_http`]
//!   does). A test that builds its own HTTP app (its own service settings, middleware
//!   or routes) serves it at [`Connector::http_endpoint`]: once, or on the shared leg
//!   twice behind a round-robin proxy. [`Connector::kind`] tells a test
//!   which transport it is on, for the few that need the concrete one. A test that only
//!   makes sense in one era says so through its requirements' windows (`added_in`,
//!   `removed_in`), never by an `if` on [`Connector::version`].
//! - [`record`] wraps a side's transport and logs both directions in order, for
//!   wire-level invariants ([`Recording::messages`], [`Recording::wait_for`]).
//! - Never sleep to synchronise: await the event under [`within`] (or
//!   [`Recording::wait_for`]); each trial also has an overall [`TRIAL_TIMEOUT`](harness::TRIAL_TIMEOUT).
//!
//! # The contract
//!
//! Run as `contract::*` trials with the suite and again by the report:
//! every non-deferred requirement has a test in each cell it applies to that the SDK has
//! (one that applies only to cells the SDK lacks must be deferred); no deferred
//! requirement has a test (a stale deferral fails); every test names a known requirement
//! (only the [`SELF_TESTS`](contract::SELF_TESTS) name none); a divergent requirement has
//! a test; `requirements.lock` matches `requirements.toml` and the reference manifest it
//! names; and the manifest follows that reference — the same ID set, and per requirement
//! the same transports, era window and succession, keeping the reference's arm exclusions
//! (when the reference is absent outside CI the check says so and relies on the lock; with
//! `CI=true` absence fails). After reviewing a manifest change, re-pin with `cargo xtask
//! conformance --update-lock`; to move to a new reference, review `cargo xtask
//! conformance --manifest-diff PATH` first, then `--update-lock --reference PATH`.
//!
//! # Reading the report
//!
//! `cargo xtask conformance [--json PATH]` runs every trial, then prints a table per spec
//! version with one row per manifest section: how many requirements exist in that version
//! (`total`), how many are `covered` (every cell of that version they apply to that the
//! SDK has passed), `divergent`, `deferred`, `unserved` (they apply there only to cells
//! the SDK lacks yet) and `open` (a run failed or a cell has no run), then per transport
//! `pass/fail`, or `-(N)` where the SDK lacks that cell. Below the tables: the totals, the
//! trials per cell (self-tests included) and each contract rule with its violations. It
//! exits non-zero on any failed run or contract violation. The JSON form is
//! [`report::JsonReport`]: per requirement a `status`, a `by_version` standing, and a
//! result per cell it applies to, keyed `"<transport>@<version>"` (`pass`, `fail`,
//! `missing`, `unserved`); the summary adds totals per version and runs per cell. The
//! next manifest's report follows the released one's (in the JSON under `next`): its
//! requirements not covered yet are listed by section and counted, and do not fail the
//! run until it is released; its other contract rules do.
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
//!
//! # Writing tests that hold in every cell
//!
//! - Where the spec makes a behaviour era-specific (an error code, a removed notification),
//!   a test branches on what the *client negotiated* (`support::stateless_era`), never on
//!   the cell. An era-specific test says so through its requirements' windows.
//! - A test that also names a requirement confined to fewer cells is registered a second
//!   time for the wider ones (`conformance_test!(alias => fn, [...])`).
//! - Servers that ask the client for input do it from a tool (`support::work_tool`): the
//!   2026-07-28 era carries input requests only on `tools/call`, `prompts/get` and
//!   `resources/read` results. Test payloads are compared without the envelope and
//!   `resultType` (`support::payload`).
//! - `Pair::server()` panics on the stateless legs: a test that needs it names a
//!   requirement that excludes them.
//! - Trap: a test that ignores its `Connector` (builds its own HTTP server) runs
//!   unchanged in every cell of its requirements, so name only HTTP-specific requirements
//!   from such a test, or the transport-independent ones look covered on legs that never
//!   ran them. A test that builds its own HTTP app takes its origin from
//!   `Connector::http_endpoint()`, or the shared leg runs it on one service.

pub mod contract;
mod kind;
pub mod manifest;
pub mod next;
pub mod pin;
pub mod report;
pub mod services;

#[cfg(feature = "runner")]
mod connect;
#[cfg(feature = "runner")]
mod endpoint;
#[cfg(feature = "runner")]
mod front;
#[cfg(feature = "runner")]
pub mod harness;
#[cfg(feature = "runner")]
pub mod http_support;
#[cfg(feature = "runner")]
mod registry;
#[cfg(feature = "runner")]
mod selftest;
#[cfg(feature = "runner")]
pub mod support;
#[cfg(feature = "runner")]
mod wait;

pub use kind::{Cell, SpecVersion, TransportKind};

#[cfg(feature = "runner")]
pub use connect::{Connector, GetStream, SharedHttp};
#[cfg(feature = "runner")]
pub use endpoint::{HttpEndpoint, redis_connected};
#[cfg(feature = "runner")]
pub use modelctx_test::record::{Direction, Recorded, Recording, record};
#[cfg(feature = "runner")]
#[doc(hidden)]
pub use registry::__test_name;
#[cfg(feature = "runner")]
pub use registry::Test;
#[cfg(feature = "runner")]
pub use wait::{WAIT_TIMEOUT, within};
