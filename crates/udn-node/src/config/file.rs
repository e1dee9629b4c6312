//! `--config-file`: upstream's ini settings turned into flags placed before the command
//! line's, so that the command line wins, as upstream's precedence (flags over the file).

use super::ini::{IniError, IniFile};

/// How a setting becomes a flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// `--flag=value`.
    Value,
    /// A switch: `--flag` when the value is true, nothing when false.
    Switch,
}

/// `(section, variable, flag, kind)`: the settings of upstream's file this agent reads.
const SETTINGS: &[(&str, &str, &str, Kind)] = &[
    ("default", "mtu", "mtu", Kind::Value),
    ("default", "cluster-subnets", "cluster-subnets", Kind::Value),
    ("default", "encap-ip", "encap-ip", Kind::Value),
    ("default", "encap-type", "encap-type", Kind::Value),
    ("default", "openflow-probe", "openflow-probe", Kind::Value),
    ("default", "monitor-all", "monitor-all", Kind::Value),
    (
        "default",
        "enable-lflow-cache",
        "enable-lflow-cache",
        Kind::Value,
    ),
    (
        "default",
        "lflow-cache-limit",
        "lflow-cache-limit",
        Kind::Value,
    ),
    (
        "default",
        "lflow-cache-limit-kb",
        "lflow-cache-limit-kb",
        Kind::Value,
    ),
    (
        "default",
        "ofctrl-wait-before-clear",
        "ofctrl-wait-before-clear",
        Kind::Value,
    ),
    (
        "default",
        "udn-allowed-default-services",
        "udn-allowed-default-services",
        Kind::Value,
    ),
    ("kubernetes", "kubeconfig", "kubeconfig", Kind::Value),
    (
        "kubernetes",
        "service-cidrs",
        "k8s-service-cidrs",
        Kind::Value,
    ),
    ("gateway", "mode", "gateway-mode", Kind::Value),
    ("gateway", "interface", "gateway-interface", Kind::Value),
    ("gateway", "next-hop", "gateway-nexthop", Kind::Value),
    (
        "gateway",
        "v4-join-subnet",
        "gateway-v4-join-subnet",
        Kind::Value,
    ),
    (
        "gateway",
        "v6-join-subnet",
        "gateway-v6-join-subnet",
        Kind::Value,
    ),
    (
        "gateway",
        "v4-masquerade-subnet",
        "gateway-v4-masquerade-subnet",
        Kind::Value,
    ),
    (
        "gateway",
        "v6-masquerade-subnet",
        "gateway-v6-masquerade-subnet",
        Kind::Value,
    ),
    (
        "ovnkubernetesfeature",
        "enable-multi-network",
        "enable-multi-network",
        Kind::Switch,
    ),
    (
        "ovnkubernetesfeature",
        "enable-network-segmentation",
        "enable-network-segmentation",
        Kind::Switch,
    ),
    (
        "ovnkubernetesfeature",
        "enable-persistent-ips",
        "enable-persistent-ips",
        Kind::Switch,
    ),
    (
        "ovnkubernetesfeature",
        "enable-dynamic-udn-allocation",
        "enable-dynamic-udn-allocation",
        Kind::Switch,
    ),
    (
        "ovnkubernetesfeature",
        "udn-deletion-grace-period",
        "udn-deletion-grace-period",
        Kind::Value,
    ),
    (
        "ovnkubernetesfeature",
        "enable-preconfigured-udn-addresses",
        "enable-preconfigured-udn-addresses",
        Kind::Switch,
    ),
    (
        "ovnkubenode",
        "kubelet-cgroup-path",
        "kubelet-cgroup-path",
        Kind::Value,
    ),
    (
        "ovnkubenode",
        "routing-table-id-start",
        "routing-table-id-start",
        Kind::Value,
    ),
    ("cni", "conf-dir", "cni-conf-dir", Kind::Value),
    ("logging", "loglevel", "loglevel", Kind::Value),
    ("logging", "cnilogfile", "cnilogfile", Kind::Value),
    (
        "clustermanager",
        "v4-transit-subnet",
        "cluster-manager-v4-transit-subnet",
        Kind::Value,
    ),
    (
        "clustermanager",
        "v6-transit-subnet",
        "cluster-manager-v6-transit-subnet",
        Kind::Value,
    ),
];

/// Why the config file is unusable.
#[derive(Debug, thiserror::Error)]
pub enum ConfigFileError {
    /// It cannot be read.
    #[error("--config-file {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// It does not parse.
    #[error("--config-file {path}: {source}")]
    Parse {
        /// The file.
        path: String,
        /// Where and why.
        #[source]
        source: IniError,
    },
    /// A switch has a value that is no boolean.
    #[error(
        "--config-file {path}: line {line}: [{section}] {name} = {value:?}: expected true or false"
    )]
    NotBool {
        /// The file.
        path: String,
        /// Its line.
        line: usize,
        /// The section.
        section: String,
        /// The variable.
        name: String,
        /// The value.
        value: String,
    },
}

/// The file's settings as flags, and the settings this agent does not use (to log).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileFlags {
    /// `--flag=value` / `--flag` arguments, in the file's order of [`SETTINGS`].
    pub args: Vec<String>,
    /// `section.variable` of settings left unused.
    pub ignored: Vec<String>,
}

/// Reads `path` and turns its settings into flags.
pub fn read(path: &std::path::Path) -> Result<FileFlags, ConfigFileError> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| ConfigFileError::Read {
        path: shown.clone(),
        source,
    })?;
    let file = IniFile::parse(&text).map_err(|source| ConfigFileError::Parse {
        path: shown.clone(),
        source,
    })?;
    flags(&file, &shown)
}

/// `file`'s settings as flags (`path` names it in errors).
pub fn flags(file: &IniFile, path: &str) -> Result<FileFlags, ConfigFileError> {
    let mut out = FileFlags::default();
    for (section, name, flag, kind) in SETTINGS {
        let Some(entry) = file.get(section, name) else {
            continue;
        };
        match kind {
            Kind::Value => out.args.push(format!("--{flag}={}", entry.value)),
            Kind::Switch => match entry.value.to_ascii_lowercase().as_str() {
                "true" | "yes" | "on" | "1" => out.args.push(format!("--{flag}")),
                "false" | "no" | "off" | "0" => {}
                _ => {
                    return Err(ConfigFileError::NotBool {
                        path: path.to_owned(),
                        line: entry.line,
                        section: (*section).to_owned(),
                        name: (*name).to_owned(),
                        value: entry.value.clone(),
                    });
                }
            },
        }
    }
    for (section, name, _) in file.entries() {
        let known = SETTINGS
            .iter()
            .any(|(s, n, _, _)| *s == section && *n == name);
        if !known {
            out.ignored.push(format!("{section}.{name}"));
        }
    }
    Ok(out)
}

/// The value of `--config-file` in `args` (`--config-file PATH` or `--config-file=PATH`).
pub fn config_file_arg(args: &[String]) -> Option<String> {
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        if let Some(path) = arg.strip_prefix("--config-file=") {
            return Some(path.to_owned());
        }
        if arg == "--config-file" {
            return iter.next().cloned();
        }
    }
    None
}

/// The command line with the file's flags placed right after the program name, so that
/// the command line's own flags, coming later, win (the parser must let a later
/// occurrence override an earlier one: clap's `args_override_self`).
pub fn merged_args(args: Vec<String>) -> Result<(Vec<String>, Vec<String>), ConfigFileError> {
    let Some(path) = config_file_arg(&args) else {
        return Ok((args, Vec::new()));
    };
    let file = read(std::path::Path::new(&path))?;
    let mut merged = Vec::with_capacity(args.len() + file.args.len());
    let mut iter = args.into_iter();
    merged.extend(iter.next());
    merged.extend(file.args);
    merged.extend(iter);
    Ok((merged, file.ignored))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn settings_become_flags_and_unknown_ones_are_listed() {
        let file = IniFile::parse(
            "[default]\nmtu=1400\nmonitor-all=false\n[ovnkubernetesfeature]\n\
             enable-multi-network=true\nenable-network-segmentation=false\n[gateway]\n\
             mode=shared\nnodeport=true\n[ovnkubenode]\nkubelet-cgroup-path=x/kubelet.service\n",
        )
        .unwrap();
        let out = flags(&file, "f.conf").unwrap();
        assert_eq!(
            out.args,
            [
                "--mtu=1400",
                "--monitor-all=false",
                "--gateway-mode=shared",
                "--enable-multi-network",
                "--kubelet-cgroup-path=x/kubelet.service",
            ]
        );
        assert_eq!(out.ignored, ["gateway.nodeport"]);
    }

    #[test]
    fn the_lflow_cache_limits_are_read() {
        let file =
            IniFile::parse("[default]\nlflow-cache-limit=50000\nlflow-cache-limit-kb=102400\n")
                .unwrap();
        let out = flags(&file, "f.conf").unwrap();
        assert_eq!(
            out.args,
            ["--lflow-cache-limit=50000", "--lflow-cache-limit-kb=102400"]
        );
        assert!(out.ignored.is_empty());
    }

    #[test]
    fn a_switch_needs_a_boolean() {
        let file = IniFile::parse("[ovnkubernetesfeature]\nenable-multi-network=maybe\n").unwrap();
        let error = flags(&file, "f.conf").unwrap_err().to_string();
        assert!(error.contains("f.conf: line 2"), "{error}");
        assert!(error.contains("enable-multi-network"), "{error}");
    }

    #[test]
    fn finds_the_config_file_flag() {
        let args = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert_eq!(
            config_file_arg(&args(&["x", "--config-file", "/a"])).as_deref(),
            Some("/a")
        );
        assert_eq!(
            config_file_arg(&args(&["x", "--config-file=/b"])).as_deref(),
            Some("/b")
        );
        assert_eq!(config_file_arg(&args(&["x", "--node-name", "n"])), None);
    }
}
