//! The skills client through the public API against servers that misbehave on purpose
//! (built from low-level handlers, counting what they are asked), over in-memory and
//! streamable HTTP transports, in both eras. Each test names the scenario of the
//! official suite's pending SEP-2640 client set it mirrors
//! (`src/scenarios/client/skills/`).

use crate::support;

use modelctx_client::ConnectMode;
use modelctx_server::{Context, NoArgs, Server, ToolDef};
use modelctx_skills::{
    ClientSkillsExt, EXTENSION_ID, ServerBuilderSkillsExt, Skill, SkillCache, Skills,
    SkillsErrorKind,
};
use modelctx_test::skills::{
    SKILL_MD, SKILL_URI, SUPPORTING, SUPPORTING_URI, SkillsMock, TAMPERINGS, entry_for,
};
use serde_json::{Value, json};
use support::{Scratch, Via, connect, matrix, skill_md};

/// Mirrors `capabilities.test.ts`: a server serving skills advertises the extension
/// and `resources` on both lifecycles (`initialize` and `server/discover`); and the
/// client, which gates on the declaration, sends nothing to a server that did not
/// declare it.
#[tokio::test]
async fn the_extension_is_advertised_on_both_lifecycles_and_gates_the_client() {
    for (via, mode, version) in matrix() {
        let at = format!("{via:?} {version}");
        let skills = Skills::new()
            .skill(Skill::new("solo").file("SKILL.md", skill_md("solo", "One skill")))
            .unwrap();
        let server = Server::builder("s", "1.0.0")
            .skills(skills)
            .unwrap()
            .build();
        let client = connect(server, via, mode.clone()).await;
        let caps = client.server_capabilities();
        assert!(
            caps.extensions.as_ref().unwrap().contains_key(EXTENSION_ID),
            "{at}"
        );
        assert!(caps.resources.is_some(), "{at}");
        client.close().await;

        let mock = SkillsMock::honest();
        let client = connect(mock.server(false), via, mode).await;
        mock.assert_refused_as_not_offered(&client.skills("undeclared"), &at)
            .await;
        client.close().await;
    }
}

/// Mirrors `sep-2640-client-no-prefetch`: listing and getting read no file; loading
/// reads the `SKILL.md` alone; a supporting file is read when asked for, once (then
/// from the cache).
#[tokio::test]
async fn nothing_is_fetched_ahead_of_need() {
    for (via, mode, version) in matrix() {
        let at = format!("{via:?} {version}");
        let mock = SkillsMock::honest();
        let client = connect(mock.server(true), via, mode).await;
        let skills = client.skills("mock");
        let listing = skills.list().await.unwrap();
        assert_eq!(listing.skills.len(), 1, "{at}");
        let entry = skills.get(SKILL_URI).await.unwrap();
        assert_eq!(entry, listing.skills[0], "{at}");
        assert!(
            mock.reads().is_empty(),
            "{at}: read on listing: {:?}",
            mock.reads()
        );

        let loaded = skills.load(&entry).await.unwrap();
        assert_eq!(loaded.skill_md, SKILL_MD, "{at}");
        assert_eq!(loaded.server, "mock");
        assert_eq!(mock.reads(), [SKILL_URI], "{at}");

        let bytes = skills.read_file(&entry, SUPPORTING_URI).await.unwrap();
        assert_eq!(&*bytes, SUPPORTING.as_bytes(), "{at}");
        skills.read_file(&entry, SUPPORTING_URI).await.unwrap();
        skills.load(&entry).await.unwrap();
        assert_eq!(
            mock.reads(),
            [SKILL_URI, SUPPORTING_URI],
            "{at}: cached reads went out"
        );
        client.close().await;
    }
}

/// Mirrors `sep-2640-client-verify-{digest,size,frontmatter,unlisted}`: a `SKILL.md`
/// whose bytes differ from the entry (same length), which is longer than the entry
/// says, or whose frontmatter disagrees with the entry (digest and size honest), is
/// refused with an error naming it — and the supporting file is never read; a file the
/// entry does not list is refused without a request.
#[tokio::test]
async fn every_fetched_file_is_verified_against_its_entry() {
    for (via, mode, version) in matrix() {
        for (tamper, needle) in TAMPERINGS {
            let at = format!("{via:?} {version} {tamper}");
            let mock = SkillsMock::tampered(tamper);
            let client = connect(mock.server(true), via, mode.clone()).await;
            // A host's flow: load the skill, then read its supporting file.
            mock.assert_tampering_caught(&client.skills("mock"), needle, &at)
                .await;
            client.close().await;
        }

        let at = format!("{via:?} {version} unlisted");
        let mock = SkillsMock::honest();
        let client = connect(mock.server(true), via, mode).await;
        mock.assert_unlisted_refused(&client.skills("mock"), &at)
            .await;
        client.close().await;
    }
}

/// Malformed entries are never loaded: a listing reports them beside the good ones,
/// `skills/get` refuses them, and a `"dynamic"` skill (no integrity) is refused
/// without a read.
#[tokio::test]
async fn malformed_and_dynamic_entries_are_not_loaded() {
    let mock = SkillsMock::honest();
    let client = connect(mock.server(true), Via::Memory, ConnectMode::Auto).await;
    let skills = client.skills("mock");
    for (resources, kind) in [
        (Value::Null, SkillsErrorKind::InvalidEntry),
        (json!(42), SkillsErrorKind::InvalidEntry),
        (json!([]), SkillsErrorKind::InvalidEntry),
    ] {
        mock.entry.lock().unwrap()["resources"] = resources.clone();
        let listing = skills.list().await.unwrap();
        assert!(
            listing.skills.is_empty() && listing.invalid.len() == 1,
            "{resources}"
        );
        let err = skills.get(SKILL_URI).await.unwrap_err();
        assert_eq!(err.kind(), kind, "{resources}: {err}");
    }
    mock.entry.lock().unwrap()["resources"] = "dynamic".into();
    let entry = skills.get(SKILL_URI).await.unwrap();
    let err = skills.load(&entry).await.unwrap_err();
    assert_eq!(err.kind(), SkillsErrorKind::Dynamic, "{err}");
    assert!(mock.reads().is_empty());
    client.close().await;
}

/// The cache is keyed by (server label, URI): two servers serving the same URI with
/// different content do not see each other's bytes. A skill that changed is fetched
/// again under its new entry, and a stale entry fails verification.
#[tokio::test]
async fn the_cache_is_per_server_and_revalidates() {
    let cache = SkillCache::new();
    let first = SkillsMock::honest();
    let other_md = SKILL_MD.replace("Skill body.", "Another server's body.");
    let second = SkillsMock::honest();
    second.serve(SKILL_URI, &other_md);
    *second.entry.lock().unwrap() =
        entry_for(&[(SKILL_URI, &other_md), (SUPPORTING_URI, SUPPORTING)]);

    let a = connect(first.server(true), Via::Memory, ConnectMode::Handshake).await;
    let b = connect(second.server(true), Via::Http, ConnectMode::Auto).await;
    let (sa, sb) = (
        a.skills("first").with_cache(cache.clone()),
        b.skills("second").with_cache(cache.clone()),
    );
    let (ea, eb) = (
        sa.get(SKILL_URI).await.unwrap(),
        sb.get(SKILL_URI).await.unwrap(),
    );
    assert_eq!(sa.load(&ea).await.unwrap().skill_md, SKILL_MD);
    assert_eq!(sb.load(&eb).await.unwrap().skill_md, other_md);
    assert_eq!(cache.len(), 2);
    assert_eq!((first.reads().len(), second.reads().len()), (1, 1));

    // The first server's skill changes: its new entry fetches again.
    let changed = SKILL_MD.replace("Skill body.", "Revised body.");
    first.serve(SKILL_URI, &changed);
    *first.entry.lock().unwrap() =
        entry_for(&[(SKILL_URI, &changed), (SUPPORTING_URI, SUPPORTING)]);
    let fresh = sa.get(SKILL_URI).await.unwrap();
    assert_eq!(sa.load(&fresh).await.unwrap().skill_md, changed);
    assert_eq!(first.reads().len(), 2);
    // The entry held from before no longer matches what the server serves.
    let err = sa.load(&ea).await.unwrap_err();
    assert_eq!(err.kind(), SkillsErrorKind::Verification, "{err}");

    cache.remove_server("first");
    assert_eq!(cache.len(), 1);
    a.close().await;
    b.close().await;
}

fn docs_server() -> Server {
    let hello = ToolDef::new("hello", |_: NoArgs, _cx: Context| async {
        Ok::<_, String>("hi")
    });
    let skills = Skills::new()
        .skill(
            Skill::new("acme/refunds")
                .file("SKILL.md", skill_md("refunds", "Refunds"))
                .file("examples/a file.md", "Dear customer,\n")
                .file("assets/logo.bin", vec![0u8, 0xff, 0x10]),
        )
        .unwrap();
    Server::builder("docs", "1.0.0")
        .tool(hello)
        .unwrap()
        .skills(skills)
        .unwrap()
        .build()
}

/// A verified skill is written below the target at `<label>/<scheme>/<skill-path>/`:
/// the same skill from two servers lands apart, binary files byte for byte, and a
/// symbolic link on the way is refused with nothing written through it.
#[tokio::test]
async fn a_skill_is_materialised_below_the_target_only() {
    let target = Scratch::new("target");
    for (via, mode, version) in matrix() {
        let at = format!("{via:?} {version}");
        let client = connect(docs_server(), via, mode).await;
        let label = format!("docs-{via:?}-{version}");
        let skills = client.skills(&label);
        let entry = skills.get("skill://acme/refunds/SKILL.md").await.unwrap();
        // The target need not exist yet.
        let below = target.path().join("new");
        let root = skills.materialize(&entry, &below).await.unwrap();
        assert_eq!(root, below.join(&label).join("skill/acme/refunds"), "{at}");
        assert_eq!(
            std::fs::read_to_string(root.join("SKILL.md")).unwrap(),
            skill_md("refunds", "Refunds"),
            "{at}"
        );
        assert_eq!(
            std::fs::read(root.join("examples/a file.md")).unwrap(),
            b"Dear customer,\n"
        );
        assert_eq!(
            std::fs::read(root.join("assets/logo.bin")).unwrap(),
            [0u8, 0xff, 0x10]
        );
        client.close().await;
    }

    #[cfg(unix)]
    {
        let elsewhere = Scratch::new("elsewhere");
        std::os::unix::fs::symlink(elsewhere.path(), target.path().join("linked")).unwrap();
        let client = connect(docs_server(), Via::Memory, ConnectMode::Handshake).await;
        let skills = client.skills("linked");
        let entry = skills.get("skill://acme/refunds/SKILL.md").await.unwrap();
        let err = skills.materialize(&entry, target.path()).await.unwrap_err();
        assert_eq!(err.kind(), SkillsErrorKind::UnsafePath, "{err}");
        assert!(
            std::fs::read_dir(elsewhere.path())
                .unwrap()
                .next()
                .is_none(),
            "written through the link"
        );
        client.close().await;
    }
}
