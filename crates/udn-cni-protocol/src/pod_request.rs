//! The server's view of a request (upstream `PodRequest`, built by `cniRequestToPodRequest`).

use std::collections::BTreeMap;
use std::convert::Infallible;

use crate::cni_args::{
    CniArgs, CniArgsError, K8S_POD_INFRA_CONTAINER_ID, K8S_POD_NAME, K8S_POD_NAMESPACE, K8S_POD_UID,
};
use crate::command::Command;
use crate::device_info::DeviceInfo;
use crate::request::Request;

/// The interface name when `CNI_IFNAME` is absent (upstream's default).
pub const DEFAULT_IF_NAME: &str = "eth0";

/// Why a [`Request`] is not a pod request. The texts are upstream's (they reach kubelet's
/// events through the plugin).
#[derive(Debug, thiserror::Error)]
pub enum PodRequestError {
    /// No `CNI_COMMAND` in `env`.
    #[error("unexpected or missing CNI_COMMAND")]
    MissingCommand,
    /// The config parser given to [`PodRequest::from_request`] refused `config`.
    #[error("broken stdin args")]
    BrokenConfig {
        /// The parser's error (upstream drops it; it is kept here for logs).
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// No `CNI_CONTAINERID`.
    #[error("missing CNI_CONTAINERID")]
    MissingContainerId,
    /// No `CNI_NETNS` for a command other than DEL.
    #[error("missing CNI_NETNS")]
    MissingNetns,
    /// No `CNI_ARGS`; upstream prints the whole environment as a Go map.
    #[error("missing CNI_ARGS: '{env}'")]
    MissingCniArgs {
        /// `env` as Go's `%s` prints a `map[string]string`: `map[K:V K2:V2]`.
        env: String,
    },
    /// A malformed `CNI_ARGS` part.
    #[error(transparent)]
    InvalidCniArgs(#[from] CniArgsError),
    /// No `K8S_POD_NAMESPACE` in `CNI_ARGS`.
    #[error("missing K8S_POD_NAMESPACE")]
    MissingPodNamespace,
    /// No `K8S_POD_NAME` in `CNI_ARGS`.
    #[error("missing K8S_POD_NAME")]
    MissingPodName,
}

/// A request the server can act on.
///
/// Presence, not emptiness, is checked (as upstream): `K8S_POD_NAME=` gives an empty
/// name, which upstream's ADD and DEL then refuse with `required CNI variable missing`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodRequest<C = Vec<u8>> {
    /// `CNI_COMMAND`.
    pub command: Command,
    /// `K8S_POD_NAMESPACE`.
    pub pod_namespace: String,
    /// `K8S_POD_NAME`.
    pub pod_name: String,
    /// `K8S_POD_UID`; `None` when absent or empty (older runtimes do not pass it, and
    /// upstream treats empty as absent).
    pub pod_uid: Option<String>,
    /// `K8S_POD_INFRA_CONTAINER_ID`, if present and non-empty.
    pub infra_container_id: Option<String>,
    /// `CNI_CONTAINERID` (upstream's `SandboxID`).
    pub sandbox_id: String,
    /// `CNI_NETNS`; empty for a DEL without one (the spec makes it optional for DEL).
    pub netns: String,
    /// `CNI_IFNAME`, default `eth0`.
    pub if_name: String,
    /// The network configuration as the server's parser made it.
    pub config: C,
    /// The device info the shim embedded.
    pub device_info: DeviceInfo,
    /// Every `CNI_ARGS` pair.
    pub cni_args: CniArgs,
}

impl<C> PodRequest<C> {
    /// Upstream's conversion, in its order: `CNI_COMMAND`, the config (parsed by
    /// `parse_config`), `CNI_CONTAINERID`, `CNI_NETNS`, `CNI_IFNAME` (default `eth0`),
    /// `CNI_ARGS`, `K8S_POD_NAMESPACE`, `K8S_POD_NAME`, then the optional UID.
    ///
    /// One deviation: a DEL without `CNI_NETNS` is accepted with an empty netns, because
    /// the CNI spec makes it optional for DEL (upstream refuses it).
    pub fn from_request<E>(
        request: &Request,
        parse_config: impl FnOnce(&[u8]) -> Result<C, E>,
    ) -> Result<PodRequest<C>, PodRequestError>
    where
        E: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let env = &request.env;
        let command = Command::parse(
            env.get("CNI_COMMAND")
                .ok_or(PodRequestError::MissingCommand)?,
        );
        let config = parse_config(&request.config)
            .map_err(|err| PodRequestError::BrokenConfig { source: err.into() })?;
        let sandbox_id = env
            .get("CNI_CONTAINERID")
            .ok_or(PodRequestError::MissingContainerId)?
            .clone();
        let netns = match (env.get("CNI_NETNS"), &command) {
            (Some(netns), _) => netns.clone(),
            (None, Command::Del) => String::new(),
            (None, _) => return Err(PodRequestError::MissingNetns),
        };
        let if_name = env
            .get("CNI_IFNAME")
            .cloned()
            .unwrap_or_else(|| DEFAULT_IF_NAME.to_owned());
        let cni_args = env
            .get("CNI_ARGS")
            .ok_or_else(|| PodRequestError::MissingCniArgs {
                env: go_map_string(env),
            })?;
        let cni_args = CniArgs::parse(cni_args)?;
        let pod_namespace = cni_args
            .get(K8S_POD_NAMESPACE)
            .ok_or(PodRequestError::MissingPodNamespace)?
            .to_owned();
        let pod_name = cni_args
            .get(K8S_POD_NAME)
            .ok_or(PodRequestError::MissingPodName)?
            .to_owned();
        let non_empty = |key| {
            cni_args
                .get(key)
                .filter(|v| !v.is_empty())
                .map(str::to_owned)
        };
        Ok(PodRequest {
            command,
            pod_namespace,
            pod_name,
            pod_uid: non_empty(K8S_POD_UID),
            infra_container_id: non_empty(K8S_POD_INFRA_CONTAINER_ID),
            sandbox_id,
            netns,
            if_name,
            config,
            device_info: request.device_info.clone(),
            cni_args,
        })
    }

    /// Upstream's `PodRequest.String()`, the prefix of the server's plain-text errors:
    /// `[ns/pod <sandbox id> network <net> NAD <nad> NAD key <key>]`.
    pub fn label(&self, network: &str, nad: &str, nad_key: &str) -> String {
        format!(
            "[{}/{} {} network {network} NAD {nad} NAD key {nad_key}]",
            self.pod_namespace, self.pod_name, self.sandbox_id
        )
    }
}

impl PodRequest<Vec<u8>> {
    /// [`PodRequest::from_request`] keeping the config bytes unparsed.
    pub fn from_request_unparsed(
        request: &Request,
    ) -> Result<PodRequest<Vec<u8>>, PodRequestError> {
        PodRequest::from_request(request, |bytes| Ok::<_, Infallible>(bytes.to_vec()))
    }
}

/// Go's `fmt.Sprintf("%s", m)` for a `map[string]string`: keys sorted, `map[k:v k:v]`.
fn go_map_string(map: &BTreeMap<String, String>) -> String {
    let pairs: Vec<String> = map.iter().map(|(k, v)| format!("{k}:{v}")).collect();
    format!("map[{}]", pairs.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(pairs: &[(&str, &str)]) -> Request {
        Request::new(
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
            b"{\"name\":\"default\"}".to_vec(),
            DeviceInfo::default(),
        )
    }

    const FULL: &[(&str, &str)] = &[
        ("CNI_COMMAND", "ADD"),
        ("CNI_CONTAINERID", "abc123"),
        ("CNI_NETNS", "/var/run/netns/x"),
        ("CNI_IFNAME", "net1"),
        (
            "CNI_ARGS",
            "IgnoreUnknown=1;K8S_POD_NAMESPACE=ns;K8S_POD_NAME=p;K8S_POD_UID=u1;K8S_POD_INFRA_CONTAINER_ID=abc123",
        ),
    ];

    fn without(key: &str) -> Vec<(&'static str, &'static str)> {
        FULL.iter().copied().filter(|(k, _)| *k != key).collect()
    }

    #[test]
    fn full_request_converts() {
        let pr = PodRequest::from_request_unparsed(&request(FULL)).unwrap();
        assert_eq!(pr.command, Command::Add);
        assert_eq!(pr.pod_namespace, "ns");
        assert_eq!(pr.pod_name, "p");
        assert_eq!(pr.pod_uid.as_deref(), Some("u1"));
        assert_eq!(pr.infra_container_id.as_deref(), Some("abc123"));
        assert_eq!(pr.sandbox_id, "abc123");
        assert_eq!(pr.netns, "/var/run/netns/x");
        assert_eq!(pr.if_name, "net1");
        assert_eq!(pr.config, b"{\"name\":\"default\"}");
        assert_eq!(
            pr.label("default", "default", "default"),
            "[ns/p abc123 network default NAD default NAD key default]"
        );
    }

    #[test]
    fn defaults_and_optional_fields() {
        let mut pairs = without("CNI_IFNAME");
        pairs.retain(|(k, _)| *k != "CNI_ARGS");
        pairs.push((
            "CNI_ARGS",
            "K8S_POD_NAMESPACE=ns;K8S_POD_NAME=p;K8S_POD_UID=",
        ));
        let pr = PodRequest::from_request_unparsed(&request(&pairs)).unwrap();
        assert_eq!(pr.if_name, DEFAULT_IF_NAME);
        assert_eq!(pr.pod_uid, None);
        assert_eq!(pr.infra_container_id, None);
    }

    #[test]
    fn missing_variables_use_upstreams_texts() {
        let text = |pairs: &[(&str, &str)]| {
            PodRequest::from_request_unparsed(&request(pairs))
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            text(&without("CNI_COMMAND")),
            "unexpected or missing CNI_COMMAND"
        );
        assert_eq!(text(&without("CNI_CONTAINERID")), "missing CNI_CONTAINERID");
        assert_eq!(text(&without("CNI_NETNS")), "missing CNI_NETNS");
        let no_args = [
            ("CNI_COMMAND", "ADD"),
            ("CNI_CONTAINERID", "abc123"),
            ("CNI_NETNS", "/n"),
        ];
        assert_eq!(
            text(&no_args),
            "missing CNI_ARGS: 'map[CNI_COMMAND:ADD CNI_CONTAINERID:abc123 CNI_NETNS:/n]'"
        );
        let mut bad = without("CNI_ARGS");
        bad.push(("CNI_ARGS", "K8S_POD_NAMESPACE=ns;oops"));
        assert_eq!(text(&bad), "invalid CNI_ARG 'oops'");
        let mut no_ns = without("CNI_ARGS");
        no_ns.push(("CNI_ARGS", "K8S_POD_NAME=p"));
        assert_eq!(text(&no_ns), "missing K8S_POD_NAMESPACE");
        let mut no_name = without("CNI_ARGS");
        no_name.push(("CNI_ARGS", "K8S_POD_NAMESPACE=ns"));
        assert_eq!(text(&no_name), "missing K8S_POD_NAME");
    }

    #[test]
    fn del_without_netns_is_accepted() {
        let mut pairs = without("CNI_NETNS");
        pairs.retain(|(k, _)| *k != "CNI_COMMAND");
        pairs.push(("CNI_COMMAND", "DEL"));
        let pr = PodRequest::from_request_unparsed(&request(&pairs)).unwrap();
        assert_eq!(pr.command, Command::Del);
        assert_eq!(pr.netns, "");
    }

    #[test]
    fn config_parser_runs_after_the_command_check() {
        let parse = |_: &[u8]| Err::<(), _>("no topology");
        let err = PodRequest::from_request(&request(FULL), parse).unwrap_err();
        assert_eq!(err.to_string(), "broken stdin args");
        assert_eq!(
            std::error::Error::source(&err)
                .map(ToString::to_string)
                .as_deref(),
            Some("no topology")
        );
        let err = PodRequest::from_request(&request(&without("CNI_COMMAND")), parse).unwrap_err();
        assert!(matches!(err, PodRequestError::MissingCommand));
    }

    #[test]
    fn unknown_commands_are_kept_verbatim() {
        let mut pairs = without("CNI_COMMAND");
        pairs.push(("CNI_COMMAND", "FROB"));
        let pr = PodRequest::from_request_unparsed(&request(&pairs)).unwrap();
        assert_eq!(
            format!("unsupported CNI command {}", pr.command),
            "unsupported CNI command FROB"
        );
    }
}
