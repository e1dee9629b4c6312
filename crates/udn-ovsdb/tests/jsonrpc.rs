//! JSON-RPC framing and message encoding.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::json;
use udn_ovsdb::jsonrpc::{
    FramingError, JsonSplitter, Message, MessageError, Notification, Request, Response,
};

#[test]
fn splits_several_messages_in_one_chunk_with_whitespace() {
    let mut s = JsonSplitter::new(1024);
    let out = s.push(b" {\"a\":1}\n\r\t[1,[2]]  {}").unwrap();
    assert_eq!(
        out,
        vec![b"{\"a\":1}".to_vec(), b"[1,[2]]".to_vec(), b"{}".to_vec()]
    );
    assert!(!s.has_partial());
}

#[test]
fn message_split_across_chunks_and_braces_in_strings() {
    let text = br#"{"s":"a \"}\" b \\","t":"{[","n":{"x":[1]}}"#;
    let mut s = JsonSplitter::new(1024);
    let mut out = Vec::new();
    for b in text.iter() {
        out.extend(s.push(std::slice::from_ref(b)).unwrap());
    }
    assert_eq!(out, vec![text.to_vec()]);
    let v: serde_json::Value = serde_json::from_slice(&out[0]).unwrap();
    assert_eq!(v["s"], json!("a \"}\" b \\"));
}

#[test]
fn partial_is_kept() {
    let mut s = JsonSplitter::new(1024);
    assert!(s.push(b"{\"a\":").unwrap().is_empty());
    assert!(s.has_partial());
    assert_eq!(s.push(b"2}").unwrap(), vec![b"{\"a\":2}".to_vec()]);
}

#[test]
fn too_large_and_unexpected_bytes() {
    let mut s = JsonSplitter::new(4);
    assert_eq!(
        s.push(b"{\"ab\":1}"),
        Err(FramingError::TooLarge { max: 4 })
    );
    assert_eq!(s.push(b"[1]").unwrap(), vec![b"[1]".to_vec()]);
    assert_eq!(
        s.push(b"x"),
        Err(FramingError::UnexpectedByte { byte: b'x' })
    );
    assert_eq!(
        s.push(b"}"),
        Err(FramingError::UnexpectedByte { byte: b'}' })
    );
}

#[test]
fn message_of_exactly_max_bytes_is_accepted() {
    let mut s = JsonSplitter::new(7);
    assert_eq!(s.push(b"{\"a\":1}").unwrap(), vec![b"{\"a\":1}".to_vec()]);
    assert_eq!(
        s.push(b"{\"a\":10}"),
        Err(FramingError::TooLarge { max: 7 })
    );
}

#[test]
fn messages_round_trip() {
    let req = Message::Request(Request {
        id: json!(7),
        method: "transact".into(),
        params: vec![
            json!("OVN_Northbound"),
            json!({"op": "comment", "comment": "x"}),
        ],
    });
    assert_eq!(
        req.to_json(),
        json!({"method": "transact", "params": ["OVN_Northbound", {"op": "comment", "comment": "x"}], "id": 7})
    );
    let note = Message::Notification(Notification {
        method: "update".into(),
        params: vec![json!(null), json!({})],
    });
    assert_eq!(
        note.to_json(),
        json!({"method": "update", "params": [null, {}], "id": null})
    );
    let resp = Message::Response(Response {
        id: json!("echo"),
        result: json!([]),
        error: json!(null),
    });
    assert_eq!(
        resp.to_json(),
        json!({"id": "echo", "result": [], "error": null})
    );
    for m in [req, note, resp] {
        assert_eq!(Message::from_slice(&m.to_vec()).unwrap(), m);
    }
}

#[test]
fn notification_without_id_and_error_response() {
    let n = Message::from_slice(br#"{"method":"locked","params":["l"]}"#).unwrap();
    assert_eq!(
        n,
        Message::Notification(Notification {
            method: "locked".into(),
            params: vec![json!("l")]
        })
    );
    let r = Message::from_slice(br#"{"id":1,"error":"unknown method"}"#).unwrap();
    assert_eq!(
        r,
        Message::Response(Response {
            id: json!(1),
            result: json!(null),
            error: json!("unknown method")
        })
    );
}

#[test]
fn malformed_messages_are_typed_errors() {
    assert!(matches!(
        Message::from_slice(b"{"),
        Err(MessageError::Json { .. })
    ));
    for bad in [
        r#"[1]"#,
        r#"{"method":1,"params":[]}"#,
        r#"{"method":"m","params":{}}"#,
        r#"{"method":"m"}"#,
        r#"{"params":[]}"#,
        r#"{"id":1}"#,
    ] {
        assert!(
            matches!(
                Message::from_slice(bad.as_bytes()),
                Err(MessageError::Invalid { .. })
            ),
            "{bad}"
        );
    }
}
