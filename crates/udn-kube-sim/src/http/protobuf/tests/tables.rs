//! Every generated table against the prost type of the same message in `k8s-pb`: each
//! field number is a field of that type with the same name and a compatible wire type,
//! and the table has every field the prost type has.

use std::fmt::Debug;

use super::super::generated;
use super::super::schema::{Field, Kind, Message, Shape};
use super::super::wire::{put_bytes_field, put_fixed64_field, put_varint_field};

/// One sample value of `kind` as field `number`.
fn sample(number: u32, kind: Kind, out: &mut Vec<u8>) {
    match kind {
        Kind::String | Kind::Bytes => put_bytes_field(out, number, b"x"),
        Kind::Bool => put_varint_field(out, number, 1),
        Kind::Int32 | Kind::Int64 => put_varint_field(out, number, 7),
        Kind::Float64 => put_fixed64_field(out, number, 1.5f64.to_bits()),
        // Messages, including the hand-transcoded ones: an empty message.
        _ => put_bytes_field(out, number, b""),
    }
}

fn sample_field(field: &Field) -> Vec<u8> {
    let mut out = Vec::new();
    match field.shape {
        Shape::Single { .. } | Shape::Inline | Shape::Repeated => {
            sample(field.number, field.kind, &mut out);
        }
        Shape::Map(key) => {
            let mut entry = Vec::new();
            sample(1, key, &mut entry);
            sample(2, field.kind, &mut entry);
            put_bytes_field(&mut out, field.number, &entry);
        }
    }
    out
}

/// The top-level fields of a pretty `Debug` of a prost message: (name, set).
fn debug_fields(text: &str) -> Vec<(String, bool)> {
    text.lines()
        .filter_map(|line| {
            let rest = line.strip_prefix("    ")?;
            if rest.starts_with(' ') {
                return None;
            }
            let (name, value) = rest.split_once(": ")?;
            let empty = matches!(value, "None," | "[]," | "{},");
            Some((name.trim_start_matches("r#").to_owned(), !empty))
        })
        .collect()
}

fn squash(name: &str) -> String {
    name.chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect::<String>()
        .to_ascii_lowercase()
}

fn check<T: prost::Message + Default + Debug>(table: &Message, failures: &mut Vec<String>) {
    let all = debug_fields(&format!("{:#?}", T::default()));
    if all.len() != table.fields.len() {
        let known: Vec<String> = table.fields.iter().map(|f| squash(f.proto)).collect();
        let missing: Vec<&str> = all
            .iter()
            .map(|(name, _)| name.as_str())
            .filter(|name| !known.contains(&squash(name)))
            .collect();
        failures.push(format!(
            "{}: {} fields in the table, {} in k8s-pb (missing: {missing:?})",
            table.name,
            table.fields.len(),
            all.len()
        ));
    }
    for field in table.fields {
        let bytes = sample_field(field);
        let decoded = match T::decode(bytes.as_slice()) {
            Ok(decoded) => decoded,
            Err(error) => {
                failures.push(format!("{}.{}: {error}", table.name, field.proto));
                continue;
            }
        };
        let set: Vec<String> = debug_fields(&format!("{decoded:#?}"))
            .into_iter()
            .filter(|(_, set)| *set)
            .map(|(name, _)| name)
            .collect();
        if set.len() != 1 || squash(&set[0]) != squash(field.proto) {
            failures.push(format!(
                "{}: field {} ({}) sets {set:?} in k8s-pb",
                table.name, field.number, field.proto
            ));
        }
    }
}

#[test]
fn tables_match_k8s_pb() {
    let mut failures = Vec::new();
    let mut checked = 0;
    macro_rules! check_one {
        ($ty:ty, $table:ident) => {
            check::<$ty>(&generated::$table, &mut failures);
            checked += 1;
        };
    }
    generated::for_each_k8s_pb_message!(check_one);
    assert!(checked > 100, "only {checked} messages checked");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_served_builtin_kind_has_a_protobuf_form() {
    let sim = crate::sim::Sim::new(crate::sim::SimConfig::default());
    for rt in sim.resource_types() {
        let (api_version, kind) = (rt.api_version(), rt.kind);
        assert!(
            super::super::has_form(&api_version, &kind),
            "{kind} of {api_version} has no table: add it to xtask's codegen_protobuf KINDS"
        );
        assert!(super::super::has_form(&api_version, &format!("{kind}List")));
    }
}
