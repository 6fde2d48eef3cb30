//! Listings behind the resource server: everything (the default) or only what the
//! caller's token lets it use (`Listing::Permitted`), for tools, resources, resource
//! templates and prompts, page by page; calls are checked by the layer either way.

use std::collections::BTreeMap;
use std::time::Duration;

use modelctx_client::Client;
use modelctx_http::{StreamableHttpClientTransport, StreamableHttpService};
use modelctx_oauth::{
    AuthorizationServer, AuthorizationServerConfig, InMemoryStore, Listing, Login, Operation,
    RegisteredClient, ResourceServer, ResourceServerConfig,
};
use modelctx_server::{Context, PromptDef, ResourceDef, Server, TemplateDef, ToolDef};
use modelctx_test::within;
use modelctx_types::{CacheScope, JsonObject, Tool};
use reqwest::header::{AUTHORIZATION, HeaderValue};
use serde_json::{Value, json};

use crate::loopback::{client_credentials, granted, listener, serve};

const LIMIT: Duration = Duration::from_secs(20);

/// Two of each kind: one open to every caller, one needing `mcp:admin`; a template;
/// one item per page, so that filtering and paging meet.
fn mcp_server() -> Server {
    let tool = |name: &'static str| {
        ToolDef::with_schema(
            Tool::without_arguments(name),
            move |_args: JsonObject, _cx: Context| async move { Ok::<_, String>(name.to_owned()) },
        )
    };
    let resource = |uri: &'static str| {
        ResourceDef::new(uri, uri, move |_cx: Context| async move {
            Ok::<_, String>(uri.to_owned())
        })
    };
    let prompt = |name: &'static str| {
        PromptDef::new(
            name,
            move |_args: BTreeMap<String, String>, _cx: Context| async move {
                Ok::<_, String>(name.to_owned())
            },
        )
    };
    Server::builder("listed", "1.0.0")
        .page_size(1)
        // Shareable by default; a list shaped by the caller's permissions is not.
        .cache_hints(Duration::from_secs(60), CacheScope::Public)
        .tool(tool("open"))
        .unwrap()
        .tool(tool("admin"))
        .unwrap()
        .resource(resource("file:///open"))
        .unwrap()
        .resource(resource("file:///secret"))
        .unwrap()
        .resource_template(TemplateDef::new(
            "file:///notes/{name}",
            "notes",
            |vars: BTreeMap<String, String>, _cx: Context| async move {
                Ok::<_, String>(vars.get("name").cloned().unwrap_or_default())
            },
        ))
        .unwrap()
        .prompt(prompt("greet"))
        .unwrap()
        .prompt(prompt("audit"))
        .unwrap()
        .build()
}

struct World {
    /// The endpoint listing everything, and the one listing what the caller may use.
    all: String,
    permitted: String,
    issuer: String,
    http: reqwest::Client,
}

impl World {
    async fn start() -> Self {
        let (as_listener, issuer) = listener().await;
        let (mcp_listener, origin) = listener().await;
        let all = format!("{origin}/all");
        let permitted = format!("{origin}/permitted");
        let mut config = AuthorizationServerConfig::new(&issuer, &all)
            .scopes_supported(["mcp:tools", "mcp:admin"]);
        config.resources.push(permitted.clone());
        let auth =
            AuthorizationServer::new(config, InMemoryStore::new(), |_: &Login<'_>| None).unwrap();
        auth.register_client(RegisteredClient::confidential(
            "svc",
            "svc-secret",
            Vec::<String>::new(),
        ))
        .await
        .unwrap();
        let mut app = axum::Router::new();
        for (path, resource, listing) in [
            ("/all", &all, Listing::All),
            ("/permitted", &permitted, Listing::Permitted),
        ] {
            let rs = ResourceServer::new(
                ResourceServerConfig::new(resource, &issuer)
                    .required_scopes(["mcp:tools"])
                    .operation_scopes(Operation::Tool("admin".into()), ["mcp:admin"])
                    .operation_scopes(Operation::Resource("file:///secret".into()), ["mcp:admin"])
                    .operation_scopes(Operation::Prompt("audit".into()), ["mcp:admin"])
                    .listing(listing),
                auth.verifier(),
            )
            .unwrap();
            let server = mcp_server();
            let service = StreamableHttpService::new(move |t| {
                server.serve(t);
            });
            app = app
                .nest_service(path, service.router().layer(rs.layer()))
                .merge(rs.metadata_router());
        }
        serve(as_listener, auth.router());
        serve(mcp_listener, app);
        World {
            all,
            permitted,
            issuer,
            http: reqwest::Client::new(),
        }
    }

    /// A client-credentials token for `resource` with `scope`.
    async fn token(&self, resource: &str, scope: &str) -> String {
        let fields = [("scope", scope), ("resource", resource)];
        granted(client_credentials(&self.http, &self.issuer, "svc", &fields)).await
    }

    /// A client connected to `endpoint` with a token granting `scope`.
    async fn client(&self, endpoint: &str, scope: &str) -> Client {
        let token = self.token(endpoint, scope).await;
        let transport = StreamableHttpClientTransport::builder(endpoint)
            .header(
                AUTHORIZATION,
                HeaderValue::from_str(&format!("Bearer {token}")).unwrap(),
            )
            .build()
            .unwrap();
        within(
            LIMIT,
            "the client to connect",
            Client::builder("lister", "1.0.0").connect(transport),
        )
        .await
        .expect("connected with the token")
    }
}

/// Everything `client` is shown, each kind through every page.
async fn listed(client: &Client) -> Vec<String> {
    let every_page = async {
        (
            client.list_all_tools().await.unwrap(),
            client.list_all_resources().await.unwrap(),
            client.list_all_resource_templates().await.unwrap(),
            client.list_all_prompts().await.unwrap(),
        )
    };
    let (tools, resources, templates, prompts) = within(LIMIT, "every list", every_page).await;
    let mut seen: Vec<String> = (tools.iter().map(|t| format!("tool {}", t.name)))
        .chain(resources.iter().map(|r| format!("resource {}", r.uri)))
        .chain(
            templates
                .iter()
                .map(|t| format!("template {}", t.uri_template)),
        )
        .chain(prompts.iter().map(|p| format!("prompt {}", p.name)))
        .collect();
    seen.sort();
    seen
}

/// What a page of tools and a read of `file:///open` tell caches.
async fn cache_scopes(client: &Client) -> [Option<CacheScope>; 2] {
    let page = within(LIMIT, "a page", client.list_tools(None))
        .await
        .unwrap();
    let read = within(LIMIT, "open", client.read_resource("file:///open"))
        .await
        .unwrap();
    [page.cache_scope, read.cache_scope]
}

/// The text the tool `name` answers, or `None` when the call is refused.
async fn call(client: &Client, name: &str) -> Option<Value> {
    let answer = within(LIMIT, name, client.call_tool(name, JsonObject::new()))
        .await
        .ok()?;
    Some(serde_json::to_value(&answer).unwrap()["content"][0]["text"].clone())
}

const EVERYTHING: [&str; 7] = [
    "prompt audit",
    "prompt greet",
    "resource file:///open",
    "resource file:///secret",
    "template file:///notes/{name}",
    "tool admin",
    "tool open",
];

#[tokio::test]
async fn by_default_listings_show_everything_and_calls_are_still_checked() {
    let world = World::start().await;
    let client = world.client(&world.all, "mcp:tools").await;
    assert_eq!(listed(&client).await, EVERYTHING);
    assert_eq!(
        cache_scopes(&client).await,
        [Some(CacheScope::Public), Some(CacheScope::Public)]
    );
    // Listed is not callable: the layer refuses the call without the scope (403, which
    // a client without an OAuth hook sees as a failed request).
    assert_eq!(call(&client, "admin").await, None);
    assert_eq!(call(&client, "open").await, Some(json!("open")));
}

#[tokio::test]
async fn permitted_listings_hide_what_the_token_cannot_use() {
    let world = World::start().await;
    let weak = world.client(&world.permitted, "mcp:tools").await;
    assert_eq!(
        listed(&weak).await,
        [
            "prompt greet",
            "resource file:///open",
            "template file:///notes/{name}",
            "tool open",
        ]
    );
    // What this caller is shown is its own: never for a shared cache; so is what a
    // read checked against its permissions returns.
    assert_eq!(
        cache_scopes(&weak).await,
        [Some(CacheScope::Private), Some(CacheScope::Private)]
    );
    // Hidden is not callable either.
    assert_eq!(call(&weak, "admin").await, None);
    assert!(
        within(LIMIT, "secret", weak.read_resource("file:///secret"))
            .await
            .is_err()
    );

    // With the scope, the same endpoint lists (and serves) everything.
    let strong = world.client(&world.permitted, "mcp:tools mcp:admin").await;
    assert_eq!(listed(&strong).await, EVERYTHING);
    assert_eq!(call(&strong, "admin").await, Some(json!("admin")));
}
