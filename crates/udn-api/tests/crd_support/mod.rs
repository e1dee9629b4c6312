//! Shared by the `crd_*` tests: validators built from the generated CRDs, object builders,
//! and the table of CEL rule cases (one accepted and one rejected object per rule).

#![allow(dead_code, unreachable_pub)]

pub mod cases_cudn;
pub mod cases_layer2;
pub mod cases_layer3;
pub mod cases_udn;

use std::collections::BTreeMap;
use std::sync::LazyLock;

use serde_json::{Value, json};
use udn_schema::{CrdValidator, FieldErrors};

/// Which CRD an object belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Crd {
    /// `UserDefinedNetwork`.
    Udn,
    /// `ClusterUserDefinedNetwork`.
    Cudn,
}

/// The generated manifests as JSON, in `udn_api::crd::manifests()` order.
pub static MANIFESTS: LazyLock<Vec<Value>> = LazyLock::new(|| {
    udn_api::crd::manifests()
        .iter()
        .map(|crd| match udn_api::crd::to_manifest_json(crd) {
            Ok(value) => value,
            Err(error) => panic!("manifest JSON: {error}"),
        })
        .collect()
});

static UDN: LazyLock<CrdValidator> = LazyLock::new(|| load(0));
static CUDN: LazyLock<CrdValidator> = LazyLock::new(|| load(1));

fn load(index: usize) -> CrdValidator {
    let Some(manifest) = MANIFESTS.get(index) else {
        panic!("no manifest {index}");
    };
    match CrdValidator::new(manifest, "v1") {
        Ok(validator) => validator,
        Err(error) => panic!("generated CRD does not load: {error}"),
    }
}

impl Crd {
    /// The validator for this CRD's v1 schema.
    pub fn validator(self) -> &'static CrdValidator {
        match self {
            Self::Udn => &UDN,
            Self::Cudn => &CUDN,
        }
    }

    /// The generated manifest as JSON.
    pub fn manifest(self) -> &'static Value {
        let index = match self {
            Self::Udn => 0,
            Self::Cudn => 1,
        };
        match MANIFESTS.get(index) {
            Some(manifest) => manifest,
            None => panic!("no manifest {index}"),
        }
    }

    /// A whole object of this kind with `spec`.
    pub fn object(self, spec: Value) -> Value {
        match self {
            Self::Udn => json!({
                "apiVersion": "k8s.ovn.org/v1",
                "kind": "UserDefinedNetwork",
                "metadata": {"name": "net", "namespace": "tenant"},
                "spec": spec,
            }),
            Self::Cudn => json!({
                "apiVersion": "k8s.ovn.org/v1",
                "kind": "ClusterUserDefinedNetwork",
                "metadata": {"name": "net"},
                "spec": spec,
            }),
        }
    }

    /// Where the network settings sit: `spec` for a UDN, `spec.network` for a CUDN.
    pub fn prefix(self) -> &'static str {
        match self {
            Self::Udn => "spec",
            Self::Cudn => "spec.network",
        }
    }

    /// A spec whose network has `topology` and the matching config under `key`.
    pub fn network(self, topology: &str, key: &str, config: Value) -> Value {
        let mut network = json!({"topology": topology});
        network[key] = config;
        match self {
            Self::Udn => network,
            Self::Cudn => json!({"namespaceSelector": {}, "network": network}),
        }
    }

    /// A Layer3 spec with `config`.
    pub fn layer3(self, config: Value) -> Value {
        self.network("Layer3", "layer3", config)
    }

    /// A Layer2 spec with `config`.
    pub fn layer2(self, config: Value) -> Value {
        self.network("Layer2", "layer2", config)
    }

    /// Validate `spec` (on update of `old` when given).
    pub fn validate(self, spec: &Value, old: Option<&Value>) -> Result<Value, FieldErrors> {
        let old = old.map(|old| self.object(old.clone()));
        self.validator()
            .validate(&self.object(spec.clone()), old.as_ref())
    }

    /// The error lines of validating `spec` (empty when accepted).
    pub fn errors(self, spec: &Value, old: Option<&Value>) -> Vec<String> {
        match self.validate(spec, old) {
            Ok(_) => Vec::new(),
            Err(errors) => errors.iter().map(ToString::to_string).collect(),
        }
    }
}

/// Every CEL rule of a generated CRD, keyed by (schema location, message), with the type
/// of the node that holds it. Locations read like field paths with `[*]` for list items
/// and `{*}` for map values: `spec.layer3.subnets[*]`.
pub fn rules(crd: Crd) -> BTreeMap<(String, String), String> {
    let mut out = BTreeMap::new();
    let Some(root) = crd
        .manifest()
        .pointer("/spec/versions/0/schema/openAPIV3Schema")
    else {
        panic!("{crd:?} manifest has no schema");
    };
    collect_rules(root, "", &mut out);
    out
}

fn collect_rules(schema: &Value, location: &str, out: &mut BTreeMap<(String, String), String>) {
    if let Some(Value::Array(rules)) = schema.get("x-kubernetes-validations") {
        let type_name = schema.get("type").and_then(Value::as_str).unwrap_or("");
        for rule in rules {
            let message = rule.get("message").and_then(Value::as_str).unwrap_or("");
            let key = (location.to_owned(), message.to_owned());
            assert!(
                out.insert(key, type_name.to_owned()).is_none(),
                "two rules at {location} share the message {message:?}"
            );
        }
    }
    if let Some(Value::Object(properties)) = schema.get("properties") {
        for (name, child) in properties {
            let child_location = if location.is_empty() {
                name.clone()
            } else {
                format!("{location}.{name}")
            };
            collect_rules(child, &child_location, out);
        }
    }
    if let Some(items) = schema.get("items") {
        collect_rules(items, &format!("{location}[*]"), out);
    }
    if let Some(values @ Value::Object(_)) = schema.get("additionalProperties") {
        collect_rules(values, &format!("{location}{{*}}"), out);
    }
}

/// One CEL rule, an object it accepts and one it rejects with the rule's message.
#[derive(Clone, Debug)]
pub struct Case {
    /// The CRD.
    pub crd: Crd,
    /// Schema location of the rule (see [`rules`]).
    pub node: String,
    /// The rule's message.
    pub message: String,
    /// The field path of the error on the rejected object.
    pub path: String,
    /// A spec the rule accepts.
    pub accepted: Value,
    /// A spec the rule rejects.
    pub rejected: Value,
    /// The old spec for transition rules (both objects are updates of it).
    pub old: Option<Value>,
    /// Other error lines the rejected object gets (rules that cannot be isolated).
    pub also: Vec<String>,
    /// Messages of other rules that cannot be evaluated on the rejected object.
    pub also_eval: Vec<String>,
}

impl Case {
    /// The rule at `node` (relative to the CRD's network prefix when it starts with
    /// `~`) with `message`.
    pub fn new(crd: Crd, node: &str, message: &str) -> Self {
        let node = match node.strip_prefix('~') {
            Some(rest) => format!("{}{rest}", crd.prefix()),
            None => node.to_owned(),
        };
        Self {
            crd,
            path: node.replace("[*]", "[0]"),
            node,
            message: message.to_owned(),
            accepted: Value::Null,
            rejected: Value::Null,
            old: None,
            also: Vec::new(),
            also_eval: Vec::new(),
        }
    }

    /// The error is reported at `path` (`~` stands for the network prefix).
    pub fn at(mut self, path: &str) -> Self {
        self.path = match path.strip_prefix('~') {
            Some(rest) => format!("{}{rest}", self.crd.prefix()),
            None => path.to_owned(),
        };
        self
    }

    /// The accepted spec.
    pub fn accept(mut self, spec: Value) -> Self {
        self.accepted = spec;
        self
    }

    /// The rejected spec.
    pub fn reject(mut self, spec: Value) -> Self {
        self.rejected = spec;
        self
    }

    /// The old spec (for transition rules).
    pub fn old(mut self, spec: Value) -> Self {
        self.old = Some(spec);
        self
    }

    /// The rejected object also fails the rule at `node` with `message` (a rule of the
    /// same CRD whose failure cannot be separated from this one).
    pub fn also(mut self, node: &str, message: &str) -> Self {
        let path = match node.strip_prefix('~') {
            Some(rest) => format!("{}{rest}", self.crd.prefix()),
            None => node.to_owned(),
        };
        let type_name = self.node_type(&path.replace("[0]", "[*]"), message);
        let line = self.failure_line(&path, &type_name, message);
        self.also.push(line);
        self
    }

    /// The rule with `message` cannot be evaluated on the rejected object either.
    pub fn also_eval(mut self, message: &str) -> Self {
        self.also_eval.push(message.to_owned());
        self
    }

    fn node_type(&self, node: &str, message: &str) -> String {
        rules(self.crd)
            .get(&(node.to_owned(), message.to_owned()))
            .cloned()
            .unwrap_or_else(|| panic!("{:?} has no rule {message:?} at {node}", self.crd))
    }

    /// The error line of a failed rule at `path` on the rejected object: the value is
    /// echoed for a scalar node and omitted for an object or a list, as Kubernetes 1.35
    /// and later report it.
    fn failure_line(&self, path: &str, type_name: &str, message: &str) -> String {
        if matches!(type_name, "object" | "array") {
            return format!("{path}: Invalid value: {message}");
        }
        let object = self.crd.object(self.rejected.clone());
        let value = match lookup(&object, path) {
            Some(Value::String(text)) => udn_api::go_text::quote(text),
            Some(other) => other.to_string(),
            None => panic!("{:?}: the rejected object has no value at {path}", self.crd),
        };
        format!("{path}: Invalid value: {value}: {message}")
    }

    /// The key this case covers in [`rules`].
    pub fn key(&self) -> (Crd, String, String) {
        (self.crd, self.node.clone(), self.message.clone())
    }

    /// Run the case; `Err` describes every mismatch.
    pub fn check(&self) -> Result<(), String> {
        let name = format!("{:?} {} {:?}", self.crd, self.node, self.message);
        let old = self.old.as_ref();
        let accepted = self.crd.errors(&self.accepted, old);
        if !accepted.is_empty() {
            return Err(format!(
                "{name}: accepted object is rejected: {accepted:#?}"
            ));
        }
        let mut rejected = self.crd.errors(&self.rejected, old);
        let type_name = self.node_type(&self.node, &self.message);
        let mut expected = vec![self.failure_line(&self.path, &type_name, &self.message)];
        expected.extend(self.also.iter().cloned());
        let mut missing = Vec::new();
        for line in &expected {
            match rejected.iter().position(|got| got == line) {
                Some(index) => {
                    rejected.remove(index);
                }
                None => missing.push(line.clone()),
            }
        }
        for message in &self.also_eval {
            let suffix = format!("evaluating rule: {message}");
            match rejected.iter().position(|got| got.ends_with(&suffix)) {
                Some(index) => {
                    rejected.remove(index);
                }
                None => missing.push(format!("<evaluation error> ...{suffix}")),
            }
        }
        if missing.is_empty() && rejected.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "{name}: rejected object\n  misses {missing:#?}\n  has unexpected {rejected:#?}"
            ))
        }
    }
}

/// The value at a field path such as `spec.layer3.subnets[0]`.
fn lookup<'a>(object: &'a Value, path: &str) -> Option<&'a Value> {
    let mut node = object;
    for segment in path.split('.') {
        let (name, indexes) = segment.split_once('[').unwrap_or((segment, ""));
        node = node.get(name)?;
        for index in indexes.split('[').filter(|i| !i.is_empty()) {
            node = node.get(index.trim_end_matches(']').parse::<usize>().ok()?)?;
        }
    }
    Some(node)
}

/// Run `cases`, failing with every case that does not hold.
pub fn run(cases: &[Case]) {
    let failures: Vec<String> = cases.iter().filter_map(|case| case.check().err()).collect();
    assert!(
        failures.is_empty(),
        "{} of {} cases fail:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

/// Every case of both CRDs.
pub fn all_cases() -> Vec<Case> {
    let mut cases = Vec::new();
    for crd in [Crd::Udn, Crd::Cudn] {
        cases.extend(cases_layer3::cases(crd));
        cases.extend(cases_layer2::cases(crd));
    }
    cases.extend(cases_udn::cases());
    cases.extend(cases_cudn::cases());
    cases
}
