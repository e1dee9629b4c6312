//! The kinds outside core/v1 (EndpointSlice, Lease, events.k8s.io Event, CRD), lists and
//! the meta.k8s.io types (Status, DeleteOptions, PartialObjectMetadataList).

use k8s_openapi::api::coordination::v1 as openapi_coordination;
use k8s_openapi::api::discovery::v1 as openapi_discovery;
use k8s_openapi::api::events::v1 as openapi_events;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as openapi_crd;
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as openapi_meta;
use k8s_pb::api::core::v1 as core;
use k8s_pb::api::events::v1 as events;
use k8s_pb::api::{coordination::v1 as coordination, discovery::v1 as discovery};
use k8s_pb::apiextensions_apiserver::pkg::apis::apiextensions::v1 as crd;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
use prost::Message as _;
use serde_json::json;

use super::{envelope, metadata, micro_time, round_trip, s, time};
use crate::http::protobuf::{decode, encode};

#[test]
fn endpoint_slice() {
    let (meta, meta_json) = metadata(Some("blue"));
    let object = discovery::EndpointSlice {
        metadata: Some(meta),
        address_type: s("IPv4"),
        endpoints: vec![discovery::Endpoint {
            addresses: vec!["10.244.1.5".to_owned()],
            // Pointers: `ready: false` is not the same as no `ready` (which means true).
            conditions: Some(discovery::EndpointConditions {
                ready: Some(false),
                serving: Some(true),
                terminating: Some(false),
            }),
            target_ref: Some(core::ObjectReference {
                kind: s("Pod"),
                namespace: s("blue"),
                name: s("web"),
                uid: s("9a1f"),
                ..Default::default()
            }),
            node_name: s("node1"),
            ..Default::default()
        }],
        ports: vec![discovery::EndpointPort {
            name: s(""),
            protocol: s("TCP"),
            port: Some(8080),
            app_protocol: None,
        }],
    };
    let json = json!({
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "metadata": meta_json,
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["10.244.1.5"],
            "conditions": {"ready": false, "serving": true, "terminating": false},
            "targetRef": {"kind": "Pod", "namespace": "blue", "name": "web", "uid": "9a1f"},
            "nodeName": "node1"}],
        "ports": [{"name": "", "protocol": "TCP", "port": 8080}],
    });
    round_trip::<_, openapi_discovery::EndpointSlice>(
        "discovery.k8s.io/v1",
        "EndpointSlice",
        &object,
        json,
    );
}

#[test]
fn lease() {
    let (meta, meta_json) = metadata(Some("kube-node-lease"));
    let object = coordination::Lease {
        metadata: Some(meta),
        spec: Some(coordination::LeaseSpec {
            holder_identity: s("node1"),
            lease_duration_seconds: Some(40),
            acquire_time: micro_time(1_700_000_000, 5_000),
            renew_time: micro_time(1_700_000_030, 999_999_000),
            lease_transitions: Some(0),
            ..Default::default()
        }),
    };
    let json = json!({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": meta_json,
        "spec": {"holderIdentity": "node1", "leaseDurationSeconds": 40,
            "acquireTime": "2023-11-14T22:13:20.000005Z", "renewTime": "2023-11-14T22:13:50.999999Z",
            "leaseTransitions": 0},
    });
    round_trip::<_, openapi_coordination::Lease>("coordination.k8s.io/v1", "Lease", &object, json);
}

#[test]
fn events_v1_event() {
    let (meta, meta_json) = metadata(Some("blue"));
    let object = events::Event {
        metadata: Some(meta),
        event_time: micro_time(1_700_000_000, 42_000),
        series: Some(events::EventSeries {
            count: Some(3),
            last_observed_time: micro_time(1_700_000_090, 0),
        }),
        reporting_controller: s("k8s.ovn.org/udn"),
        reporting_instance: s("udn-cluster-manager"),
        action: s("Reconcile"),
        reason: s("NetworkAttachmentDefinitionCreated"),
        regarding: Some(core::ObjectReference {
            kind: s("UserDefinedNetwork"),
            namespace: s("blue"),
            name: s("net"),
            api_version: s("k8s.ovn.org/v1"),
            ..Default::default()
        }),
        note: s("NAD created"),
        r#type: s("Normal"),
        deprecated_first_timestamp: time(1_700_000_000),
        deprecated_count: Some(3),
        ..Default::default()
    };
    let json = json!({
        "apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": meta_json,
        "eventTime": "2023-11-14T22:13:20.000042Z",
        "series": {"count": 3, "lastObservedTime": "2023-11-14T22:14:50.000000Z"},
        "reportingController": "k8s.ovn.org/udn", "reportingInstance": "udn-cluster-manager",
        "action": "Reconcile", "reason": "NetworkAttachmentDefinitionCreated",
        "regarding": {"kind": "UserDefinedNetwork", "namespace": "blue", "name": "net",
            "apiVersion": "k8s.ovn.org/v1"},
        "note": "NAD created", "type": "Normal",
        "deprecatedFirstTimestamp": "2023-11-14T22:13:20Z", "deprecatedCount": 3,
    });
    round_trip::<_, openapi_events::Event>("events.k8s.io/v1", "Event", &object, json);
}

fn schema(type_name: &str) -> crd::JsonSchemaProps {
    crd::JsonSchemaProps {
        r#type: s(type_name),
        ..Default::default()
    }
}

fn raw(text: &str) -> crd::Json {
    crd::Json {
        raw: Some(text.as_bytes().to_vec()),
    }
}

fn crd_schema() -> crd::JsonSchemaProps {
    let size = crd::JsonSchemaProps {
        maximum: Some(10.5),
        default: Some(raw("3")),
        r#enum: vec![raw("1"), raw("3")],
        ..schema("integer")
    };
    let tags = crd::JsonSchemaProps {
        items: Some(Box::new(crd::JsonSchemaPropsOrArray {
            schema: Some(Box::new(schema("string"))),
            j_son_schemas: Vec::new(),
        })),
        x_kubernetes_list_type: s("set"),
        ..schema("array")
    };
    let labels = crd::JsonSchemaProps {
        additional_properties: Some(Box::new(crd::JsonSchemaPropsOrBool {
            allows: Some(true),
            schema: Some(Box::new(schema("string"))),
        })),
        ..schema("object")
    };
    let closed = crd::JsonSchemaProps {
        additional_properties: Some(Box::new(crd::JsonSchemaPropsOrBool {
            allows: Some(false),
            schema: None,
        })),
        ..schema("object")
    };
    let any = crd::JsonSchemaProps {
        x_kubernetes_preserve_unknown_fields: Some(true),
        ..Default::default()
    };
    let spec = crd::JsonSchemaProps {
        properties: [
            ("size".to_owned(), size),
            ("tags".to_owned(), tags),
            ("labels".to_owned(), labels),
            ("closed".to_owned(), closed),
            ("any".to_owned(), any),
        ]
        .into(),
        required: vec!["size".to_owned()],
        x_kubernetes_validations: vec![crd::ValidationRule {
            rule: s("self.size < 5 || size(self.tags) > 0"),
            message: s("big widgets need tags"),
            ..Default::default()
        }],
        ..schema("object")
    };
    crd::JsonSchemaProps {
        properties: [("spec".to_owned(), spec)].into(),
        ..schema("object")
    }
}

#[test]
fn custom_resource_definition() {
    let (meta, meta_json) = metadata(None);
    let version = crd::CustomResourceDefinitionVersion {
        name: s("v1"),
        served: Some(true),
        storage: Some(true),
        schema: Some(crd::CustomResourceValidation {
            open_apiv3_schema: Some(crd_schema()),
        }),
        subresources: Some(crd::CustomResourceSubresources {
            status: Some(crd::CustomResourceSubresourceStatus {}),
            scale: None,
        }),
        additional_printer_columns: vec![crd::CustomResourceColumnDefinition {
            name: s("Size"),
            r#type: s("integer"),
            json_path: s(".spec.size"),
            ..Default::default()
        }],
        ..Default::default()
    };
    let object = crd::CustomResourceDefinition {
        metadata: Some(meta),
        spec: Some(crd::CustomResourceDefinitionSpec {
            group: s("example.com"),
            names: Some(crd::CustomResourceDefinitionNames {
                plural: s("widgets"),
                singular: s("widget"),
                short_names: vec!["wd".to_owned()],
                kind: s("Widget"),
                list_kind: s("WidgetList"),
                categories: vec!["all".to_owned()],
            }),
            scope: s("Namespaced"),
            versions: vec![version],
            conversion: Some(crd::CustomResourceConversion {
                strategy: s("None"),
                webhook: None,
            }),
            ..Default::default()
        }),
        status: Some(crd::CustomResourceDefinitionStatus {
            conditions: vec![crd::CustomResourceDefinitionCondition {
                r#type: s("Established"),
                status: s("True"),
                last_transition_time: time(1_700_000_000),
                reason: s("InitialNamesAccepted"),
                message: s("the initial names have been accepted"),
                ..Default::default()
            }],
            accepted_names: Some(crd::CustomResourceDefinitionNames {
                plural: s("widgets"),
                kind: s("Widget"),
                ..Default::default()
            }),
            stored_versions: vec!["v1".to_owned()],
            ..Default::default()
        }),
    };
    let json = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": meta_json,
        "spec": {
            "group": "example.com",
            "names": {"plural": "widgets", "singular": "widget", "shortNames": ["wd"], "kind": "Widget",
                "listKind": "WidgetList", "categories": ["all"]},
            "scope": "Namespaced",
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {
                    "type": "object",
                    "properties": {
                        "size": {"type": "integer", "maximum": 10.5, "default": 3, "enum": [1, 3]},
                        "tags": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
                        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                        "closed": {"type": "object", "additionalProperties": false},
                        "any": {"x-kubernetes-preserve-unknown-fields": true},
                    },
                    "required": ["size"],
                    "x-kubernetes-validations": [{"rule": "self.size < 5 || size(self.tags) > 0",
                        "message": "big widgets need tags"}],
                }}}},
                "subresources": {"status": {}},
                "additionalPrinterColumns": [{"name": "Size", "type": "integer", "jsonPath": ".spec.size"}],
            }],
            "conversion": {"strategy": "None"},
        },
        "status": {
            "conditions": [{"type": "Established", "status": "True",
                "lastTransitionTime": "2023-11-14T22:13:20Z", "reason": "InitialNamesAccepted",
                "message": "the initial names have been accepted"}],
            "acceptedNames": {"plural": "widgets", "kind": "Widget"},
            "storedVersions": ["v1"],
        },
    });
    round_trip::<_, openapi_crd::CustomResourceDefinition>(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        &object,
        json,
    );
}

#[test]
fn lists_carry_items_without_type_meta() {
    let list = coordination::LeaseList {
        metadata: Some(meta::ListMeta {
            resource_version: s("99"),
            r#continue: s("token"),
            remaining_item_count: Some(0),
            ..Default::default()
        }),
        items: vec![coordination::Lease {
            metadata: Some(meta::ObjectMeta {
                name: s("node1"),
                ..Default::default()
            }),
            spec: None,
        }],
    };
    let body = envelope("coordination.k8s.io/v1", "LeaseList", list.encode_to_vec());
    let decoded = decode(&body).unwrap();
    assert_eq!(
        decoded,
        json!({"apiVersion": "coordination.k8s.io/v1", "kind": "LeaseList",
            "metadata": {"resourceVersion": "99", "continue": "token", "remainingItemCount": 0},
            "items": [{"metadata": {"name": "node1"}}]})
    );
    // The store's lists carry apiVersion and kind on every item; protobuf has no room.
    let mut stored = decoded;
    stored["items"][0]["apiVersion"] = json!("coordination.k8s.io/v1");
    stored["items"][0]["kind"] = json!("Lease");
    let encoded = encode(&stored).unwrap();
    assert_eq!(encoded, body);
}

#[test]
fn status_and_delete_options() {
    let status = json!({
        "apiVersion": "v1", "kind": "Status", "metadata": {}, "status": "Failure",
        "message": "pods \"x\" not found", "reason": "NotFound",
        "details": {"name": "x", "kind": "pods", "causes": [{"reason": "FieldValueInvalid",
            "message": "Invalid value", "field": "spec"}]},
        "code": 404,
    });
    let typed: openapi_meta::Status = serde_json::from_value(status.clone()).unwrap();
    let encoded = encode(&status).unwrap();
    let unknown = k8s_pb::apimachinery::pkg::runtime::Unknown::decode(&encoded[4..]).unwrap();
    let pb = meta::Status::decode(unknown.raw.unwrap_or_default().as_slice()).unwrap();
    assert_eq!(pb.code, Some(404));
    assert_eq!(
        pb.details
            .and_then(|d| d.causes.first().cloned())
            .and_then(|c| c.field),
        s("spec")
    );
    assert_eq!(
        decode(&encoded).unwrap(),
        serde_json::to_value(typed).unwrap()
    );
    // client-go sends DeleteOptions with the group version of the resource.
    let options = meta::DeleteOptions {
        grace_period_seconds: Some(0),
        preconditions: Some(meta::Preconditions {
            uid: s("u"),
            resource_version: None,
        }),
        propagation_policy: s("Foreground"),
        dry_run: vec!["All".to_owned()],
        ..Default::default()
    };
    let body = envelope(
        "discovery.k8s.io/v1",
        "DeleteOptions",
        options.encode_to_vec(),
    );
    assert_eq!(
        decode(&body).unwrap(),
        json!({"apiVersion": "discovery.k8s.io/v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0,
            "preconditions": {"uid": "u"}, "propagationPolicy": "Foreground", "dryRun": ["All"]})
    );
}

#[test]
fn partial_object_metadata_of_any_kind() {
    let list = json!({
        "apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadataList", "metadata": {"resourceVersion": "5"},
        "items": [{"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata",
            "metadata": {"name": "net", "namespace": "blue", "labels": {"a": "b"}}}],
    });
    let encoded = encode(&list).unwrap();
    let unknown = k8s_pb::apimachinery::pkg::runtime::Unknown::decode(&encoded[4..]).unwrap();
    let pb = meta::PartialObjectMetadataList::decode(unknown.raw.unwrap_or_default().as_slice())
        .unwrap();
    let item = pb.items[0].metadata.clone().unwrap_or_default();
    assert_eq!((item.name, item.namespace), (s("net"), s("blue")));
    assert_eq!(item.labels.get("a").map(String::as_str), Some("b"));
}

#[test]
fn unencodable_values_name_their_field() {
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"},
        "spec": {"containers": [{"name": "c", "ports": [{"containerPort": "eighty"}]}]}});
    let error = encode(&pod).unwrap_err();
    assert_eq!(error.code, 500);
    assert!(
        error
            .message
            .ends_with("spec.containers[0].ports[0].containerPort: expected an integer"),
        "{}",
        error.message
    );
    let widget =
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}});
    assert_eq!(encode(&widget).map_err(|e| e.code), Err(500));
}
