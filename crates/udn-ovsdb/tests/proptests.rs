//! Property tests: value round-trips, framing under random chunking, no panics on junk.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use proptest::prelude::*;
use serde_json::{Value as Json, json};
use udn_ovsdb::jsonrpc::{JsonSplitter, Message, Notification, Request, Response};
use udn_ovsdb::protocol::{Atom, Uuid, Value, decode_transact_result, row_from_json};

fn uuid() -> impl Strategy<Value = Uuid> {
    "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
        .prop_map(|s| Uuid::parse(&s).unwrap())
}

fn atom() -> impl Strategy<Value = Atom> {
    prop_oneof![
        any::<i64>().prop_map(Atom::Integer),
        // Exactly representable reals with short decimal forms survive text round-trips.
        any::<i32>().prop_map(|i| Atom::Real(f64::from(i) / 8.0)),
        any::<bool>().prop_map(Atom::Boolean),
        any::<String>().prop_map(Atom::String),
        uuid().prop_map(Atom::Uuid),
        "[_a-zA-Z][_a-zA-Z0-9]{0,10}".prop_map(Atom::NamedUuid),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    prop_oneof![
        atom().prop_map(Value::Atom),
        prop::collection::vec(atom(), 0..5).prop_map(Value::Set),
        prop::collection::vec((atom(), atom()), 0..5).prop_map(Value::Map),
    ]
}

fn any_json() -> impl Strategy<Value = Json> {
    let leaf = prop_oneof![
        Just(Json::Null),
        any::<bool>().prop_map(Json::Bool),
        any::<i64>().prop_map(Json::from),
        any::<f64>().prop_map(Json::from),
        prop_oneof![
            Just("uuid".to_owned()),
            Just("named-uuid".to_owned()),
            Just("set".to_owned()),
            Just("map".to_owned()),
            any::<String>()
        ]
        .prop_map(Json::String),
    ];
    leaf.prop_recursive(4, 32, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Json::Array),
            prop::collection::btree_map(
                prop_oneof![
                    Just("method".to_owned()),
                    Just("params".to_owned()),
                    Just("id".to_owned()),
                    Just("result".to_owned()),
                    Just("error".to_owned()),
                    Just("uuid".to_owned()),
                    Just("rows".to_owned()),
                    Just("count".to_owned()),
                    any::<String>()
                ],
                inner,
                0..4
            )
            .prop_map(|m| Json::Object(m.into_iter().collect())),
        ]
    })
}

fn params() -> impl Strategy<Value = Vec<Json>> {
    prop::collection::vec(value().prop_map(|v| v.to_json()), 0..4)
}

fn message() -> impl Strategy<Value = Message> {
    prop_oneof![
        (any::<i64>(), "[a-z_]{1,8}", params()).prop_map(|(id, method, params)| Message::Request(
            Request {
                id: json!(id),
                method,
                params
            }
        )),
        ("[a-z_]{1,8}", params())
            .prop_map(|(method, params)| Message::Notification(Notification { method, params })),
        (any::<String>(), value()).prop_map(|(id, v)| Message::Response(Response {
            id: json!(id),
            result: v.to_json(),
            error: Json::Null
        })),
    ]
}

proptest! {
    #[test]
    fn value_round_trips_through_json(v in value()) {
        prop_assert_eq!(&Value::from_json(&v.to_json()).unwrap(), &v);
        let text = v.to_json().to_string();
        let parsed: Json = serde_json::from_str(&text).unwrap();
        prop_assert_eq!(Value::from_json(&parsed).unwrap(), v);
    }

    #[test]
    fn splitter_yields_exactly_the_messages_under_any_chunking(
        msgs in prop::collection::vec(message(), 0..6),
        seps in prop::collection::vec("[ \t\r\n]{0,3}", 6),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..10),
    ) {
        let encoded: Vec<Vec<u8>> = msgs.iter().map(Message::to_vec).collect();
        let mut stream = Vec::new();
        for (m, sep) in encoded.iter().zip(&seps) {
            stream.extend_from_slice(sep.as_bytes());
            stream.extend_from_slice(m);
        }
        let mut points: Vec<usize> = cuts.iter().map(|c| c.index(stream.len() + 1)).collect();
        points.push(0);
        points.push(stream.len());
        points.sort_unstable();
        let mut s = JsonSplitter::new(1 << 20);
        let mut out = Vec::new();
        for w in points.windows(2) {
            out.extend(s.push(&stream[w[0]..w[1]]).unwrap());
        }
        prop_assert!(!s.has_partial());
        prop_assert_eq!(&out, &encoded);
        let decoded: Vec<Message> = out.iter().map(|b| Message::from_slice(b).unwrap()).collect();
        prop_assert_eq!(decoded, msgs);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..256), max in 1usize..64) {
        let mut s = JsonSplitter::new(max);
        let _ = s.push(&bytes);
        let _ = Message::from_slice(&bytes);
    }

    #[test]
    fn arbitrary_json_never_panics(j in any_json(), n in 0usize..4) {
        let _ = Value::from_json(&j);
        let _ = Atom::from_json(&j);
        let _ = row_from_json(&j);
        let _ = Message::from_json(&j);
        let _ = decode_transact_result(n, &j);
    }
}
