//! Raw HTTP behaviour of the server, as kubectl and client-go see it: paths, methods,
//! content types, Status errors, discovery negotiation, OpenAPI, Table and
//! PartialObjectMetadata output, and the watch wire format over a real socket.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed test

mod http_support;

use bytes::Bytes;
use http::{Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tower::ServiceExt;
use udn_kube_sim::http::{ResponseBody, SimService};
use udn_kube_sim::{Sim, SimConfig};

use http_support::over_http_with;

const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";

struct Reply {
    status: StatusCode,
    content_type: String,
    body: ResponseBody,
}

impl Reply {
    async fn json(self) -> Value {
        let bytes = self.body.collect().await.unwrap().to_bytes();
        serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{e}: {bytes:?}"))
    }

    async fn first_line(mut self) -> Value {
        let frame = self.body.frame().await.unwrap().unwrap();
        let data = frame.into_data().unwrap();
        let line = data.split(|b| *b == b'\n').next().unwrap().to_vec();
        serde_json::from_slice(&line).unwrap()
    }
}

async fn call(sim: &Sim, method: Method, uri: &str, headers: &[(&str, &str)], body: &str) -> Reply {
    let mut request = Request::builder().method(method).uri(uri);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let request = request
        .body(Full::new(Bytes::from(body.to_owned())))
        .unwrap();
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

async fn get(sim: &Sim, uri: &str) -> Value {
    let reply = call(sim, Method::GET, uri, &[], "").await;
    assert_eq!(reply.status, StatusCode::OK, "GET {uri}");
    reply.json().await
}

async fn post(sim: &Sim, uri: &str, body: &Value) -> Value {
    let reply = call(
        sim,
        Method::POST,
        uri,
        &[("content-type", "application/json")],
        &body.to_string(),
    )
    .await;
    assert_eq!(reply.status, StatusCode::CREATED, "POST {uri}");
    reply.json().await
}

fn sim() -> Sim {
    Sim::new(SimConfig::default())
}

async fn seed_blue(sim: &Sim) {
    let crd = udn_api::crd::to_manifest_json(&udn_api::crd::user_defined_network_crd()).unwrap();
    post(
        sim,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        &crd,
    )
    .await;
    post(
        sim,
        "/api/v1/namespaces",
        &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "blue"}}),
    )
    .await;
    let udn = json!({"apiVersion": "k8s.ovn.org/v1", "kind": "UserDefinedNetwork",
        "metadata": {"name": "blue-network", "namespace": "blue"},
        "spec": {"topology": "Layer3", "layer3": {"role": "Primary", "subnets": [{"cidr": "103.103.0.0/16", "hostSubnet": 24}]}}});
    post(
        sim,
        "/apis/k8s.ovn.org/v1/namespaces/blue/userdefinednetworks",
        &udn,
    )
    .await;
}

#[tokio::test]
async fn unknown_paths_methods_and_media_types_get_status_errors() {
    let sim = sim();
    for uri in [
        "/nope",
        "/api/v2",
        "/apis/example.com/v1",
        "/api/v1/widgets",
        "/api/v1/namespaces/x/widgets",
        "/api/v1/pods/p",
        "/api/v1/namespaces/x/pods/p/log",
    ] {
        let reply = call(&sim, Method::GET, uri, &[], "").await;
        assert_eq!(reply.status, StatusCode::NOT_FOUND, "{uri}");
        let status = reply.json().await;
        assert_eq!(
            (
                status["kind"].as_str(),
                status["code"].as_u64(),
                status["reason"].as_str()
            ),
            (Some("Status"), Some(404), Some("NotFound")),
            "{uri}"
        );
        assert_eq!(
            status["message"], "the server could not find the requested resource",
            "{uri}"
        );
    }
    let reply = call(&sim, Method::POST, "/version", &[], "{}").await;
    assert_eq!(reply.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(reply.json().await["reason"], "MethodNotAllowed");
    let reply = call(&sim, Method::DELETE, "/api/v1/namespaces", &[], "").await;
    assert_eq!(
        reply.status,
        StatusCode::METHOD_NOT_ALLOWED,
        "namespaces have no deletecollection"
    );
    post(
        &sim,
        "/api/v1/namespaces",
        &json!({"metadata": {"name": "blue"}}),
    )
    .await;
    let reply = call(
        &sim,
        Method::PATCH,
        "/api/v1/namespaces/blue",
        &[("content-type", "text/plain")],
        "{}",
    )
    .await;
    assert_eq!(reply.status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    assert_eq!(reply.json().await["reason"], "UnsupportedMediaType");
    let reply = call(&sim, Method::GET, "/api/v1/namespaces?watch=maybe", &[], "").await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST);
    let reply = call(
        &sim,
        Method::GET,
        "/api/v1/namespaces",
        &[("accept", "application/cbor")],
        "",
    )
    .await;
    assert_eq!(reply.status, StatusCode::NOT_ACCEPTABLE);
    let mismatch = json!({"apiVersion": "v2", "kind": "Namespace", "metadata": {"name": "x"}});
    let reply = call(
        &sim,
        Method::POST,
        "/api/v1/namespaces",
        &[],
        &mismatch.to_string(),
    )
    .await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        reply.json().await["message"],
        "the API version in the data (v2) does not match the expected API version (v1)"
    );
    let reply = call(&sim, Method::POST, "/api/v1/namespaces", &[], "{not json").await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST);
    let huge = format!(
        "{{\"metadata\": {{\"name\": \"{}\"}}}}",
        "x".repeat(3 * 1024 * 1024)
    );
    let reply = call(&sim, Method::POST, "/api/v1/namespaces", &[], &huge).await;
    assert_eq!(reply.status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(
        reply.json().await["message"],
        "Request entity too large: limit is 3145728"
    );
}

#[tokio::test]
async fn discovery_documents_and_negotiation() {
    let sim = sim();
    let version = get(&sim, "/version").await;
    assert_eq!(
        version["gitVersion"],
        udn_kube_sim::http::KUBERNETES_VERSION
    );
    assert_eq!(
        (version["major"].as_str(), version["minor"].as_str()),
        (Some("1"), Some("33"))
    );
    assert_eq!(get(&sim, "/api").await["versions"], json!(["v1"]));
    seed_blue(&sim).await;
    let groups = get(&sim, "/apis").await;
    let ovn = groups["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["name"] == "k8s.ovn.org")
        .unwrap();
    assert_eq!(
        ovn["preferredVersion"],
        json!({"groupVersion": "k8s.ovn.org/v1", "version": "v1"})
    );
    assert_eq!(get(&sim, "/apis/k8s.ovn.org").await["kind"], "APIGroup");
    let core = get(&sim, "/api/v1").await;
    let pods = core["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "pods")
        .unwrap();
    assert_eq!(pods["kind"], "Pod");
    assert_eq!(pods["namespaced"], true);
    assert_eq!(pods["shortNames"], json!(["po"]));
    assert!(
        core["resources"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["name"] == "pods/status")
    );

    let aggregated =
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json";
    let reply = call(&sim, Method::GET, "/apis", &[("accept", aggregated)], "").await;
    assert_eq!(
        reply.content_type,
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    );
    let list = reply.json().await;
    assert_eq!(list["kind"], "APIGroupDiscoveryList");
    let ovn = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["metadata"]["name"] == "k8s.ovn.org")
        .unwrap();
    let udn = &ovn["versions"][0]["resources"][0];
    assert_eq!(udn["resource"], "userdefinednetworks");
    assert_eq!(udn["scope"], "Namespaced");
    assert_eq!(udn["shortNames"], json!(["udn"]));
    assert_eq!(udn["subresources"][0]["subresource"], "status");
    let reply = call(&sim, Method::GET, "/api", &[("accept", aggregated)], "").await;
    let core = reply.json().await;
    assert_eq!(core["items"][0]["versions"][0]["version"], "v1");
    assert_eq!(
        call(&sim, Method::GET, "/healthz", &[], "").await.status,
        StatusCode::OK
    );
}

#[tokio::test]
async fn openapi_v3_tells_kubectl_that_the_server_validates_fields() {
    let sim = sim();
    seed_blue(&sim).await;
    let root = get(&sim, "/openapi/v3").await;
    for gv in [
        "api/v1",
        "apis/k8s.ovn.org/v1",
        "apis/apiextensions.k8s.io/v1",
    ] {
        assert!(
            root["paths"][gv]["serverRelativeURL"].is_string(),
            "{gv} in {root}"
        );
    }
    let url = root["paths"]["apis/k8s.ovn.org/v1"]["serverRelativeURL"]
        .as_str()
        .unwrap()
        .to_owned();
    let doc = get(&sim, &url).await;
    let item =
        &doc["paths"]["/apis/k8s.ovn.org/v1/namespaces/{namespace}/userdefinednetworks/{name}"];
    assert_eq!(
        item["patch"]["x-kubernetes-group-version-kind"],
        json!({"group": "k8s.ovn.org", "version": "v1", "kind": "UserDefinedNetwork"})
    );
    let params: Vec<&str> = item["patch"]["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert!(params.contains(&"fieldValidation"), "{params:?}");
    // The CRD's schema, for `kubectl explain`.
    let schema = &doc["components"]["schemas"]["org.ovn.k8s.v1.UserDefinedNetwork"];
    assert_eq!(
        schema["x-kubernetes-group-version-kind"],
        json!([{"group": "k8s.ovn.org", "version": "v1", "kind": "UserDefinedNetwork"}])
    );
    assert_eq!(
        schema["properties"]["spec"]["required"],
        json!(["topology"])
    );
    assert_eq!(
        call(
            &sim,
            Method::GET,
            "/openapi/v3/apis/example.com/v1",
            &[],
            ""
        )
        .await
        .status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn table_and_partial_metadata_output() {
    let sim = sim();
    seed_blue(&sim).await;
    let reply = call(
        &sim,
        Method::GET,
        "/apis/k8s.ovn.org/v1/userdefinednetworks",
        &[("accept", TABLE)],
        "",
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK);
    let table = reply.json().await;
    assert_eq!(
        (table["kind"].as_str(), table["apiVersion"].as_str()),
        (Some("Table"), Some("meta.k8s.io/v1"))
    );
    let columns: Vec<&str> = table["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(columns, ["Name", "Topology", "Role", "Created", "Age"]);
    let row = &table["rows"][0];
    assert_eq!(
        row["cells"].as_array().unwrap()[0..4],
        [
            json!("blue-network"),
            json!("Layer3"),
            json!("Primary"),
            Value::Null
        ]
    );
    let age = row["cells"][4].as_str().unwrap();
    assert!(
        age.ends_with('s') && age.trim_end_matches('s').parse::<u32>().is_ok(),
        "{age}"
    );
    assert_eq!(row["object"]["kind"], "PartialObjectMetadata");
    assert_eq!(row["object"]["metadata"]["namespace"], "blue");

    let reply = call(
        &sim,
        Method::GET,
        "/api/v1/namespaces/blue?includeObject=Object",
        &[("accept", TABLE)],
        "",
    )
    .await;
    let table = reply.json().await;
    let columns: Vec<&str> = table["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(columns, ["Name", "Status", "Age"]);
    assert_eq!(
        table["rows"][0]["cells"].as_array().unwrap()[0..2],
        [json!("blue"), json!("Active")]
    );
    assert_eq!(table["rows"][0]["object"]["kind"], "Namespace");

    let partial = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
    let reply = call(
        &sim,
        Method::GET,
        "/apis/k8s.ovn.org/v1/namespaces/blue/userdefinednetworks",
        &[("accept", partial)],
        "",
    )
    .await;
    let list = reply.json().await;
    assert_eq!(list["kind"], "PartialObjectMetadataList");
    assert_eq!(list["items"][0]["kind"], "PartialObjectMetadata");
    assert_eq!(list["items"][0]["metadata"]["name"], "blue-network");
    assert!(list["items"][0].get("spec").is_none());

    let pretty = call(
        &sim,
        Method::GET,
        "/api/v1/namespaces/blue?pretty=true",
        &[],
        "",
    )
    .await;
    let text = pretty.body.collect().await.unwrap().to_bytes();
    assert!(text.starts_with(b"{\n  \""), "{text:?}");
}

#[tokio::test]
async fn writes_honour_dry_run_delete_options_and_legacy_watch_paths() {
    let sim = sim();
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "blue"}});
    let reply = call(
        &sim,
        Method::POST,
        "/api/v1/namespaces?dryRun=All",
        &[],
        &ns.to_string(),
    )
    .await;
    assert_eq!(reply.status, StatusCode::CREATED);
    assert_eq!(
        call(&sim, Method::GET, "/api/v1/namespaces/blue", &[], "")
            .await
            .status,
        StatusCode::NOT_FOUND
    );
    let created = post(&sim, "/api/v1/namespaces", &ns).await;
    let wrong_uid = json!({"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"uid": "not-the-uid"}});
    let reply = call(
        &sim,
        Method::DELETE,
        "/api/v1/namespaces/blue",
        &[],
        &wrong_uid.to_string(),
    )
    .await;
    assert_eq!(reply.status, StatusCode::CONFLICT, "uid precondition");
    let lease =
        json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"}});
    post(
        &sim,
        "/apis/coordination.k8s.io/v1/namespaces/blue/leases",
        &lease,
    )
    .await;
    let reply = call(
        &sim,
        Method::GET,
        "/apis/coordination.k8s.io/v1/watch/namespaces/blue/leases",
        &[],
        "",
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK);
    let event = reply.first_line().await;
    assert_eq!(
        (
            event["type"].as_str(),
            event["object"]["metadata"]["name"].as_str()
        ),
        (Some("ADDED"), Some("l"))
    );
    let reply = call(
        &sim,
        Method::GET,
        "/apis/coordination.k8s.io/v1/namespaces/blue/leases/l?watch=1",
        &[],
        "",
    )
    .await;
    assert_eq!(reply.first_line().await["object"]["metadata"]["name"], "l");
    let reply = call(
        &sim,
        Method::DELETE,
        "/apis/coordination.k8s.io/v1/namespaces/blue/leases?labelSelector=none%3Dsuch",
        &[],
        "",
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.json().await["items"], json!([]));
    assert!(created["metadata"]["uid"].is_string());
}

/// Sends a raw HTTP/1.1 request and returns the response head and the first body bytes.
async fn raw(url: &str, path: &str) -> (String, String) {
    let address = url.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    let request =
        format!("GET {path} HTTP/1.1\r\nHost: {address}\r\nAccept: application/json\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut received = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&received).contains("}\n") {
        let n = tokio::time::timeout(std::time::Duration::from_secs(10), stream.read(&mut buf))
            .await
            .unwrap()
            .unwrap();
        assert!(
            n > 0,
            "connection closed early: {}",
            String::from_utf8_lossy(&received)
        );
        received.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8_lossy(&received).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    (head.to_lowercase(), body.to_owned())
}

#[tokio::test]
async fn watch_wire_format_over_a_socket() {
    let t = over_http_with(sim()).await;
    let url = t.url.clone().unwrap();
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "blue"}});
    let created = post(&t.sim, "/api/v1/namespaces", &ns).await;
    let (head, body) = raw(&url, "/api/v1/namespaces?watch=true").await;
    assert!(head.starts_with("http/1.1 200 ok"), "{head}");
    assert!(head.contains("transfer-encoding: chunked"), "{head}");
    assert!(head.contains("content-type: application/json"), "{head}");
    // The chunk size line comes first, then one JSON event per line.
    let (_, json_line) = body.split_once("\r\n").unwrap();
    let event: Value = serde_json::from_str(json_line.lines().next().unwrap()).unwrap();
    assert_eq!(event["type"], "ADDED");
    assert_eq!(event["object"]["metadata"]["name"], "blue");

    post(
        &t.sim,
        "/api/v1/namespaces",
        &json!({"metadata": {"name": "green"}}),
    )
    .await;
    t.sim.compact();
    let old = created["metadata"]["resourceVersion"].as_str().unwrap();
    let (head, body) = raw(
        &url,
        &format!("/api/v1/namespaces?watch=true&resourceVersion={old}"),
    )
    .await;
    assert!(
        head.starts_with("http/1.1 200 ok"),
        "a too-old watch still starts: {head}"
    );
    let (_, json_line) = body.split_once("\r\n").unwrap();
    let event: Value = serde_json::from_str(json_line.lines().next().unwrap()).unwrap();
    assert_eq!(event["type"], "ERROR");
    assert_eq!(
        (
            event["object"]["kind"].as_str(),
            event["object"]["code"].as_u64(),
            event["object"]["reason"].as_str()
        ),
        (Some("Status"), Some(410), Some("Expired"))
    );
}

#[tokio::test]
async fn protobuf_bodies_of_kubectl_create_namespace_are_read() {
    let sim = sim();
    // `kubectl create namespace x` (kubectl 1.32) as sent on the wire.
    let hex = "6b3873000a0f0a02763112094e616d65737061636512190a110a017812001a0022002a0032003800420012001a020a001a002200";
    let body: Vec<u8> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect();
    let request = Request::post("/api/v1/namespaces?fieldManager=kubectl-create")
        .header("content-type", "application/vnd.kubernetes.protobuf")
        .header("accept", "application/vnd.kubernetes.protobuf, */*")
        .body(Full::new(Bytes::from(body)))
        .unwrap();
    let response = SimService::new(sim.clone()).oneshot(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::CREATED);
    // kubectl prefers protobuf and gets it (tests/http_protobuf.rs reads such answers).
    assert_eq!(
        response.headers()["content-type"],
        "application/vnd.kubernetes.protobuf"
    );
    let body = response.into_body().collect().await.unwrap().to_bytes();
    assert!(body.starts_with(b"k8s\0"), "{body:?}");
    assert_eq!(
        get(&sim, "/api/v1/namespaces/x").await["metadata"]["name"],
        "x"
    );
}
