//! Containers without a container engine: the container's process runs in the pod's
//! network namespace and in a cgroup of its own, joined before it execs (a shell writes its
//! pid to `cgroup.procs`, then execs `nsenter --net=<netns>` and the command), with the pod's
//! name as `HOSTNAME` and its output appended to a log file.

use std::path::Path;
use std::process::{Command, Stdio};

use k8s_openapi::api::core::v1::Container;

use super::KubeletError;

/// Images the sandbox runs itself (registry and tag ignored): see [`crate::images`].
pub const BUILT_IN_IMAGES: [&str; 2] = ["e2e-test-images/agnhost", "pause"];

/// Whether `image` is one of [`BUILT_IN_IMAGES`].
pub fn built_in(image: &str) -> Option<&'static str> {
    let without_tag = image.split('@').next().unwrap_or(image);
    let without_tag = without_tag
        .rsplit_once(':')
        .map_or(without_tag, |(name, tag)| {
            if tag.contains('/') { without_tag } else { name }
        });
    BUILT_IN_IMAGES
        .into_iter()
        .find(|known| without_tag.ends_with(known))
}

/// The argv that runs `container`: a built-in image through `image_command`, anything else
/// as host programs (`command` + `args`).
pub fn argv(container: &Container, image_command: &[String]) -> Result<Vec<String>, KubeletError> {
    let image = container.image.clone().unwrap_or_default();
    let command = container.command.clone().unwrap_or_default();
    let args = container.args.clone().unwrap_or_default();
    if let Some(known) = built_in(&image) {
        let mut argv = image_command.to_vec();
        argv.push(known.to_owned());
        // `command: ["/agnhost", "netexec"]` names the entrypoint explicitly.
        argv.extend(
            command
                .into_iter()
                .filter(|c| !c.ends_with("/agnhost") && c != "agnhost"),
        );
        argv.extend(args);
        return Ok(argv);
    }
    if command.is_empty() && args.is_empty() {
        return Err(KubeletError::Container(format!(
            "image {image:?} has no built-in entrypoint in the sandbox (built in: {}); give the container a command",
            BUILT_IN_IMAGES.join(", ")
        )));
    }
    Ok(command.into_iter().chain(args).collect())
}

/// Starts `argv` in netns `netns` (a path) and cgroup dir `cgroup`; returns its pid.
pub fn start(
    argv: &[String],
    netns: &str,
    cgroup: &Path,
    env: &[(String, String)],
    log: &Path,
) -> Result<u32, KubeletError> {
    std::fs::create_dir_all(cgroup).map_err(|e| {
        KubeletError::Container(format!("creating cgroup {}: {e}", cgroup.display()))
    })?;
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .map_err(|e| KubeletError::Container(format!("opening {}: {e}", log.display())))?;
    let err = file
        .try_clone()
        .map_err(|e| KubeletError::Container(format!("opening {}: {e}", log.display())))?;
    let script = format!(
        "echo $$ > '{}/cgroup.procs' && exec nsenter --net='{netns}' -- \"$@\"",
        cgroup.display()
    );
    use std::os::unix::process::CommandExt as _;
    let child = Command::new("sh")
        .arg("-c")
        .arg(script)
        .arg("sh")
        .args(argv)
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(Stdio::null())
        .stdout(file)
        .stderr(err)
        .process_group(0)
        .spawn()
        .map_err(|e| KubeletError::Container(format!("starting {argv:?}: {e}")))?;
    Ok(child.id())
}

/// Whether `pid` runs (not a zombie).
pub fn alive(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let state = stat
        .rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().next());
    !matches!(state, Some("Z" | "X") | None)
}

/// Sends `signal` to `pid`'s process group (the container and what it started).
pub fn signal(pid: u32, signal: rustix::process::Signal) {
    if let Some(pid) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    {
        let _ = rustix::process::kill_process_group(pid, signal);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_images_ignore_registry_and_tag() {
        assert_eq!(
            built_in("registry.k8s.io/e2e-test-images/agnhost:2.53"),
            Some("e2e-test-images/agnhost")
        );
        assert_eq!(built_in("registry.k8s.io/pause:3.10"), Some("pause"));
        assert_eq!(built_in("busybox"), None);
    }

    #[test]
    fn an_unknown_image_needs_a_command() {
        let container: Container =
            serde_json::from_value(serde_json::json!({"name": "c", "image": "busybox"})).unwrap();
        let error = argv(&container, &[]).unwrap_err();
        assert!(error.to_string().contains("busybox"), "{error}");
        let container: Container = serde_json::from_value(
            serde_json::json!({"name": "c", "image": "busybox", "command": ["sleep", "9"]}),
        )
        .unwrap();
        assert_eq!(argv(&container, &[]).unwrap(), vec!["sleep", "9"]);
        let container: Container = serde_json::from_value(serde_json::json!({"name": "c", "image": "registry.k8s.io/e2e-test-images/agnhost:2.53", "args": ["netexec"]})).unwrap();
        assert_eq!(
            argv(&container, &["udnctl".to_owned()]).unwrap(),
            vec!["udnctl", "e2e-test-images/agnhost", "netexec"]
        );
    }
}
