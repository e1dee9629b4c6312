//! Built-in test images: what the simulated kubelet runs for images it knows, without a
//! container engine (`udnctl sandbox image <image> [args...]`, inside the pod's netns and
//! cgroup).
//!
//! - `e2e-test-images/agnhost` (any registry and tag), as upstream's e2e tests use it:
//!   `netexec [--http-port=8080] [--udp-port=8081]` (HTTP `/`, `/hostname` (the pod's name),
//!   `/clientip` (the caller's ip:port), `/echo?msg=X`, `/healthz`; UDP `hostname` and
//!   `echo X`), `serve-hostname` (HTTP `/` answers the pod name on 9376), `pause`.
//! - `pause`: sleeps until stopped.

pub mod netexec;

/// Why an image stopped.
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    /// Unknown image or subcommand.
    #[error("{0}")]
    Usage(String),
    /// A socket failed.
    #[error("{what}: {source}")]
    Io {
        /// What was done.
        what: String,
        /// Why it failed.
        source: std::io::Error,
    },
}

/// Runs built-in image `args[0]` with its arguments; returns when it exits.
pub fn run(args: &[String]) -> Result<(), ImageError> {
    let Some((image, rest)) = args.split_first() else {
        return Err(ImageError::Usage("no image given".to_owned()));
    };
    match image.as_str() {
        "pause" => pause(),
        "e2e-test-images/agnhost" => match rest.split_first() {
            Some((sub, flags)) if sub == "netexec" => {
                netexec::run(&netexec::Options::parse(flags)?)
            }
            Some((sub, _)) if sub == "serve-hostname" => netexec::run(&netexec::Options {
                http_port: 9376,
                udp_port: None,
            }),
            Some((sub, _)) if sub == "pause" => pause(),
            other => Err(ImageError::Usage(format!(
                "agnhost {other:?}: the sandbox's agnhost knows netexec, serve-hostname and pause"
            ))),
        },
        other => Err(ImageError::Usage(format!("no built-in image {other:?}"))),
    }
}

/// Sleeps until a signal ends the process.
fn pause() -> Result<(), ImageError> {
    loop {
        std::thread::park();
    }
}
