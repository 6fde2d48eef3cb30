//! A request's envelope: what its `_meta` says about its client (protocol version,
//! capabilities, optionally client info and log level), read and checked.
//!
//! The envelope is read once, from the `_meta` text: its four members are taken as raw text
//! in one quick scan (`members::find`; serde's pass for a key spelled with escapes; other
//! keys skipped unread) and each decoded straight into its type. A `_meta` the scan does
//! not take (not an object, a key twice) goes through the decoded map, so the outcome and
//! the error messages are the same either way.

use modelctx_types::{
    ClientCapabilities, ErrorCode, ErrorData, Implementation, LoggingLevel, Meta, ProtocolVersion,
    RawValue, members,
};
use serde_json::{Value, json};

use super::VERSIONS;

/// What one request says about its client.
#[derive(Debug, Clone)]
pub(crate) struct Envelope {
    pub(crate) version: ProtocolVersion,
    pub(crate) capabilities: ClientCapabilities,
    pub(crate) info: Option<Implementation>,
    /// The lowest level the client wants log messages at; none are sent without it.
    pub(crate) log_level: Option<LoggingLevel>,
}

/// Reads and checks a request's envelope from its `_meta` text (`meta_text`, see
/// `RequestContext::unstable_meta_text`), falling back to the decoded map (`meta`) for
/// a `_meta` the reader of the four keys does not take (not an object, or a key twice:
/// the map keeps the last). Reading the text decodes only the envelope's members, each
/// straight into its type: no map of the whole `_meta`, no JSON trees.
///
/// Missing or malformed members are `-32602`; a version this server does not serve is
/// `-32022` with the versions it serves in `data.supported` and the one asked for in
/// `data.requested`.
pub(crate) fn envelope<'m>(
    meta_text: Option<&str>,
    meta: impl FnOnce() -> Option<&'m Meta>,
) -> Result<Envelope, ErrorData> {
    if let Some([version, capabilities, info, log_level]) = meta_text.and_then(members_of) {
        return check_envelope(
            version.map(Member::Text),
            capabilities.map(Member::Text),
            info.map(Member::Text),
            log_level.map(Member::Text),
        );
    }
    let meta = meta();
    let get = |key: &str| meta.and_then(|m| m.get(key)).map(Member::Value);
    check_envelope(
        get(Meta::PROTOCOL_VERSION),
        get(Meta::CLIENT_CAPABILITIES),
        get(Meta::CLIENT_INFO),
        get(Meta::LOG_LEVEL),
    )
}

/// The envelope's four members of a `_meta` (its JSON text), each as its JSON text (an
/// explicit `null` is kept: it is a malformed member, not a missing one), in the
/// order protocol version, capabilities, client info, log level: found by a quick scan
/// ([`members::find`]), or, where that does not settle them (a key spelled with
/// escapes), by serde. `None` for a `_meta` that is not an object, or that names a key
/// twice (the caller then reads the decoded map, which keeps the last).
pub(super) fn members_of(text: &str) -> Option<[Option<&str>; 4]> {
    const KEYS: [&str; 4] = [
        Meta::PROTOCOL_VERSION,
        Meta::CLIENT_CAPABILITIES,
        Meta::CLIENT_INFO,
        Meta::LOG_LEVEL,
    ];
    // (A derived struct would also read an array as its fields in order: objects only.)
    if !text.trim_start().starts_with('{') {
        return None;
    }
    if let Some(found) = members::find(text, KEYS) {
        return Some(found);
    }
    let keys = serde_json::from_str::<Keys<'_>>(text).ok()?;
    Some(
        [keys.version, keys.capabilities, keys.info, keys.log_level]
            .map(|member| member.map(RawValue::get)),
    )
}

/// The envelope's members of a `_meta`, as their JSON text (an explicit `null` is
/// kept: it is a malformed member, not a missing one); other keys are skipped unread.
#[derive(serde::Deserialize)]
struct Keys<'a> {
    #[serde(
        rename = "io.modelcontextprotocol/protocolVersion",
        default,
        borrow,
        deserialize_with = "present"
    )]
    version: Option<&'a RawValue>,
    #[serde(
        rename = "io.modelcontextprotocol/clientCapabilities",
        default,
        borrow,
        deserialize_with = "present"
    )]
    capabilities: Option<&'a RawValue>,
    #[serde(
        rename = "io.modelcontextprotocol/clientInfo",
        default,
        borrow,
        deserialize_with = "present"
    )]
    info: Option<&'a RawValue>,
    #[serde(
        rename = "io.modelcontextprotocol/logLevel",
        default,
        borrow,
        deserialize_with = "present"
    )]
    log_level: Option<&'a RawValue>,
}

/// A member that is there, whatever its value (`null` included).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&'de RawValue as serde::Deserialize>::deserialize(d).map(Some)
}

/// One member of the envelope: its JSON text, or its value in the decoded `_meta`.
#[derive(Clone, Copy)]
pub(super) enum Member<'a> {
    Text(&'a str),
    Value(&'a Value),
}

impl Member<'_> {
    /// The member as a string, if it is one.
    fn as_str(&self) -> Option<std::borrow::Cow<'_, str>> {
        match self {
            Member::Value(v) => v.as_str().map(std::borrow::Cow::Borrowed),
            Member::Text(raw) => modelctx_types::members::string(raw),
        }
    }

    /// The member decoded as `T`, from its text (a value is written out first: one
    /// decoder for both forms). An error is reported the same way whichever form the
    /// member is in: without the line and column, which only the text has.
    fn decode<T: serde::de::DeserializeOwned>(&self) -> Result<T, String> {
        let text = match self {
            Member::Value(v) => std::borrow::Cow::Owned(v.to_string()),
            Member::Text(raw) => std::borrow::Cow::Borrowed(*raw),
        };
        serde_json::from_str::<T>(&text).map_err(|e| without_position(&e))
    }

    /// The member as compact JSON, for error messages.
    fn shown(&self) -> String {
        match self {
            Member::Value(v) => v.to_string(),
            Member::Text(raw) => serde_json::from_str::<Value>(raw)
                .map_or_else(|_| (*raw).to_owned(), |v| v.to_string()),
        }
    }
}

/// `e`'s message without where in the text it was found.
fn without_position(e: &serde_json::Error) -> String {
    let message = e.to_string();
    let at = format!(" at line {} column {}", e.line(), e.column());
    match message.strip_suffix(&at) {
        Some(kept) => kept.to_owned(),
        None => message,
    }
}

pub(super) fn check_envelope(
    version: Option<Member<'_>>,
    capabilities: Option<Member<'_>>,
    info: Option<Member<'_>>,
    log_level: Option<Member<'_>>,
) -> Result<Envelope, ErrorData> {
    let missing = |key: &str| {
        ErrorData::invalid_params(format!(
            "Invalid params: the request's _meta must carry \"{key}\" (protocol version 2026-07-28 has no initialize handshake: every request says who is asking)"
        ))
    };
    let version = version.ok_or_else(|| missing(Meta::PROTOCOL_VERSION))?;
    let Some(requested) = version.as_str() else {
        return Err(ErrorData::invalid_params(format!(
            "Invalid params: \"{}\" must be a string, got {}",
            Meta::PROTOCOL_VERSION,
            version.shown()
        )));
    };
    let Some(version) = VERSIONS.iter().find(|v| v.as_str() == requested).cloned() else {
        return Err(unsupported_version(&requested));
    };
    let capabilities = capabilities
        .ok_or_else(|| missing(Meta::CLIENT_CAPABILITIES))?
        .decode::<ClientCapabilities>()
        .map_err(|e| {
            ErrorData::invalid_params(format!(
                "Invalid params: \"{}\" is not a capabilities object: {e}",
                Meta::CLIENT_CAPABILITIES
            ))
        })?;
    let info = match info {
        None => None,
        Some(member) => Some(member.decode::<Implementation>().map_err(|e| {
            ErrorData::invalid_params(format!(
                "Invalid params: \"{}\" is not a name and version: {e}",
                Meta::CLIENT_INFO
            ))
        })?),
    };
    let log_level = match log_level {
        None => None,
        Some(member) => {
            let level = member
                .decode::<LoggingLevel>()
                .ok()
                .filter(|l| l.severity().is_some())
                .ok_or_else(|| {
                    ErrorData::invalid_params(format!(
                        "Invalid params: \"{}\" must be one of debug, info, notice, warning, error, critical, alert, emergency; got {}",
                        Meta::LOG_LEVEL,
                        member.shown()
                    ))
                })?;
            Some(level)
        }
    };
    Ok(Envelope {
        version,
        capabilities,
        info,
        log_level,
    })
}

/// `-32022`: the versions this server serves and the one asked for.
pub(crate) fn unsupported_version(requested: &str) -> ErrorData {
    ErrorData::new(
        ErrorCode::UNSUPPORTED_PROTOCOL_VERSION,
        format!(
            "Unsupported protocol version {requested:?}: this server serves {} without a handshake",
            VERSIONS.map(|v| v.as_str().to_owned()).join(", ")
        ),
    )
    .with_data(json!({
        "supported": VERSIONS.map(|v| v.as_str().to_owned()),
        "requested": requested,
    }))
}

#[cfg(test)]
mod tests {
    use modelctx_types::to_raw;

    use super::*;

    /// The envelope of `_meta` `value`, read from its text; checked to be what the
    /// decoded map gives (the fallback path), error messages included.
    fn envelope_of(value: Value) -> Result<Envelope, ErrorData> {
        let text = to_raw(&value).unwrap();
        let map: Option<Meta> = serde_json::from_value(value).ok();
        let from_text = envelope(Some(text.get()), || {
            unreachable!("an object is read as text")
        });
        let from_map = envelope(None, || map.as_ref());
        match (&from_text, &from_map) {
            (Ok(a), Ok(b)) => {
                assert_eq!(a.version, b.version);
                assert_eq!(a.capabilities, b.capabilities);
                assert_eq!(a.info, b.info);
                assert_eq!(a.log_level, b.log_level);
            }
            (Err(a), Err(b)) => assert_eq!(a, b),
            _ => panic!("text {from_text:?} against map {from_map:?}"),
        }
        from_text
    }

    #[test]
    fn the_envelope_needs_a_served_version_and_capabilities() {
        let ok = envelope_of(json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
            "io.modelcontextprotocol/clientInfo": {"name": "c", "version": "1"},
            "io.modelcontextprotocol/logLevel": "info",
            "other": [1, {"x": null}],
        }))
        .unwrap();
        assert_eq!(ok.version, ProtocolVersion::V2026_07_28);
        assert!(ok.capabilities.elicitation.is_some());
        assert_eq!(ok.info.unwrap().name, "c");
        assert_eq!(ok.log_level, Some(LoggingLevel::Info));

        let e = envelope(None, || None).unwrap_err();
        assert_eq!(e.code, ErrorCode::INVALID_PARAMS);
        let e = envelope_of(json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28"
        }))
        .unwrap_err();
        assert_eq!(e.code, ErrorCode::INVALID_PARAMS);
        assert!(e.message.contains("clientCapabilities"));

        let e = envelope_of(json!({
            "io.modelcontextprotocol/protocolVersion": "2099-01-01",
            "io.modelcontextprotocol/clientCapabilities": {},
        }))
        .unwrap_err();
        assert_eq!(e.code, ErrorCode::UNSUPPORTED_PROTOCOL_VERSION);
        assert_eq!(
            e.data,
            Some(json!({"supported": ["2026-07-28"], "requested": "2099-01-01"}))
        );

        for bad in [
            json!({
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/logLevel": "loud",
            }),
            json!({
                "io.modelcontextprotocol/protocolVersion": null,
                "io.modelcontextprotocol/clientCapabilities": {},
            }),
            json!({
                "io.modelcontextprotocol/protocolVersion": 2026,
                "io.modelcontextprotocol/clientCapabilities": {},
            }),
            json!({
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": null,
            }),
            json!({
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {"roots": {"listChanged": 1}},
            }),
            json!({
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "c"},
            }),
        ] {
            let e = envelope_of(bad.clone()).unwrap_err();
            assert_eq!(e.code, ErrorCode::INVALID_PARAMS, "{bad}");
        }
    }

    #[test]
    fn an_envelope_the_text_reader_does_not_take_is_read_from_the_map() {
        // Escapes in a key and in a value: still read from the text.
        let text = RawValue::from_string(
            r#"{"io.modelcontextprotocol/protocolVersio\u006e": "2026-07\u002d28", "io.modelcontextprotocol/clientCapabilities": {}}"#
                .to_owned(),
        )
        .unwrap();
        let ok = envelope(Some(text.get()), || unreachable!()).unwrap();
        assert_eq!(ok.version, ProtocolVersion::V2026_07_28);
        // A key twice: the map keeps the last, and so does the envelope.
        let twice = r#"{"io.modelcontextprotocol/protocolVersion": "1999-01-01", "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}"#;
        let text = RawValue::from_string(twice.to_owned()).unwrap();
        let map: Meta = serde_json::from_str(twice).unwrap();
        let ok = envelope(Some(text.get()), || Some(&map)).unwrap();
        assert_eq!(ok.version, ProtocolVersion::V2026_07_28);
        // Not an object (an array is not read as the members in order): no map either,
        // so the version is missing.
        for not_object in ["[1]", r#"["2026-07-28", {}]"#] {
            let text = RawValue::from_string(not_object.to_owned()).unwrap();
            let e = envelope(Some(text.get()), || None).unwrap_err();
            assert!(e.message.contains("protocolVersion"), "{}", e.message);
        }
    }
}
