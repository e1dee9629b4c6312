//! Waiting for `ovn-installed` against a private `ovsdb-server`: `ovs-vsctl` plays
//! ovn-controller (or a later CNI ADD), run from a blocking task once the waiter has seen the
//! port pending.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use udn_node::ovs::{
    BR_INT, DesiredBridge, InstallStatus, InstalledWait, Ovs, OvsConfig, PodPort, pod_iface_id,
};
use udn_ovsdb::testing::OvsdbServer;

const PORT: &str = "3f1b2c4d5e6f7a8";

async fn with_pod_port() -> (OvsdbServer, Ovs, InstalledWait) {
    let server = OvsdbServer::start_vswitch().unwrap();
    let config = OvsConfig {
        endpoint: server.endpoint(),
        request_timeout: Duration::from_secs(10),
    };
    let ovs = Ovs::connect(&config).await.unwrap();
    ovs.ensure_bridge(&DesiredBridge::integration("netdev"))
        .await
        .unwrap();
    let port = PodPort {
        bridge: BR_INT.into(),
        name: PORT.into(),
        iface_id: pod_iface_id("ns1", "pod-a", None),
        pod_uid: "uid-1".into(),
        sandbox: "sandbox-1".into(),
        pod_if_name: "eth0".into(),
        mac: "0a:58:0a:f4:01:05".parse().unwrap(),
        ips: vec!["10.244.1.5/24".parse().unwrap()],
        network: None,
    };
    ovs.add_pod_port(&port).await.unwrap();
    let wait = InstalledWait {
        port: PORT.into(),
        iface_id: port.iface_id.clone(),
        mac: port.mac,
        ips: port.ips.clone(),
    };
    let status = udn_node::ovs::wait::install_status(&ovs.client().replica(), &wait);
    assert_eq!(status, InstallStatus::Pending);
    (server, ovs, wait)
}

/// Runs `ovs-vsctl set Interface PORT <setting>` on a blocking thread.
fn set_later(server: &OvsdbServer, setting: &str) -> tokio::task::JoinHandle<()> {
    let socket = server.socket().to_owned();
    let setting = setting.to_owned();
    tokio::task::spawn_blocking(move || {
        let status = std::process::Command::new("ovs-vsctl")
            .arg(format!("--db=unix:{}", socket.display()))
            .args([
                "--no-wait",
                "--timeout=10",
                "set",
                "Interface",
                PORT,
                &setting,
            ])
            .status()
            .unwrap();
        assert!(status.success());
    })
}

#[tokio::test]
async fn returns_once_ovn_controller_marks_the_port_installed() {
    let (server, ovs, wait) = with_pod_port().await;
    let setter = set_later(&server, "external_ids:ovn-installed=true");
    let started = Instant::now();
    ovs.wait_ovn_installed(&wait, Duration::from_secs(20), std::future::pending())
        .await
        .unwrap();
    setter.await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(10));
    let status = udn_node::ovs::wait::install_status(&ovs.client().replica(), &wait);
    assert_eq!(status, InstallStatus::Installed);
}

#[tokio::test]
async fn fails_when_a_later_add_takes_the_port_over() {
    let (server, ovs, wait) = with_pod_port().await;
    let setter = set_later(&server, "external_ids:iface-id=ns1_pod-other");
    let error = ovs
        .wait_ovn_installed(&wait, Duration::from_secs(20), std::future::pending())
        .await
        .unwrap_err();
    setter.await.unwrap();
    assert_eq!(
        error.to_string(),
        "OVS sandbox port 3f1b2c4d5e6f7a8 is no longer active (probably due to a subsequent CNI ADD)"
    );
}

#[tokio::test]
async fn times_out_with_upstreams_text() {
    let (_server, ovs, wait) = with_pod_port().await;
    let started = Instant::now();
    let error = ovs
        .wait_ovn_installed(&wait, Duration::from_millis(300), std::future::pending())
        .await
        .unwrap_err();
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert_eq!(
        error.to_string(),
        "timed out waiting for OVS port binding (ovn-installed) for 0a:58:0a:f4:01:05 [10.244.1.5/24]"
    );
}

#[tokio::test]
async fn a_canceled_wait_says_why() {
    let (_server, ovs, wait) = with_pod_port().await;
    let (cancel, canceled) = tokio::sync::oneshot::channel::<String>();
    cancel.send("pod deleted".to_owned()).unwrap();
    let error = ovs
        .wait_ovn_installed(&wait, Duration::from_secs(20), async move {
            canceled.await.unwrap_or_default()
        })
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "pod deleted waiting for OVS port binding for 0a:58:0a:f4:01:05 [10.244.1.5/24]"
    );
}
