//! Property tests over the client's wire decoding path: framing -> JSON-RPC message -> monitor
//! update -> replica. Random, truncated and corrupted input gives errors, never panics; the
//! direct path the client takes (`frames`, `RawMessage`, the `*_slice` decoders) gives the same
//! updates and errors as the JSON tree path.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use proptest::prelude::*;
use serde_json::{Value as Json, json};
use udn_ovsdb::jsonrpc::{JsonSplitter, Message, RawMessage};
use udn_ovsdb::nb;
use udn_ovsdb::protocol::{MonitorSinceReply, MonitorUpdate, TableUpdates};
use udn_ovsdb::replica::Replica;
use udn_ovsdb::schema::{DbSchema, Requirements};

const UUIDS: [&str; 3] = [
    "00000000-0000-0000-0000-00000000000a",
    "00000000-0000-0000-0000-00000000000b",
    "6e64754b-83cb-4415-bd01-8c04d103af02",
];

fn replica() -> Replica {
    let schema = DbSchema::from_text(nb::SCHEMA_JSON).unwrap();
    let everything = Requirements::everything_in(&schema);
    Replica::new(
        Arc::new(schema.restricted_to(&everything)),
        &["k8s.ovn.org/network"],
    )
}

/// JSON biased towards the shapes monitor updates have.
fn update_json() -> impl Strategy<Value = Json> {
    let key = prop_oneof![
        Just("initial".to_owned()),
        Just("insert".to_owned()),
        Just("modify".to_owned()),
        Just("delete".to_owned()),
        Just("old".to_owned()),
        Just("new".to_owned()),
        Just("Logical_Switch".to_owned()),
        Just("ACL".to_owned()),
        Just("name".to_owned()),
        Just("ports".to_owned()),
        Just("priority".to_owned()),
        Just("external_ids".to_owned()),
        prop::sample::select(UUIDS.to_vec()).prop_map(str::to_owned),
        any::<String>(),
    ];
    let leaf = prop_oneof![
        Just(Json::Null),
        any::<bool>().prop_map(Json::Bool),
        any::<i64>().prop_map(Json::from),
        any::<f64>().prop_map(Json::from),
        prop_oneof![
            Just("uuid".to_owned()),
            Just("set".to_owned()),
            Just("map".to_owned()),
            prop::sample::select(UUIDS.to_vec()).prop_map(str::to_owned),
            any::<String>()
        ]
        .prop_map(Json::String),
    ];
    leaf.prop_recursive(5, 48, 4, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Json::Array),
            prop::collection::btree_map(key.clone(), inner, 0..4)
                .prop_map(|m| Json::Object(m.into_iter().collect())),
        ]
    })
}

/// A well-formed update3 notification for the NB schema.
fn valid_update3() -> impl Strategy<Value = Json> {
    let row = (any::<String>(), 0i64..65535, prop::collection::vec(0usize..3, 0..3)).prop_map(
        |(name, priority, ports)| {
            json!({"name": name, "priority": priority,
                   "ports": ["set", ports.iter().map(|i| json!(["uuid", UUIDS[*i]])).collect::<Vec<_>>()],
                   "external_ids": ["map", [["k8s.ovn.org/network", "blue"]]]})
        },
    );
    let change = prop_oneof![
        row.clone().prop_map(|r| json!({"insert": r})),
        row.clone().prop_map(|r| json!({"initial": r})),
        row.prop_map(|r| json!({"modify": r})),
        Just(json!({"delete": null})),
    ];
    prop::collection::btree_map(prop::sample::select(UUIDS.to_vec()), change, 0..3).prop_map(
        |rows| {
            let rows: serde_json::Map<String, Json> =
                rows.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
            json!({"id": null, "method": "update3",
                   "params": ["udn", UUIDS[0], {"Logical_Switch": rows}]})
        },
    )
}

/// Decodes a framed message the way the client's reader does, applying updates to `replica`,
/// and checks the JSON tree path decodes it alike.
fn decode_all(bytes: &[u8], replica: &mut Replica) {
    let tree = Message::from_slice(bytes);
    let raw = match RawMessage::from_slice(bytes) {
        Ok(raw) => raw,
        Err(error) => {
            assert_eq!(Err(error), tree);
            return;
        }
    };
    let RawMessage::Notification(n) = raw else {
        return;
    };
    let direct = MonitorUpdate::from_notification_slice(&n.method, n.params.get().as_bytes());
    let Ok(Message::Notification(tree)) = tree else {
        panic!("{tree:?}")
    };
    assert_eq!(
        direct,
        MonitorUpdate::from_notification(&tree.method, &tree.params)
    );
    if let Ok(Some(update)) = direct {
        let _ = replica.apply(&update.updates);
    }
}

/// The direct decoders of monitor replies and updates agree with the tree decoders.
fn slices_agree(j: &Json) {
    let text = j.to_string();
    let j = &serde_json::from_str::<Json>(&text).unwrap();
    let bytes = text.as_bytes();
    assert_eq!(
        TableUpdates::from_v1_slice(bytes),
        TableUpdates::from_v1_json(j)
    );
    assert_eq!(
        TableUpdates::from_v2_slice(bytes),
        TableUpdates::from_v2_json(j)
    );
    assert_eq!(
        MonitorSinceReply::from_slice(bytes),
        MonitorSinceReply::from_json(j)
    );
}

proptest! {
    #[test]
    fn arbitrary_update_json_never_panics(j in update_json(), id in update_json()) {
        let mut r = replica();
        for method in ["update", "update2", "update3", "locked"] {
            for params in [vec![id.clone(), j.clone()], vec![id.clone(), json!(UUIDS[0]), j.clone()]] {
                if let Ok(Some(update)) = MonitorUpdate::from_notification(method, &params) {
                    let _ = r.apply(&update.updates);
                }
            }
        }
        for updates in [TableUpdates::from_v1_json(&j), TableUpdates::from_v2_json(&j)]
            .into_iter()
            .flatten()
        {
            let _ = r.apply(&updates);
        }
        let _ = MonitorSinceReply::from_json(&j);
        let _ = MonitorSinceReply::from_json(&json!([false, UUIDS[1], j]));
        slices_agree(&j);
        slices_agree(&json!([false, UUIDS[1], j]));
        for method in ["update", "update2", "update3", "locked"] {
            for params in [json!([id, j]), json!([id, UUIDS[0], j]), json!([j])] {
                let text = params.to_string();
                let Json::Array(tree) = serde_json::from_str::<Json>(&text).unwrap() else {
                    unreachable!()
                };
                prop_assert_eq!(
                    MonitorUpdate::from_notification_slice(method, text.as_bytes()),
                    MonitorUpdate::from_notification(method, &tree)
                );
            }
        }
    }

    #[test]
    fn valid_updates_decode_and_apply_in_any_chunking(
        msgs in prop::collection::vec(valid_update3(), 1..5),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..8),
    ) {
        let stream: Vec<u8> = msgs.iter().flat_map(|m| m.to_string().into_bytes()).collect();
        let mut points: Vec<usize> = cuts.iter().map(|c| c.index(stream.len() + 1)).collect();
        points.extend([0, stream.len()]);
        points.sort_unstable();
        let mut splitter = JsonSplitter::new(1 << 20);
        let mut decoded = 0;
        let mut r = replica();
        for w in points.windows(2) {
            let mut frames = splitter.frames(&stream[w[0]..w[1]]);
            while let Some(bytes) = frames.next_message() {
                let bytes = bytes.unwrap();
                let RawMessage::Notification(n) = RawMessage::from_slice(bytes).unwrap() else {
                    panic!("not a notification")
                };
                let update = MonitorUpdate::from_notification_slice(&n.method, n.params.get().as_bytes())
                    .unwrap()
                    .unwrap();
                prop_assert_eq!(&update.monitor_id, &json!("udn"));
                decode_all(bytes, &mut r);
                decoded += 1;
            }
        }
        prop_assert_eq!(decoded, msgs.len());
    }

    #[test]
    fn truncated_or_corrupted_updates_never_panic(
        msg in valid_update3(),
        cut in any::<prop::sample::Index>(),
        flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..4),
    ) {
        let mut bytes = msg.to_string().into_bytes();
        let truncated = &bytes[..cut.index(bytes.len())];
        let mut splitter = JsonSplitter::new(1 << 20);
        // A strict prefix of one message never completes a message.
        prop_assert!(splitter.push(truncated).map(|m| m.is_empty()).unwrap_or(true));
        let mut r = replica();
        decode_all(truncated, &mut r);
        let len = bytes.len();
        for (at, byte) in flips {
            bytes[at.index(len)] = byte;
        }
        let mut splitter = JsonSplitter::new(1 << 20);
        if let Ok(messages) = splitter.push(&bytes) {
            for m in messages {
                decode_all(&m, &mut r);
            }
        }
        decode_all(&bytes, &mut r);
    }

    #[test]
    fn random_bytes_through_the_reader_path_never_panic(
        chunks in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..64), 0..6),
    ) {
        let mut splitter = JsonSplitter::new(256);
        let mut r = replica();
        for chunk in chunks {
            match splitter.push(&chunk) {
                Ok(messages) => messages.iter().for_each(|m| decode_all(m, &mut r)),
                Err(_) => splitter = JsonSplitter::new(256),
            }
        }
    }
}
