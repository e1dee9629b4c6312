//! `ovn-k8s-cni-overlay`: the CNI plugin kubelet and Multus execute per pod. It does no
//! networking itself: it forwards the request to the node agent's CNI server over a unix
//! socket and prints the answer (see docs/cni.md).

mod client;
mod environment;
mod http;
mod log;
mod netconf;
mod plugin;

use std::collections::BTreeMap;
use std::io::Write;
use std::process::ExitCode;

fn main() -> ExitCode {
    // Names are trimmed and empty names dropped, as upstream's shim builds its map;
    // non-UTF-8 bytes become U+FFFD, as Go's JSON encoder would write them.
    let env: BTreeMap<String, String> = std::env::vars_os()
        .filter_map(|(name, value)| {
            let name = name.to_string_lossy().trim().to_owned();
            (!name.is_empty()).then(|| (name, value.to_string_lossy().into_owned()))
        })
        .collect();
    let outcome = plugin::run(
        &env,
        &mut std::io::stdin().lock(),
        &mut std::io::stderr().lock(),
    );
    let mut stdout = std::io::stdout().lock();
    let written = stdout
        .write_all(&outcome.stdout)
        .and_then(|()| stdout.flush());
    if outcome.success && written.is_ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
