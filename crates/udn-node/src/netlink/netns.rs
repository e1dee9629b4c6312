//! Running netlink work inside a network namespace.
//!
//! A netlink socket belongs to the netns of the thread that opened it, and `setns` moves only
//! the calling thread. So work for another netns runs on a dedicated thread that enters it
//! (rustix's `setns`), opens its socket there, runs a `current_thread` runtime for the async
//! body and then ends: a thread that changed netns is never returned to a pool. Child
//! processes (`ethtool`) and `/proc/sys/net` writes from that thread also see that netns.

use std::fmt;
use std::fs::File;
use std::future::Future;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::path::{Path, PathBuf};

use rtnetlink::Handle;
use rustix::thread::{LinkNameSpaceType, move_into_link_name_space};
use tokio::sync::oneshot;

use super::error::NetlinkError;

/// A network namespace, named by a file that refers to it: `/var/run/netns/NAME`,
/// `/proc/PID/ns/net`, or the CNI's `CNI_NETNS`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NetnsPath(PathBuf);

impl NetnsPath {
    /// The namespace at `path`.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self(path.into())
    }

    /// The named namespace `/var/run/netns/<name>` (what `ip netns add <name>` creates).
    pub fn named(name: &str) -> Self {
        Self(Path::new("/var/run/netns").join(name))
    }

    /// The agent's own network namespace: that of the process's main thread, which never
    /// changes netns (only the dedicated worker threads do).
    pub fn agent() -> Self {
        Self(PathBuf::from("/proc/self/ns/net"))
    }

    /// The file path.
    pub fn path(&self) -> &Path {
        &self.0
    }

    fn open(&self) -> Result<File, NetlinkError> {
        File::open(&self.0).map_err(|source| NetlinkError::OpenNetns {
            path: self.0.clone(),
            source,
        })
    }
}

impl fmt::Display for NetnsPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.display().fmt(f)
    }
}

/// A netlink handle bound to one network namespace, with the namespace's name for errors.
#[derive(Debug, Clone)]
pub struct Netlink {
    handle: Handle,
    netns: String,
}

impl Netlink {
    /// Opens a netlink socket in the calling thread's netns and spawns its connection task on
    /// the current tokio runtime. In the agent (whose runtime threads never change netns)
    /// this is the host's netns; `label` names it in errors.
    pub fn connect_current(label: &str) -> Result<Self, NetlinkError> {
        let (connection, handle, _) =
            rtnetlink::new_connection().map_err(|source| NetlinkError::Connection {
                netns: label.to_owned(),
                source,
            })?;
        tokio::spawn(connection);
        Ok(Self {
            handle,
            netns: label.to_owned(),
        })
    }

    /// The rtnetlink handle.
    pub fn handle(&self) -> &Handle {
        &self.handle
    }

    /// The netns's name, as errors show it.
    pub fn netns(&self) -> &str {
        &self.netns
    }

    /// A request error in this netns.
    pub(crate) fn request_error(
        &self,
        op: &'static str,
        object: impl fmt::Display,
        source: rtnetlink::Error,
    ) -> NetlinkError {
        NetlinkError::Request {
            netns: self.netns.clone(),
            op,
            object: object.to_string(),
            source: Box::new(source),
        }
    }
}

/// Two namespaces entered by one worker thread: the pod's (where the thread is when the
/// body starts) and the host's, each with its own netlink socket. [`NetnsPair::enter_host`]
/// and [`NetnsPair::enter_pod`] move the thread for work that goes by the thread's netns
/// (sysctls, child processes).
#[derive(Debug)]
pub struct NetnsPair {
    /// Netlink in the host netns.
    pub host: Netlink,
    /// Netlink in the pod netns.
    pub pod: Netlink,
    host_path: NetnsPath,
    pod_path: NetnsPath,
    host_file: File,
    pod_file: File,
}

impl NetnsPair {
    /// The host netns as a file descriptor (e.g. to move a link there).
    pub fn host_fd(&self) -> RawFd {
        self.host_file.as_raw_fd()
    }

    /// Moves the worker thread into the host netns.
    pub fn enter_host(&self) -> Result<(), NetlinkError> {
        enter(&self.host_path, self.host_file.as_fd())
    }

    /// Moves the worker thread into the pod netns.
    pub fn enter_pod(&self) -> Result<(), NetlinkError> {
        enter(&self.pod_path, self.pod_file.as_fd())
    }
}

fn enter(path: &NetnsPath, fd: BorrowedFd<'_>) -> Result<(), NetlinkError> {
    move_into_link_name_space(fd, Some(LinkNameSpaceType::Network)).map_err(|errno| {
        NetlinkError::EnterNetns {
            path: path.0.clone(),
            source: errno.into(),
        }
    })
}

fn connect_here(netns: &NetnsPath) -> Result<Netlink, NetlinkError> {
    Netlink::connect_current(&netns.to_string())
}

/// Runs `body` with a netlink handle inside `netns`, on a dedicated thread (see the module
/// docs). The body's future need not be `Send`: it runs on that thread's own runtime.
pub async fn in_netns<T, F, Fut>(netns: &NetnsPath, body: F) -> Result<T, NetlinkError>
where
    T: Send + 'static,
    F: FnOnce(Netlink) -> Fut + Send + 'static,
    Fut: Future<Output = Result<T, NetlinkError>>,
{
    let target = netns.clone();
    run_on_worker(netns.to_string(), move || async move {
        let file = target.open()?;
        enter(&target, file.as_fd())?;
        body(connect_here(&target)?).await
    })
    .await
}

/// Runs `body` with netlink handles in `host` and in `pod`, on one dedicated thread that is
/// in `pod` when the body starts.
pub async fn in_netns_pair<T, F, Fut>(
    host: &NetnsPath,
    pod: &NetnsPath,
    body: F,
) -> Result<T, NetlinkError>
where
    T: Send + 'static,
    F: FnOnce(NetnsPair) -> Fut + Send + 'static,
    Fut: Future<Output = Result<T, NetlinkError>>,
{
    let (host_path, pod_path) = (host.clone(), pod.clone());
    run_on_worker(pod.to_string(), move || async move {
        let host_file = host_path.open()?;
        let pod_file = pod_path.open()?;
        enter(&host_path, host_file.as_fd())?;
        let host = connect_here(&host_path)?;
        enter(&pod_path, pod_file.as_fd())?;
        let pod = connect_here(&pod_path)?;
        body(NetnsPair {
            host,
            pod,
            host_path,
            pod_path,
            host_file,
            pod_file,
        })
        .await
    })
    .await
}

/// Starts a thread with a `current_thread` runtime, runs `make()`'s future on it and hands
/// the result back without blocking the caller's runtime.
async fn run_on_worker<T, F, Fut>(label: String, make: F) -> Result<T, NetlinkError>
where
    T: Send + 'static,
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future<Output = Result<T, NetlinkError>>,
{
    let (sender, receiver) = oneshot::channel();
    let worker_label = label.clone();
    let spawned = std::thread::Builder::new()
        .name("udn-netns".to_owned())
        .spawn(move || {
            let result = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(runtime) => runtime.block_on(make()),
                Err(error) => Err(NetlinkError::Worker {
                    netns: worker_label,
                    reason: format!("cannot build its runtime: {error}"),
                }),
            };
            // The caller may have given up waiting; nothing to do then.
            let _ = sender.send(result);
        });
    if let Err(error) = spawned {
        return Err(NetlinkError::Worker {
            netns: label,
            reason: format!("cannot start its thread: {error}"),
        });
    }
    receiver.await.unwrap_or_else(|_| {
        Err(NetlinkError::Worker {
            netns: label,
            reason: "the thread ended without a result (it panicked)".to_owned(),
        })
    })
}
