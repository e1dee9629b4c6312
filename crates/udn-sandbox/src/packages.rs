//! The Debian packages the sandbox needs, kept in one place (`packages.txt`, which `.ci/run`
//! also reads), and their installation when some are missing.

use std::process::Command;

use crate::error::SandboxError;

/// `packages.txt`: one package per line, `#` comments.
const PACKAGES: &str = include_str!("../packages.txt");

/// The packages, in file order.
pub fn required() -> Vec<&'static str> {
    PACKAGES
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .collect()
}

/// The required packages dpkg does not know as installed.
pub fn missing() -> Vec<&'static str> {
    required()
        .into_iter()
        .filter(|package| {
            !Command::new("dpkg")
                .args(["-s", package])
                .output()
                .is_ok_and(|out| out.status.success())
        })
        .collect()
}

/// Installs `packages` with apt-get as `.ci/run` does: no daemon started by the install
/// (a `policy-rc.d` that refuses), non-interactive.
pub fn install(packages: &[&str]) -> Result<(), SandboxError> {
    let policy = std::path::Path::new("/usr/sbin/policy-rc.d");
    if !policy.exists() {
        std::fs::write(policy, "#!/bin/sh\nexit 101\n")
            .and_then(|()| {
                use std::os::unix::fs::PermissionsExt as _;
                std::fs::set_permissions(policy, std::fs::Permissions::from_mode(0o755))
            })
            .map_err(|source| SandboxError::io("write", policy, source))?;
    }
    crate::command::run("apt-get", &["update", "-qq"])?;
    let mut args = vec!["install", "-y", "-qq", "--no-install-recommends"];
    args.extend_from_slice(packages);
    let status = Command::new("apt-get")
        .args(&args)
        .env("DEBIAN_FRONTEND", "noninteractive")
        .status()
        .map_err(|source| SandboxError::Spawn {
            program: "apt-get".to_owned(),
            source,
        })?;
    if status.success() {
        Ok(())
    } else {
        Err(SandboxError::Command {
            command: format!("apt-get {}", args.join(" ")),
            stderr: format!("exited with {status}"),
        })
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_list_has_the_ovn_packages_and_no_comments() {
        let packages = super::required();
        assert!(packages.contains(&"ovn-central"), "{packages:?}");
        assert!(packages.contains(&"nftables"), "{packages:?}");
        assert!(
            packages
                .iter()
                .all(|p| !p.contains(' ') && !p.starts_with('#'))
        );
    }
}
