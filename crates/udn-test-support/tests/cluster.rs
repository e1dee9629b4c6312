//! The test cluster serves udn's CRDs to a kube client.

use kube::Api;
use kube::api::PostParams;
use udn_api::crd::UserDefinedNetwork;
use udn_test_support::{TestCluster, l3_udn, namespace};

#[tokio::test]
async fn udns_can_be_created_through_the_client() {
    let cluster = TestCluster::new();
    cluster.create("", "namespaces", None, namespace("blue", true));
    let api: Api<UserDefinedNetwork> = Api::namespaced(cluster.client(), "blue");
    let udn: UserDefinedNetwork =
        serde_json::from_value(l3_udn("blue", "net", "Primary", &["10.1.0.0/16"])).unwrap();
    api.create(&PostParams::default(), &udn).await.unwrap();
    let got = api.get("net").await.unwrap();
    assert_eq!(got.spec.layer3.unwrap().subnets[0].cidr.0, "10.1.0.0/16");
    let bad: UserDefinedNetwork = serde_json::from_value(l3_udn(
        "blue",
        "bad",
        "Secondary",
        &["10.1.0.0/16", "10.1.1.0/24"],
    ))
    .unwrap();
    let err = api.create(&PostParams::default(), &bad).await.unwrap_err();
    assert!(
        err.to_string()
            .contains("Subnets must not overlap or contain each other"),
        "{err}"
    );
}
