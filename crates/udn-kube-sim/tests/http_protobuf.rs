//! Protobuf over HTTP as client-go speaks it (`Accept: application/vnd.kubernetes.protobuf,
//! application/json`), with bodies built and read by prost (`k8s-pb`): create, get and
//! list of built-in kinds, a watch of length-prefixed WatchEvent frames, Status errors,
//! DeleteOptions bodies, and custom resources, which have no protobuf form.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed test

mod http_support;

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http::{Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use k8s_pb::api::discovery::v1 as discovery;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
use k8s_pb::apimachinery::pkg::runtime::{TypeMeta, Unknown};
use prost::Message as _;
use serde_json::{Value, json};
use tower::ServiceExt;
use udn_kube_sim::http::{ResponseBody, SimService};
use udn_kube_sim::{Sim, SimConfig};

use http_support::{in_process_with, install_udn_crd};

const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";
const CLIENT_GO: &str = "application/vnd.kubernetes.protobuf, application/json";

struct Reply {
    status: StatusCode,
    content_type: String,
    body: ResponseBody,
}

impl Reply {
    async fn bytes(self) -> Bytes {
        self.body.collect().await.unwrap().to_bytes()
    }

    async fn json(self) -> Value {
        serde_json::from_slice(&self.bytes().await).unwrap()
    }

    /// The envelope's (apiVersion, kind) and raw message.
    async fn unknown(self) -> (String, String, Vec<u8>) {
        assert_eq!(self.content_type, PROTOBUF);
        let bytes = self.bytes().await;
        unwrap_envelope(&bytes)
    }
}

fn unwrap_envelope(bytes: &[u8]) -> (String, String, Vec<u8>) {
    let rest = bytes
        .strip_prefix(b"k8s\0")
        .expect("the k8s protobuf magic");
    let unknown = Unknown::decode(rest).unwrap();
    let type_meta = unknown.type_meta.unwrap_or_default();
    (
        type_meta.api_version.unwrap_or_default(),
        type_meta.kind.unwrap_or_default(),
        unknown.raw.unwrap_or_default(),
    )
}

fn envelope(api_version: &str, kind: &str, raw: Vec<u8>) -> Vec<u8> {
    let unknown = Unknown {
        type_meta: Some(TypeMeta {
            api_version: Some(api_version.to_owned()),
            kind: Some(kind.to_owned()),
        }),
        raw: Some(raw),
        content_encoding: Some(String::new()),
        content_type: Some(String::new()),
    };
    let mut body = b"k8s\0".to_vec();
    body.extend(unknown.encode_to_vec());
    body
}

async fn call(
    sim: &Sim,
    method: Method,
    uri: &str,
    headers: &[(&str, &str)],
    body: Vec<u8>,
) -> Reply {
    let mut request = Request::builder().method(method).uri(uri);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let request = request.body(Full::new(Bytes::from(body))).unwrap();
    let response = SimService::new(sim.clone()).oneshot(request).await.unwrap();
    let content_type = response
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    Reply {
        status: response.status(),
        content_type,
        body: response.into_body(),
    }
}

fn endpoint_slice(name: &str) -> discovery::EndpointSlice {
    discovery::EndpointSlice {
        metadata: Some(meta::ObjectMeta {
            name: Some(name.to_owned()),
            labels: [("kubernetes.io/service-name".to_owned(), "web".to_owned())].into(),
            ..Default::default()
        }),
        address_type: Some("IPv4".to_owned()),
        endpoints: vec![discovery::Endpoint {
            addresses: vec!["10.244.1.5".to_owned()],
            conditions: Some(discovery::EndpointConditions {
                ready: Some(false),
                serving: Some(true),
                terminating: Some(false),
            }),
            ..Default::default()
        }],
        ports: vec![discovery::EndpointPort {
            name: Some("http".to_owned()),
            protocol: Some("TCP".to_owned()),
            port: Some(8080),
            app_protocol: None,
        }],
    }
}

const SLICES: &str = "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices";

/// A server with the `default` namespace.
async fn sim() -> Sim {
    let sim = Sim::new(SimConfig::default());
    let namespace =
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}});
    let reply = call(
        &sim,
        Method::POST,
        "/api/v1/namespaces",
        &[("content-type", "application/json")],
        namespace.to_string().into_bytes(),
    )
    .await;
    assert_eq!(reply.status, StatusCode::CREATED);
    sim
}

async fn create_slice(sim: &Sim, name: &str) -> discovery::EndpointSlice {
    let body = envelope(
        "discovery.k8s.io/v1",
        "EndpointSlice",
        endpoint_slice(name).encode_to_vec(),
    );
    let reply = call(
        sim,
        Method::POST,
        SLICES,
        &[("content-type", PROTOBUF), ("accept", CLIENT_GO)],
        body,
    )
    .await;
    assert_eq!(reply.status, StatusCode::CREATED);
    let (api_version, kind, raw) = reply.unknown().await;
    assert_eq!(
        (api_version.as_str(), kind.as_str()),
        ("discovery.k8s.io/v1", "EndpointSlice")
    );
    discovery::EndpointSlice::decode(raw.as_slice()).unwrap()
}

#[tokio::test]
async fn built_in_kinds_are_created_read_and_listed_in_protobuf() {
    let sim = sim().await;
    let created = create_slice(&sim, "web-abc").await;
    let meta = created.metadata.clone().unwrap_or_default();
    assert_eq!(meta.name.as_deref(), Some("web-abc"));
    assert!(
        meta.uid.is_some_and(|uid| !uid.is_empty()),
        "the server sets a uid"
    );
    assert!(meta.creation_timestamp.is_some());
    let conditions = created.endpoints[0].conditions.unwrap_or_default();
    assert_eq!(conditions.ready, Some(false), "a false pointer survives");

    // The store holds the JSON a JSON client would have sent.
    let reply = call(
        &sim,
        Method::GET,
        &format!("{SLICES}/web-abc"),
        &[],
        Vec::new(),
    )
    .await;
    assert_eq!(reply.content_type, "application/json");
    let json = reply.json().await;
    assert_eq!(
        json["endpoints"][0]["conditions"],
        json!({"ready": false, "serving": true, "terminating": false})
    );
    assert_eq!(
        json["ports"],
        json!([{"name": "http", "protocol": "TCP", "port": 8080}])
    );

    let reply = call(
        &sim,
        Method::GET,
        SLICES,
        &[("accept", CLIENT_GO)],
        Vec::new(),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK);
    let (api_version, kind, raw) = reply.unknown().await;
    assert_eq!(
        (api_version.as_str(), kind.as_str()),
        ("discovery.k8s.io/v1", "EndpointSliceList")
    );
    let list = discovery::EndpointSliceList::decode(raw.as_slice()).unwrap();
    assert_eq!(list.items.len(), 1);
    assert!(list.metadata.and_then(|m| m.resource_version).is_some());
    assert_eq!(list.items[0], {
        let mut expected = created.clone();
        expected.metadata = list.items[0].metadata.clone();
        expected
    });
}

/// Reads one length-prefixed frame from a watch body.
async fn frame(body: &mut ResponseBody, buffer: &mut BytesMut) -> meta::WatchEvent {
    loop {
        if buffer.len() >= 4 {
            let length = u32::from_be_bytes(buffer[..4].try_into().unwrap()) as usize;
            if buffer.len() >= 4 + length {
                let frame = buffer.split_to(4 + length);
                return meta::WatchEvent::decode(&frame[4..]).unwrap();
            }
        }
        let next = tokio::time::timeout(Duration::from_secs(10), body.frame())
            .await
            .expect("timed out waiting for a watch frame")
            .expect("the watch ended")
            .unwrap();
        buffer.extend_from_slice(&next.into_data().unwrap());
    }
}

fn event_object(event: &meta::WatchEvent) -> (String, String, Vec<u8>) {
    let raw = event
        .object
        .as_ref()
        .and_then(|o| o.raw.clone())
        .unwrap_or_default();
    unwrap_envelope(&raw)
}

#[tokio::test]
async fn watches_stream_length_prefixed_watch_events() {
    let sim = sim().await;
    let reply = call(
        &sim,
        Method::GET,
        &format!("{SLICES}?watch=true&allowWatchBookmarks=true"),
        &[("accept", CLIENT_GO)],
        Vec::new(),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(
        reply.content_type,
        "application/vnd.kubernetes.protobuf;stream=watch"
    );
    let mut body = reply.body;
    let mut buffer = BytesMut::new();
    create_slice(&sim, "one").await;
    let added = frame(&mut body, &mut buffer).await;
    assert_eq!(added.r#type.as_deref(), Some("ADDED"));
    let (_, kind, raw) = event_object(&added);
    assert_eq!(kind, "EndpointSlice");
    let slice = discovery::EndpointSlice::decode(raw.as_slice()).unwrap();
    assert_eq!(
        slice.metadata.unwrap_or_default().name.as_deref(),
        Some("one")
    );

    let delete = call(
        &sim,
        Method::DELETE,
        &format!("{SLICES}/one"),
        &[],
        Vec::new(),
    )
    .await;
    assert_eq!(delete.status, StatusCode::OK);
    let deleted = frame(&mut body, &mut buffer).await;
    assert_eq!(deleted.r#type.as_deref(), Some("DELETED"));

    // A watch from a compacted resourceVersion: one ERROR frame with the 410 Status.
    sim.compact();
    let reply = call(
        &sim,
        Method::GET,
        &format!("{SLICES}?watch=true&resourceVersion=1"),
        &[("accept", CLIENT_GO)],
        Vec::new(),
    )
    .await;
    let mut body = reply.body;
    let error = frame(&mut body, &mut BytesMut::new()).await;
    assert_eq!(error.r#type.as_deref(), Some("ERROR"));
    let (api_version, kind, raw) = event_object(&error);
    assert_eq!((api_version.as_str(), kind.as_str()), ("v1", "Status"));
    let status = meta::Status::decode(raw.as_slice()).unwrap();
    assert_eq!(
        (status.code, status.reason.as_deref()),
        (Some(410), Some("Expired"))
    );
}

#[tokio::test]
async fn errors_are_status_messages_in_the_negotiated_encoding() {
    let sim = sim().await;
    let missing = format!("{SLICES}/nothing");
    let reply = call(
        &sim,
        Method::GET,
        &missing,
        &[("accept", CLIENT_GO)],
        Vec::new(),
    )
    .await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND);
    let (api_version, kind, raw) = reply.unknown().await;
    assert_eq!((api_version.as_str(), kind.as_str()), ("v1", "Status"));
    let status = meta::Status::decode(raw.as_slice()).unwrap();
    assert_eq!(status.status.as_deref(), Some("Failure"));
    assert_eq!(status.reason.as_deref(), Some("NotFound"));
    assert_eq!(
        status.message.as_deref(),
        Some("endpointslices.discovery.k8s.io \"nothing\" not found")
    );
    assert_eq!(
        status.details.and_then(|d| d.name).as_deref(),
        Some("nothing")
    );

    // A metadata client's Accept: errors are never transformed, so JSON.
    let metadata = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json";
    let reply = call(
        &sim,
        Method::GET,
        &missing,
        &[("accept", metadata)],
        Vec::new(),
    )
    .await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND);
    assert_eq!(reply.json().await["reason"], "NotFound");

    // A malformed body: 400 naming the field.
    let mut body = b"k8s\0".to_vec();
    body.extend(
        Unknown {
            type_meta: Some(TypeMeta {
                api_version: Some("discovery.k8s.io/v1".to_owned()),
                kind: Some("EndpointSlice".to_owned()),
            }),
            // Field 4 (addressType, a string) as a varint.
            raw: Some(vec![0x20, 0x01]),
            ..Default::default()
        }
        .encode_to_vec(),
    );
    let reply = call(
        &sim,
        Method::POST,
        SLICES,
        &[("content-type", PROTOBUF), ("accept", CLIENT_GO)],
        body,
    )
    .await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST);
    let (_, _, raw) = reply.unknown().await;
    let status = meta::Status::decode(raw.as_slice()).unwrap();
    assert_eq!(
        status.message.as_deref(),
        Some(
            "the protobuf body of the request is malformed: a field has an unexpected wire type (field k8s.io.api.discovery.v1.EndpointSlice.addressType)"
        )
    );
}

#[tokio::test]
async fn delete_options_bodies_in_protobuf() {
    let sim = sim().await;
    create_slice(&sim, "doomed").await;
    let options = |uid: &str| {
        envelope(
            "discovery.k8s.io/v1",
            "DeleteOptions",
            meta::DeleteOptions {
                preconditions: Some(meta::Preconditions {
                    uid: Some(uid.to_owned()),
                    resource_version: None,
                }),
                propagation_policy: Some("Background".to_owned()),
                ..Default::default()
            }
            .encode_to_vec(),
        )
    };
    let uri = format!("{SLICES}/doomed");
    let headers = [("content-type", PROTOBUF), ("accept", CLIENT_GO)];
    let reply = call(&sim, Method::DELETE, &uri, &headers, options("wrong")).await;
    assert_eq!(
        reply.status,
        StatusCode::CONFLICT,
        "the precondition is read"
    );
    let uid = call(&sim, Method::GET, &uri, &[], Vec::new())
        .await
        .json()
        .await["metadata"]["uid"]
        .as_str()
        .unwrap()
        .to_owned();
    let reply = call(&sim, Method::DELETE, &uri, &headers, options(&uid)).await;
    assert_eq!(reply.status, StatusCode::OK);
    let (_, kind, _) = reply.unknown().await;
    assert_eq!(kind, "EndpointSlice");
}

#[tokio::test]
async fn custom_resources_have_no_protobuf_form() {
    let transport = in_process_with(Sim::new(SimConfig::default()));
    install_udn_crd(&transport.client).await;
    let sim = transport.sim;
    let udns = "/apis/k8s.ovn.org/v1/namespaces/default/userdefinednetworks";

    // Protobuf only: 406, itself a Status in protobuf (the apiserver's ErrorNegotiated).
    let reply = call(&sim, Method::GET, udns, &[("accept", PROTOBUF)], Vec::new()).await;
    assert_eq!(reply.status, StatusCode::NOT_ACCEPTABLE);
    let (_, kind, raw) = reply.unknown().await;
    assert_eq!(kind, "Status");
    assert_eq!(
        meta::Status::decode(raw.as_slice())
            .unwrap()
            .reason
            .as_deref(),
        Some("NotAcceptable")
    );

    // With JSON as a fallback: JSON.
    let reply = call(
        &sim,
        Method::GET,
        udns,
        &[("accept", CLIENT_GO)],
        Vec::new(),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.content_type, "application/json");
    assert_eq!(reply.json().await["kind"], "UserDefinedNetworkList");

    // Metadata in protobuf is served for any kind.
    let metadata = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";
    let reply = call(&sim, Method::GET, udns, &[("accept", metadata)], Vec::new()).await;
    assert_eq!(reply.status, StatusCode::OK);
    let (api_version, kind, raw) = reply.unknown().await;
    assert_eq!(
        (api_version.as_str(), kind.as_str()),
        ("meta.k8s.io/v1", "PartialObjectMetadataList")
    );
    assert!(
        meta::PartialObjectMetadataList::decode(raw.as_slice())
            .unwrap()
            .items
            .is_empty()
    );

    // A protobuf body for a custom resource: 415.
    let body = envelope("k8s.ovn.org/v1", "UserDefinedNetwork", Vec::new());
    let reply = call(
        &sim,
        Method::POST,
        udns,
        &[("content-type", PROTOBUF), ("accept", "application/json")],
        body,
    )
    .await;
    assert_eq!(reply.status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    let message = reply.json().await["message"].as_str().unwrap().to_owned();
    assert!(
        message.starts_with("the body of the request was in an unknown format - accepted media types include: application/json, application/yaml (got"),
        "{message}"
    );
}
