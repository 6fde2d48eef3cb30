//! The skills example run as a host would: started as a stdio child, its skills listed,
//! loaded and read with the verified client, in both eras; and refused at start when a
//! skill breaks a rule.

use std::time::Duration;

use modelctx::client::{Client, ConnectMode};
use modelctx::skills::ClientSkillsExt;
use modelctx::stdio::{ChildProcess, Stderr};

const WAIT: Duration = Duration::from_secs(30);

#[tokio::test]
async fn the_skills_example_serves_its_skills_over_stdio_in_both_eras() {
    for (mode, version) in [
        (ConnectMode::Handshake, "2025-11-25"),
        (ConnectMode::Auto, "2026-07-28"),
    ] {
        let child = ChildProcess::new(env!("CARGO_BIN_EXE_skills-server"))
            .stderr(Stderr::lines(|line| eprintln!("[server] {line}")))
            .spawn()
            .expect("the example starts");
        let client = tokio::time::timeout(
            WAIT,
            Client::builder("t", "1.0.0").mode(mode).connect(child),
        )
        .await
        .expect("connects in time")
        .expect("connects");
        assert_eq!(client.protocol_version().as_str(), version);
        let skills = client.skills("example");
        let listing = tokio::time::timeout(WAIT, skills.list())
            .await
            .unwrap()
            .unwrap();
        let mut names: Vec<&str> = listing.skills.iter().map(|e| e.name()).collect();
        names.sort_unstable();
        assert_eq!(
            names,
            ["git-workflow", "release-notes", "summarize"],
            "{version}"
        );
        let notes = listing
            .skills
            .iter()
            .find(|e| e.name() == "release-notes")
            .unwrap();
        assert_eq!(notes.uri, "skill://acme/release-notes/SKILL.md");
        let loaded = skills.load(notes).await.unwrap();
        assert!(loaded.skill_md.contains("Pick a template"), "{version}");
        let template = skills
            .read_file(notes, "skill://acme/release-notes/templates/minor.md")
            .await
            .unwrap();
        assert!(
            String::from_utf8_lossy(&template).contains("### New"),
            "{version}"
        );
        let children = skills
            .read_directory("skill://acme/release-notes/templates")
            .await
            .unwrap();
        assert_eq!(children.len(), 2, "{version}");
        client.close().await;
    }
}

#[tokio::test]
async fn the_skills_example_refuses_a_broken_skill_at_start() {
    let dir = std::env::temp_dir().join(format!("skills-example-broken-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("refunds")).unwrap();
    std::fs::write(
        dir.join("refunds/SKILL.md"),
        "---\nname: Refunds\ndescription: Capitalised\n---\n",
    )
    .unwrap();
    let output = tokio::time::timeout(
        WAIT,
        tokio::process::Command::new(env!("CARGO_BIN_EXE_skills-server"))
            .arg("--skills")
            .arg(&dir)
            .stdin(std::process::Stdio::null())
            .output(),
    )
    .await
    .unwrap()
    .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(
        stderr.contains("refunds/SKILL.md") && stderr.contains("lowercase"),
        "{stderr}"
    );
}
