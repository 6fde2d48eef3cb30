//! A stdio MCP server that serves Agent Skills (SEP-2640, `io.modelcontextprotocol/skills`)
//! next to its tools: every skill below a `skills/` directory (by default the one beside
//! this example, `examples/skills`; another with `--skills DIR`), and one skill built into
//! the binary (`examples/skills-embedded/summarize`, with `include_str!`) — the same
//! `Skill` either way.
//!
//! A client lists them with `skills/list`, gets one with `skills/get`, reads each file as
//! a `skill://<skill-path>/<file-path>` resource and browses directories with
//! `resources/directory/read`; with modelctx that is `client.skills("label")` (see
//! `modelctx::skills`). Each skill is checked when the server starts: a `SKILL.md` whose
//! frontmatter breaks an Agent Skills rule stops it with an error naming the file.
//!
//! With `--watch MS` the directory is polled every MS milliseconds: a skill added,
//! removed or edited is served as it now is, and connected clients get
//! `notifications/resources/list_changed`.
//!
//! `cargo run -p modelctx-examples --bin skills-server -- --skills path/to/skills`; the
//! `modelctx` CLI lists and pulls them: `modelctx skills list -- skills-server`.

use std::path::PathBuf;
use std::time::Duration;

use modelctx::server::{Context, NoArgs, Server, ToolDef};
use modelctx::skills::{ServerBuilderSkillsExt, Skill, Skills};
use modelctx::stdio::StdioOptions;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut dir = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/skills"));
    let mut watch = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--skills" => dir = args.next().ok_or("--skills needs a directory")?.into(),
            "--watch" => {
                let ms: u64 = args.next().ok_or("--watch needs milliseconds")?.parse()?;
                watch = Some(Duration::from_millis(ms));
            }
            other => {
                return Err(
                    format!("unknown argument {other:?} (try --skills DIR, --watch MS)").into(),
                );
            }
        }
    }

    // Built into the binary: the files are bytes in the executable.
    let summarize = Skill::new("summarize").file(
        "SKILL.md",
        include_str!("../../skills-embedded/summarize/SKILL.md"),
    );
    let skills = Skills::new().dir(&dir)?.skill(summarize)?;
    let watcher = watch.map(|interval| (skills.watcher(), interval));
    eprintln!(
        "skills-server: serving {} skills from {}",
        skills.len(),
        dir.display()
    );

    let greet = ToolDef::new("greet", |_: NoArgs, _cx: Context| async {
        Ok::<_, String>("Hello from the skills server!")
    })
    .description("Says hello (the skills tell an agent when to call it)");
    let server = Server::builder("modelctx-skills-example", env!("CARGO_PKG_VERSION"))
        .instructions("Skills are served: list them with skills/list.")
        .tool(greet)?
        .skills(skills)?
        .build();
    // Polls while the watch lives: until the session ends.
    let _watch = watcher
        .map(|(watcher, interval)| watcher.watch(&server, interval))
        .transpose()?;

    let options = StdioOptions::new().on_diagnostic(|d| eprintln!("skills-server: {d}"));
    let session = server.serve(modelctx::stdio::stdio_with(options));
    session.closed().await;
    session.close().await;
    Ok(())
}
