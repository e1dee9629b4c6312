//! Watch plumbing shared by the allocating controllers: a reflector-backed watch whose
//! events are handed to a callback (which queues keys); the store is the cache.

use std::pin::pin;

use futures::StreamExt;
use kube::api::Api;
use kube::runtime::reflector::{self, store::Writer};
use kube::runtime::{WatchStreamExt, watcher};
use tracing::warn;

/// Drives a reflector over `api` and calls `on_event` for every event.
pub(crate) async fn pump<K>(
    controller: &'static str,
    api: Api<K>,
    writer: Writer<K>,
    on_event: impl Fn(watcher::Event<K>),
) where
    K: kube::Resource<DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    let stream = reflector::reflector(
        writer,
        watcher(api, watcher::Config::default()).default_backoff(),
    );
    let mut stream = pin!(stream);
    while let Some(event) = stream.next().await {
        match event {
            Ok(event) => on_event(event),
            Err(error) => warn!(controller, error = %error, "watch error"),
        }
    }
}
