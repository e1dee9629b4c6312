//! `cargo xtask protobuf-tables --src DIR --version vX.Y.Z`: the field tables of
//! udn-kube-sim's protobuf transcoder (`crates/udn-kube-sim/src/http/protobuf/generated.rs`),
//! read from the Go API types of Kubernetes.
//!
//! `DIR` holds checkouts of `k8s.io/api` (as `api/`), `k8s.io/apimachinery`
//! (`apimachinery/`) and `k8s.io/apiextensions-apiserver` (`apiextensions-apiserver/`) at
//! one release. The Go types are the source because they alone say everything the
//! JSON <-> protobuf mapping needs: the field numbers (the `protobuf` tag), the JSON
//! names and `omitempty`/`inline` (the `json` tag) and whether a field is a pointer (so a
//! zero value on the wire is a value, not an absent field). `generated.proto` lacks the
//! last two. The tables are checked against the `k8s-pb` crate's prost types by
//! udn-kube-sim's tests, so a mismatch with the protobuf definitions fails there.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

use crate::go_types::{GoField, GoType, GoTypeDecl, parse_package};

/// Where the generated tables go, relative to the workspace root.
pub const TABLES_PATH: &str = "crates/udn-kube-sim/src/http/protobuf/generated.rs";

const META: &str = "k8s.io/apimachinery/pkg/apis/meta/v1";
const RESOURCE: &str = "k8s.io/apimachinery/pkg/api/resource";
const INTSTR: &str = "k8s.io/apimachinery/pkg/util/intstr";
const RUNTIME: &str = "k8s.io/apimachinery/pkg/runtime";
const APIEXTENSIONS: &str = "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1";

/// The kinds served in protobuf: (Go package, type, apiVersion). A list kind
/// `<type>List` is added for each.
const KINDS: &[(&str, &str, &str)] = &[
    ("k8s.io/api/core/v1", "Namespace", "v1"),
    ("k8s.io/api/core/v1", "Node", "v1"),
    ("k8s.io/api/core/v1", "Pod", "v1"),
    ("k8s.io/api/core/v1", "Service", "v1"),
    ("k8s.io/api/core/v1", "Event", "v1"),
    ("k8s.io/api/core/v1", "ConfigMap", "v1"),
    ("k8s.io/api/events/v1", "Event", "events.k8s.io/v1"),
    (
        "k8s.io/api/discovery/v1",
        "EndpointSlice",
        "discovery.k8s.io/v1",
    ),
    (
        "k8s.io/api/coordination/v1",
        "Lease",
        "coordination.k8s.io/v1",
    ),
    (
        APIEXTENSIONS,
        "CustomResourceDefinition",
        "apiextensions.k8s.io/v1",
    ),
];

/// meta.k8s.io types, which every group version carries (`apiVersion` empty: any).
const META_KINDS: &[(&str, &str)] = &[
    ("Status", ""),
    ("DeleteOptions", ""),
    ("PartialObjectMetadata", "meta.k8s.io/v1"),
    ("PartialObjectMetadataList", "meta.k8s.io/v1"),
];

/// Types with a JSON form of their own, transcoded by hand-written code.
fn special(package: &str, name: &str) -> anyhow::Result<Option<&'static str>> {
    Ok(Some(match (package, name) {
        (META, "Time") => "Time",
        (META, "MicroTime") => "MicroTime",
        // Go's duration text (`1h2m3s`) has no transcoder yet: no served kind has one.
        (META, "Duration") => bail!("metav1.Duration has no transcoder in udn-kube-sim"),
        (META, "FieldsV1") => "RawJson",
        (RESOURCE, "Quantity") => "Quantity",
        (INTSTR, "IntOrString") => "IntOrString",
        (RUNTIME, "RawExtension") => "RawJson",
        (APIEXTENSIONS, "JSON") => "RawJson",
        (APIEXTENSIONS, "JSONSchemaPropsOrArray") => "SchemaOrArray",
        (APIEXTENSIONS, "JSONSchemaPropsOrBool") => "SchemaOrBool",
        (APIEXTENSIONS, "JSONSchemaPropsOrStringArray") => "SchemaOrStringArray",
        _ => return Ok(None),
    }))
}

/// Where a Go package's sources sit under the `--src` directory.
fn package_dir(src: &Path, package: &str) -> Option<PathBuf> {
    let (repo, rest) = if let Some(rest) = package.strip_prefix("k8s.io/api/") {
        ("api", rest)
    } else if let Some(rest) = package.strip_prefix("k8s.io/apimachinery/") {
        ("apimachinery", rest)
    } else if let Some(rest) = package.strip_prefix("k8s.io/apiextensions-apiserver/") {
        ("apiextensions-apiserver", rest)
    } else {
        return None;
    };
    Some(src.join(repo).join(rest))
}

/// A resolved field type.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Kind {
    Scalar(&'static str),
    Special(&'static str),
    Message(MessageId),
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct MessageId {
    package: String,
    name: String,
}

#[derive(Clone, Debug)]
enum Shape {
    Single,
    Inline,
    Repeated,
    Map(&'static str),
}

#[derive(Clone, Debug)]
struct FieldOut {
    number: u32,
    proto: String,
    json: String,
    kind: Kind,
    shape: Shape,
    pointer: bool,
    omitempty: bool,
}

struct Generator {
    src: PathBuf,
    packages: BTreeMap<String, BTreeMap<String, GoTypeDecl>>,
    messages: BTreeMap<MessageId, Vec<FieldOut>>,
    queue: VecDeque<MessageId>,
}

/// Render the tables from the Go sources under `src`; `k8s_pb` is the source directory of
/// the `k8s-pb` crate the tests check them against.
pub fn render(src: &Path, version: &str, k8s_pb: &Path) -> anyhow::Result<String> {
    let mut generator = Generator {
        src: src.to_path_buf(),
        packages: BTreeMap::new(),
        messages: BTreeMap::new(),
        queue: VecDeque::new(),
    };
    let mut roots = Vec::new();
    for (package, name, api_version) in KINDS {
        for kind in [(*name).to_owned(), format!("{name}List")] {
            let id = generator.message_id(package, &kind)?;
            roots.push((api_version.to_string(), kind, id));
        }
    }
    for (name, api_version) in META_KINDS {
        let id = generator.message_id(META, name)?;
        roots.push((api_version.to_string(), (*name).to_owned(), id));
    }
    while let Some(id) = generator.queue.pop_front() {
        if generator.messages.contains_key(&id) {
            continue;
        }
        let fields = generator.fields(&id)?;
        generator.messages.insert(id, fields);
    }
    generator.write(version, &roots, k8s_pb)
}

impl Generator {
    fn package(&mut self, package: &str) -> anyhow::Result<&BTreeMap<String, GoTypeDecl>> {
        if !self.packages.contains_key(package) {
            let dir = package_dir(&self.src, package)
                .with_context(|| format!("package {package} is outside the three repositories"))?;
            let types = parse_package(&dir)?;
            self.packages.insert(package.to_owned(), types);
        }
        self.packages
            .get(package)
            .with_context(|| format!("package {package} not loaded"))
    }

    fn decl(&mut self, package: &str, name: &str) -> anyhow::Result<GoTypeDecl> {
        self.package(package)?
            .get(name)
            .cloned()
            .with_context(|| format!("type {package}.{name} not found"))
    }

    /// The message of a struct type, queued for generation.
    fn message_id(&mut self, package: &str, name: &str) -> anyhow::Result<MessageId> {
        let decl = self.decl(package, name)?;
        if !matches!(decl.ty, GoType::Struct(_)) {
            bail!("{package}.{name} is not a struct");
        }
        let id = MessageId {
            package: package.to_owned(),
            name: name.to_owned(),
        };
        if !self.messages.contains_key(&id) {
            self.queue.push_back(id.clone());
        }
        Ok(id)
    }

    fn fields(&mut self, id: &MessageId) -> anyhow::Result<Vec<FieldOut>> {
        let decl = self.decl(&id.package, &id.name)?;
        let GoType::Struct(fields) = &decl.ty else {
            bail!("{}.{} is not a struct", id.package, id.name);
        };
        let mut out = Vec::new();
        for field in fields {
            if let Some(field) = self
                .field(id, &decl, field)
                .with_context(|| format!("{}.{}: field {:?}", id.package, id.name, field.name))?
            {
                out.push(field);
            }
        }
        out.sort_by_key(|f| f.number);
        Ok(out)
    }

    fn field(
        &mut self,
        id: &MessageId,
        decl: &GoTypeDecl,
        field: &GoField,
    ) -> anyhow::Result<Option<FieldOut>> {
        let Some(protobuf) = field.tag_value("protobuf").filter(|t| *t != "-") else {
            return Ok(None);
        };
        let mut parts = protobuf.split(',');
        let _wire = parts.next();
        let number: u32 = parts
            .next()
            .context("protobuf tag without a number")?
            .parse()
            .context("protobuf tag number")?;
        // The wire type and `rep` of the tag are not always right (EndpointSlice's
        // addressType says `rep`, float64 fields say `bytes`): the Go type decides.
        let options: Vec<&str> = parts.collect();
        let go_name = field.name.clone().unwrap_or_else(|| match &field.ty {
            GoType::Named { name, .. } => name.clone(),
            GoType::Pointer(inner) => match &**inner {
                GoType::Named { name, .. } => name.clone(),
                _ => String::new(),
            },
            _ => String::new(),
        });
        let proto = options
            .iter()
            .find_map(|o| o.strip_prefix("name="))
            .map_or_else(|| lower_first(&go_name), str::to_owned);
        let json_tag = field.tag_value("json").unwrap_or("");
        let mut json_parts = json_tag.split(',');
        let json_name = json_parts.next().unwrap_or("");
        let json_options: Vec<&str> = json_parts.collect();
        if json_name == "-" {
            return Ok(None);
        }
        let inline = json_name.is_empty() && json_options.contains(&"inline");
        let omitempty = json_options.contains(&"omitempty") || json_options.contains(&"omitzero");
        let (pointer, base) = match &field.ty {
            GoType::Pointer(inner) => (true, (**inner).clone()),
            other => (false, other.clone()),
        };
        let (kind, shape) = self.resolve(&id.package, &decl.imports, &base)?;
        let shape = match (shape, inline) {
            (Shape::Single, true) if matches!(kind, Kind::Message(_)) => Shape::Inline,
            (_, true) => bail!("an inline field must be a struct"),
            (shape, false) => shape,
        };
        let json = if inline {
            String::new()
        } else if json_name.is_empty() {
            go_name
        } else {
            json_name.to_owned()
        };
        Ok(Some(FieldOut {
            number,
            proto,
            json,
            kind,
            shape,
            pointer,
            omitempty,
        }))
    }

    /// The kind and shape of a (non-pointer) Go type used in `package` with `imports`.
    fn resolve(
        &mut self,
        package: &str,
        imports: &BTreeMap<String, String>,
        ty: &GoType,
    ) -> anyhow::Result<(Kind, Shape)> {
        match ty {
            GoType::Slice(elem) if is_byte(elem) => Ok((Kind::Scalar("Bytes"), Shape::Single)),
            GoType::Slice(elem) => {
                let (kind, shape) = self.resolve(package, imports, strip_pointer(elem))?;
                match shape {
                    Shape::Single => Ok((kind, Shape::Repeated)),
                    _ => bail!("a list of lists or maps has no protobuf form here"),
                }
            }
            GoType::Map(key, value) => {
                let (key_kind, _) = self.resolve(package, imports, key)?;
                let Kind::Scalar(key_scalar) = key_kind else {
                    bail!("map key is not a scalar");
                };
                let (value_kind, value_shape) =
                    self.resolve(package, imports, strip_pointer(value))?;
                if !matches!(value_shape, Shape::Single) {
                    bail!("a map of lists has no protobuf form here");
                }
                Ok((value_kind, Shape::Map(key_scalar)))
            }
            GoType::Named { qualifier, name } => {
                if qualifier.is_empty()
                    && let Some(scalar) = basic(name)
                {
                    return Ok((Kind::Scalar(scalar), Shape::Single));
                }
                let target = if qualifier.is_empty() {
                    package.to_owned()
                } else {
                    imports
                        .get(qualifier)
                        .cloned()
                        .with_context(|| format!("unknown import {qualifier}"))?
                };
                if let Some(special) = special(&target, name)? {
                    if special.starts_with("Schema") {
                        // The wrapper's schema message is generated like any other.
                        self.message_id(APIEXTENSIONS, "JSONSchemaProps")?;
                    }
                    return Ok((Kind::Special(special), Shape::Single));
                }
                if target == "time" && name == "Duration" {
                    return Ok((Kind::Scalar("Int64"), Shape::Single));
                }
                let decl = self.decl(&target, name)?;
                match &decl.ty {
                    GoType::Struct(_) => Ok((
                        Kind::Message(self.message_id(&target, name)?),
                        Shape::Single,
                    )),
                    other => {
                        let other = other.clone();
                        self.resolve(&target, &decl.imports, &other)
                    }
                }
            }
            GoType::Pointer(_) | GoType::Struct(_) | GoType::Other => {
                bail!("unsupported Go type {ty:?}")
            }
        }
    }

    fn write(
        &self,
        version: &str,
        roots: &[(String, String, MessageId)],
        k8s_pb: &Path,
    ) -> anyhow::Result<String> {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "//! Generated by `cargo xtask protobuf-tables` from the Go API types of Kubernetes \
             {version}\n//! (k8s.io/api, k8s.io/apimachinery, k8s.io/apiextensions-apiserver); \
             do not edit.\n//! Checked against the `k8s-pb` crate's prost types by `super::tests`.\n"
        );
        out.push_str("#![allow(clippy::all)]\n\n");
        out.push_str("use super::schema::{Field, Kind, Message, Root, Shape};\n\n");
        out.push_str(
            "/// Every kind with a protobuf form: apiVersion (empty: any), kind, message.\n",
        );
        out.push_str("pub(super) static ROOTS: &[Root] = &[\n");
        for (api_version, kind, id) in roots {
            let _ = writeln!(
                out,
                "    Root {{ api_version: {api_version:?}, kind: {kind:?}, message: &{} }},",
                static_name(id)
            );
        }
        out.push_str("];\n");
        for (id, fields) in &self.messages {
            let _ = writeln!(
                out,
                "\npub(super) static {}: Message = Message {{\n    name: \"{}.{}\",\n    fields: &[",
                static_name(id),
                proto_package(&id.package),
                id.name
            );
            for field in fields {
                let kind = match &field.kind {
                    Kind::Scalar(scalar) => format!("Kind::{scalar}"),
                    Kind::Special(special) if special.starts_with("Schema") => {
                        format!(
                            "Kind::{special}(&{})",
                            static_name(&MessageId {
                                package: APIEXTENSIONS.to_owned(),
                                name: "JSONSchemaProps".to_owned(),
                            })
                        )
                    }
                    Kind::Special(special) => format!("Kind::{special}"),
                    Kind::Message(target) => format!("Kind::Message(&{})", static_name(target)),
                };
                let shape = match field.shape {
                    Shape::Single => format!(
                        "Shape::Single {{ pointer: {}, omitempty: {} }}",
                        field.pointer, field.omitempty
                    ),
                    Shape::Inline => "Shape::Inline".to_owned(),
                    Shape::Repeated => "Shape::Repeated".to_owned(),
                    Shape::Map(key) => format!("Shape::Map(Kind::{key})"),
                };
                let _ = writeln!(
                    out,
                    "        Field {{ number: {}, proto: {:?}, json: {:?}, kind: {kind}, shape: {shape} }},",
                    field.number, field.proto, field.json
                );
            }
            out.push_str("    ],\n};\n");
        }
        out.push_str(&self.k8s_pb_list(k8s_pb)?);
        Ok(out)
    }

    /// The `k8s-pb` type of every message, for the test that checks the tables.
    fn k8s_pb_list(&self, k8s_pb: &Path) -> anyhow::Result<String> {
        let mut out = String::from(
            "\n/// Calls `$check!(k8s-pb type, table)` for every message of the tables.\n\
             #[cfg(test)]\nmacro_rules! for_each_k8s_pb_message {\n    ($check:ident) => {\n",
        );
        let mut seen = BTreeSet::new();
        let mut sources: BTreeMap<String, String> = BTreeMap::new();
        for id in self.messages.keys() {
            if !seen.insert(id.clone()) {
                continue;
            }
            let module = rust_module(&id.package);
            if !sources.contains_key(&module) {
                let file = k8s_pb
                    .join("src")
                    .join(module.replace("::", "/"))
                    .join("mod.rs");
                let text = std::fs::read_to_string(&file)
                    .with_context(|| format!("read {}", file.display()))?;
                sources.insert(module.clone(), text);
            }
            let source = sources.get(&module).map_or("", String::as_str);
            // prost renames most acronyms (`PodIP` -> `PodIp`); k8s-pb keeps some as Go
            // spells them (`CSIVolumeSource`).
            let name = [upper_camel(&id.name), id.name.clone()]
                .into_iter()
                .find(|name| source.contains(&format!("pub struct {name} ")))
                .with_context(|| format!("k8s-pb has no struct for {}.{}", id.package, id.name))?;
            let _ = writeln!(
                out,
                "        $check!(k8s_pb::{module}::{name}, {});",
                static_name(id)
            );
        }
        out.push_str("    };\n}\n#[cfg(test)]\npub(super) use for_each_k8s_pb_message;\n");
        Ok(out)
    }
}

fn strip_pointer(ty: &GoType) -> &GoType {
    match ty {
        GoType::Pointer(inner) => inner,
        other => other,
    }
}

fn is_byte(ty: &GoType) -> bool {
    matches!(ty, GoType::Named { qualifier, name } if qualifier.is_empty() && (name == "byte" || name == "uint8"))
}

fn basic(name: &str) -> Option<&'static str> {
    Some(match name {
        "string" => "String",
        "bool" => "Bool",
        "int32" => "Int32",
        "int64" | "int" => "Int64",
        "float64" => "Float64",
        _ => return None,
    })
}

fn lower_first(name: &str) -> String {
    let mut chars = name.chars();
    chars
        .next()
        .map(|c| c.to_ascii_lowercase().to_string() + chars.as_str())
        .unwrap_or_default()
}

/// `k8s.io/api/core/v1` -> `k8s.io.api.core.v1` (the `package` of generated.proto).
fn proto_package(package: &str) -> String {
    package.replace('/', ".")
}

/// The module of `k8s-pb` that holds a package's types.
fn rust_module(package: &str) -> String {
    package
        .trim_start_matches("k8s.io/")
        .replace('-', "_")
        .replace('/', "::")
}

/// The static holding a message: `CORE_V1_POD_SPEC`, `META_V1_OBJECT_META`.
fn static_name(id: &MessageId) -> String {
    let segments: Vec<&str> = id.package.split('/').collect();
    let prefix = match segments.as_slice() {
        [.., group, version] if version.starts_with('v') => format!("{group}_{version}"),
        [.., last] => (*last).to_owned(),
        [] => String::new(),
    };
    format!(
        "{}_{}",
        prefix.to_ascii_uppercase(),
        words(&id.name).join("_").to_ascii_uppercase()
    )
}

/// The words of a Go identifier as heck splits them (`JSONSchemaProps` -> JSON, Schema,
/// Props; `PodIP` -> Pod, IP).
fn words(name: &str) -> Vec<String> {
    let chars: Vec<char> = name.chars().collect();
    let mut words: Vec<String> = Vec::new();
    let mut current = String::new();
    for (i, &c) in chars.iter().enumerate() {
        let prev = i.checked_sub(1).map(|p| chars[p]);
        let next = chars.get(i + 1).copied();
        let boundary = match prev {
            Some(p) if c.is_uppercase() => {
                p.is_lowercase()
                    || p.is_ascii_digit()
                    || (p.is_uppercase() && next.is_some_and(char::is_lowercase))
            }
            _ => false,
        };
        if boundary && !current.is_empty() {
            words.push(std::mem::take(&mut current));
        }
        current.push(c);
    }
    if !current.is_empty() {
        words.push(current);
    }
    words
}

/// prost's Rust name of a message (`PodIP` -> `PodIp`, `JSONSchemaProps` -> `JsonSchemaProps`).
fn upper_camel(name: &str) -> String {
    words(name)
        .iter()
        .map(|word| {
            let mut chars = word.chars();
            chars
                .next()
                .map(|c| c.to_ascii_uppercase().to_string() + &chars.as_str().to_ascii_lowercase())
                .unwrap_or_default()
        })
        .collect()
}

/// The source directory of the `k8s-pb` crate in the workspace's dependency graph.
fn k8s_pb_dir(root: &Path) -> anyhow::Result<PathBuf> {
    let output = std::process::Command::new(std::env::var("CARGO").unwrap_or("cargo".into()))
        .args(["metadata", "--format-version", "1"])
        .current_dir(root)
        .output()
        .context("run cargo metadata")?;
    if !output.status.success() {
        bail!(
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let metadata: serde_json::Value =
        serde_json::from_slice(&output.stdout).context("parse cargo metadata")?;
    let manifest = metadata["packages"]
        .as_array()
        .and_then(|packages| packages.iter().find(|p| p["name"] == "k8s-pb"))
        .and_then(|p| p["manifest_path"].as_str())
        .context("k8s-pb is not in the workspace's dependencies")?;
    Path::new(manifest)
        .parent()
        .map(Path::to_path_buf)
        .context("k8s-pb's manifest has no directory")
}

/// Write the tables under `root` (the workspace).
pub fn write(root: &Path, src: &Path, version: &str) -> anyhow::Result<()> {
    let tables = render(src, version, &k8s_pb_dir(root)?)?;
    let path = root.join(TABLES_PATH);
    std::fs::write(&path, tables).with_context(|| format!("write {}", path.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_prost() {
        assert_eq!(upper_camel("PodIP"), "PodIp");
        assert_eq!(upper_camel("JSONSchemaProps"), "JsonSchemaProps");
        assert_eq!(upper_camel("FieldsV1"), "FieldsV1");
        assert_eq!(upper_camel("HTTPGetAction"), "HttpGetAction");
        assert_eq!(
            static_name(&MessageId {
                package: META.to_owned(),
                name: "ObjectMeta".to_owned()
            }),
            "META_V1_OBJECT_META"
        );
        assert_eq!(
            rust_module(APIEXTENSIONS),
            "apiextensions_apiserver::pkg::apis::apiextensions::v1"
        );
    }
}
