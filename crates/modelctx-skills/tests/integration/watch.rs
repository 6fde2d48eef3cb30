//! A watched skills directory, through the public API, over in-memory and streamable
//! HTTP transports in both eras: a skill added, changed or removed on disk is served
//! as it now is, and clients hear of it as a resources list change. Each step waits
//! on the announcement (bounded), never on a sleep.

use crate::support;

use std::time::Duration;

use modelctx_client::{Client, ConnectMode, ListKind};
use modelctx_server::Server;
use modelctx_skills::{ServerBuilderSkillsExt, SkillEntry, SkillResources, Skills, SkillsWatch};
use modelctx_test::skills::{RawGet, RawList, raw};
use modelctx_types::TextOrBlobResourceContents;
use serde_json::{Value, json};
use support::{Scratch, Via, WAIT, client, connect_with, matrix, skill_md};
use tokio::sync::mpsc;

const INVALID_PARAMS: i64 = -32602;

/// Every listed entry, by URI.
async fn entries(client: &Client) -> Vec<SkillEntry> {
    let page = raw::<RawList>(client, json!({})).await.unwrap();
    page["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| SkillEntry::from_value(v.clone()).unwrap())
        .collect()
}

/// The entry of the skill at `uri`, as `skills/get` answers it (raw, to compare).
async fn entry(client: &Client, uri: &str) -> Result<Value, i64> {
    raw::<RawGet>(client, json!({ "uri": uri }))
        .await
        .map(|v| v["skill"].clone())
}

/// The text of the resource at `uri`.
async fn text(client: &Client, uri: &str) -> String {
    let read = tokio::time::timeout(WAIT, client.read_resource(uri))
        .await
        .unwrap()
        .unwrap();
    match &read.contents[0] {
        TextOrBlobResourceContents::Text(t) => t.text.clone(),
        TextOrBlobResourceContents::Blob(_) => panic!("{uri} is not text"),
    }
}

/// A server of the skills in `dir` that announces list changes after 5 ms, and the
/// watch that keeps it in step with the disk (polling every 10 ms).
fn watched(dir: &Scratch) -> (Server, SkillsWatch) {
    let skills = Skills::new().dir(dir.path()).unwrap();
    let watcher = skills.watcher();
    let server = Server::builder("watched", "1.0.0")
        .list_changed_debounce(Duration::from_millis(5))
        .skills(skills)
        .unwrap()
        .build();
    let watch = watcher.watch(&server, Duration::from_millis(10)).unwrap();
    (server, watch)
}

/// A client of `server` over `via` in `mode`, and the list changes it hears of.
async fn hearing_changes(
    server: Server,
    via: Via,
    mode: ConnectMode,
) -> (Client, mpsc::UnboundedReceiver<ListKind>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let builder = client(mode).on_list_changed(ListKind::Resources, move |kind| {
        let _ = tx.send(kind);
    });
    (connect_with(server, via, builder).await, rx)
}

/// Waits for announcements until `check` holds (each wait bounded).
async fn until<F, Fut>(what: &str, rx: &mut mpsc::UnboundedReceiver<ListKind>, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    loop {
        let kind = tokio::time::timeout(WAIT, rx.recv())
            .await
            .unwrap_or_else(|_| panic!("no announcement in time: {what}"));
        assert_eq!(kind, Some(ListKind::Resources), "{what}");
        if check().await {
            return;
        }
    }
}

/// A new skill directory appears whole: built hidden, then renamed into place.
fn add_skill(dir: &Scratch, name: &str, files: &[(&str, &str)]) {
    let staging = dir.path().join(format!(".incoming-{name}"));
    for (path, text) in files {
        let path = staging.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    std::fs::rename(staging, dir.path().join(name)).unwrap();
}

#[tokio::test]
async fn a_watched_directory_is_served_as_it_changes_over_every_transport_and_era() {
    for (via, mode, version) in matrix() {
        let at = format!("{via:?} {version}");
        let dir = Scratch::new("watch");
        dir.write("alpha/SKILL.md", skill_md("alpha", "First"));
        dir.write("alpha/notes.md", "one\n");
        dir.write("beta/SKILL.md", skill_md("beta", "Second"));

        let (server, _watch) = watched(&dir);
        let (client, mut rx) = hearing_changes(server, via, mode).await;
        assert_eq!(client.protocol_version().as_str(), version, "{at}");
        let beta_before = entry(&client, "skill://beta/SKILL.md").await.unwrap();

        // A file of one skill changes: its digest and size follow; the other skill's
        // entry is the same.
        dir.replace("alpha/notes.md", "one, and two\n");
        until("a changed file", &mut rx, || async {
            let listed = entries(&client).await;
            let alpha = listed.iter().find(|e| e.uri == "skill://alpha/SKILL.md");
            let SkillResources::Files(files) = &alpha.unwrap().resources else {
                panic!("dynamic");
            };
            files.iter().any(|f| {
                f.uri == "skill://alpha/notes.md"
                    && f.size == 13
                    && f.digest == modelctx_skills::digest(b"one, and two\n")
            })
        })
        .await;
        assert_eq!(
            text(&client, "skill://alpha/notes.md").await,
            "one, and two\n",
            "{at}"
        );
        assert_eq!(
            entry(&client, "skill://beta/SKILL.md").await.unwrap(),
            beta_before,
            "{at}"
        );

        // A skill is added: listed, readable, and in resources/list.
        add_skill(
            &dir,
            "gamma",
            &[
                ("SKILL.md", &skill_md("gamma", "Third")),
                ("scripts/run.sh", "echo gamma\n"),
            ],
        );
        until("an added skill", &mut rx, || async {
            entries(&client)
                .await
                .iter()
                .any(|e| e.uri == "skill://gamma/SKILL.md")
        })
        .await;
        let resources = client.list_all_resources().await.unwrap();
        assert!(
            resources
                .iter()
                .any(|r| r.uri == "skill://gamma/scripts/run.sh"),
            "{at}"
        );
        assert_eq!(
            text(&client, "skill://gamma/scripts/run.sh").await,
            "echo gamma\n",
            "{at}"
        );

        // A skill is removed: gone from the listing, skills/get and the resources.
        std::fs::rename(dir.path().join("beta"), dir.path().join(".removed-beta")).unwrap();
        until("a removed skill", &mut rx, || async {
            entry(&client, "skill://beta/SKILL.md").await == Err(INVALID_PARAMS)
        })
        .await;
        let resources = client.list_all_resources().await.unwrap();
        assert!(
            !resources.iter().any(|r| r.uri.starts_with("skill://beta/")),
            "{at}"
        );
        assert!(
            client.read_resource("skill://beta/SKILL.md").await.is_err(),
            "{at}"
        );
        let names: Vec<String> = entries(&client).await.into_iter().map(|e| e.uri).collect();
        assert_eq!(
            names,
            ["skill://alpha/SKILL.md", "skill://gamma/SKILL.md"],
            "{at}"
        );
        client.close().await;
    }
}

/// A `SKILL.md` that breaks the rules after a change is not served: the skill stays as
/// it was until it is whole again.
#[tokio::test]
async fn a_skill_broken_on_disk_keeps_its_last_good_version() {
    let dir = Scratch::new("watch-broken");
    dir.write("alpha/SKILL.md", skill_md("alpha", "First"));
    let (server, _watch) = watched(&dir);
    let (client, mut rx) = hearing_changes(server, Via::Memory, ConnectMode::Handshake).await;

    // Broken (a name that does not match its directory), then fixed with a new
    // description: the only announcement is the fix's, and the broken version was
    // never served.
    dir.replace("alpha/SKILL.md", skill_md("other", "Broken"));
    dir.replace("alpha/SKILL.md", skill_md("alpha", "Fixed"));
    until("the fixed skill", &mut rx, || async {
        let got = entry(&client, "skill://alpha/SKILL.md").await.unwrap();
        assert_ne!(got["frontmatter"]["name"], "other");
        got["frontmatter"]["description"] == "Fixed"
    })
    .await;
    client.close().await;
}

/// Watching needs the skills installed first; without a watcher nothing polls, and an
/// empty watched directory still declares the extension (it may gain skills).
#[tokio::test]
async fn a_watch_starts_only_when_asked() {
    let dir = Scratch::new("watch-empty");
    let skills = Skills::new().dir(dir.path()).unwrap();
    let watcher = skills.watcher();
    assert!(
        watcher
            .watch(
                &Server::builder("x", "1").build(),
                Duration::from_millis(10)
            )
            .is_err()
    );
    let server = Server::builder("watched", "1.0.0")
        .skills(skills)
        .unwrap()
        .build();
    assert!(
        server
            .capabilities()
            .extensions
            .as_ref()
            .is_some_and(|e| e.contains_key(modelctx_skills::EXTENSION_ID))
    );
    let unwatched = Server::builder("plain", "1.0.0")
        .skills(Skills::new().dir(dir.path()).unwrap())
        .unwrap()
        .build();
    assert!(unwatched.capabilities().extensions.is_none());
}

/// The watch holds the server weakly: it keeps polling while a session the server
/// serves is running (after the application dropped its own handle), and ends on its
/// own once that session has ended too.
#[tokio::test]
async fn a_watch_ends_when_the_server_is_gone() {
    let dir = Scratch::new("watch-ends");
    dir.write("alpha/SKILL.md", skill_md("alpha", "First"));
    let (server, watch) = watched(&dir);
    let (client, mut rx) =
        hearing_changes(server.clone(), Via::Memory, ConnectMode::Handshake).await;
    let weak = server.downgrade();
    drop(server);

    // The session keeps the server in use, and the watch keeps it in step.
    dir.write(
        "alpha/notes.md",
        "added while only the session holds the server\n",
    );
    until(
        "a file added after the handle was dropped",
        &mut rx,
        || async {
            entry(&client, "skill://alpha/SKILL.md").await.unwrap()["resources"]
                .as_array()
                .is_some_and(|files| files.len() == 2)
        },
    )
    .await;
    assert!(!watch.is_finished());

    client.close().await;
    modelctx_test::within(WAIT, "the watch to end with the server", watch.stopped()).await;
    assert!(weak.upgrade().is_none(), "nothing else holds the server");
}
