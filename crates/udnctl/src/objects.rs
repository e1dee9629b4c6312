//! Decoding input documents into validated, typed objects, the way the API server would
//! admit them: kind check, metadata name rules, then the CRD's schema and CEL rules.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::Value;
use udn_api::crd::{ClusterUserDefinedNetwork, UserDefinedNetwork};
use udn_schema::{CrdValidator, validate_object_name};

use crate::input::Document;
use crate::pipeline::Problem;

/// Label every namespace carries with its own name (set by the API server).
const LABEL_METADATA_NAME: &str = "kubernetes.io/metadata.name";

/// A namespace as far as rendering cares: its name and labels.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct NamespaceInfo {
    /// Name.
    pub(crate) name: String,
    /// Labels, including `kubernetes.io/metadata.name`.
    pub(crate) labels: BTreeMap<String, String>,
}

/// An admitted input object.
#[derive(Clone, Debug)]
pub(crate) enum Object {
    /// A Namespace.
    Namespace(NamespaceInfo),
    /// A UserDefinedNetwork (namespace defaulted to `default` like kubectl does).
    Udn(Box<UserDefinedNetwork>),
    /// A ClusterUserDefinedNetwork.
    Cudn(Box<ClusterUserDefinedNetwork>),
}

/// The CRD validators for UDN and CUDN, built from the same CRDs `manifests/crds` holds.
#[derive(Debug)]
pub(crate) struct Validators {
    udn: CrdValidator,
    cudn: CrdValidator,
}

impl Validators {
    /// Build the validators from udn-api's generated CRDs.
    pub(crate) fn new() -> Result<Self, Problem> {
        let build = |crd: CustomResourceDefinition| {
            let unusable = |err: &dyn std::fmt::Display| {
                Problem::new(
                    "udnctl".to_owned(),
                    format!("built-in CRD is unusable: {err}"),
                )
            };
            let json = udn_api::crd::to_manifest_json(&crd).map_err(|e| unusable(&e))?;
            CrdValidator::new(&json, "v1").map_err(|e| unusable(&e))
        };
        Ok(Self {
            udn: build(udn_api::crd::user_defined_network_crd())?,
            cudn: build(udn_api::crd::cluster_user_defined_network_crd())?,
        })
    }
}

/// Decode one document into an admitted object, or the problems the API server would
/// report for it.
pub(crate) fn decode(doc: &Document, validators: &Validators) -> Result<Object, Vec<Problem>> {
    let problem = |message: String| Err(vec![Problem::new(doc.origin.clone(), message)]);
    let api_version = doc
        .value
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let kind = doc
        .value
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default();
    match (api_version, kind) {
        ("v1", "Namespace") => decode_namespace(doc),
        ("k8s.ovn.org/v1", "UserDefinedNetwork") => {
            let mut value = doc.value.clone();
            default_namespace(&mut value);
            admit(doc, &validators.udn, &value).map(|udn| Object::Udn(Box::new(udn)))
        }
        ("k8s.ovn.org/v1", "ClusterUserDefinedNetwork") => {
            admit(doc, &validators.cudn, &doc.value).map(|c| Object::Cudn(Box::new(c)))
        }
        ("", _) | (_, "") => problem(
            "Object 'Kind' is missing or apiVersion is not set: every document needs apiVersion and kind"
                .to_owned(),
        ),
        _ => problem(format!(
            "unsupported object {kind} ({api_version}): udnctl render reads v1 Namespace, \
             k8s.ovn.org/v1 UserDefinedNetwork and ClusterUserDefinedNetwork"
        )),
    }
}

fn default_namespace(value: &mut Value) {
    if let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) {
        let missing = meta
            .get("namespace")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty);
        if missing {
            meta.insert("namespace".to_owned(), Value::String("default".to_owned()));
        }
    }
}

fn object_name(value: &Value) -> &str {
    value
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn decode_namespace(doc: &Document) -> Result<Object, Vec<Problem>> {
    let name = object_name(&doc.value);
    if let Err(errors) = validate_object_name(name, false) {
        return Err(vec![Problem::new(
            doc.origin.clone(),
            udn_schema::invalid_message("Namespace", "", name, &errors),
        )]);
    }
    let namespace: Namespace = serde_json::from_value(doc.value.clone()).map_err(|err| {
        vec![Problem::new(
            doc.origin.clone(),
            format!("Namespace {name:?}: {err}"),
        )]
    })?;
    let mut labels = namespace.metadata.labels.unwrap_or_default();
    labels.insert(LABEL_METADATA_NAME.to_owned(), name.to_owned());
    Ok(Object::Namespace(NamespaceInfo {
        name: name.to_owned(),
        labels,
    }))
}

fn admit<T: serde::de::DeserializeOwned>(
    doc: &Document,
    validator: &CrdValidator,
    value: &Value,
) -> Result<T, Vec<Problem>> {
    let name = object_name(value);
    // One line per field error, each in the API server's words.
    let reject = |errors: udn_schema::FieldErrors| -> Vec<Problem> {
        errors
            .iter()
            .map(|error| {
                let one = udn_schema::FieldErrors(vec![error.clone()]);
                Problem::new(doc.origin.clone(), validator.invalid_message(name, &one))
            })
            .collect()
    };
    // The API server reports name and schema errors together.
    let name_errors = validate_object_name(name, true).err().unwrap_or_default();
    let admitted = match validator.validate(value, None) {
        Ok(admitted) if name_errors.is_empty() => admitted,
        Ok(_) => return Err(reject(name_errors)),
        Err(schema_errors) => {
            let mut all = name_errors;
            all.0.extend(schema_errors.0);
            return Err(reject(all));
        }
    };
    serde_json::from_value(admitted).map_err(|err| {
        vec![Problem::new(
            doc.origin.clone(),
            format!("{} {name:?}: {err}", validator.kind()),
        )]
    })
}
