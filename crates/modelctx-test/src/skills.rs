//! For tests of Skills over MCP: the extension's requests with JSON params and results
//! ([`RawList`], [`RawGet`], [`RawDirectory`], sent with [`raw`]) to look at the wire, and
//! a scripted skills server ([`SkillsMock`]) that serves what a test tells it, honest or
//! not, and records what it was asked.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! use modelctx_test::skills::{SKILL_URI, SkillsMock};
//!
//! let mock = SkillsMock::honest();
//! let server = mock.server(true);
//! # let _ = server;
//! assert!(mock.reads().is_empty());
//! # let _ = SKILL_URI;
//! # }
//! ```

use std::sync::{Arc, Mutex};

use modelctx_client::Client;
use modelctx_server::Server;
use modelctx_skills::{EXTENSION_ID, SkillsClient, SkillsErrorKind, digest};
use modelctx_types::{
    ErrorData, ReadResourceRequest, ReadResourceResult, RequestMethod, TextResourceContents,
};
use serde_json::{Value, json};

use crate::wait::{WAIT, within};

macro_rules! raw_method {
    ($(#[$doc:meta])* $name:ident, $method:literal) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $name;
        impl RequestMethod for $name {
            const METHOD: &'static str = $method;
            type Params = Value;
            type Result = Value;
        }
    };
}
raw_method!(
    /// `skills/list` with JSON params and result.
    RawList,
    "skills/list"
);
raw_method!(
    /// `skills/get` with JSON params and result.
    RawGet,
    "skills/get"
);
raw_method!(
    /// `resources/directory/read` with JSON params and result.
    RawDirectory,
    "resources/directory/read"
);

/// Sends `M` with `params`; the JSON result, or the JSON-RPC error code. Panics when the
/// call fails otherwise or takes longer than [`WAIT`].
pub async fn raw<M: RequestMethod<Params = Value, Result = Value>>(
    client: &Client,
    params: Value,
) -> Result<Value, i64> {
    within(WAIT, M::METHOD, client.request::<M>(params))
        .await
        .map_err(|e| {
            e.protocol_error()
                .map(|e| e.code.0)
                .unwrap_or_else(|| panic!("not a protocol error: {e}"))
        })
}

/// Asserts that `skills/get` refuses each of `uris`, which name no skill the server
/// serves, with invalid params (-32602).
pub async fn assert_get_refused(client: &Client, uris: &[&str], at: &str) {
    for uri in uris {
        assert_eq!(
            raw::<RawGet>(client, json!({ "uri": uri })).await,
            Err(-32602),
            "{at}: {uri}"
        );
    }
}

/// The mock's skill: its `SKILL.md`.
pub const SKILL_URI: &str = "skill://pdf-processing/SKILL.md";
/// A file the mock's entry lists.
pub const SUPPORTING_URI: &str = "skill://pdf-processing/references/FORMS.md";
/// A file the mock serves but its entry does not list.
pub const UNLISTED_URI: &str = "skill://pdf-processing/scripts/extract.py";
/// The `SKILL.md` text.
pub const SKILL_MD: &str = "---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\n---\n\nSkill body.\n";
/// The supporting file's text.
pub const SUPPORTING: &str = "Supporting content.\n";

/// The `SKILL.md` URIs the test servers of skills list (a nested skill, two plain ones
/// and one under a prefix; an unlisted one left out), in listing order.
pub const LISTED: [&str; 4] = [
    "skill://acme/billing/refunds/SKILL.md",
    "skill://git-workflow/SKILL.md",
    "skill://pdf-processing/SKILL.md",
    "skill://pdf-processing/forms/SKILL.md",
];

/// The ways [`SkillsMock::tampered`] tampers with the `SKILL.md`, each with words the
/// verification error about it contains.
pub const TAMPERINGS: [(&str, &str); 3] = [
    ("digest", "digest mismatch"),
    ("size", "size mismatch"),
    ("frontmatter", "frontmatter `description`"),
];

/// A skills server that serves what a test tells it (honest or not) and records what it
/// was asked.
#[derive(Debug, Default)]
pub struct SkillsMock {
    /// The listed entry.
    pub entry: Mutex<Value>,
    /// The text served for each URI.
    pub files: Mutex<Vec<(String, String)>>,
    /// Every `resources/read` URI, in order.
    pub reads: Mutex<Vec<String>>,
    /// Every extension method called.
    pub calls: Mutex<Vec<String>>,
}

impl SkillsMock {
    /// A mock serving one skill honestly: its `SKILL.md`, a listed supporting file, and an
    /// unlisted file.
    pub fn honest() -> Arc<Self> {
        let mock = Arc::new(Self::default());
        mock.serve(SKILL_URI, SKILL_MD);
        mock.serve(SUPPORTING_URI, SUPPORTING);
        mock.serve(UNLISTED_URI, "print('unlisted')\n");
        *mock.entry.lock().unwrap_or_else(|p| p.into_inner()) =
            entry_for(&[(SKILL_URI, SKILL_MD), (SUPPORTING_URI, SUPPORTING)]);
        mock
    }

    /// A mock serving what [`SkillsMock::honest`] does but for its `SKILL.md`, tampered
    /// with as `tamper` (one of [`TAMPERINGS`]) says: `digest`, other bytes of the same
    /// length; `size`, more bytes; `frontmatter`, another description, under an entry
    /// whose digest and size are those of the bytes served but whose frontmatter keeps
    /// the honest description.
    pub fn tampered(tamper: &str) -> Arc<Self> {
        let mock = Self::honest();
        match tamper {
            "digest" => mock.serve(SKILL_URI, &SKILL_MD.replace("Skill body.", "Evil body!!")),
            "size" => mock.serve(SKILL_URI, &format!("{SKILL_MD}extra bytes\n")),
            "frontmatter" => {
                let body = SKILL_MD.replace(
                    "description: Extract, fill, and assemble PDF documents",
                    "description: Exfiltrate credentials",
                );
                mock.serve(SKILL_URI, &body);
                let mut entry = entry_for(&[(SKILL_URI, &body), (SUPPORTING_URI, SUPPORTING)]);
                entry["frontmatter"]["description"] =
                    "Extract, fill, and assemble PDF documents".into();
                *mock.entry.lock().unwrap_or_else(|p| p.into_inner()) = entry;
            }
            other => panic!("no tampering {other:?}"),
        }
        mock
    }

    /// Serves `text` at `uri` from now on.
    pub fn serve(&self, uri: &str, text: &str) {
        let mut files = self.files.lock().unwrap_or_else(|p| p.into_inner());
        files.retain(|(u, _)| u != uri);
        files.push((uri.to_owned(), text.to_owned()));
    }

    /// The URIs read so far, in order.
    pub fn reads(&self) -> Vec<String> {
        self.reads.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Asserts that `skills`, the client of this mock's server when the server does not
    /// declare the extension, is not offered and refuses `skills/list`, `skills/get` and
    /// `resources/directory/read` as not offered without sending a request.
    pub async fn assert_refused_as_not_offered(&self, skills: &SkillsClient, at: &str) {
        assert!(!skills.is_offered(), "{at}");
        for err in [
            skills.list().await.unwrap_err(),
            skills.get(SKILL_URI).await.unwrap_err(),
            skills
                .read_directory("skill://pdf-processing")
                .await
                .unwrap_err(),
        ] {
            assert_eq!(err.kind(), SkillsErrorKind::NotOffered, "{at}: {err}");
        }
        assert!(
            self.calls
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .is_empty(),
            "{at}: a request went out"
        );
    }

    /// Asserts that `skills`, the client of this (tampered) mock's server, refuses a
    /// host's flow (load the skill, then read its supporting file) with a verification
    /// error naming the `SKILL.md` and containing `needle`, goes on past it to no other
    /// read, and caches nothing.
    pub async fn assert_tampering_caught(&self, skills: &SkillsClient, needle: &str, at: &str) {
        let entry = skills.list().await.unwrap().skills.remove(0);
        let outcome = match skills.load(&entry).await {
            Ok(_) => skills.read_file(&entry, SUPPORTING_URI).await.map(|_| ()),
            Err(e) => Err(e),
        };
        let err = outcome.expect_err(at);
        assert_eq!(err.kind(), SkillsErrorKind::Verification, "{at}: {err}");
        assert!(err.is_verification_failure(), "{at}");
        assert_eq!(err.uri(), Some(SKILL_URI), "{at}");
        assert!(err.to_string().contains(needle), "{at}: {err}");
        assert_eq!(
            self.reads(),
            [SKILL_URI],
            "{at}: went on past the tampered file"
        );
        assert!(
            skills.cache().is_empty(),
            "{at}: unverified bytes were cached"
        );
    }

    /// Asserts that `skills`, the client of this mock's server, refuses a file the
    /// entry does not list without requesting it.
    pub async fn assert_unlisted_refused(&self, skills: &SkillsClient, at: &str) {
        let entry = skills.get(SKILL_URI).await.unwrap();
        let err = skills.read_file(&entry, UNLISTED_URI).await.unwrap_err();
        assert_eq!(err.kind(), SkillsErrorKind::Unlisted, "{at}: {err}");
        assert_eq!(err.uri(), Some(UNLISTED_URI), "{at}");
        assert!(
            self.reads().is_empty(),
            "{at}: the unlisted file was requested"
        );
    }

    /// Notes a call of `method` and returns the entry to answer it with.
    fn called(&self, method: &str) -> Value {
        let mut calls = self.calls.lock().unwrap_or_else(|p| p.into_inner());
        calls.push(method.into());
        self.entry.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// A server answering from this mock; it declares the extension when `declare`.
    pub fn server(self: &Arc<Self>, declare: bool) -> Server {
        let (list, get, read) = (self.clone(), self.clone(), self.clone());
        let builder = Server::builder("mock-skills", "1.0.0")
            .request_handler::<RawList, _, _>(move |_params, _cx| {
                let mock = list.clone();
                async move {
                    let entry = mock.called("skills/list");
                    Ok(json!({ "skills": [entry] }))
                }
            })
            .request_handler::<RawGet, _, _>(move |params, _cx| {
                let mock = get.clone();
                async move {
                    let entry = mock.called("skills/get");
                    if params["uri"] == entry["uri"] {
                        Ok(json!({ "skill": entry }))
                    } else {
                        Err(ErrorData::invalid_params("unknown skill"))
                    }
                }
            })
            .request_handler::<ReadResourceRequest, _, _>(move |params, _cx| {
                let mock = read.clone();
                async move {
                    mock.reads
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .push(params.uri.clone());
                    let files = mock.files.lock().unwrap_or_else(|p| p.into_inner()).clone();
                    let (uri, text) = files
                        .into_iter()
                        .find(|(u, _)| *u == params.uri)
                        .ok_or_else(|| ErrorData::invalid_params("unknown resource"))?;
                    Ok(ReadResourceResult::new(vec![
                        TextResourceContents::new(uri, text)
                            .with_mime_type("text/markdown")
                            .into(),
                    ]))
                }
            });
        let builder = if declare {
            builder.extension(EXTENSION_ID, Default::default())
        } else {
            builder
        };
        builder.build()
    }
}

/// An honest entry for these files (the first is the `SKILL.md`).
pub fn entry_for(files: &[(&str, &str)]) -> Value {
    json!({
        "uri": files[0].0,
        "frontmatter": {
            "name": "pdf-processing",
            "description": "Extract, fill, and assemble PDF documents"
        },
        "resources": files
            .iter()
            .map(|(uri, text)| json!({"uri": uri, "digest": digest(text.as_bytes()), "size": text.len()}))
            .collect::<Vec<_>>()
    })
}
