//! JSON-RPC framing and message encoding.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::json;
use udn_ovsdb::jsonrpc::{
    FramingError, JsonSplitter, Message, MessageError, Notification, RawMessage, Request, Response,
    encode_request,
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

#[test]
fn frames_hand_out_whole_messages_in_place_and_copy_split_ones_once() {
    let mut s = JsonSplitter::new(1024);
    let chunk = br#" {"a":"}"} [1] {"b":"#;
    let mut frames = s.frames(chunk);
    let range = chunk.as_ptr_range();
    let first = frames.next_message().unwrap().unwrap();
    assert_eq!(first, br#"{"a":"}"}"#);
    assert!(
        range.contains(&first.as_ptr()),
        "not borrowed from the chunk"
    );
    assert_eq!(frames.next_message().unwrap().unwrap(), b"[1]");
    assert!(frames.next_message().is_none());
    assert!(s.has_partial());
    let mut frames = s.frames(br#"[2]} {}"#);
    assert_eq!(frames.next_message().unwrap().unwrap(), br#"{"b":[2]}"#);
    assert_eq!(frames.next_message().unwrap().unwrap(), b"{}");
    assert!(frames.next_message().is_none());
    assert!(!s.has_partial());
    let mut frames = s.frames(b"{} x {}");
    assert_eq!(frames.next_message().unwrap().unwrap(), b"{}");
    assert_eq!(
        frames.next_message().unwrap(),
        Err(FramingError::UnexpectedByte { byte: b'x' })
    );
    assert!(
        frames.next_message().is_none(),
        "the rest of the chunk is dropped"
    );
}

#[test]
fn raw_messages_borrow_their_parts() {
    let bytes = br#"{"id":null,"method":"update3","params":["udn", {"T": {}}]}"#;
    let RawMessage::Notification(n) = RawMessage::from_slice(bytes).unwrap() else {
        panic!("not a notification")
    };
    assert_eq!(n.method, "update3");
    assert_eq!(n.params.get(), r#"["udn", {"T": {}}]"#);
    let RawMessage::Response(r) = RawMessage::from_slice(br#"{"id":7,"error":"e"}"#).unwrap()
    else {
        panic!("not a response")
    };
    assert_eq!(
        (r.id.get(), r.result.get(), r.error.get()),
        ("7", "null", r#""e""#)
    );
    let RawMessage::Request(r) =
        RawMessage::from_slice(br#"{"method":"echo","params":[],"id":"x","id":"y"}"#).unwrap()
    else {
        panic!("not a request")
    };
    assert_eq!((r.id.get(), &*r.method), (r#""y""#, "echo"));
    for bad in [
        &b"{"[..],
        br#"[1]"#,
        br#"{"method":1,"params":[]}"#,
        br#"{"method":"m","params":{}}"#,
        br#"{"params":[]}"#,
        br#"{"id":1}"#,
    ] {
        assert_eq!(
            RawMessage::from_slice(bad).unwrap_err(),
            Message::from_slice(bad).unwrap_err()
        );
    }
}

#[test]
fn requests_encode_straight_from_their_parameters() {
    let params = [
        json!("OVN_Northbound"),
        json!({"op": "comment", "comment": "x"}),
    ];
    let mut out = b"prefix ".to_vec();
    encode_request(&mut out, &7u64, "transact", &params).unwrap();
    let message = Message::Request(Request {
        id: json!(7),
        method: "transact".into(),
        params: params.to_vec(),
    });
    assert_eq!(out, [b"prefix ".as_slice(), &message.to_vec()].concat());
    assert_eq!(
        String::from_utf8(message.to_vec()).unwrap(),
        r#"{"method":"transact","params":["OVN_Northbound",{"op":"comment","comment":"x"}],"id":7}"#
    );
}
