//! A skills server through the public API, over in-memory and streamable HTTP
//! transports, in both eras (2025-11-25 with the handshake, 2026-07-28 without). Each
//! test names the scenario of the official suite's pending SEP-2640 set it mirrors
//! (`src/scenarios/server/skills/`).

use crate::support;

use std::collections::BTreeSet;
use std::time::Duration;

use modelctx_client::{Client, ConnectMode};
use modelctx_server::{Context, NoArgs, ResourceDef, Server, ToolDef};
use modelctx_skills::{
    ClientSkillsExt, DIRECTORY_MIME_TYPE, EXTENSION_ID, ServerBuilderSkillsExt, Skill, SkillEntry,
    SkillResources, Skills,
};
use modelctx_test::skills::{LISTED, RawDirectory, RawGet, RawList, assert_get_refused, raw};
use modelctx_types::{CacheScope, TextOrBlobResourceContents};
use serde_json::{Value, json};
use support::{Scratch, Via, WAIT, connect, matrix, skill_md};

const INVALID_PARAMS: i64 = -32602;
const METHOD_NOT_FOUND: i64 = -32601;

/// A tree of skills on disk: a plain one, one under an organisational prefix, one with
/// scripts, templates, a binary asset, a hidden file and a skill nested in it.
fn fixture() -> Scratch {
    let dir = Scratch::new("fixture");
    dir.write(
        "git-workflow/SKILL.md",
        skill_md("git-workflow", "Branch and commit conventions"),
    );
    dir.write(
        "acme/billing/refunds/SKILL.md",
        "---\nname: refunds\ndescription: Process refund requests per policy\nlicense: Apache-2.0\n\
         metadata:\n  zeta: \"1\"\n  alpha: two\n---\nSee examples/email.md.\n",
    );
    dir.write("acme/billing/refunds/examples/email.md", "Dear customer,\n");
    dir.write(
        "pdf-processing/SKILL.md",
        "---\nname: pdf-processing\ndescription: >-\n  Extract, fill, and\n  assemble PDF documents\n\
         metadata:\n  version: \"2.1.0\"\n---\nPick a template from templates/.\n",
    );
    dir.write("pdf-processing/scripts/extract.py", "print('extract')\n");
    dir.write("pdf-processing/templates/invoice.md", "# Invoice\n");
    dir.write(
        "pdf-processing/templates/regional/eu-invoice.md",
        "# EU invoice\n",
    );
    dir.write(
        "pdf-processing/assets/logo.png",
        [0x89, b'P', b'N', b'G', 0xff, 0x00, 0xfe],
    );
    dir.write("pdf-processing/.hidden", "not served");
    dir.write(
        "pdf-processing/forms/SKILL.md",
        skill_md("forms", "Fill PDF forms"),
    );
    dir.write(".git/config", "not searched");
    dir
}

fn unlisted() -> Skill {
    Skill::new("internal-notes")
        .file(
            "SKILL.md",
            skill_md("internal-notes", "Reached only by URI"),
        )
        .unlisted()
}

fn server(dir: &Scratch, skills: impl FnOnce(Skills) -> Skills) -> Server {
    let hello = ToolDef::new("hello", |_: NoArgs, _cx: Context| async {
        Ok::<_, String>("hi")
    });
    let skills = skills(
        Skills::new()
            .dir(dir.path())
            .unwrap()
            .skill(unlisted())
            .unwrap(),
    );
    Server::builder("skills-server", "1.0.0")
        .tool(hello)
        .unwrap()
        .skills(skills)
        .unwrap()
        .build()
}

/// The bytes of a resource as read over the wire.
async fn read_bytes(client: &Client, uri: &str) -> (Vec<u8>, String) {
    let result = tokio::time::timeout(WAIT, client.read_resource(uri))
        .await
        .unwrap()
        .unwrap();
    match &result.contents[0] {
        TextOrBlobResourceContents::Text(t) => (
            t.text.clone().into_bytes(),
            t.mime_type.clone().unwrap_or_default(),
        ),
        TextOrBlobResourceContents::Blob(b) => {
            // The server's own base64, decoded by a second route: through the client.
            let bytes = decode_base64(&b.blob);
            (bytes, b.mime_type.clone().unwrap_or_default())
        }
    }
}

/// The caching attributes of a `skills/list` or `skills/get` answer: sent in
/// 2026-07-28 (one minute, public), absent before.
#[track_caller]
fn assert_cache_hints(answer: &Value, version: &str, at: &str) {
    if version == "2026-07-28" {
        assert_eq!(answer["ttlMs"], 60_000, "{at}");
        assert_eq!(answer["cacheScope"], "public", "{at}");
    } else {
        assert!(
            answer.get("ttlMs").is_none() && answer.get("cacheScope").is_none(),
            "{at}"
        );
    }
}

fn decode_base64(text: &str) -> Vec<u8> {
    let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut bits = 0u32;
    let mut count = 0;
    let mut out = Vec::new();
    for c in text.bytes().filter(|&c| c != b'=') {
        let v = alphabet.iter().position(|&a| a == c).unwrap() as u32;
        bits = (bits << 6) | v;
        count += 6;
        if count >= 8 {
            count -= 8;
            out.push((bits >> count) as u8);
        }
    }
    out
}

/// Mirrors `sep-2640-skills-enumeration`: capability inline and an object,
/// `skills/list` paginated with atomic entries (cache attributes from 2026-07-28 on),
/// every entry well formed and complete (nested skills' files included, hidden files
/// not), digests and sizes that match what `resources/read` returns, frontmatter
/// identical to the file's, `skills/get` answering listed and unlisted skills alike
/// with no cursor, and `-32602` for a URI that is no skill's `SKILL.md`.
#[tokio::test]
async fn skills_are_enumerated_and_retrieved_over_every_transport_and_era() {
    let dir = fixture();
    for (via, mode, version) in matrix() {
        let server = server(&dir, |s| {
            s.page_size(2)
                .cache_hints(Duration::from_secs(60), CacheScope::Public)
        });
        let client = connect(server, via, mode).await;
        let at = format!("{via:?} {version}");
        assert_eq!(client.protocol_version().as_str(), version, "{at}");

        // sep-2640-capability-empty-object / -declaration-inline
        let declared = &client.server_capabilities().extensions.as_ref().unwrap()[EXTENSION_ID];
        assert_eq!(
            Value::Object(declared.clone()),
            json!({"directoryRead": true}),
            "{at}"
        );

        // sep-2640-skills-list-pagination / -entry-atomic / -cache-attributes
        let first = raw::<RawList>(&client, json!({})).await.unwrap();
        let cursor = first["nextCursor"]
            .as_str()
            .expect("a second page")
            .to_owned();
        let second = raw::<RawList>(&client, json!({"cursor": cursor}))
            .await
            .unwrap();
        assert!(second.get("nextCursor").is_none(), "{at}");
        let mut seen = BTreeSet::new();
        let mut entries = Vec::new();
        for page in [&first, &second] {
            for entry in page["skills"].as_array().unwrap() {
                assert!(
                    seen.insert(entry["uri"].as_str().unwrap().to_owned()),
                    "{at}: split"
                );
                entries.push(entry.clone());
            }
            assert_cache_hints(page, version, &at);
        }
        assert_eq!(seen, LISTED.iter().map(|s| s.to_string()).collect(), "{at}");
        assert_eq!(
            raw::<RawList>(&client, json!({"cursor": "garbage"})).await,
            Err(INVALID_PARAMS),
            "{at}"
        );

        for value in &entries {
            // sep-2640-entry-*, -resources-* (SkillEntry::from_value checks each rule)
            let entry =
                SkillEntry::from_value(value.clone()).unwrap_or_else(|e| panic!("{at}: {e}"));
            let SkillResources::Files(files) = &entry.resources else {
                panic!("{at}: dynamic");
            };
            for file in files {
                let (bytes, _) = read_bytes(&client, &file.uri).await;
                assert_eq!(bytes.len() as u64, file.size, "{at}: {}", file.uri);
                assert_eq!(
                    modelctx_skills::digest(&bytes),
                    file.digest,
                    "{at}: {}",
                    file.uri
                );
            }
            // sep-2640-skills-get-entry-shape / -no-cursor
            let got = raw::<RawGet>(&client, json!({"uri": entry.uri}))
                .await
                .unwrap();
            assert_eq!(&got["skill"], value, "{at}");
            assert!(got.get("nextCursor").is_none(), "{at}");
            // The caching attributes the SEP leaves open on skills/get: sent in
            // 2026-07-28, as on skills/list.
            assert_cache_hints(&got, version, &at);
        }

        let pdf = entries
            .iter()
            .find(|e| e["uri"] == "skill://pdf-processing/SKILL.md")
            .unwrap();
        let pdf_files: BTreeSet<&str> = pdf["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["uri"].as_str().unwrap())
            .collect();
        assert_eq!(
            pdf_files,
            BTreeSet::from([
                "skill://pdf-processing/SKILL.md",
                "skill://pdf-processing/assets/logo.png",
                "skill://pdf-processing/forms/SKILL.md",
                "skill://pdf-processing/scripts/extract.py",
                "skill://pdf-processing/templates/invoice.md",
                "skill://pdf-processing/templates/regional/eu-invoice.md",
            ]),
            "{at}: complete, nested skill included, hidden file left out"
        );
        // Frontmatter verbatim, block scalar folded as YAML folds it.
        assert_eq!(
            pdf["frontmatter"],
            json!({"name": "pdf-processing",
                   "description": "Extract, fill, and assemble PDF documents",
                   "metadata": {"version": "2.1.0"}}),
            "{at}"
        );

        // MIME types by file; a binary file is a blob.
        let (_, mime) = read_bytes(&client, "skill://pdf-processing/SKILL.md").await;
        assert_eq!(mime, "text/markdown", "{at}");
        let (_, mime) = read_bytes(&client, "skill://pdf-processing/scripts/extract.py").await;
        assert_eq!(mime, "text/x-python", "{at}");
        let (bytes, mime) = read_bytes(&client, "skill://pdf-processing/assets/logo.png").await;
        assert_eq!(
            (bytes.as_slice(), mime.as_str()),
            (&[0x89, b'P', b'N', b'G', 0xff, 0x00, 0xfe][..], "image/png"),
            "{at}"
        );

        // The SKILL.md resource carries the skill's name and description.
        let resources = client.list_all_resources().await.unwrap();
        let md = resources
            .iter()
            .find(|r| r.uri == "skill://acme/billing/refunds/SKILL.md")
            .unwrap();
        assert_eq!(md.name, "refunds", "{at}");
        assert_eq!(
            md.description.as_deref(),
            Some("Process refund requests per policy")
        );

        // sep-2640-skills-get: an unlisted skill answers; no skill is -32602.
        let got = raw::<RawGet>(&client, json!({"uri": "skill://internal-notes/SKILL.md"}))
            .await
            .unwrap();
        assert_eq!(
            got["skill"]["frontmatter"]["name"], "internal-notes",
            "{at}"
        );
        assert_get_refused(
            &client,
            &[
                "skill://mcp-conformance-nonexistent-skill-9f3a2b/SKILL.md",
                "skill://git-workflow",
                "skill://pdf-processing/templates/invoice.md",
            ],
            &at,
        )
        .await;

        // sep-2640-entry-frontmatter-identical, from the consuming side: every listed
        // skill loads (its SKILL.md verified by size, digest and frontmatter).
        let skills = client.skills("fixture");
        let listing = skills.list().await.unwrap();
        assert!(listing.invalid.is_empty(), "{at}: {:?}", listing.invalid);
        assert_eq!(listing.skills.len(), LISTED.len(), "{at}");
        for entry in &listing.skills {
            skills
                .load(entry)
                .await
                .unwrap_or_else(|e| panic!("{at}: {e}"));
        }
        let notes = skills.get("skill://internal-notes/SKILL.md").await.unwrap();
        assert!(
            skills
                .load(&notes)
                .await
                .unwrap()
                .skill_md
                .contains("Instructions.")
        );
        client.close().await;
    }
}

/// Mirrors `sep-2640-skills-directory`: every directory of the namespace (skill roots,
/// their subdirectories, the prefixes above them) lists its direct children,
/// subdirectories as `inode/directory`; a file or unknown URI is `-32602`; pages
/// round-trip their cursor.
#[tokio::test]
async fn directories_are_read_over_every_transport_and_era() {
    let dir = fixture();
    for (via, mode, version) in matrix() {
        let client = connect(server(&dir, |s| s.page_size(2)), via, mode).await;
        let at = format!("{via:?} {version}");
        let skills = client.skills("fixture");
        assert!(skills.directory_read_offered(), "{at}");

        let children = skills
            .read_directory("skill://pdf-processing")
            .await
            .unwrap();
        let listed: Vec<(&str, &str)> = children
            .iter()
            .map(|r| (r.name.as_str(), r.mime_type.as_deref().unwrap_or_default()))
            .collect();
        assert_eq!(
            listed,
            [
                ("SKILL.md", "text/markdown"),
                ("assets", DIRECTORY_MIME_TYPE),
                ("forms", DIRECTORY_MIME_TYPE),
                ("scripts", DIRECTORY_MIME_TYPE),
                ("templates", DIRECTORY_MIME_TYPE),
            ],
            "{at}"
        );
        let templates = skills
            .read_directory("skill://pdf-processing/templates")
            .await
            .unwrap();
        let uris: Vec<&str> = templates.iter().map(|r| r.uri.as_str()).collect();
        assert_eq!(
            uris,
            [
                "skill://pdf-processing/templates/invoice.md",
                "skill://pdf-processing/templates/regional"
            ],
            "{at}"
        );
        let prefix = skills.read_directory("skill://acme").await.unwrap();
        assert_eq!(prefix[0].uri, "skill://acme/billing", "{at}");
        assert_eq!(prefix[0].mime_type.as_deref(), Some(DIRECTORY_MIME_TYPE));

        // One page at a time: the first has a cursor, which the second takes.
        let first = raw::<RawDirectory>(&client, json!({"uri": "skill://pdf-processing"}))
            .await
            .unwrap();
        assert_eq!(first["resources"].as_array().unwrap().len(), 2, "{at}");
        // The caching attributes, as on resources/list: in 2026-07-28 only (the
        // defaults: no time to live, private).
        if version == "2026-07-28" {
            assert_eq!(
                (&first["ttlMs"], &first["cacheScope"]),
                (&json!(0), &json!("private")),
                "{at}"
            );
        } else {
            assert!(first.get("ttlMs").is_none(), "{at}");
        }
        let cursor = first["nextCursor"].clone();
        let second = raw::<RawDirectory>(
            &client,
            json!({"uri": "skill://pdf-processing", "cursor": cursor}),
        )
        .await
        .unwrap();
        assert_eq!(second["resources"][0]["name"], "forms", "{at}");

        for bad in [
            json!({"uri": "skill://pdf-processing/SKILL.md"}),
            json!({"uri": "skill://no-such-skill"}),
            json!({"uri": "skill://pdf-processing/"}),
            json!({"uri": "skill://pdf-processing", "cursor": "dir:1:0"}),
        ] {
            assert_eq!(
                raw::<RawDirectory>(&client, bad.clone()).await,
                Err(INVALID_PARAMS),
                "{at}: {bad}"
            );
        }
        client.close().await;
    }
}

/// Mirrors the negative controls of `sep-2640-capability-*` (`negative.test.ts`): the
/// extension is declared only when skills are configured, always as a settings object
/// (`{}` with no optional feature, never an envelope), and a server without it does
/// not answer its methods.
#[tokio::test]
async fn the_capability_is_declared_only_when_skills_are_served() {
    let tool = || {
        ToolDef::new("hello", |_: NoArgs, _cx: Context| async {
            Ok::<_, String>("hi")
        })
    };
    let plain = Server::builder("plain", "1.0.0")
        .tool(tool())
        .unwrap()
        .build();
    assert!(plain.capabilities().extensions.is_none());
    let empty = Server::builder("empty", "1.0.0")
        .tool(tool())
        .unwrap()
        .skills(Skills::new())
        .unwrap()
        .build();
    assert!(empty.capabilities().extensions.is_none());

    let one = || {
        Skills::new()
            .skill(Skill::new("solo").file("SKILL.md", skill_md("solo", "One skill")))
            .unwrap()
    };
    for (via, mode, version) in matrix() {
        let at = format!("{via:?} {version}");
        let plain = Server::builder("plain", "1.0.0")
            .tool(tool())
            .unwrap()
            .build();
        let client = connect(plain, via, mode.clone()).await;
        assert!(client.server_capabilities().extensions.is_none(), "{at}");
        assert_eq!(
            raw::<RawList>(&client, json!({})).await,
            Err(METHOD_NOT_FOUND),
            "{at}"
        );
        client.close().await;

        let no_directory = Server::builder("no-dir", "1.0.0")
            .skills(one().directory_read(false))
            .unwrap()
            .build();
        let client = connect(no_directory, via, mode).await;
        let declared =
            client.server_capabilities().extensions.as_ref().unwrap()[EXTENSION_ID].clone();
        assert!(
            declared.is_empty(),
            "{at}: an empty settings object, got {declared:?}"
        );
        let skills = client.skills("no-dir");
        assert!(
            skills.is_offered() && !skills.directory_read_offered(),
            "{at}"
        );
        assert_eq!(
            raw::<RawDirectory>(&client, json!({"uri": "skill://solo"})).await,
            Err(METHOD_NOT_FOUND),
            "{at}"
        );
        // A resources capability is there for the files (resources/read).
        assert!(client.server_capabilities().resources.is_some(), "{at}");
        client.close().await;
    }
}

/// Skills from disk are refused at registration with an error naming the file and the
/// rule: a name that does not match its directory, a missing description, a symbolic
/// link (never followed), a `SKILL.md` at the root of the skills directory.
#[test]
fn skills_on_disk_are_checked_when_registered() {
    let dir = Scratch::new("mismatch");
    dir.write(
        "refunds/SKILL.md",
        skill_md("billing", "Named after another directory"),
    );
    let err = Skills::new().dir(dir.path()).unwrap_err();
    assert_eq!(
        err.file(),
        dir.path().join("refunds/SKILL.md").display().to_string()
    );
    assert!(
        err.message()
            .contains("does not match the skill's directory"),
        "{err}"
    );

    let dir = Scratch::new("no-description");
    dir.write("refunds/SKILL.md", "---\nname: refunds\n---\n");
    let err = Skills::new().dir(dir.path()).unwrap_err();
    assert!(
        err.to_string().contains("refunds/SKILL.md") && err.message().contains("description"),
        "{err}"
    );

    let dir = Scratch::new("root");
    dir.write("SKILL.md", skill_md("root", "At the root"));
    assert!(
        Skills::new()
            .dir(dir.path())
            .unwrap_err()
            .message()
            .contains("directory of its own")
    );

    #[cfg(unix)]
    {
        let outside = Scratch::new("outside");
        outside.write("secret.txt", "not to be served");
        let dir = Scratch::new("link");
        dir.write("refunds/SKILL.md", skill_md("refunds", "Refunds"));
        std::os::unix::fs::symlink(
            outside.path().join("secret.txt"),
            dir.path().join("refunds/leak.txt"),
        )
        .unwrap();
        let err = Skills::new().dir(dir.path()).unwrap_err();
        assert_eq!(
            err.file(),
            dir.path().join("refunds/leak.txt").display().to_string()
        );
        assert!(err.message().contains("symbolic link"), "{err}");
        // A linked skill directory is refused the same way.
        let dir = Scratch::new("dirlink");
        std::os::unix::fs::symlink(outside.path(), dir.path().join("refunds")).unwrap();
        assert!(
            Skills::new()
                .dir(dir.path())
                .unwrap_err()
                .message()
                .contains("symbolic link")
        );
    }
}

/// The same `Skill` from code (or bytes embedded with `include_bytes!`) and from disk
/// serve identically; a skill's files must agree with a nested skill's, and a file
/// whose URI a resource of the server already has is refused.
#[tokio::test]
async fn skills_from_code_and_from_disk_serve_the_same() {
    let dir = Scratch::new("same");
    let md = skill_md("refunds", "Refunds");
    dir.write("refunds/SKILL.md", &md);
    dir.write("refunds/examples/email.md", "Dear customer,\n");
    let from_disk = Skills::new().dir(dir.path()).unwrap();
    let from_code = Skills::new()
        .skill(
            Skill::new("refunds")
                .file("SKILL.md", md.as_bytes())
                .file("examples/email.md", &b"Dear customer,\n"[..]),
        )
        .unwrap();
    let mut answers = Vec::new();
    for skills in [from_disk, from_code] {
        let server = Server::builder("s", "1.0.0")
            .skills(skills)
            .unwrap()
            .build();
        let client = connect(server, Via::Memory, ConnectMode::Handshake).await;
        answers.push(
            raw::<RawGet>(&client, json!({"uri": "skill://refunds/SKILL.md"}))
                .await
                .unwrap(),
        );
        client.close().await;
    }
    assert_eq!(answers[0], answers[1]);

    let conflicting = Skills::new()
        .skill(
            Skill::new("outer")
                .file("SKILL.md", skill_md("outer", "Outer"))
                .file("inner/SKILL.md", skill_md("inner", "One version")),
        )
        .unwrap()
        .skill(Skill::new("outer/inner").file("SKILL.md", skill_md("inner", "Another version")))
        .unwrap();
    let err = Server::builder("s", "1.0.0")
        .skills(conflicting)
        .unwrap_err();
    assert!(
        err.is_duplicate() && err.message().contains("different bytes"),
        "{err}"
    );

    let taken = ResourceDef::new("skill://refunds/SKILL.md", "mine", |_cx: Context| async {
        Ok::<_, String>("already here")
    });
    let err = Server::builder("s", "1.0.0")
        .resource(taken)
        .unwrap()
        .skills(Skills::new().dir(dir.path()).unwrap())
        .unwrap_err();
    assert!(err.is_duplicate(), "{err}");
}
