//! A resource template listing its resources: `TemplateDef::list` and
//! `#[resource_template(list = ...)]` put them in `resources/list` after the fixed
//! resources, paged with them, in both eras.

use std::sync::{Arc, Mutex};

use modelctx::client::{Client, ConnectMode};
use modelctx::macros::resource_template;
use modelctx::schemars::{self, JsonSchema};
use modelctx::server::{Context, ResourceDef, Server, TemplateDef};
use modelctx::types::{ErrorCode, Resource};
use modelctx_test::soon;

/// The books of the shelf, listed by the template below.
async fn shelf(_cx: Context) -> Result<Vec<Resource>, String> {
    Ok(["dune", "emma"]
        .into_iter()
        .map(|b| Resource::new(format!("books://{b}"), b))
        .collect())
}

/// A book on the shelf.
#[resource_template(uri_template = "books://{title}", mime_type = "text/plain", list = shelf)]
fn book(title: String) -> String {
    format!("the text of {title}")
}

#[derive(serde::Deserialize, JsonSchema)]
struct Note {
    id: u32,
}

/// A server with a fixed resource, the macro's listing template and a builder's one
/// listing what `notes` holds at each request, three entries a page.
fn server(notes: Arc<Mutex<Vec<u32>>>) -> Server {
    let note = TemplateDef::new("notes://{id}", "note", |n: Note, _cx: Context| async move {
        Ok::<_, String>(format!("note {}", n.id))
    })
    .list(move |_cx: Context| {
        let ids = notes.lock().unwrap().clone();
        async move {
            if ids.contains(&0) {
                return Err("the notes are being rewritten".to_owned());
            }
            let mut listed: Vec<Resource> = ids
                .iter()
                .map(|id| Resource::new(format!("notes://{id}"), format!("note {id}")))
                .collect();
            if let Some(first) = listed.first_mut() {
                first.mime_type = Some("text/markdown".into());
            }
            Ok(listed)
        }
    });
    let readme = ResourceDef::new("file:///README", "readme", |_cx: Context| async {
        Ok::<_, String>("read me")
    });
    Server::builder("listing", "1.0.0")
        .page_size(3)
        .resource(readme)
        .unwrap()
        .resource_template(book_template())
        .unwrap()
        .resource_template(note)
        .unwrap()
        .build()
}

async fn connect(server: &Server, mode: ConnectMode) -> Client {
    let (client_side, server_side) = modelctx::memory::pair();
    let _session = server.serve(server_side);
    soon(
        "connect",
        Client::builder("listing-tests", "1.0.0")
            .mode(mode)
            .connect(client_side),
    )
    .await
    .unwrap()
}

#[tokio::test]
async fn listed_resources_follow_the_fixed_ones_page_by_page_in_both_eras() {
    let notes = Arc::new(Mutex::new(vec![3, 4]));
    let server = server(notes.clone());
    for mode in [ConnectMode::Handshake, ConnectMode::Auto] {
        let client = connect(&server, mode).await;
        // Fixed first, then the templates in URI-template order, each template's
        // resources in the order its function gave them.
        let first = soon("page 1", client.list_resources(None)).await.unwrap();
        let uris: Vec<_> = first.resources.iter().map(|r| r.uri.as_str()).collect();
        assert_eq!(uris, ["file:///README", "books://dune", "books://emma"]);
        let cursor = first.next_cursor.expect("a second page");
        let second = soon("page 2", client.list_resources(Some(cursor)))
            .await
            .unwrap();
        let uris: Vec<_> = second.resources.iter().map(|r| r.uri.as_str()).collect();
        assert_eq!(uris, ["notes://3", "notes://4"]);
        assert_eq!(second.next_cursor, None);

        // A listed resource without a MIME type gets its template's; its own stays.
        assert_eq!(first.resources[1].mime_type.as_deref(), Some("text/plain"));
        assert_eq!(
            second.resources[0].mime_type.as_deref(),
            Some("text/markdown")
        );
        assert_eq!(second.resources[1].mime_type, None);

        // What is listed is read through the template.
        let read = soon("read", client.read_resource("books://emma"))
            .await
            .unwrap();
        let contents = serde_json::to_value(&read.contents[0]).unwrap();
        assert_eq!(contents["text"], "the text of emma");
        client.close().await;
    }

    // The listing is asked anew on each request.
    notes.lock().unwrap().push(5);
    let client = connect(&server, ConnectMode::Auto).await;
    let all = soon("all", client.list_all_resources()).await.unwrap();
    assert_eq!(all.len(), 6);
    assert_eq!(all[5].uri, "notes://5");
    // The templates list stays the templates.
    let templates = soon("templates", client.list_all_resource_templates())
        .await
        .unwrap();
    assert_eq!(templates.len(), 2);
    client.close().await;
}

#[tokio::test]
async fn a_failing_listing_fails_the_list_with_its_message() {
    let server = server(Arc::new(Mutex::new(vec![0])));
    for mode in [ConnectMode::Handshake, ConnectMode::Auto] {
        let client = connect(&server, mode).await;
        let error = soon("list", client.list_resources(None)).await.unwrap_err();
        let error = error.protocol_error().expect("a JSON-RPC error");
        assert_eq!(error.code, ErrorCode::INTERNAL_ERROR);
        assert!(
            error.message.contains("the notes are being rewritten"),
            "{}",
            error.message
        );
        // Reading still works: only the listing failed.
        let read = soon("read", client.read_resource("notes://9")).await;
        assert!(read.is_ok(), "{read:?}");
        client.close().await;
    }
}
