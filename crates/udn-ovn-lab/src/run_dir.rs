//! The lab's run directory, `<temp dir>/udn-ovn-lab-<prefix>`, which also reserves the prefix:
//! creating the directory is atomic, so two labs never get the same prefix.

use std::path::{Path, PathBuf};

use crate::error::LabError;
use crate::netns::netns_with_prefix;
use crate::stale::write_owner;

/// Where every lab's run directory lives, as `<this>-<prefix>`.
pub(crate) const RUN_DIR_PREFIX: &str = "udn-ovn-lab";

/// The reserved prefix and its directory; the directory is removed on drop.
#[derive(Debug)]
pub(crate) struct RunDir {
    prefix: String,
    path: PathBuf,
}

impl RunDir {
    /// Picks a fresh prefix (`ol` + 6 hex digits) that no directory and no netns uses yet.
    /// The directory goes under `base` (the temp dir when `None`).
    pub(crate) fn reserve(base: Option<&Path>) -> Result<Self, LabError> {
        let step = "reserve a lab prefix";
        let base = base.map_or_else(std::env::temp_dir, Path::to_path_buf);
        let mut last_error = None;
        for _ in 0..32 {
            let id = uuid::Uuid::new_v4().simple().to_string();
            let prefix = format!("ol{}", &id[..6]);
            let path = base.join(format!("{RUN_DIR_PREFIX}-{prefix}"));
            match std::fs::create_dir(&path) {
                Ok(()) => {}
                Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(source) => {
                    last_error = Some(LabError::File {
                        step: step.to_owned(),
                        action: "create",
                        path,
                        source,
                    });
                    break;
                }
            }
            let run = Self { prefix, path };
            write_owner(step, &run.path)?;
            if netns_with_prefix(&format!("{}-", run.prefix)).is_empty() {
                return Ok(run);
            }
        }
        Err(last_error.unwrap_or_else(|| LabError::Invalid {
            field: "prefix".to_owned(),
            reason: "no free lab prefix after 32 tries".to_owned(),
        }))
    }

    pub(crate) fn prefix(&self) -> &str {
        &self.prefix
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The prefix of the lab whose run directory is `path`, if it is one.
    pub(crate) fn prefix_of(path: &Path) -> Option<&str> {
        path.file_name()?
            .to_str()?
            .strip_prefix(RUN_DIR_PREFIX)?
            .strip_prefix('-')
    }
}

impl Drop for RunDir {
    fn drop(&mut self) {
        if let Err(error) = std::fs::remove_dir_all(&self.path) {
            tracing::warn!(path = %self.path.display(), %error, "cannot remove lab run dir");
        }
    }
}
