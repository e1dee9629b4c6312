//! Post-processing of the derived CRD schemas into clean structural schemas, the shape
//! controller-gen produces upstream: no `nullable` from `Option` fields, no schemars
//! `title`/`$schema`, and the `apiVersion`/`kind`/`metadata` properties on the root.

use std::collections::BTreeMap;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, JSONSchemaProps, JSONSchemaPropsOrArray, JSONSchemaPropsOrBool,
};

/// Clean every version's schema of `crd`, give its root the object-level properties, and
/// name the list kind (`<Kind>List`) as controller-gen does.
pub(crate) fn tidy(crd: &mut CustomResourceDefinition) {
    let names = &mut crd.spec.names;
    names.list_kind = Some(format!("{}List", names.kind));
    for version in &mut crd.spec.versions {
        let Some(root) = version
            .schema
            .as_mut()
            .and_then(|validation| validation.open_api_v3_schema.as_mut())
        else {
            continue;
        };
        clean(root);
        add_object_fields(root);
    }
}

/// Remove what schemars adds but a structural schema does not carry, recursively.
fn clean(schema: &mut JSONSchemaProps) {
    schema.nullable = None;
    schema.title = None;
    schema.schema = None;
    for child in schema.properties.iter_mut().flat_map(BTreeMap::values_mut) {
        clean(child);
    }
    match &mut schema.items {
        Some(JSONSchemaPropsOrArray::Schema(items)) => clean(items),
        Some(JSONSchemaPropsOrArray::Schemas(items)) => items.iter_mut().for_each(clean),
        None => {}
    }
    if let Some(JSONSchemaPropsOrBool::Schema(values)) = &mut schema.additional_properties {
        clean(values);
    }
    for branch in [&mut schema.all_of, &mut schema.any_of, &mut schema.one_of]
        .into_iter()
        .flatten()
    {
        branch.iter_mut().for_each(clean);
    }
    if let Some(not) = &mut schema.not {
        clean(not);
    }
}

/// Declare `apiVersion`, `kind` (strings) and `metadata` (an object) on the root schema.
fn add_object_fields(root: &mut JSONSchemaProps) {
    let properties = root.properties.get_or_insert_with(BTreeMap::new);
    properties
        .entry("apiVersion".to_owned())
        .or_insert_with(|| JSONSchemaProps {
            description: Some(
                "The versioned schema of this representation of the object.".to_owned(),
            ),
            type_: Some("string".to_owned()),
            ..JSONSchemaProps::default()
        });
    properties
        .entry("kind".to_owned())
        .or_insert_with(|| JSONSchemaProps {
            description: Some("The REST resource this object represents.".to_owned()),
            type_: Some("string".to_owned()),
            ..JSONSchemaProps::default()
        });
    properties
        .entry("metadata".to_owned())
        .or_insert_with(|| JSONSchemaProps {
            type_: Some("object".to_owned()),
            ..JSONSchemaProps::default()
        });
}
