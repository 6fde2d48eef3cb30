//! Caching in the 2026-07-28 era (SEP-2549) as the client takes part in it: the
//! freshness a result's `ttlMs` opens and when it ends, what a cached answer is keyed by,
//! what is never cached, and what drops cached answers (a change notification, a refused
//! cursor). The client reads freshness from a clock the tests move on
//! (`unstable_cache_clock`), so no test waits for time to pass. Whether the server puts
//! the hints on its results is in `lifecycle.rs` and `pagination.rs`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use modelctx::client::{Client, ClientBuilder, RootsList};
use modelctx::server::{Context, ResourceDef, Server};
use modelctx::types::{
    CacheScope, ErrorCode, ErrorData, JsonRpcErrorResponse, JsonRpcMessage, JsonRpcResultResponse,
    ServerNotification, SubscriptionFilter, to_raw,
};
use modelctx_conformance::{
    Connector, Recording, Test, assert_next_change, conformance_test, within,
};
use serde_json::{Value, json};

use crate::support::{
    Pair, Script, client, connect, connect_discovering, discovered, raw_server, server_with_tool,
    text_tool,
};
use crate::tools::error_code;

pub(crate) fn tests() -> Vec<Test> {
    vec![
        conformance_test!(
            a_positive_ttl_serves_the_answer_again_without_asking,
            ["caching:ttl:positive-fresh-window"]
        ),
        conformance_test!(
            a_zero_ttl_asks_the_server_every_time,
            ["caching:ttl:zero-immediately-stale"]
        ),
        conformance_test!(
            a_negative_ttl_is_read_as_zero,
            ["caching:ttl:negative-treated-as-zero"]
        ),
        conformance_test!(
            a_result_without_ttl_is_stale_at_once,
            ["caching:ttl:absent-defaults-zero"]
        ),
        conformance_test!(
            an_expired_answer_is_fetched_again_on_the_next_access,
            ["caching:freshness:stale-refetch-on-access"]
        ),
        conformance_test!(
            expiry_alone_fetches_nothing,
            ["caching:freshness:no-background-polling"]
        ),
        conformance_test!(
            a_cached_answer_is_served_only_for_its_own_request,
            ["caching:key:no-cross-key-serve"]
        ),
        conformance_test!(
            an_answer_reached_through_input_rounds_is_never_cached,
            ["caching:key:mrtr-retry-not-cached"]
        ),
        conformance_test!(
            the_interim_answer_has_no_hints_and_the_final_one_both,
            ["caching:input-required:no-hints"]
        ),
        conformance_test!(
            a_change_notification_drops_a_fresh_list,
            ["caching:notification:invalidates-fresh-cache"]
        ),
        conformance_test!(
            each_page_keeps_its_own_freshness,
            ["caching:pagination:per-page-independent"]
        ),
        conformance_test!(
            only_the_expired_page_is_fetched_again_by_its_cursor,
            ["caching:pagination:expired-page-refetch-by-cursor"]
        ),
        conformance_test!(
            a_refused_cursor_drops_the_cached_pages,
            ["caching:pagination:invalid-cursor-discards-all"]
        ),
        conformance_test!(
            a_private_answer_is_not_shared_between_authorization_contexts,
            ["caching:scope:private-not-shared-across-auth-contexts"]
        ),
    ]
}

/// The time the client's cache reads: a fixed start moved on only by [`Clock::advance`].
#[derive(Clone)]
struct Clock {
    start: Instant,
    offset_ms: Arc<AtomicU64>,
}

impl Clock {
    fn new() -> Self {
        Self {
            start: Instant::now(),
            offset_ms: Arc::default(),
        }
    }

    /// `builder` with its cache on this clock.
    fn on(&self, builder: ClientBuilder) -> ClientBuilder {
        let clock = self.clone();
        builder.unstable_cache_clock(move || {
            clock.start + Duration::from_millis(clock.offset_ms.load(Ordering::SeqCst))
        })
    }

    fn advance(&self, ms: u64) {
        self.offset_ms.fetch_add(ms, Ordering::SeqCst);
    }
}

/// The requests of `method` the client sent, as JSON.
pub(crate) fn sent(wire: &Recording, method: &str) -> Vec<Value> {
    wire.sent_of(method)
        .iter()
        .map(|m| serde_json::to_value(m).unwrap())
        .collect()
}

/// The results the client received for its requests of `method`, in order.
fn results(wire: &Recording, method: &str) -> Vec<Value> {
    let asked: Vec<Value> = sent(wire, method).iter().map(|m| m["id"].clone()).collect();
    wire.received()
        .iter()
        .map(|m| serde_json::to_value(m).unwrap())
        .filter(|m| m.get("result").is_some() && asked.contains(&m["id"]))
        .map(|m| m["result"].clone())
        .collect()
}

/// A resource at `uri` whose reads count on `reads` and answer `text`, with `hints`.
fn counted(
    uri: &str,
    text: &'static str,
    reads: &Arc<AtomicUsize>,
    hints: Duration,
) -> ResourceDef {
    let reads = reads.clone();
    ResourceDef::new(uri, uri, move |_cx: Context| {
        reads.fetch_add(1, Ordering::SeqCst);
        async move { Ok::<_, String>(text) }
    })
    .cache_hints(hints, CacheScope::Public)
}

fn text_of(result: &modelctx::types::ReadResourceResult) -> String {
    serde_json::to_value(&result.contents[0]).unwrap()["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// A server of one tool, `name` (answering its name), whose answers are fresh for a
/// minute.
fn fresh_for_a_minute(name: &'static str) -> Server {
    Server::builder("tools", "1.0.0")
        .tool(text_tool(name, name))
        .unwrap()
        .cache_hints(Duration::from_secs(60), CacheScope::Public)
        .build()
}

async fn a_positive_ttl_serves_the_answer_again_without_asking(connector: Connector) {
    let server = fresh_for_a_minute("t");
    let pair = connect(&connector, &server, client()).await;
    let first = pair.client.list_tools(None).await.unwrap();
    assert_eq!(first.ttl_ms, Some(60_000));
    // Within the window the answer is served again: the server is not asked.
    let again = pair.client.list_tools(None).await.unwrap();
    assert_eq!(again.tools, first.tools);
    assert_eq!(sent(&pair.wire, "tools/list").len(), 1);
}

async fn a_zero_ttl_asks_the_server_every_time(connector: Connector) {
    // The server's default hints: `ttlMs` 0.
    let server = server_with_tool("tools", text_tool("t", "t"));
    let pair = connect(&connector, &server, client()).await;
    for access in 1..=3 {
        let page = pair.client.list_tools(None).await.unwrap();
        assert_eq!(page.ttl_ms, Some(0));
        assert_eq!(page.tools.len(), 1);
        assert_eq!(sent(&pair.wire, "tools/list").len(), access);
    }
}

/// A 2026-07-28 server played by hand: `answer(method, params)` answers each request
/// but `server/discover`, whose answer offers tools and resources. Returns the client
/// connected to it and its wire.
pub(crate) async fn played<A>(connector: &Connector, answer: A) -> (Client, Recording)
where
    A: Fn(&str, &Value) -> Result<Value, ErrorData> + Send + Sync + 'static,
{
    let answer = Arc::new(answer);
    let script: Script = Arc::new(move |request: modelctx::types::JsonRpcRequest| {
        let params = request
            .params
            .as_deref()
            .map_or(Value::Null, |p| serde_json::from_str(p.get()).unwrap());
        let reply = match request.method.as_ref() {
            "server/discover" => Ok(discovered("played", json!({"tools": {}, "resources": {}}))),
            method => answer(method, &params),
        };
        let reply: JsonRpcMessage = match reply {
            Ok(result) => JsonRpcResultResponse::new(request.id, to_raw(&result).unwrap()).into(),
            Err(error) => JsonRpcErrorResponse::new(Some(request.id), error).into(),
        };
        Box::pin(async move { (vec![reply], None) }) as futures::future::BoxFuture<'static, _>
    });
    let transport = raw_server(connector, script).await;
    connect_discovering(transport, client()).await
}

async fn a_negative_ttl_is_read_as_zero(connector: Connector) {
    let (client, wire) = played(&connector, |_method, _params| {
        Ok(json!({"resultType": "complete", "ttlMs": -5, "cacheScope": "public", "tools": []}))
    })
    .await;
    // The result is taken (not refused for its hint), as stale at once: every access
    // asks again.
    let first = client.list_tools(None).await.unwrap();
    assert_eq!(first.ttl_ms, Some(0));
    let second = client.list_tools(None).await.unwrap();
    assert_eq!(second.ttl_ms, Some(0));
    assert_eq!(sent(&wire, "tools/list").len(), 2);
}

async fn a_result_without_ttl_is_stale_at_once(connector: Connector) {
    // A server of the handshake era: its results carry no hints.
    let server = server_with_tool("tools", text_tool("t", "t"));
    let pair = connect(&connector, &server, client()).await;
    let first = pair.client.list_tools(None).await.unwrap();
    assert_eq!(first.ttl_ms, None, "no hint, none made up");
    assert_eq!(first.tools.len(), 1);
    let second = pair.client.list_tools(None).await.unwrap();
    assert_eq!(second.tools, first.tools);
    assert_eq!(
        sent(&pair.wire, "tools/list").len(),
        2,
        "nothing served again"
    );
    for result in results(&pair.wire, "tools/list") {
        assert!(result.get("ttlMs").is_none(), "{result}");
    }
}

/// A session with a server of one counted resource, `file:///a` (text `a`, `hints`),
/// its client on a test clock, and the resource read once: the reads so far, the
/// clock, the pair.
async fn read_once_on_a_clock(
    connector: &Connector,
    hints: Duration,
) -> (Arc<AtomicUsize>, Clock, Pair) {
    let reads = Arc::new(AtomicUsize::new(0));
    let server = Server::builder("docs", "1.0.0")
        .resource(counted("file:///a", "a", &reads, hints))
        .unwrap()
        .build();
    let clock = Clock::new();
    let pair = connect(connector, &server, clock.on(client())).await;
    pair.client.read_resource("file:///a").await.unwrap();
    (reads, clock, pair)
}

async fn an_expired_answer_is_fetched_again_on_the_next_access(connector: Connector) {
    let (reads, clock, pair) = read_once_on_a_clock(&connector, Duration::from_secs(1)).await;
    clock.advance(999);
    let served = pair.client.read_resource("file:///a").await.unwrap();
    assert_eq!(text_of(&served), "a");
    assert_eq!(reads.load(Ordering::SeqCst), 1, "fresh: served again");
    clock.advance(1);
    let fetched = pair.client.read_resource("file:///a").await.unwrap();
    assert_eq!(text_of(&fetched), "a");
    assert_eq!(reads.load(Ordering::SeqCst), 2, "stale: fetched again");
    assert_eq!(sent(&pair.wire, "resources/read").len(), 2);
}

async fn expiry_alone_fetches_nothing(connector: Connector) {
    let (reads, clock, pair) = read_once_on_a_clock(&connector, Duration::from_millis(1)).await;
    // Long past the expiry, with no access: the client fetches nothing by itself. A
    // round trip of another request comes after anything it could have sent before.
    clock.advance(60_000);
    pair.client.list_resources(None).await.unwrap();
    assert_eq!(reads.load(Ordering::SeqCst), 1);
    assert_eq!(sent(&pair.wire, "resources/read").len(), 1);
    // The next access finds it stale and fetches it, once.
    pair.client.read_resource("file:///a").await.unwrap();
    assert_eq!(reads.load(Ordering::SeqCst), 2);
    assert_eq!(sent(&pair.wire, "resources/read").len(), 2);
}

async fn a_cached_answer_is_served_only_for_its_own_request(connector: Connector) {
    let (a_reads, b_reads) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let server = Server::builder("docs", "1.0.0")
        .resource(counted("file:///a", "a", &a_reads, Duration::from_secs(60)))
        .unwrap()
        .resource(counted("file:///b", "b", &b_reads, Duration::from_secs(60)))
        .unwrap()
        .build();
    let pair = connect(&connector, &server, client()).await;
    let a = pair.client.read_resource("file:///a").await.unwrap();
    assert_eq!(text_of(&a), "a");
    // Another uri: its own fetch, not `a`'s answer.
    let b = pair.client.read_resource("file:///b").await.unwrap();
    assert_eq!(text_of(&b), "b");
    assert_eq!(
        (
            a_reads.load(Ordering::SeqCst),
            b_reads.load(Ordering::SeqCst)
        ),
        (1, 1)
    );
    // Each is then served from its own entry.
    let a = pair.client.read_resource("file:///a").await.unwrap();
    let b = pair.client.read_resource("file:///b").await.unwrap();
    assert_eq!((text_of(&a), text_of(&b)), ("a".to_owned(), "b".to_owned()));
    assert_eq!(
        (
            a_reads.load(Ordering::SeqCst),
            b_reads.load(Ordering::SeqCst)
        ),
        (1, 1)
    );
    // Another method is never served from a read's entry.
    let listed = pair.client.list_resources(None).await.unwrap();
    assert_eq!(listed.resources.len(), 2);
    assert_eq!(sent(&pair.wire, "resources/list").len(), 1);
    assert_eq!(sent(&pair.wire, "resources/read").len(), 2);
}

/// A server with a plain resource and one whose read asks the client for its roots
/// first, both with a long-lived hint; each read counts on its counter.
fn plain_and_asking(plain: &Arc<AtomicUsize>, asking: &Arc<AtomicUsize>) -> Server {
    let runs = asking.clone();
    let asks = ResourceDef::new("file:///asks", "asks", move |cx: Context| {
        runs.fetch_add(1, Ordering::SeqCst);
        async move {
            let roots = cx.list_roots().await.map_err(|e| e.to_string())?;
            Ok::<_, String>(format!("{} roots", roots.len()))
        }
    })
    .cache_hints(Duration::from_secs(60), CacheScope::Public);
    Server::builder("docs", "1.0.0")
        .resource(counted(
            "file:///plain",
            "plain",
            plain,
            Duration::from_secs(60),
        ))
        .unwrap()
        .resource(asks)
        .unwrap()
        .build()
}

fn with_roots() -> ClientBuilder {
    client().roots(RootsList::default(), false)
}

async fn an_answer_reached_through_input_rounds_is_never_cached(connector: Connector) {
    let (plain, asking) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let server = plain_and_asking(&plain, &asking);
    let pair = connect(&connector, &server, with_roots()).await;
    // A plain read with a hint: fetched once, then served.
    pair.client.read_resource("file:///plain").await.unwrap();
    pair.client.read_resource("file:///plain").await.unwrap();
    assert_eq!(plain.load(Ordering::SeqCst), 1);
    // A read that takes a round of input: its final answer carries the same hint, yet
    // every access runs the whole exchange again.
    for access in 1..=2 {
        let read = pair.client.read_resource("file:///asks").await.unwrap();
        assert_eq!(text_of(&read), "0 roots");
        assert_eq!(
            asking.load(Ordering::SeqCst),
            2 * access,
            "ask, then the retry"
        );
    }
    let asks = sent(&pair.wire, "resources/read")
        .into_iter()
        .filter(|r| r["params"]["uri"] == "file:///asks")
        .collect::<Vec<_>>();
    assert_eq!(asks.len(), 4);
    assert!(
        asks[1]["params"].get("inputResponses").is_some(),
        "{}",
        asks[1]
    );
    let last = results(&pair.wire, "resources/read").pop().unwrap();
    assert_eq!(last["ttlMs"], 60_000, "{last}");
}

async fn the_interim_answer_has_no_hints_and_the_final_one_both(connector: Connector) {
    let (plain, asking) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let server = plain_and_asking(&plain, &asking);
    let pair = connect(&connector, &server, with_roots()).await;
    pair.client.read_resource("file:///asks").await.unwrap();
    let answers = results(&pair.wire, "resources/read");
    assert_eq!(answers.len(), 2, "{answers:?}");
    let (interim, last) = (&answers[0], &answers[1]);
    assert_eq!(interim["resultType"], "input_required", "{interim}");
    assert!(interim.get("ttlMs").is_none(), "{interim}");
    assert!(interim.get("cacheScope").is_none(), "{interim}");
    assert_eq!(last["resultType"], "complete", "{last}");
    assert_eq!(last["ttlMs"], 60_000, "{last}");
    assert_eq!(last["cacheScope"], "public", "{last}");
}

async fn a_change_notification_drops_a_fresh_list(connector: Connector) {
    let server = fresh_for_a_minute("first");
    let pair = connect(&connector, &server, client()).await;
    pair.client.list_tools(None).await.unwrap();
    pair.client.list_tools(None).await.unwrap();
    assert_eq!(sent(&pair.wire, "tools/list").len(), 1, "fresh: served");
    let filter = SubscriptionFilter::new().with_tools_list_changed(true);
    let mut changes = within("the acknowledgement", pair.client.subscribe(filter))
        .await
        .unwrap();
    server.add_tool(text_tool("second", "second")).unwrap();
    assert_next_change!(
        "the change",
        changes.next(),
        ServerNotification::ToolListChanged(_)
    );
    // Still well within its ttl, the list is fetched again.
    let listed = pair.client.list_tools(None).await.unwrap();
    assert_eq!(listed.tools.len(), 2);
    assert_eq!(sent(&pair.wire, "tools/list").len(), 2);
}

/// A server listing two tools a page each: `a` fresh for 5 s, `b` for 1 s.
fn two_pages() -> Server {
    Server::builder("tools", "1.0.0")
        .page_size(1)
        .tool(text_tool("a", "a").cache_hints(Duration::from_secs(5), CacheScope::Public))
        .unwrap()
        .tool(text_tool("b", "b").cache_hints(Duration::from_secs(1), CacheScope::Public))
        .unwrap()
        .build()
}

/// The `tools/list` requests the client sent after the first `from`: whether each
/// named a cursor.
fn cursors(wire: &Recording, from: usize) -> Vec<Option<Value>> {
    sent(wire, "tools/list")[from..]
        .iter()
        .map(|r| r["params"].get("cursor").cloned())
        .collect()
}

async fn each_page_keeps_its_own_freshness(connector: Connector) {
    let clock = Clock::new();
    let pair = connect(&connector, &two_pages(), clock.on(client())).await;
    let names = pair.client.tool_names().await.unwrap();
    assert_eq!(names, ["a", "b"]);
    // Each page carried a ttl of its own.
    let ttls: Vec<Value> = results(&pair.wire, "tools/list")
        .iter()
        .map(|p| p["ttlMs"].clone())
        .collect();
    assert_eq!(ttls, [json!(5000), json!(1000)]);
    // At 2 s the second page is stale and fetched again, now fresh until 3 s; the
    // first is fresh until 5 s.
    clock.advance(2000);
    pair.client.tool_names().await.unwrap();
    assert_eq!(sent(&pair.wire, "tools/list").len(), 3);
    // At 2.5 s both are fresh: the second page's clock started when it came again.
    clock.advance(500);
    assert_eq!(pair.client.tool_names().await.unwrap(), ["a", "b"]);
    assert_eq!(sent(&pair.wire, "tools/list").len(), 3);
}

async fn only_the_expired_page_is_fetched_again_by_its_cursor(connector: Connector) {
    let clock = Clock::new();
    let pair = connect(&connector, &two_pages(), clock.on(client())).await;
    pair.client.tool_names().await.unwrap();
    let first_walk = cursors(&pair.wire, 0);
    assert!(
        first_walk[0].is_none() && first_walk[1].is_some(),
        "{first_walk:?}"
    );
    clock.advance(2000);
    assert_eq!(pair.client.tool_names().await.unwrap(), ["a", "b"]);
    // The first page (fresh) came from the cache; the second (stale) was asked for
    // again with its cursor.
    assert_eq!(cursors(&pair.wire, 2), [first_walk[1].clone()]);
}

async fn a_refused_cursor_drops_the_cached_pages(connector: Connector) {
    // The first page is fresh for a minute; the second is not kept, and its cursor
    // works once, then is refused as the list it belonged to is gone.
    let continued = Arc::new(AtomicUsize::new(0));
    let (client, wire) = played(&connector, move |_method, params| {
        match params.get("cursor") {
            None => Ok(
                json!({"resultType": "complete", "ttlMs": 60_000, "cacheScope": "public",
                              "tools": [{"name": "a", "inputSchema": {"type": "object"}}],
                              "nextCursor": "page-2"}),
            ),
            Some(_) if continued.fetch_add(1, Ordering::SeqCst) == 0 => Ok(json!({
                "resultType": "complete", "ttlMs": 0, "cacheScope": "public",
                "tools": [{"name": "b", "inputSchema": {"type": "object"}}]})),
            Some(_) => Err(ErrorData::invalid_params("unknown cursor")),
        }
    })
    .await;
    assert_eq!(client.tool_names().await.unwrap(), ["a", "b"]);
    // The walk again: the first page is served, the cursor is refused.
    let refused = client.tool_names().await.unwrap_err();
    assert_eq!(error_code(&refused), ErrorCode::INVALID_PARAMS, "{refused}");
    assert_eq!(
        cursors(&wire, 0),
        [None, Some(json!("page-2")), Some(json!("page-2"))]
    );
    // The first page, still within its minute, is no longer served: the list is
    // fetched from the beginning.
    let first = client.list_tools(None).await.unwrap();
    assert_eq!(first.tools[0].name, "a");
    assert_eq!(cursors(&wire, 3), [None]);
}

async fn a_private_answer_is_not_shared_between_authorization_contexts(connector: Connector) {
    // Whose the answer is depends on who asks: private, for a minute.
    let reads = Arc::new(AtomicUsize::new(0));
    let counter = reads.clone();
    let mine = ResourceDef::new("mem://mine", "mine", move |cx: Context| {
        counter.fetch_add(1, Ordering::SeqCst);
        let who = cx.client_info().map(|i| i.name.clone()).unwrap_or_default();
        async move { Ok::<_, String>(format!("for {who}")) }
    })
    .cache_hints(Duration::from_secs(60), CacheScope::Private);
    let server = Server::builder("docs", "1.0.0")
        .resource(mine)
        .unwrap()
        .build();
    let as_user =
        |name: &str| Client::builder(name, "1.0.0").mode(modelctx::client::ConnectMode::Handshake);
    let alice = connect(&connector, &server, as_user("alice")).await;
    let bob = connect(&connector, &server, as_user("bob")).await;
    let read = |pair: &Pair| {
        let client = pair.client.clone();
        async move { text_of(&client.read_resource("mem://mine").await.unwrap()) }
    };
    assert_eq!(read(&alice).await, "for alice");
    assert_eq!(read(&alice).await, "for alice");
    assert_eq!(
        reads.load(Ordering::SeqCst),
        1,
        "alice's own answer served to her"
    );
    // Bob's context does not see alice's entry: his read reaches the server.
    assert_eq!(read(&bob).await, "for bob");
    assert_eq!(reads.load(Ordering::SeqCst), 2);
    assert_eq!(sent(&bob.wire, "resources/read").len(), 1);
    assert_eq!(read(&alice).await, "for alice");
    assert_eq!(reads.load(Ordering::SeqCst), 2);
}
