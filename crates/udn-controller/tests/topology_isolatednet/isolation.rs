//! The default network's UDN isolation (spec §2.7, §7 item 15; `udn_isolation.go`): the
//! `SecondaryPods` port group holding primary-UDN pods' default-network ports and its ACLs.

use udn_ovsdb::testing::OvsdbServer;

use super::assert_no_column;
use super::default_network::CONTROLLER;
use super::read::{Owner, get, lines, names, stamped, target_names, targets};

const ISOLATION: Owner<'static> = Owner {
    controller: CONTROLLER,
    owner_type: "UDNIsolation",
    name: "default",
};
/// `HashForOVN("default-network-controller:UDNIsolation:SecondaryPods")`.
pub(crate) const SECONDARY_PODS: &str = "a8747502060113802905";

/// The UDN isolation port group (the primary-UDN pod's default-network port) and its ACLs:
/// upstream's names, directions, priorities, actions, matches and dbIDs; no tier column on
/// NB 7.0.0 (upstream moves them to tier 0).
pub(crate) fn udn_isolation(server: &OvsdbServer) {
    let pg = get(server, "Port_Group", SECONDARY_PODS);
    let pg_id = "default-network-controller:UDNIsolation:SecondaryPods";
    assert_eq!(
        pg.map("external_ids"),
        stamped(
            &[
                ("k8s.ovn.org/name", "SecondaryPods"),
                ("k8s.ovn.org/id", pg_id),
                ("k8s.ovn.org/owner-controller", CONTROLLER),
                ("k8s.ovn.org/owner-type", "UDNIsolation"),
            ],
            ISOLATION,
            pg_id
        )
    );
    assert_eq!(
        target_names(server, &pg, "ports", "Logical_Switch_Port"),
        names(&["namespace1_myPod"])
    );
    let at = format!("@{SECONDARY_PODS}");
    let expected = [
        (
            "DenyPrimaryUDN",
            "Egress",
            "from-lport",
            "1000",
            "drop",
            format!("inport == {at}"),
        ),
        (
            "DenyPrimaryUDN",
            "Ingress",
            "to-lport",
            "1000",
            "drop",
            format!("outport == {at}"),
        ),
        (
            "AllowHostARPPrimaryUDN",
            "Egress",
            "from-lport",
            "1001",
            "allow",
            format!("inport == {at} && (( arp && arp.tpa == 10.244.1.2 ))"),
        ),
        (
            "AllowHostARPPrimaryUDN",
            "Ingress",
            "to-lport",
            "1001",
            "allow",
            format!("outport == {at} && (( arp && arp.spa == 10.244.1.2 ))"),
        ),
        (
            "AllowHostPrimaryUDN",
            "Ingress",
            "to-lport",
            "1001",
            "allow-related",
            format!("outport == {at} && (ip4.src==10.244.1.2)"),
        ),
        (
            "OpenPort-namespace1/myPod",
            "Ingress",
            "to-lport",
            "1001",
            "allow-related",
            "outport == \"namespace1_myPod\" && (arp || nd || (tcp.dst == 80))".into(),
        ),
        (
            "OpenPort-namespace1/myPod",
            "Egress",
            "from-lport",
            "1001",
            "allow",
            "inport == \"namespace1_myPod\" && (arp || nd)".into(),
        ),
    ];
    let acls = targets(server, &pg, "acls", "ACL");
    assert_eq!(acls.len(), expected.len());
    for (name, dir, direction, priority, action, match_) in &expected {
        let id = format!("{CONTROLLER}:UDNIsolation:{name}:{dir}");
        let acl = acls
            .iter()
            .find(|a| a.map("external_ids")["k8s.ovn.org/id"] == id)
            .unwrap_or_else(|| panic!("no ACL {id}"));
        assert_eq!(
            acl.map("external_ids"),
            stamped(
                &[
                    ("k8s.ovn.org/name", name),
                    ("direction", dir),
                    ("k8s.ovn.org/id", &id),
                    ("k8s.ovn.org/owner-controller", CONTROLLER),
                    ("k8s.ovn.org/owner-type", "UDNIsolation"),
                ],
                ISOLATION,
                &id
            )
        );
        assert_eq!(
            (
                acl.text("direction"),
                acl.text("priority"),
                acl.text("action"),
                acl.text("match")
            ),
            (
                (*direction).to_owned(),
                (*priority).to_owned(),
                (*action).to_owned(),
                match_.clone()
            ),
            "{id}"
        );
        assert_eq!(acl.text("meter"), "acl-logging");
        assert_eq!(
            (acl.text("log"), acl.text("name")),
            ("false".into(), String::new())
        );
        assert_eq!(acl.text("severity"), "");
        assert!(acl.map("options").is_empty());
        // Upstream's tier 0 (`PrimaryACLTier`) needs `ACL.tier`: absent on NB 7.0.0.
        assert!(!acl.has("tier"));
    }
    assert_no_column(server, "ACL", &acls[0].uuid(), "tier");
    assert_eq!(
        lines(&server.nbctl(&["acl-list", SECONDARY_PODS]).unwrap()),
        [
            "from-lport 1001 (inport == \"namespace1_myPod\" && (arp || nd)) allow",
            "from-lport 1001 (inport == @a8747502060113802905 && (( arp && arp.tpa == 10.244.1.2 ))) allow",
            "from-lport 1000 (inport == @a8747502060113802905) drop",
            "to-lport 1001 (outport == \"namespace1_myPod\" && (arp || nd || (tcp.dst == 80))) allow-related",
            "to-lport 1001 (outport == @a8747502060113802905 && (( arp && arp.spa == 10.244.1.2 ))) allow",
            "to-lport 1001 (outport == @a8747502060113802905 && (ip4.src==10.244.1.2)) allow-related",
            "to-lport 1000 (outport == @a8747502060113802905) drop",
        ]
    );
}
