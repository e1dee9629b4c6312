//! The CNI environment variables: which command, and are the variables it needs there.
//!
//! Required variables follow the CNI 1.1 spec (an empty value counts as missing, as in
//! the CNI library): `CNI_CONTAINERID` and `CNI_IFNAME` for ADD, DEL and CHECK,
//! `CNI_NETNS` for ADD and CHECK, `CNI_PATH` for GC. The CNI library's `skel`, which
//! upstream uses, also demands `CNI_PATH` for every command; the spec makes it optional
//! and this plugin runs no delegate, so it is not required here.
//!
//! ADD and DEL also need `CNI_ARGS` with `K8S_POD_NAMESPACE` and `K8S_POD_NAME`. Upstream
//! leaves that check to its server (which answers with a plain-text error, printed with
//! code 999); this plugin checks first, so the answer is the same code-4 error whether
//! or not the node agent is up.

use std::collections::BTreeMap;

use udn_cni_protocol::{CniArgs, CniError, Command, ErrorCode, K8S_POD_NAME, K8S_POD_NAMESPACE};

/// The commands this plugin implements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PluginCommand {
    /// ADD
    Add,
    /// DEL
    Del,
    /// CHECK
    Check,
    /// STATUS
    Status,
    /// GC
    Gc,
    /// VERSION
    Version,
}

impl PluginCommand {
    /// The protocol's command (for the metrics body).
    pub(crate) fn protocol(self) -> Command {
        match self {
            PluginCommand::Add => Command::Add,
            PluginCommand::Del => Command::Del,
            PluginCommand::Check => Command::Check,
            PluginCommand::Status => Command::Status,
            PluginCommand::Gc => Command::Gc,
            PluginCommand::Version => Command::Version,
        }
    }

    fn required(self) -> &'static [&'static str] {
        match self {
            PluginCommand::Add | PluginCommand::Check => {
                &["CNI_CONTAINERID", "CNI_NETNS", "CNI_IFNAME"]
            }
            PluginCommand::Del => &["CNI_CONTAINERID", "CNI_IFNAME"],
            PluginCommand::Gc => &["CNI_PATH"],
            PluginCommand::Status | PluginCommand::Version => &[],
        }
    }
}

/// The command named by `CNI_COMMAND`, once its variables are present and valid.
pub(crate) fn command_from_env(env: &BTreeMap<String, String>) -> Result<PluginCommand, CniError> {
    let get = |name: &str| env.get(name).map(String::as_str).filter(|v| !v.is_empty());
    let Some(text) = get("CNI_COMMAND") else {
        return Err(missing(&["CNI_COMMAND"]));
    };
    let command = match Command::parse(text) {
        Command::Add => PluginCommand::Add,
        Command::Del => PluginCommand::Del,
        Command::Check => PluginCommand::Check,
        Command::Status => PluginCommand::Status,
        Command::Gc => PluginCommand::Gc,
        Command::Version => PluginCommand::Version,
        Command::Update | Command::Other(_) => {
            return Err(CniError::new(
                ErrorCode::InvalidEnvironment,
                format!("unknown CNI_COMMAND: {text}"),
            ));
        }
    };
    let mut absent = Vec::new();
    for &name in command.required() {
        match get(name) {
            None => absent.push(name),
            Some(value) if name == "CNI_CONTAINERID" => validate_container_id(value)?,
            Some(value) if name == "CNI_IFNAME" => validate_interface_name(value)?,
            Some(_) => {}
        }
    }
    if !absent.is_empty() {
        return Err(missing(&absent));
    }
    if matches!(command, PluginCommand::Add | PluginCommand::Del) {
        check_pod_args(get("CNI_ARGS"))?;
    }
    Ok(command)
}

/// The CNI library's text: `required env variables [A,B] missing`.
fn missing(names: &[&str]) -> CniError {
    CniError::new(
        ErrorCode::InvalidEnvironment,
        format!("required env variables [{}] missing", names.join(",")),
    )
}

fn check_pod_args(cni_args: Option<&str>) -> Result<(), CniError> {
    let invalid = |msg: String| CniError::new(ErrorCode::InvalidEnvironment, msg);
    let Some(text) = cni_args else {
        return Err(missing(&["CNI_ARGS"]));
    };
    let args = CniArgs::parse(text).map_err(|err| invalid(err.to_string()))?;
    for key in [K8S_POD_NAMESPACE, K8S_POD_NAME] {
        if args.get(key).is_none_or(str::is_empty) {
            return Err(invalid(format!("CNI_ARGS has no {key}")));
        }
    }
    Ok(())
}

/// The CNI library's `ValidateContainerID`: `[a-zA-Z0-9][a-zA-Z0-9_.-]*`.
fn validate_container_id(id: &str) -> Result<(), CniError> {
    let mut bytes = id.bytes();
    let first_ok = bytes.next().is_some_and(|b| b.is_ascii_alphanumeric());
    if first_ok && bytes.all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-')) {
        return Ok(());
    }
    Err(CniError::new(
        ErrorCode::InvalidEnvironment,
        "invalid characters in containerID",
    )
    .with_details(id))
}

/// The CNI library's `ValidateInterfaceName` (the kernel's rules for a netdev name).
fn validate_interface_name(name: &str) -> Result<(), CniError> {
    let invalid = |msg: &str| CniError::new(ErrorCode::InvalidEnvironment, msg);
    if name.len() > 15 {
        return Err(invalid("interface name is too long")
            .with_details("interface name should be less than 16 characters"));
    }
    if name == "." || name == ".." {
        return Err(invalid("interface name is . or .."));
    }
    if name
        .chars()
        .any(|c| c == '/' || c == ':' || c.is_whitespace())
    {
        return Err(invalid(
            "interface name contains / or : or whitespace characters",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const ADD: &[(&str, &str)] = &[
        ("CNI_COMMAND", "ADD"),
        ("CNI_CONTAINERID", "3f1b2c4d5e6f"),
        ("CNI_NETNS", "/var/run/netns/cni-1"),
        ("CNI_IFNAME", "eth0"),
        (
            "CNI_ARGS",
            "IgnoreUnknown=1;K8S_POD_NAMESPACE=ns;K8S_POD_NAME=p",
        ),
    ];

    fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn with(pairs: &[(&str, &str)], key: &str, value: Option<&str>) -> BTreeMap<String, String> {
        edit(env(pairs), key, value)
    }

    fn edit(
        mut env: BTreeMap<String, String>,
        key: &str,
        value: Option<&str>,
    ) -> BTreeMap<String, String> {
        match value {
            Some(value) => env.insert(key.to_owned(), value.to_owned()),
            None => env.remove(key),
        };
        env
    }

    fn err(env: &BTreeMap<String, String>) -> (ErrorCode, String) {
        let err = command_from_env(env).unwrap_err();
        (err.code, err.to_string())
    }

    #[test]
    fn kubelet_add_passes() {
        assert_eq!(command_from_env(&env(ADD)).unwrap(), PluginCommand::Add);
    }

    #[test]
    fn missing_variables_are_named_together() {
        let mut e = env(ADD);
        e.remove("CNI_NETNS");
        e.insert("CNI_IFNAME".into(), String::new());
        assert_eq!(
            err(&e),
            (
                ErrorCode::InvalidEnvironment,
                "required env variables [CNI_NETNS,CNI_IFNAME] missing".into()
            )
        );
        assert_eq!(
            err(&BTreeMap::new()),
            (
                ErrorCode::InvalidEnvironment,
                "required env variables [CNI_COMMAND] missing".into()
            )
        );
    }

    #[test]
    fn per_command_requirements_follow_the_spec() {
        let del = edit(with(ADD, "CNI_COMMAND", Some("DEL")), "CNI_NETNS", None);
        assert_eq!(command_from_env(&del).unwrap(), PluginCommand::Del);
        let status = env(&[("CNI_COMMAND", "STATUS")]);
        assert_eq!(command_from_env(&status).unwrap(), PluginCommand::Status);
        assert_eq!(
            command_from_env(&env(&[("CNI_COMMAND", "VERSION")])).unwrap(),
            PluginCommand::Version
        );
        assert_eq!(
            err(&env(&[("CNI_COMMAND", "GC")])).1,
            "required env variables [CNI_PATH] missing"
        );
        let check = env(&[("CNI_COMMAND", "CHECK"), ("CNI_CONTAINERID", "a")]);
        assert_eq!(
            err(&check).1,
            "required env variables [CNI_NETNS,CNI_IFNAME] missing"
        );
        let check = env(&[
            ("CNI_COMMAND", "CHECK"),
            ("CNI_CONTAINERID", "a"),
            ("CNI_NETNS", "/n"),
            ("CNI_IFNAME", "eth0"),
        ]);
        assert_eq!(command_from_env(&check).unwrap(), PluginCommand::Check);
    }

    #[test]
    fn unknown_commands_are_code_4() {
        assert_eq!(
            err(&with(ADD, "CNI_COMMAND", Some("UPDATE"))),
            (
                ErrorCode::InvalidEnvironment,
                "unknown CNI_COMMAND: UPDATE".into()
            )
        );
        assert_eq!(
            err(&with(ADD, "CNI_COMMAND", Some("add"))).1,
            "unknown CNI_COMMAND: add"
        );
    }

    #[test]
    fn invalid_values() {
        let (code, text) = err(&with(ADD, "CNI_CONTAINERID", Some("bad id")));
        assert_eq!(
            (code, text.as_str()),
            (
                ErrorCode::InvalidEnvironment,
                "invalid characters in containerID; bad id"
            )
        );
        assert_eq!(
            err(&with(ADD, "CNI_IFNAME", Some("a-very-long-ifname"))).1,
            "interface name is too long; interface name should be less than 16 characters"
        );
        assert_eq!(
            err(&with(ADD, "CNI_IFNAME", Some(".."))).1,
            "interface name is . or .."
        );
        assert_eq!(
            err(&with(ADD, "CNI_IFNAME", Some("a:b"))).1,
            "interface name contains / or : or whitespace characters"
        );
    }

    #[test]
    fn pod_arguments_are_checked_for_add_and_del() {
        assert_eq!(
            err(&with(ADD, "CNI_ARGS", None)),
            (
                ErrorCode::InvalidEnvironment,
                "required env variables [CNI_ARGS] missing".into()
            )
        );
        assert_eq!(
            err(&with(ADD, "CNI_ARGS", Some("K8S_POD_NAMESPACE=ns"))).1,
            "CNI_ARGS has no K8S_POD_NAME"
        );
        assert_eq!(
            err(&with(
                ADD,
                "CNI_ARGS",
                Some("K8S_POD_NAMESPACE=ns;K8S_POD_NAME=")
            ))
            .1,
            "CNI_ARGS has no K8S_POD_NAME"
        );
        assert_eq!(
            err(&with(ADD, "CNI_ARGS", Some("K8S_POD_NAME=p"))).1,
            "CNI_ARGS has no K8S_POD_NAMESPACE"
        );
        assert_eq!(
            err(&with(ADD, "CNI_ARGS", Some("K8S_POD_NAME=p;junk"))).1,
            "invalid CNI_ARG 'junk'"
        );
        let del = edit(with(ADD, "CNI_COMMAND", Some("DEL")), "CNI_ARGS", None);
        assert_eq!(err(&del).1, "required env variables [CNI_ARGS] missing");
        let check = edit(with(ADD, "CNI_COMMAND", Some("CHECK")), "CNI_ARGS", None);
        assert_eq!(command_from_env(&check).unwrap(), PluginCommand::Check);
    }
}
