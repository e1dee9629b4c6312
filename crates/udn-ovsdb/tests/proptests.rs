//! Property tests: value round-trips, framing under random chunking, no panics on junk; the
//! direct codecs (serde, `*_slice`, `RawMessage`, `JsonSplitter::frames`) agree with the JSON
//! tree ones and with the byte-at-a-time splitter they replaced.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use proptest::prelude::*;
use serde_json::{Value as Json, json};
use udn_ovsdb::jsonrpc::{
    FramingError, JsonSplitter, Message, Notification, RawMessage, Request, Response,
};
use udn_ovsdb::protocol::{
    Atom, Condition, ConditionFunction, Mutation, Mutator, Operation, Row, TransactParams, Uuid,
    Value, WaitUntil, decode_transact_result, decode_transact_result_slice, row_from_json,
};

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

fn row() -> impl Strategy<Value = Row> {
    prop::collection::btree_map("[a-z_]{1,6}", value(), 0..4)
}

fn condition() -> impl Strategy<Value = Condition> {
    let function = prop::sample::select(vec![
        ConditionFunction::Equal,
        ConditionFunction::NotEqual,
        ConditionFunction::LessThan,
        ConditionFunction::Includes,
        ConditionFunction::Excludes,
    ]);
    ("[a-z_]{1,6}", function, value()).prop_map(|(column, function, value)| Condition {
        column,
        function,
        value,
    })
}

fn operation() -> impl Strategy<Value = Operation> {
    let table = "[A-Z][a-z_]{0,8}";
    let conditions = || prop::collection::vec(condition(), 0..3);
    let columns = || prop::collection::vec("[a-z_]{1,6}", 0..3);
    let mutator = prop::sample::select(vec![Mutator::Add, Mutator::Insert, Mutator::Delete]);
    let mutation =
        ("[a-z_]{1,6}", mutator, value()).prop_map(|(column, mutator, value)| Mutation {
            column,
            mutator,
            value,
        });
    prop_oneof![
        (table, row(), prop::option::of("[a-z_]{1,6}")).prop_map(|(table, row, uuid_name)| {
            Operation::Insert {
                table,
                row,
                uuid_name,
                uuid: None,
            }
        }),
        (table, conditions(), prop::option::of(columns())).prop_map(|(table, where_, columns)| {
            Operation::Select {
                table,
                where_,
                columns,
            }
        }),
        (table, conditions(), row()).prop_map(|(table, where_, row)| Operation::Update {
            table,
            where_,
            row
        }),
        (table, conditions(), prop::collection::vec(mutation, 0..3)).prop_map(
            |(table, where_, mutations)| Operation::Mutate {
                table,
                where_,
                mutations
            }
        ),
        (table, conditions()).prop_map(|(table, where_)| Operation::Delete { table, where_ }),
        (
            table,
            conditions(),
            columns(),
            any::<bool>(),
            prop::collection::vec(row(), 0..2),
            prop::option::of(any::<u64>())
        )
            .prop_map(|(table, where_, columns, equal, rows, timeout_ms)| {
                Operation::Wait {
                    table,
                    where_,
                    columns,
                    until: if equal {
                        WaitUntil::Equal
                    } else {
                        WaitUntil::NotEqual
                    },
                    rows,
                    timeout_ms,
                }
            }),
        any::<String>().prop_map(|lock| Operation::Assert { lock }),
        any::<String>().prop_map(|comment| Operation::Comment { comment }),
    ]
}

/// The byte-at-a-time splitter `JsonSplitter` replaced: the reference for its behaviour.
struct ReferenceSplitter {
    max: usize,
    current: Vec<u8>,
    depth: usize,
    in_string: bool,
    escaped: bool,
}

impl ReferenceSplitter {
    fn new(max: usize) -> Self {
        Self {
            max,
            current: Vec::new(),
            depth: 0,
            in_string: false,
            escaped: false,
        }
    }

    fn reset(&mut self) {
        *self = Self::new(self.max);
    }

    fn push(&mut self, chunk: &[u8]) -> Result<Vec<Vec<u8>>, FramingError> {
        let mut done = Vec::new();
        for &byte in chunk {
            if self.depth == 0 {
                match byte {
                    b' ' | b'\t' | b'\n' | b'\r' => continue,
                    b'{' | b'[' => {}
                    _ => {
                        self.reset();
                        return Err(FramingError::UnexpectedByte { byte });
                    }
                }
            }
            if self.current.len() >= self.max {
                self.reset();
                return Err(FramingError::TooLarge { max: self.max });
            }
            self.current.push(byte);
            if self.in_string {
                if self.escaped {
                    self.escaped = false;
                } else if byte == b'\\' {
                    self.escaped = true;
                } else if byte == b'"' {
                    self.in_string = false;
                }
                continue;
            }
            match byte {
                b'"' => self.in_string = true,
                b'{' | b'[' => self.depth += 1,
                b'}' | b']' => {
                    self.depth = self.depth.saturating_sub(1);
                    if self.depth == 0 {
                        done.push(std::mem::take(&mut self.current));
                    }
                }
                _ => {}
            }
        }
        Ok(done)
    }
}

/// Bytes rich in what framing cares about.
fn framing_bytes() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(
        prop_oneof![
            prop::sample::select(b"{}[]\"\\ \n\tax:,".to_vec()),
            any::<u8>(),
        ],
        0..200,
    )
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

/// The direct decoders give what the tree decoders give for the same text: the same value or the
/// same error.
fn direct_agrees_with_tree(j: &Json, n: usize) {
    let text = j.to_string();
    // The tree of the text itself (serde_json reads some long reals back a bit off).
    let j = &serde_json::from_str::<Json>(&text).unwrap();
    match (serde_json::from_str::<Value>(&text), Value::from_json(j)) {
        (Ok(direct), Ok(tree)) => assert_eq!(direct, tree, "{text}"),
        (Err(_), Err(_)) => {}
        (direct, tree) => panic!("{text}: direct {direct:?}, tree {tree:?}"),
    }
    assert_eq!(
        serde_json::from_str::<Atom>(&text).ok(),
        Atom::from_json(j).ok(),
        "{text}"
    );
    assert_eq!(
        serde_json::from_str::<Row>(&text).ok(),
        row_from_json(j).ok(),
        "{text}"
    );
    assert_eq!(
        decode_transact_result_slice(n, text.as_bytes()),
        decode_transact_result(n, j),
        "{text}"
    );
}

proptest! {
    #[test]
    fn direct_encoding_is_the_json_tree_text(op in operation(), v in value()) {
        prop_assert_eq!(serde_json::to_string(&op).unwrap(), op.to_json().to_string());
        prop_assert_eq!(serde_json::to_string(&v).unwrap(), v.to_json().to_string());
        let ops = vec![op, Operation::Comment { comment: "c".into() }];
        let params = TransactParams { database: "OVN_Northbound", operations: &ops };
        let mut tree = vec![json!("OVN_Northbound")];
        tree.extend(ops.iter().map(Operation::to_json));
        prop_assert_eq!(serde_json::to_string(&params).unwrap(), Json::Array(tree).to_string());
    }

    #[test]
    fn direct_value_decoding_round_trips(v in value()) {
        let text = serde_json::to_string(&v).unwrap();
        prop_assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), v);
    }

    #[test]
    fn direct_decoders_agree_with_tree_decoders(j in any_json(), n in 0usize..4) {
        direct_agrees_with_tree(&j, n);
        for wrapped in [json!([j]), json!([{"uuid": j}, {"rows": [j]}]),
                        json!([{"count": j}, null, {"error": j}])] {
            direct_agrees_with_tree(&wrapped, n);
        }
    }

    #[test]
    fn message_encoding_is_the_json_tree_text(m in message()) {
        prop_assert_eq!(m.to_vec(), m.to_json().to_string().into_bytes());
    }

    #[test]
    fn raw_messages_agree_with_messages(j in any_json(), m in message()) {
        for bytes in [j.to_string().into_bytes(), m.to_vec()] {
            match (RawMessage::from_slice(&bytes), Message::from_slice(&bytes)) {
                (Ok(raw), Ok(message)) => prop_assert_eq!(raw.to_message().unwrap(), message),
                (Err(raw), Err(message)) => prop_assert_eq!(raw, message),
                (raw, message) => prop_assert!(false, "raw {:?} message {:?}", raw, message),
            }
        }
    }

    #[test]
    fn splitter_behaves_as_the_byte_at_a_time_reference(
        chunks in prop::collection::vec(framing_bytes(), 0..5),
        max in 1usize..64,
    ) {
        let (mut fast, mut reference) = (JsonSplitter::new(max), ReferenceSplitter::new(max));
        for chunk in &chunks {
            prop_assert_eq!(fast.push(chunk), reference.push(chunk));
            prop_assert_eq!(fast.has_partial(), !reference.current.is_empty());
        }
    }

    #[test]
    fn frames_yield_the_messages_push_returns(
        msgs in prop::collection::vec(message(), 0..6),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..10),
    ) {
        let stream: Vec<u8> = msgs.iter().flat_map(Message::to_vec).collect();
        let mut points: Vec<usize> = cuts.iter().map(|c| c.index(stream.len() + 1)).collect();
        points.extend([0, stream.len()]);
        points.sort_unstable();
        let (mut framed, mut pushed) = (JsonSplitter::new(1 << 20), JsonSplitter::new(1 << 20));
        let mut out = Vec::new();
        for w in points.windows(2) {
            let chunk = &stream[w[0]..w[1]];
            let mut frames = framed.frames(chunk);
            let mut from_frames = Vec::new();
            while let Some(m) = frames.next_message() {
                from_frames.push(m.unwrap().to_vec());
            }
            prop_assert_eq!(&from_frames, &pushed.push(chunk).unwrap());
            out.extend(from_frames);
        }
        let decoded: Vec<Message> = out
            .iter()
            .map(|b| RawMessage::from_slice(b).unwrap().to_message().unwrap())
            .collect();
        prop_assert_eq!(decoded, msgs);
    }
}
