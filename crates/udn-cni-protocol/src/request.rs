//! The shim -> server request body (upstream `Request`):
//! `{"env":{...},"config":"<base64>",<DeviceInfo fields>}`.
//!
//! `env` is the plugin's whole environment (a Go map, so keys are written sorted),
//! `config` the stdin bytes (a Go `[]byte`, so standard base64 with padding), and the
//! embedded DeviceInfo's fields follow at the top level. All are `omitempty`.

use std::collections::BTreeMap;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};

use crate::command::Command;
use crate::device_info::{DeviceInfo, MemifDevice, PciDevice, VdpaDevice, VhostDevice};
use crate::go_json;

/// What the plugin posts to `http://dummy/`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Request {
    /// The plugin's environment (`CNI_COMMAND`, `CNI_ARGS`, ... and everything else).
    pub env: BTreeMap<String, String>,
    /// The network configuration exactly as read from stdin.
    pub config: Vec<u8>,
    /// The SR-IOV device plugin's device info (empty for ordinary pods).
    pub device_info: DeviceInfo,
}

impl Request {
    /// A request from `(name, value)` environment pairs, as upstream's shim builds its map:
    /// names are trimmed of whitespace and a pair with an empty name is dropped.
    pub fn new(
        env: impl IntoIterator<Item = (String, String)>,
        config: Vec<u8>,
        device_info: DeviceInfo,
    ) -> Request {
        let env = env
            .into_iter()
            .filter_map(|(name, value)| {
                let name = name.trim();
                (!name.is_empty()).then(|| (name.to_owned(), value))
            })
            .collect();
        Request {
            env,
            config,
            device_info,
        }
    }

    /// `CNI_COMMAND`, if set: upstream's server looks at it before anything else (CHECK,
    /// STATUS and UPDATE are answered with an empty 200 without building a pod request).
    pub fn command(&self) -> Option<Command> {
        self.env.get("CNI_COMMAND").map(|text| Command::parse(text))
    }

    /// The body bytes, as Go's `json.Marshal` writes them.
    pub fn to_json(&self) -> Vec<u8> {
        // Only strings, byte strings and maps of strings: serializing cannot fail.
        go_json::to_vec(self).unwrap_or_default()
    }

    /// Parses a body (the server side).
    pub fn from_json(body: &[u8]) -> serde_json::Result<Request> {
        serde_json::from_slice(body)
    }
}

/// The wire shape: the DeviceInfo fields are inlined after `env` and `config`, as Go
/// embeds the struct.
#[derive(Serialize, Deserialize)]
struct RequestWire {
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "go_json::null_as_default"
    )]
    env: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty", with = "go_bytes")]
    config: Vec<u8>,
    #[serde(rename = "type", default, skip_serializing_if = "String::is_empty")]
    kind: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pci: Option<PciDevice>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    vdpa: Option<VdpaDevice>,
    #[serde(
        rename = "vhost-user",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    vhost_user: Option<VhostDevice>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    memif: Option<MemifDevice>,
}

impl Serialize for Request {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let d = &self.device_info;
        RequestWire {
            env: self.env.clone(),
            config: self.config.clone(),
            kind: d.kind.clone(),
            version: d.version.clone(),
            pci: d.pci.clone(),
            vdpa: d.vdpa.clone(),
            vhost_user: d.vhost_user.clone(),
            memif: d.memif.clone(),
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Request {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let wire = RequestWire::deserialize(deserializer)?;
        Ok(Request {
            env: wire.env,
            config: wire.config,
            device_info: DeviceInfo {
                kind: wire.kind,
                version: wire.version,
                pci: wire.pci,
                vdpa: wire.vdpa,
                vhost_user: wire.vhost_user,
                memif: wire.memif,
            },
        })
    }
}

/// Go's `[]byte` in JSON: a standard-alphabet, padded base64 string (`null` = empty).
mod go_bytes {
    use super::*;

    pub(super) fn serialize<S: serde::Serializer>(
        bytes: &[u8],
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&STANDARD.encode(bytes))
    }

    pub(super) fn deserialize<'de, D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Vec<u8>, D::Error> {
        match Option::<String>::deserialize(deserializer)? {
            None => Ok(Vec::new()),
            Some(text) => STANDARD
                .decode(text.as_bytes())
                .map_err(|err| serde::de::Error::custom(format!("config is not base64: {err}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const NETCONF: &[u8] =
        br#"{"cniVersion":"1.1.0","name":"ovn-kubernetes","type":"ovn-k8s-cni-overlay"}"#;

    fn kubelet_env() -> Vec<(String, String)> {
        [
            ("CNI_COMMAND", "ADD"),
            ("CNI_CONTAINERID", "3f1b2c4d5e6f7a8b9c"),
            ("CNI_NETNS", "/var/run/netns/cni-1234"),
            ("CNI_IFNAME", "eth0"),
            ("CNI_ARGS", "IgnoreUnknown=1;K8S_POD_NAMESPACE=ns;K8S_POD_NAME=p;K8S_POD_INFRA_CONTAINER_ID=3f1b2c4d5e6f7a8b9c;K8S_POD_UID=u1"),
            ("CNI_PATH", "/opt/cni/bin"),
            ("PATH", "/usr/bin"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
    }

    #[test]
    fn body_bytes_are_go_marshal() {
        let req = Request::new(kubelet_env(), NETCONF.to_vec(), DeviceInfo::default());
        let want = concat!(
            r#"{"env":{"CNI_ARGS":"IgnoreUnknown=1;K8S_POD_NAMESPACE=ns;K8S_POD_NAME=p;K8S_POD_INFRA_CONTAINER_ID=3f1b2c4d5e6f7a8b9c;K8S_POD_UID=u1","#,
            r#""CNI_COMMAND":"ADD","CNI_CONTAINERID":"3f1b2c4d5e6f7a8b9c","CNI_IFNAME":"eth0","CNI_NETNS":"/var/run/netns/cni-1234","#,
            r#""CNI_PATH":"/opt/cni/bin","PATH":"/usr/bin"},"#,
            r#""config":"eyJjbmlWZXJzaW9uIjoiMS4xLjAiLCJuYW1lIjoib3ZuLWt1YmVybmV0ZXMiLCJ0eXBlIjoib3ZuLWs4cy1jbmktb3ZlcmxheSJ9"}"#
        );
        assert_eq!(String::from_utf8(req.to_json()).unwrap(), want);
        assert_eq!(Request::from_json(want.as_bytes()).unwrap(), req);
        assert_eq!(req.command(), Some(Command::Add));
        assert_eq!(Request::default().command(), None);
    }

    #[test]
    fn device_info_fields_follow_at_top_level() {
        let device_info = DeviceInfo {
            kind: "pci".into(),
            version: "1.1.0".into(),
            pci: Some(PciDevice {
                pci_address: "0000:03:00.2".into(),
                ..Default::default()
            }),
            ..Default::default()
        };
        let req = Request::new(
            [("CNI_COMMAND".to_owned(), "ADD".to_owned())],
            b"{}".to_vec(),
            device_info,
        );
        assert_eq!(
            String::from_utf8(req.to_json()).unwrap(),
            r#"{"env":{"CNI_COMMAND":"ADD"},"config":"e30=","type":"pci","version":"1.1.0","pci":{"pci-address":"0000:03:00.2"}}"#
        );
    }

    #[test]
    fn empty_request_is_an_empty_object() {
        assert_eq!(Request::default().to_json(), b"{}");
        let parsed = Request::from_json(br#"{"env":null,"config":null}"#).unwrap();
        assert_eq!(parsed, Request::default());
    }

    #[test]
    fn env_names_are_trimmed_and_empty_names_dropped() {
        let req = Request::new(
            [
                (" A ".to_owned(), " v ".to_owned()),
                ("".to_owned(), "x".to_owned()),
            ],
            Vec::new(),
            DeviceInfo::default(),
        );
        assert_eq!(req.env.len(), 1);
        assert_eq!(req.env.get("A").map(String::as_str), Some(" v "));
    }

    #[test]
    fn bad_base64_is_a_decode_error() {
        let err = Request::from_json(br#"{"config":"not base64!"}"#).unwrap_err();
        assert!(err.to_string().contains("config is not base64"), "{err}");
    }

    #[test]
    fn html_characters_in_env_are_escaped_like_go() {
        let req = Request::new(
            [("X".to_owned(), "a&b<c>".to_owned())],
            Vec::new(),
            DeviceInfo::default(),
        );
        assert_eq!(req.to_json(), br#"{"env":{"X":"a\u0026b\u003cc\u003e"}}"#);
    }

    proptest! {
        #[test]
        fn round_trip(env in proptest::collection::btree_map("[A-Z_]{1,8}", ".{0,12}", 0..5),
                      config in proptest::collection::vec(any::<u8>(), 0..64),
                      pci in proptest::option::of("[0-9a-f:.]{0,12}")) {
            let device_info = DeviceInfo {
                pci: pci.map(|pci_address| PciDevice { pci_address, ..Default::default() }),
                ..Default::default()
            };
            let req = Request { env, config, device_info };
            prop_assert_eq!(Request::from_json(&req.to_json()).unwrap(), req);
        }
    }
}
