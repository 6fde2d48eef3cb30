//! Task isolation between two clients over streamable HTTP, in every combination: the
//! creator and the other requestor each of either protocol revision (2025-11-25 with
//! its session where the server keeps one, 2026-07-28 always without), on a stateful
//! and on a stateless server, with and without authentication.
//!
//! A task belongs to its principal when there is one, else to its 2025 session, else
//! it is reachable only through its id: the other requestor never sees another's task
//! in `tasks/list`, and `tasks/get`, `tasks/result`, `tasks/cancel` (and the tasks
//! extension's `tasks/update`) on it answer exactly as on an unknown id, leaving it
//! untouched. Two requestors without principal or session reach each other's tasks by
//! id (the id is the capability) but never list them.

use modelctx_test::task_isolation::{Era, Requestor, WITHIN, check_pair, serve, server};
use modelctx_test::within;

const ERAS: [Era; 2] = [Era::Handshake, Era::Stateless];

/// Every pair of requestors of either era among `users` (two of them: the creator's,
/// the other's), on one server.
async fn every_pair(
    stateful: bool,
    auth: bool,
    users: &[(Option<&'static str>, Option<&'static str>)],
) {
    let (open, gate) = tokio::sync::watch::channel(false);
    let url = serve(server(&gate, None), stateful, auth).await;
    for &(creator, other) in users {
        for a_era in ERAS {
            for b_era in ERAS {
                let a = Requestor::connect(&url, a_era, creator).await;
                let b = Requestor::connect(&url, b_era, other).await;
                if a_era == Era::Handshake {
                    assert_eq!(a.session.is_some(), stateful, "{}", a.name);
                }
                within(WITHIN, "the pair", check_pair(&a, &b)).await;
            }
        }
    }
    open.send_replace(true);
}

/// Without authentication: two anonymous clients.
const ANONYMOUS: &[(Option<&str>, Option<&str>)] = &[(None, None)];

/// With authentication: another user, the same user on another connection, and an
/// unauthenticated client on either side (an optional authentication layer).
const USERS: &[(Option<&str>, Option<&str>)] = &[
    (Some("alice"), Some("bob")),
    (Some("alice"), Some("alice")),
    (None, Some("bob")),
    (Some("alice"), None),
];

/// One test per row: its name, then whether the server keeps sessions, whether it
/// authenticates callers, and the pairs of callers.
macro_rules! isolation_tests {
    ($($test:ident => $stateful:expr, $authenticated:expr, $pairs:expr;)*) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $test() {
                every_pair($stateful, $authenticated, $pairs).await;
            }
        )*
    };
}

isolation_tests! {
    unauthenticated_clients_of_a_stateful_server_keep_their_tasks_apart => true, false, ANONYMOUS;
    unauthenticated_clients_of_a_stateless_server_keep_their_tasks_apart => false, false, ANONYMOUS;
    authenticated_callers_of_a_stateful_server_reach_only_their_own_tasks => true, true, USERS;
    authenticated_callers_of_a_stateless_server_reach_only_their_own_tasks => false, true, USERS;
}
