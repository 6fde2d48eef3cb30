//! The sealing, binding and round rules of `requestState`, without a transport.

use super::*;
use modelctx_types::{ElicitRequest, ElicitRequestParams, ElicitResult, RequestedSchema};

fn elicit() -> InputRequest {
    InputRequest::from(ElicitRequest::without_id(ElicitRequestParams::Form(
        modelctx_types::ElicitRequestFormParams::new("Name?", RequestedSchema::new()),
    )))
}

fn params(value: Value) -> Option<Box<RawValue>> {
    Some(to_raw(&value).unwrap())
}

fn key() -> StateKey {
    StateKey::new([7; 32])
}

/// The `requestState` of a first round on `params` that asks for one form under
/// `ask` (the next unnamed key when `None`).
fn first_state(params: Option<Box<RawValue>>, ask: Option<&str>, now: SystemTime) -> String {
    let round = Round::open(
        &key(),
        "tools/call",
        &mut split("tools/call", params).unwrap(),
        None,
        now,
    )
    .unwrap();
    let _ = round.ask::<ElicitResult>(ask, elicit).unwrap();
    let interim: Value = serde_json::from_str(round.end(&key(), now).unwrap().get()).unwrap();
    interim["requestState"].as_str().unwrap().to_owned()
}

#[test]
fn a_round_asks_then_the_retry_answers() {
    let now = SystemTime::now();
    let mut first = split(
        "tools/call",
        params(json!({"name": "greet", "arguments": {}})),
    )
    .unwrap();
    let round = Round::open(&key(), "tools/call", &mut first, None, now).unwrap();
    assert!(matches!(
        round
            .ask::<ElicitResult>(Some("user_name"), elicit)
            .unwrap(),
        Asked::Pending
    ));
    assert!(round.must_end());
    let interim: Value = serde_json::from_str(round.end(&key(), now).unwrap().get()).unwrap();
    assert_eq!(interim["resultType"], "input_required");
    assert_eq!(
        interim["inputRequests"]["user_name"]["method"],
        "elicitation/create"
    );
    let state = interim["requestState"].as_str().unwrap().to_owned();

    let mut retry = split(
        "tools/call",
        params(json!({
            "name": "greet", "arguments": {},
            "inputResponses": {"user_name": {"action": "accept", "content": {"name": "Ada"}},
                "stray": {"anything": 1}},
            "requestState": state,
        })),
    )
    .unwrap();
    let seen: Value = serde_json::from_str(retry.params.as_deref().unwrap().get()).unwrap();
    assert_eq!(seen, json!({"name": "greet", "arguments": {}}));
    let round = Round::open(&key(), "tools/call", &mut retry, None, now).unwrap();
    let Asked::Answered(answer) = round
        .ask::<ElicitResult>(Some("user_name"), elicit)
        .unwrap()
    else {
        panic!("answered on the retry")
    };
    assert_eq!(
        serde_json::to_value(answer.content.unwrap()).unwrap(),
        json!({"name": "Ada"})
    );
    assert!(!round.must_end());
}

#[test]
fn answers_nobody_asked_for_never_grow_the_state() {
    let now = SystemTime::now();
    let call = json!({"name": "greet", "arguments": {}});
    let state = first_state(params(call.clone()), Some("first"), now);
    // The retry answers the one input asked for, and 500 KB the server never asked
    // for; the handler asks for the first input, then a second one.
    let junk: Map<String, Value> = (0..500)
        .map(|i| (format!("junk-{i}"), json!("x".repeat(1000))))
        .collect();
    let mut responses = junk;
    responses.insert(
        "first".into(),
        json!({"action": "accept", "content": {"name": "Ada"}}),
    );
    let with = |responses: Map<String, Value>, state: String| {
        let mut params = call.clone();
        params["inputResponses"] = Value::Object(responses);
        params["requestState"] = json!(state);
        let mut retry = split("tools/call", self::params(params)).unwrap();
        let round = Round::open(&key(), "tools/call", &mut retry, None, now).unwrap();
        assert!(matches!(
            round.ask::<ElicitResult>(Some("first"), elicit).unwrap(),
            Asked::Answered(_)
        ));
        assert!(matches!(
            round.ask::<ElicitResult>(Some("second"), elicit).unwrap(),
            Asked::Pending
        ));
        let interim: Value = serde_json::from_str(round.end(&key(), now).unwrap().get()).unwrap();
        interim["requestState"].as_str().unwrap().to_owned()
    };
    let next = with(responses, state.clone());
    // The next state holds the one answer asked for: as small as without the junk.
    let mut only = Map::new();
    only.insert(
        "first".into(),
        json!({"action": "accept", "content": {"name": "Ada"}}),
    );
    let plain = with(only, state);
    assert_eq!(next.len(), plain.len(), "{} bytes", next.len());
    assert!(next.len() < 1024, "{} bytes", next.len());
    let sealed = unseal(&key(), &next).unwrap();
    assert_eq!(sealed.answers.keys().collect::<Vec<_>>(), ["first"]);
    // An answer sealed earlier that no handler asks for any more is dropped too.
    let mut retry = split(
        "tools/call",
        params(json!({"name": "greet", "arguments": {}, "requestState": next})),
    )
    .unwrap();
    let round = Round::open(&key(), "tools/call", &mut retry, None, now).unwrap();
    assert!(matches!(
        round.ask::<ElicitResult>(Some("other"), elicit).unwrap(),
        Asked::Pending
    ));
    let interim: Value = serde_json::from_str(round.end(&key(), now).unwrap().get()).unwrap();
    let sealed = unseal(&key(), interim["requestState"].as_str().unwrap()).unwrap();
    assert!(sealed.answers.is_empty());
}

#[test]
fn a_state_is_bound_to_its_key_request_and_lifetime() {
    let now = SystemTime::now();
    let state = first_state(params(json!({"name": "a"})), None, now);
    let retry = |name: &str, state: String| {
        split(
            "tools/call",
            params(json!({"name": name, "requestState": state})),
        )
        .unwrap()
    };
    // Tampered, signed with another key, for another request, too late.
    let tampered = format!("{state}-TAMPERED");
    for (mut split, key, at) in [
        (retry("a", tampered), key(), now),
        (retry("a", state.clone()), StateKey::new([8; 32]), now),
        (retry("b", state.clone()), key(), now),
        (retry("a", state.clone()), key(), now + STATE_LIFETIME * 2),
    ] {
        let error = Round::open(&key, "tools/call", &mut split, None, at).unwrap_err();
        assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
    }
    assert!(Round::open(&key(), "tools/call", &mut retry("a", state), None, now).is_ok());
}

#[test]
fn a_state_is_bound_to_the_caller_it_was_sealed_for() {
    let now = SystemTime::now();
    let seal_for = |principal: Option<&str>| {
        let mut first = split("tools/call", params(json!({"name": "a"}))).unwrap();
        let round = Round::open(&key(), "tools/call", &mut first, principal, now).unwrap();
        let _ = round.ask::<ElicitResult>(None, elicit).unwrap();
        let interim: Value = serde_json::from_str(round.end(&key(), now).unwrap().get()).unwrap();
        interim["requestState"].as_str().unwrap().to_owned()
    };
    let retry = |state: &str| {
        split(
            "tools/call",
            params(json!({"name": "a", "requestState": state})),
        )
        .unwrap()
    };
    // The retry carrying `state`, presented by `caller`.
    let open =
        |state: &str, caller| Round::open(&key(), "tools/call", &mut retry(state), caller, now);
    let ada = seal_for(Some("issuer ada"));
    assert!(open(&ada, Some("issuer ada")).is_ok());
    // Another caller, or none, presenting it: another request.
    for other in [Some("issuer bob"), None] {
        let error = open(&ada, other).unwrap_err();
        assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
    }
    // Nor does a state sealed for no known caller serve an authenticated one.
    let anyone = seal_for(None);
    assert!(open(&anyone, Some("issuer ada")).is_err());
}

#[test]
fn a_state_binds_what_the_params_say_not_how_they_are_written() {
    let now = SystemTime::now();
    let raw = |text: &str| Some(RawValue::from_string(text.to_owned()).unwrap());
    let first =
        raw(r#"{"name":"é","arguments":{"b":[1,{"y":2,"x":"\"q\""}],"a":1.5},"_meta":{"k":1}}"#);
    let state = serde_json::to_string(&first_state(first, None, now)).unwrap();
    // The same params: other key order and spacing, escapes, another `_meta`.
    let same = format!(
        r#"{{ "requestState": {state}, "arguments": {{"a": 1.5, "b": [1, {{"x": "\u0022q\"", "y": 2}}]}}, "\u006eame": "\u00e9", "_meta": {{"other": true}} }}"#
    );
    let mut retry = split("tools/call", raw(&same)).unwrap();
    let seen: Value = serde_json::from_str(retry.params.as_deref().unwrap().get()).unwrap();
    assert_eq!(
        seen,
        json!({"name": "é", "arguments": {"a": 1.5, "b": [1, {"x": "\"q\"", "y": 2}]},
            "_meta": {"other": true}})
    );
    assert!(Round::open(&key(), "tools/call", &mut retry, None, now).is_ok());
    // Other params: refused.
    let other = format!(
        r#"{{"requestState":{state},"name":"é","arguments":{{"b":[1,{{"y":2,"x":"\"q\""}}],"a":1.25}}}}"#
    );
    let mut retry = split("tools/call", raw(&other)).unwrap();
    let error = Round::open(&key(), "tools/call", &mut retry, None, now).unwrap_err();
    assert!(
        error.message.contains("another request"),
        "{}",
        error.message
    );
    // A state sealed for no params fits empty params, and not a request with some.
    let state = serde_json::to_string(&first_state(None, None, now)).unwrap();
    let mut empty = split("tools/call", raw(&format!(r#"{{"requestState":{state}}}"#))).unwrap();
    assert!(Round::open(&key(), "tools/call", &mut empty, None, now).is_ok());
    let mut more = split(
        "tools/call",
        raw(&format!(r#"{{"requestState":{state},"a":1}}"#)),
    )
    .unwrap();
    assert!(Round::open(&key(), "tools/call", &mut more, None, now).is_err());
}

#[test]
fn a_state_of_another_layout_is_refused_even_when_signed() {
    let answers = b"{}";
    let mut stale = vec![FORMAT_ONCE + 1];
    stale.extend_from_slice(&[0; HEAD - 1]);
    stale.extend_from_slice(answers);
    let mut bad_answers = vec![FORMAT];
    bad_answers.extend_from_slice(&[0; HEAD - 1]);
    bad_answers.extend_from_slice(b"[1]");
    for payload in [
        Vec::new(),
        vec![FORMAT; HEAD - 1],
        br#"{"method":"tools/call","answers":{}}"#.to_vec(),
        stale,
        bad_answers,
    ] {
        let tag = key().mac(&payload).finalize().into_bytes();
        let state = format!("{}.{}", base64::encode(&payload), base64::encode(&tag));
        let error = unseal(&key(), &state).err().expect("refused");
        assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
    }
}

/// The canonical JSON the digest hashes, written the plain way.
fn canonical(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let members: Vec<String> = keys
                .into_iter()
                .map(|k| {
                    format!(
                        "{}:{}",
                        serde_json::to_string(k).unwrap(),
                        canonical(&map[k])
                    )
                })
                .collect();
            format!("{{{}}}", members.join(","))
        }
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(canonical).collect();
            format!("[{}]", items.join(","))
        }
        other => serde_json::to_string(other).unwrap(),
    }
}

#[test]
fn the_digest_is_that_of_the_params_canonical_json_without_meta() {
    for text in [
        r#"{"name":"a","arguments":{"z":1,"y":[true,null,2.5e3,"\u0001\"\\/é"]}}"#,
        r#"{ "_meta": {"k": [1]}, "b\ty": "x\ny", "a": {"d": {}, "c": []}, "name": "plain" }"#,
        r#"{"\u005fmeta":1,"n":-0,"m":1E2,"s":"tab\there"}"#,
        r#"{}"#,
        r#"[3,{"b":1,"a":2}]"#,
    ] {
        let raw = RawValue::from_string(text.to_owned()).unwrap();
        let mut value: Value = serde_json::from_str(text).unwrap();
        if let Value::Object(map) = &mut value {
            map.remove("_meta");
        }
        let mut expected = Sha256::new();
        expected.update(b"tools/call\0");
        expected.update(canonical(&value).as_bytes());
        let expected: Digest32 = expected.finalize().into();
        assert_eq!(digest("tools/call", Some(&raw)), expected, "{text}");
    }
    assert_eq!(
        digest("tools/call", None),
        digest("tools/call", Some(&to_raw(&json!({})).unwrap()))
    );
}

#[test]
fn the_split_keeps_every_other_member_as_sent() {
    let text = r#"{"q\"k":1,"c\u0001":[ 1 ,2],"inputResponses":{},"t":"\u00e9","t":"last"}"#;
    let split = split(
        "tools/call",
        Some(RawValue::from_string(text.to_owned()).unwrap()),
    )
    .unwrap();
    let seen: Value = serde_json::from_str(split.params.as_deref().unwrap().get()).unwrap();
    assert_eq!(seen, json!({"q\"k": 1, "c\u{1}": [1, 2], "t": "last"}));
}

#[test]
fn a_malformed_answer_or_responses_field_is_refused() {
    assert!(split("tools/call", params(json!({"inputResponses": null}))).is_err());
    assert!(split("tools/call", params(json!({"requestState": 3}))).is_err());
    let now = SystemTime::now();
    let state = first_state(None, Some("k"), now);
    let mut retry = split(
        "tools/call",
        params(json!({
            "inputResponses": {"k": 12345},
            "requestState": state,
        })),
    )
    .unwrap();
    // The digest covers the params without the two MRTR fields: none here either.
    let round = Round::open(&key(), "tools/call", &mut retry, None, now).unwrap();
    assert!(round.ask::<ElicitResult>(Some("k"), elicit).is_err());
    assert_eq!(round.fatal().unwrap().code, ErrorCode::INVALID_PARAMS);
}

#[test]
fn a_retry_member_is_found_wherever_its_name_stands() {
    for text in [
        r#"{"inputResponses":{}}"#,
        r#"{"name":"t","requestState":"s"}"#,
        r#"{"arguments":{"x":{"inputResponses":1}}}"#,
        r#"{"a":"RS","b":{"S":"R","requestState":"S"}}"#,
    ] {
        assert!(names_retry_member(text), "{text}");
    }
    for text in [
        "",
        "R",
        "S",
        r#"{"inputResponses"#,
        r#"{"InputResponses":{},"requeststate":"s"}"#,
        r#"{"inputRequests":"State","Responses":"requestS"}"#,
        r#"{"name":"RS","arguments":{"text":"SR \"inputResponses\\"}}"#,
    ] {
        assert!(!names_retry_member(text), "{text}");
    }
}
