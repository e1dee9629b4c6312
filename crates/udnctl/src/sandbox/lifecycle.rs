//! The user-facing sandbox subcommands: up, down, status, exec, nbctl, sbctl, logs.

use std::process::ExitCode;

use anyhow::Context;
use udn_sandbox::binaries::Binaries;
use udn_sandbox::layout::Layout;
use udn_sandbox::tools::{self, Database};
use udn_sandbox::up::{UpOptions, UpOutcome};

use super::{SandboxCommand, UpArgs};

/// Writes to stdout (a closed stdout is not worth failing the command for).
fn say(text: &str) {
    use std::io::Write as _;
    let _ = std::io::stdout().write_all(text.as_bytes());
}

/// `say` with `format!` arguments and a newline.
macro_rules! say {
    ($($arg:tt)*) => {
        say(&format!("{}\n", format_args!($($arg)*)))
    };
}

/// Runs a user-facing subcommand; `None` for the hidden daemons.
pub(crate) fn run(command: &SandboxCommand) -> Option<anyhow::Result<ExitCode>> {
    Some(match command {
        SandboxCommand::Up(args) => up(args),
        SandboxCommand::Demo(args) => up(args).and_then(|_| demo(args)),
        SandboxCommand::Down(args) => udn_sandbox::down::down(&args.dir)
            .map(|report| {
                if report.found {
                    say!("sandbox in {} is down", args.dir.display());
                } else {
                    say!("no sandbox in {}", args.dir.display());
                }
                ExitCode::SUCCESS
            })
            .context("taking the sandbox down"),
        SandboxCommand::Status(args) => match udn_sandbox::status::status(&args.dir) {
            Ok(None) => {
                say!("no sandbox in {}", args.dir.display());
                Ok(ExitCode::FAILURE)
            }
            Ok(Some((state, lines))) => {
                say(&udn_sandbox::status::render(&state, &lines));
                let all_up = state.complete && lines.iter().all(|l| l.down_reason.is_none());
                Ok(if all_up {
                    ExitCode::SUCCESS
                } else {
                    ExitCode::FAILURE
                })
            }
            Err(error) => Err(error.into()),
        },
        SandboxCommand::Nbctl(args) | SandboxCommand::Sbctl(args) => {
            let database = if matches!(command, SandboxCommand::Nbctl(_)) {
                Database::Northbound
            } else {
                Database::Southbound
            };
            tools::load(&args.dir.dir)
                .and_then(|state| tools::ctl_command(&state, &args.node, database, &args.args))
                .map_err(anyhow::Error::from)
                .and_then(|mut cmd| cmd.status().context("running the OVN tool"))
                .map(exit_code)
        }
        SandboxCommand::Restart(args) => {
            udn_sandbox::restart::restart(&args.dir.dir, &args.component)
                .map(|record| {
                    say!("{} restarted (pid {})", record.name, record.pid);
                    ExitCode::SUCCESS
                })
                .context("restarting the component")
        }
        SandboxCommand::Logs(args) => tools::load(&args.dir.dir)
            .and_then(|state| tools::log_path(&state, &args.component))
            .map_err(anyhow::Error::from)
            .and_then(|path| {
                let text =
                    std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
                use std::io::Write as _;
                std::io::stdout()
                    .write_all(&text)
                    .context("writing the log")?;
                Ok(ExitCode::SUCCESS)
            }),
        SandboxCommand::Exec(args) => tools::load(&args.dir.dir)
            .map_err(anyhow::Error::from)
            .and_then(|state| {
                let mut cmd = udn_sandbox::pods::exec_command(
                    &state,
                    &Layout::new(&args.dir.dir),
                    &args.namespace,
                    &args.pod,
                    &args.command,
                )?;
                cmd.status().context("running the command in the pod")
            })
            .map(exit_code),
        SandboxCommand::Kubelet(_)
        | SandboxCommand::Image(_)
        | SandboxCommand::Forward(_)
        | SandboxCommand::Endpoints(_) => {
            return None;
        }
    })
}

fn exit_code(status: std::process::ExitStatus) -> ExitCode {
    status
        .code()
        .and_then(|code| u8::try_from(code).ok())
        .map_or(ExitCode::FAILURE, ExitCode::from)
}

fn up(args: &UpArgs) -> anyhow::Result<ExitCode> {
    let bin_dir = match &args.bin_dir {
        Some(dir) => dir.clone(),
        None => std::env::current_exe()
            .context("finding udnctl's own path")?
            .parent()
            .context("udnctl's directory")?
            .to_path_buf(),
    };
    let options = UpOptions {
        dir: args.dir.dir.clone(),
        nodes: args.nodes,
        binaries: Binaries::in_dir(&bin_dir)?,
        log_filter: args.log_filter.clone(),
        install_packages: !args.no_install,
        dynamic_udn: args.dynamic_udn.settings(),
    };
    let outcome = udn_sandbox::up::up(&options).context("bringing the sandbox up")?;
    let layout = Layout::new(&args.dir.dir);
    match outcome {
        UpOutcome::AlreadyUp => say!("the sandbox in {} is already up", args.dir.dir.display()),
        UpOutcome::Started => say!("the sandbox is up ({} nodes)", args.nodes),
        UpOutcome::Restarted { leftovers } => say!(
            "removed the leftovers of a sandbox that was not running ({}); the sandbox is up ({} nodes)",
            leftovers.join("; "),
            args.nodes
        ),
    }
    say!(
        "\n  export KUBECONFIG={}\n  kubectl get nodes\n  udnctl sandbox status\n  udnctl sandbox nbctl node1 -- show\n  udnctl sandbox exec POD -n NAMESPACE -- ip addr\n  udnctl sandbox down\n",
        layout.kubeconfig().display()
    );
    Ok(ExitCode::SUCCESS)
}

fn demo(args: &UpArgs) -> anyhow::Result<ExitCode> {
    let mut documents = Vec::new();
    for (origin, text) in [
        (
            "docs/examples/blue-green.yaml",
            udn_sandbox::demo::BLUE_GREEN,
        ),
        ("docs/examples/sandbox-pods.yaml", udn_sandbox::demo::PODS),
    ] {
        let docs =
            crate::input::parse_documents(origin, text).map_err(|p| anyhow::anyhow!("{p}"))?;
        documents.extend(docs.into_iter().map(|d| d.value));
    }
    say!(
        "applying docs/examples/blue-green.yaml and docs/examples/sandbox-pods.yaml; waiting for the pods"
    );
    let (matrix, all_good) =
        udn_sandbox::demo::run(&args.dir.dir, &documents).context("the demo")?;
    say!("\n{matrix}");
    Ok(if all_good {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
