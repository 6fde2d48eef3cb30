//! Skills over MCP (SEP-2640, `io.modelcontextprotocol/skills`): the behaviours the
//! official suite's pending skills scenarios check (server: enumeration, directory,
//! negative cases; client: capabilities, no-prefetch, verification), each test naming
//! the scenario it mirrors. The manifest has no requirement IDs for the extension, so
//! these run outside the registry: each test runs once per cell of in-memory, stdio and
//! streamable HTTP in both eras (2025-11-25 with the handshake, 2026-07-28 without),
//! through the conformance crate's [`Connector`].

mod common;

use std::time::Duration;

use common::{cells, connect};
use modelctx::client::Client;
use modelctx::server::Server;
use modelctx::skills::{
    ClientSkillsExt, DIRECTORY_MIME_TYPE, EXTENSION_ID, ServerBuilderSkillsExt, Skill, SkillEntry,
    SkillResources, Skills, digest,
};
use modelctx::types::{CacheScope, TextOrBlobResourceContents};
use modelctx_conformance::{SpecVersion, within};
use modelctx_test::skills::{
    LISTED, RawDirectory, RawGet, RawList, SKILL_MD, SKILL_URI, SUPPORTING, SUPPORTING_URI,
    SkillsMock, TAMPERINGS, assert_get_refused, raw,
};
use serde_json::{Value, json};

const INVALID_PARAMS: i64 = -32602;
const METHOD_NOT_FOUND: i64 = -32601;

/// The text of the resource at `uri`, read over the wire.
async fn read_text(client: &Client, uri: &str) -> String {
    let read = within("resources/read", client.read_resource(uri))
        .await
        .unwrap();
    match &read.contents[0] {
        TextOrBlobResourceContents::Text(t) => t.text.clone(),
        TextOrBlobResourceContents::Blob(_) => panic!("{uri} is not text"),
    }
}

/// A client of [`skills_server`] (its skills configured by `skills`) over `connector`.
async fn skills_client(
    connector: &modelctx_conformance::Connector,
    skills: impl FnOnce(Skills) -> Skills,
) -> Client {
    connect(
        connector,
        &skills_server(skills),
        "skills-conformance",
        |b| b,
    )
    .await
}

/// A listed entry, checked by [`SkillEntry::from_value`], and its files (a server of
/// skills built in code lists them: never dynamic); `at` names the cell.
fn entry_and_files(value: &Value, at: &str) -> (SkillEntry, Vec<modelctx::skills::SkillFile>) {
    let entry = SkillEntry::from_value(value.clone()).unwrap_or_else(|e| panic!("{at}: {e}"));
    let SkillResources::Files(files) = &entry.resources else {
        panic!("{at}: dynamic");
    };
    let files = files.clone();
    (entry, files)
}

/// The raw `skills/get` answer for `uri`, which must succeed.
async fn skill_get(client: &Client, uri: &str) -> Value {
    raw::<RawGet>(client, json!({ "uri": uri })).await.unwrap()
}

fn skill_md(name: &str, description: &str) -> String {
    format!("---\nname: {name}\ndescription: {description}\n---\n\n# {name}\n\nInstructions.\n")
}

/// A server of skills built in code: a plain one, one under a prefix with a supporting
/// file, one with a nested skill and a subdirectory, and one left out of the listing.
fn skills_server(skills: impl FnOnce(Skills) -> Skills) -> Server {
    let skills = skills(Skills::new())
        .skill(
            Skill::new("git-workflow")
                .file("SKILL.md", skill_md("git-workflow", "Branch conventions")),
        )
        .unwrap()
        .skill(
            Skill::new("acme/billing/refunds")
                .file("SKILL.md", skill_md("refunds", "Refund requests"))
                .file("examples/email.md", "Dear customer,\n"),
        )
        .unwrap()
        .skill(
            Skill::new("pdf-processing")
                .file("SKILL.md", skill_md("pdf-processing", "PDF documents"))
                .file("templates/invoice.md", "# Invoice\n")
                .file("forms/SKILL.md", skill_md("forms", "Fill PDF forms")),
        )
        .unwrap()
        .skill(
            Skill::new("pdf-processing/forms")
                .file("SKILL.md", skill_md("forms", "Fill PDF forms")),
        )
        .unwrap()
        .skill(
            Skill::new("internal-notes")
                .file("SKILL.md", skill_md("internal-notes", "Reached by URI"))
                .unlisted(),
        )
        .unwrap();
    Server::builder("skills-server", "1.0.0")
        .skills(skills)
        .unwrap()
        .build()
}

/// Mirrors `sep-2640-skills-enumeration` (`server/enumeration.ts`): the capability an
/// inline object committing to the methods, `skills/list` paginated with atomic
/// entries (`ttlMs`/`cacheScope` in 2026-07-28 only), every entry well formed and
/// complete (a nested skill's files in the enclosing entry), digests and sizes that
/// match `resources/read`, `skills/get` for listed and unlisted skills with no cursor,
/// `-32602` for a URI that is no skill's `SKILL.md`.
#[tokio::test]
async fn sep_2640_skills_enumeration() {
    for connector in cells() {
        let at = connector.cell().to_string();
        let client = skills_client(&connector, |s| {
            s.page_size(3)
                .cache_hints(Duration::from_secs(30), CacheScope::Public)
        })
        .await;
        let declared = &client.server_capabilities().extensions.as_ref().unwrap()[EXTENSION_ID];
        assert_eq!(
            Value::Object(declared.clone()),
            json!({"directoryRead": true}),
            "{at}"
        );

        let mut cursor = None;
        let mut listed = Vec::new();
        loop {
            let params = cursor.map_or_else(|| json!({}), |c: String| json!({ "cursor": c }));
            let page = raw::<RawList>(&client, params).await.unwrap();
            if connector.version() == SpecVersion::V2026_07_28 {
                assert_eq!(page["ttlMs"], 30_000, "{at}");
                assert_eq!(page["cacheScope"], "public", "{at}");
            } else {
                assert!(page.get("ttlMs").is_none(), "{at}");
            }
            listed.extend(page["skills"].as_array().unwrap().iter().cloned());
            match page.get("nextCursor").and_then(Value::as_str) {
                Some(next) => cursor = Some(next.to_owned()),
                None => break,
            }
        }
        let uris: Vec<&str> = listed.iter().map(|e| e["uri"].as_str().unwrap()).collect();
        assert_eq!(uris, LISTED, "{at}: every listed skill once, in order");

        for value in &listed {
            let (entry, files) = entry_and_files(value, &at);
            for file in &files {
                let text = read_text(&client, &file.uri).await;
                assert_eq!(text.len() as u64, file.size, "{at}: {}", file.uri);
                assert_eq!(digest(text.as_bytes()), file.digest, "{at}: {}", file.uri);
            }
            let got = skill_get(&client, &entry.uri).await;
            assert_eq!(&got["skill"], value, "{at}");
            assert!(got.get("nextCursor").is_none(), "{at}");
        }
        let pdf = &listed[2]["resources"];
        assert!(
            pdf.as_array()
                .unwrap()
                .iter()
                .any(|r| r["uri"] == "skill://pdf-processing/forms/SKILL.md"),
            "{at}: the nested skill's files are the enclosing skill's too"
        );

        let unlisted = skill_get(&client, "skill://internal-notes/SKILL.md").await;
        assert_eq!(
            unlisted["skill"]["frontmatter"]["name"], "internal-notes",
            "{at}"
        );
        assert_get_refused(
            &client,
            &[
                "skill://no-such-skill/SKILL.md",
                "skill://git-workflow",
                "skill://acme/billing/refunds/examples/email.md",
            ],
            &at,
        )
        .await;
        assert_eq!(
            raw::<RawList>(&client, json!({"cursor": "not-a-cursor"})).await,
            Err(INVALID_PARAMS),
            "{at}"
        );
        client.close().await;
    }
}

/// Mirrors `sep-2640-skills-directory` (`server/directory.ts`): `directoryRead`
/// declared and the method registered; every directory (prefix, skill root,
/// subdirectory) lists its direct children, subdirectories as `inode/directory`; a file
/// or unknown URI is `-32602`; a page's cursor leads to the next.
#[tokio::test]
async fn sep_2640_skills_directory() {
    for connector in cells() {
        let at = connector.cell().to_string();
        let client = skills_client(&connector, |s| s.page_size(1)).await;
        let children = |result: &Value| -> Vec<(String, Option<String>)> {
            result["resources"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| {
                    (
                        r["uri"].as_str().unwrap().to_owned(),
                        r["mimeType"].as_str().map(str::to_owned),
                    )
                })
                .collect()
        };
        let mut seen = Vec::new();
        let mut params = json!({"uri": "skill://pdf-processing"});
        loop {
            let page = raw::<RawDirectory>(&client, params.clone()).await.unwrap();
            let got = children(&page);
            assert_eq!(got.len(), 1, "{at}: a page of one");
            seen.extend(got);
            match page.get("nextCursor").and_then(Value::as_str) {
                Some(next) => params["cursor"] = next.into(),
                None => break,
            }
        }
        let uris: Vec<&str> = seen.iter().map(|(u, _)| u.as_str()).collect();
        assert_eq!(
            uris,
            [
                "skill://pdf-processing/SKILL.md",
                "skill://pdf-processing/forms",
                "skill://pdf-processing/templates",
            ],
            "{at}"
        );
        assert_eq!(seen[1].1.as_deref(), Some(DIRECTORY_MIME_TYPE), "{at}");
        assert_eq!(seen[0].1.as_deref(), Some("text/markdown"), "{at}");
        let prefix = raw::<RawDirectory>(&client, json!({"uri": "skill://acme"}))
            .await
            .unwrap();
        assert_eq!(
            children(&prefix),
            [(
                "skill://acme/billing".to_owned(),
                Some(DIRECTORY_MIME_TYPE.to_owned())
            )],
            "{at}"
        );
        for bad in [
            "skill://pdf-processing/SKILL.md",
            "skill://nowhere",
            "skill://pdf-processing/%2e%2e",
        ] {
            assert_eq!(
                raw::<RawDirectory>(&client, json!({ "uri": bad })).await,
                Err(INVALID_PARAMS),
                "{at}: {bad}"
            );
        }
        client.close().await;
    }
}

/// Mirrors the server-side negative cases (`server/negative.test.ts`): the declaration
/// is the settings object itself (inline, never an envelope), `{}` when directory reads
/// are off (and the method is then not served); a server with no skills declares
/// nothing and answers none of the extension's methods.
#[tokio::test]
async fn sep_2640_server_negative_cases() {
    for connector in cells() {
        let at = connector.cell().to_string();
        let client = skills_client(&connector, |s| s.directory_read(false)).await;
        let declared = &client.server_capabilities().extensions.as_ref().unwrap()[EXTENSION_ID];
        assert_eq!(Value::Object(declared.clone()), json!({}), "{at}");
        assert_eq!(
            raw::<RawDirectory>(&client, json!({"uri": "skill://pdf-processing"})).await,
            Err(METHOD_NOT_FOUND),
            "{at}"
        );
        client.close().await;

        let plain = Server::builder("plain", "1.0.0")
            .skills(Skills::new())
            .unwrap()
            .build();
        let client = connect(&connector, &plain, "skills-conformance", |b| b).await;
        assert!(
            client
                .server_capabilities()
                .extensions
                .as_ref()
                .is_none_or(|e| !e.contains_key(EXTENSION_ID)),
            "{at}"
        );
        for method in [
            raw::<RawList>(&client, json!({})).await,
            raw::<RawGet>(&client, json!({"uri": "skill://a/SKILL.md"})).await,
        ] {
            assert_eq!(method, Err(METHOD_NOT_FOUND), "{at}");
        }
        client.close().await;
    }
}

/// Mirrors `capabilities.test.ts` (client): a server serving skills advertises the
/// extension and `resources` on both lifecycles (`initialize`, `server/discover`); the
/// client gates on the declaration and sends nothing to a server without it.
#[tokio::test]
async fn sep_2640_client_capabilities() {
    for connector in cells() {
        let at = connector.cell().to_string();
        let client = skills_client(&connector, |s| s).await;
        let caps = client.server_capabilities();
        assert!(
            caps.extensions.as_ref().unwrap().contains_key(EXTENSION_ID),
            "{at}"
        );
        assert!(caps.resources.is_some(), "{at}");
        assert!(client.skills("s").is_offered(), "{at}");
        client.close().await;

        let mock = SkillsMock::honest();
        let client = connect(&connector, &mock.server(false), "skills-conformance", |b| b).await;
        mock.assert_refused_as_not_offered(&client.skills("undeclared"), &at)
            .await;
        client.close().await;
    }
}

/// Mirrors `sep-2640-client-no-prefetch` (`client/no-prefetch.ts`): listing and
/// getting read no file; loading reads the `SKILL.md` alone; a supporting file is read
/// when asked for, once (then from the cache).
#[tokio::test]
async fn sep_2640_client_no_prefetch() {
    for connector in cells() {
        let at = connector.cell().to_string();
        let mock = SkillsMock::honest();
        let client = connect(&connector, &mock.server(true), "skills-conformance", |b| b).await;
        let skills = client.skills("mock");
        let listing = skills.list().await.unwrap();
        let entry = skills.get(SKILL_URI).await.unwrap();
        assert_eq!(entry, listing.skills[0], "{at}");
        assert!(mock.reads().is_empty(), "{at}: read on listing");
        let loaded = skills.load(&entry).await.unwrap();
        assert_eq!(loaded.skill_md, SKILL_MD, "{at}");
        assert_eq!(mock.reads(), [SKILL_URI], "{at}");
        let bytes = skills.read_file(&entry, SUPPORTING_URI).await.unwrap();
        assert_eq!(&*bytes, SUPPORTING.as_bytes(), "{at}");
        skills.read_file(&entry, SUPPORTING_URI).await.unwrap();
        skills.load(&entry).await.unwrap();
        assert_eq!(mock.reads(), [SKILL_URI, SUPPORTING_URI], "{at}: cached");
        client.close().await;
    }
}

/// Mirrors `sep-2640-client-verify-{digest,size,frontmatter,unlisted}`
/// (`client/verification.ts`): a `SKILL.md` whose bytes differ from the entry (same
/// length), that is longer than the entry says, or whose frontmatter disagrees with
/// the entry (digest and size honest) is refused with a verification error naming it,
/// nothing is cached and the supporting file is never read; a file the entry does not
/// list is refused without a request.
#[tokio::test]
async fn sep_2640_client_verification() {
    for connector in cells() {
        for (tamper, needle) in TAMPERINGS {
            let at = format!("{} {tamper}", connector.cell());
            let mock = SkillsMock::tampered(tamper);
            let client = connect(&connector, &mock.server(true), "skills-conformance", |b| b).await;
            mock.assert_tampering_caught(&client.skills("mock"), needle, &at)
                .await;
            client.close().await;
        }

        let at = format!("{} unlisted", connector.cell());
        let mock = SkillsMock::honest();
        let client = connect(&connector, &mock.server(true), "skills-conformance", |b| b).await;
        mock.assert_unlisted_refused(&client.skills("mock"), &at)
            .await;
        client.close().await;
    }
}
