//! Direct decoding of atoms, values and rows (serde [`Deserialize`]) with the rules of
//! [`Atom::from_json`] and [`Value::from_json`], without a `serde_json::Value` tree in between.
//! Rows ([`Row`](super::Row), a `BTreeMap`) decode through these impls, a later duplicate
//! column winning as it does in a parsed JSON object.

use std::fmt;

use serde::de::{
    self, Deserialize, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor,
};

use super::value::{Atom, Row, Uuid, Value};

/// `["uuid", ...]` and `["named-uuid", ...]` are the only arrays that are atoms.
const ATOM_ARRAYS: &str =
    "arrays are atoms only as [\"uuid\", <string>] or [\"named-uuid\", <string>]";

impl<'de> Deserialize<'de> for Uuid {
    /// A UUID string in 8-4-4-4-12 form (either case).
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_str(UuidVisitor)
    }
}

struct UuidVisitor;

impl Visitor<'_> for UuidVisitor {
    type Value = Uuid;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a UUID string")
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Uuid, E> {
        Uuid::parse(text).map_err(E::custom)
    }
}

/// The first element of an array value: which form the array has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tag {
    Uuid,
    NamedUuid,
    Set,
    Map,
}

struct TagVisitor;

impl Visitor<'_> for TagVisitor {
    type Value = Tag;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("\"uuid\", \"named-uuid\", \"set\" or \"map\"")
    }

    fn visit_str<E: de::Error>(self, tag: &str) -> Result<Tag, E> {
        match tag {
            "uuid" => Ok(Tag::Uuid),
            "named-uuid" => Ok(Tag::NamedUuid),
            "set" => Ok(Tag::Set),
            "map" => Ok(Tag::Map),
            _ => Err(E::custom(ATOM_ARRAYS)),
        }
    }
}

impl<'de> Deserialize<'de> for Tag {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_str(TagVisitor)
    }
}

/// The second element of `["named-uuid", <string>]`.
struct OwnedString;

impl Visitor<'_> for OwnedString {
    type Value = String;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<String, E> {
        Ok(text.to_owned())
    }

    fn visit_string<E: de::Error>(self, text: String) -> Result<String, E> {
        Ok(text)
    }
}

impl<'de> DeserializeSeed<'de> for OwnedString {
    type Value = String;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<String, D::Error> {
        deserializer.deserialize_string(self)
    }
}

/// Fails unless the array has no further element.
fn end<'de, A: SeqAccess<'de>>(seq: &mut A, reason: &'static str) -> Result<(), A::Error> {
    match seq.next_element::<IgnoredAny>()? {
        None => Ok(()),
        Some(_) => Err(de::Error::custom(reason)),
    }
}

/// The rest of a `["uuid", ...]` or `["named-uuid", ...]` array after its tag.
fn tagged_atom<'de, A: SeqAccess<'de>>(tag: Tag, seq: &mut A) -> Result<Atom, A::Error> {
    let atom = match tag {
        Tag::Uuid => seq.next_element::<Uuid>()?.map(Atom::Uuid),
        Tag::NamedUuid => seq.next_element_seed(OwnedString)?.map(Atom::NamedUuid),
        Tag::Set | Tag::Map => None,
    };
    let atom = atom.ok_or_else(|| de::Error::custom(ATOM_ARRAYS))?;
    end(seq, ATOM_ARRAYS)?;
    Ok(atom)
}

/// Numbers as [`Atom::from_json`] reads them: integers that fit `i64` are integers, other
/// numbers reals.
macro_rules! atom_scalars {
    ($out:ty, $wrap:expr) => {
        fn visit_bool<E: de::Error>(self, b: bool) -> Result<$out, E> {
            Ok($wrap(Atom::Boolean(b)))
        }

        fn visit_i64<E: de::Error>(self, i: i64) -> Result<$out, E> {
            Ok($wrap(Atom::Integer(i)))
        }

        #[allow(clippy::cast_precision_loss)]
        fn visit_u64<E: de::Error>(self, u: u64) -> Result<$out, E> {
            Ok($wrap(
                i64::try_from(u).map_or(Atom::Real(u as f64), Atom::Integer),
            ))
        }

        fn visit_f64<E: de::Error>(self, r: f64) -> Result<$out, E> {
            Ok($wrap(Atom::Real(r)))
        }

        fn visit_str<E: de::Error>(self, s: &str) -> Result<$out, E> {
            Ok($wrap(Atom::String(s.to_owned())))
        }

        fn visit_string<E: de::Error>(self, s: String) -> Result<$out, E> {
            Ok($wrap(Atom::String(s)))
        }

        fn visit_unit<E: de::Error>(self) -> Result<$out, E> {
            Err(E::custom("null is not an atom"))
        }

        fn visit_map<M: de::MapAccess<'de>>(self, _map: M) -> Result<$out, M::Error> {
            Err(de::Error::custom("an object is not an atom"))
        }
    };
}

struct AtomVisitor;

impl<'de> Visitor<'de> for AtomVisitor {
    type Value = Atom;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an OVSDB atom")
    }

    atom_scalars!(Atom, std::convert::identity);

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Atom, A::Error> {
        match seq.next_element::<Tag>()? {
            Some(tag @ (Tag::Uuid | Tag::NamedUuid)) => tagged_atom(tag, &mut seq),
            _ => Err(de::Error::custom(ATOM_ARRAYS)),
        }
    }
}

impl<'de> Deserialize<'de> for Atom {
    /// As [`Atom::from_json`].
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(AtomVisitor)
    }
}

/// A `[key, value]` pair of a map.
struct Pair((Atom, Atom));

impl<'de> Deserialize<'de> for Pair {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_seq(PairVisitor)
    }
}

struct PairVisitor;

const PAIRS: &str = "map pairs must be 2-element arrays";

impl<'de> Visitor<'de> for PairVisitor {
    type Value = Pair;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(PAIRS)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Pair, A::Error> {
        let key = seq.next_element::<Atom>()?;
        let value = seq.next_element::<Atom>()?;
        let (Some(key), Some(value)) = (key, value) else {
            return Err(de::Error::custom(PAIRS));
        };
        end(&mut seq, PAIRS)?;
        Ok(Pair((key, value)))
    }
}

/// Buffers reused for the members of sets and maps while decoding many values, so that each
/// set or map is allocated once, at its exact size.
#[derive(Debug, Default)]
pub(super) struct Scratch {
    atoms: Vec<Atom>,
    pairs: Vec<(Atom, Atom)>,
}

/// The members of a set: `[<atom>...]`.
struct SetMembers<'s>(&'s mut Scratch);

impl<'de> DeserializeSeed<'de> for SetMembers<'_> {
    type Value = Vec<Atom>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Vec<Atom>, D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for SetMembers<'_> {
    type Value = Vec<Atom>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("set and map contents must be arrays")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<Atom>, A::Error> {
        let atoms = &mut self.0.atoms;
        atoms.clear();
        while let Some(atom) = seq.next_element()? {
            atoms.push(atom);
        }
        // Moved out at exact size; the buffer keeps its capacity for the next set.
        let mut set = Vec::with_capacity(atoms.len());
        set.append(atoms);
        Ok(set)
    }
}

/// The pairs of a map: `[[<atom>, <atom>]...]`.
struct MapPairs<'s>(&'s mut Scratch);

impl<'de> DeserializeSeed<'de> for MapPairs<'_> {
    type Value = Vec<(Atom, Atom)>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for MapPairs<'_> {
    type Value = Vec<(Atom, Atom)>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("set and map contents must be arrays")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let pairs = &mut self.0.pairs;
        pairs.clear();
        while let Some(Pair(pair)) = seq.next_element()? {
            pairs.push(pair);
        }
        let mut map = Vec::with_capacity(pairs.len());
        map.append(pairs);
        Ok(map)
    }
}

/// A value, decoded with reused buffers.
pub(super) struct ValueSeed<'s>(pub(super) &'s mut Scratch);

impl<'de> DeserializeSeed<'de> for ValueSeed<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(ValueVisitor(self.0))
    }
}

struct ValueVisitor<'s>(&'s mut Scratch);

impl<'de> Visitor<'de> for ValueVisitor<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an OVSDB value")
    }

    atom_scalars!(Value, Value::Atom);

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let value = match seq.next_element::<Tag>()? {
            Some(Tag::Set) => seq.next_element_seed(SetMembers(self.0))?.map(Value::Set),
            Some(Tag::Map) => seq.next_element_seed(MapPairs(self.0))?.map(Value::Map),
            Some(tag @ (Tag::Uuid | Tag::NamedUuid)) => {
                return tagged_atom(tag, &mut seq).map(Value::Atom);
            }
            None => None,
        };
        let value = value.ok_or_else(|| de::Error::custom(ATOM_ARRAYS))?;
        end(&mut seq, ATOM_ARRAYS)?;
        Ok(value)
    }
}

impl<'de> Deserialize<'de> for Value {
    /// As [`Value::from_json`]: a bare atom is [`Value::Atom`].
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        ValueSeed(&mut Scratch::default()).deserialize(deserializer)
    }
}

/// A row (`{column: value, ...}`, a later duplicate column winning), decoded with reused
/// buffers.
pub(super) struct RowSeed<'s>(pub(super) &'s mut Scratch);

impl<'de> DeserializeSeed<'de> for RowSeed<'_> {
    type Value = Row;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Row, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for RowSeed<'_> {
    type Value = Row;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object of column names to values")
    }

    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Row, M::Error> {
        let mut row = Row::new();
        while let Some(column) = map.next_key::<String>()? {
            let value = map.next_value_seed(ValueSeed(&mut *self.0))?;
            row.insert(column, value);
        }
        Ok(row)
    }
}

/// A row or `null` (`None`).
pub(super) struct OptionalRowSeed<'s>(pub(super) &'s mut Scratch);

impl<'de> DeserializeSeed<'de> for OptionalRowSeed<'_> {
    type Value = Option<Row>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Option<Row>, D::Error> {
        deserializer.deserialize_option(self)
    }
}

impl<'de> Visitor<'de> for OptionalRowSeed<'_> {
    type Value = Option<Row>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("null or a row")
    }

    fn visit_none<E: de::Error>(self) -> Result<Option<Row>, E> {
        Ok(None)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Option<Row>, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Option<Row>, D::Error> {
        RowSeed(self.0).deserialize(deserializer).map(Some)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use serde_json::{Value as Json, json};

    use super::*;
    use crate::protocol::row_from_json;

    /// Decoding from text agrees with decoding the parsed tree: both fail or both give the
    /// same value.
    fn agree(json: &Json) {
        let text = json.to_string();
        let direct = serde_json::from_str::<Value>(&text);
        let tree = Value::from_json(json);
        match (&direct, &tree) {
            (Ok(a), Ok(b)) => assert_eq!(a, b, "{text}"),
            (Err(_), Err(_)) => {}
            _ => panic!("{text}: direct {direct:?} tree {tree:?}"),
        }
        let direct = serde_json::from_str::<Atom>(&text).ok();
        assert_eq!(direct, Atom::from_json(json).ok(), "{text}");
    }

    #[test]
    fn direct_decoding_agrees_with_the_tree() {
        let u = "6e64754b-83cb-4415-bd01-8c04d103af02";
        for json in [
            json!(1),
            json!(-1),
            json!(u64::MAX),
            json!(1.5),
            json!(true),
            json!("s"),
            json!(null),
            json!({}),
            json!(["uuid", u]),
            json!(["uuid", u.to_uppercase()]),
            json!(["uuid", "x"]),
            json!(["uuid", u, 1]),
            json!(["uuid"]),
            json!(["named-uuid", "n"]),
            json!(["named-uuid", 1]),
            json!(["set", []]),
            json!(["set", [1, "a", ["uuid", u]]]),
            json!(["set", [[1]]]),
            json!(["set", 1]),
            json!(["set", [], 1]),
            json!(["set"]),
            json!(["map", [[1, 2], ["a", ["uuid", u]]]]),
            json!(["map", [[1]]]),
            json!(["map", [[1, 2, 3]]]),
            json!(["map", [1]]),
            json!(["map", {}]),
            json!([]),
            json!([1, 2]),
            json!(["other", 1]),
        ] {
            agree(&json);
        }
        let row: Row = serde_json::from_str(r#"{"a":1,"b":["set",[]],"a":2}"#).unwrap();
        let tree: Json = serde_json::from_str(r#"{"a":1,"b":["set",[]],"a":2}"#).unwrap();
        assert_eq!(row, row_from_json(&tree).unwrap());
    }

    #[test]
    fn uuids_decode_from_strings() {
        let u: Uuid = serde_json::from_str("\"6E64754B-83CB-4415-BD01-8C04D103AF02\"").unwrap();
        assert_eq!(u.to_string(), "6e64754b-83cb-4415-bd01-8c04d103af02");
        assert!(serde_json::from_str::<Uuid>("\"6e64754b\"").is_err());
        assert!(serde_json::from_str::<Uuid>("7").is_err());
    }
}
