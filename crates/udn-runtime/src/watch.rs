//! The reflector-backed watch every controller runs: a watch on `api` (with kube-rs's
//! default backoff) that keeps `writer`'s store current and hands each event to a callback,
//! which usually queues a key for the controller's loop. The store is the cache.

use std::pin::pin;

use futures::StreamExt;
use kube::api::Api;
use kube::runtime::reflector::{self, store::Writer};
use kube::runtime::{WatchStreamExt, watcher};

/// What a reflector can watch and cache: a typed, cluster-known resource the watch
/// decodes and the store shares across tasks. Implemented for every such type.
pub trait Watched:
    kube::Resource<DynamicType = ()>
    + Clone
    + serde::de::DeserializeOwned
    + std::fmt::Debug
    + Send
    + Sync
    + 'static
{
}

impl<K> Watched for K where
    K: kube::Resource<DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static
{
}

/// Drives a reflector over `api` and calls `on_event` for every event until it returns
/// `false` (its receiver is gone) or the watch ends. Watch errors are logged with `name`;
/// the watcher retries them itself.
pub async fn reflect<K>(
    name: &'static str,
    api: Api<K>,
    writer: Writer<K>,
    on_event: impl FnMut(watcher::Event<K>) -> bool,
) where
    K: Watched,
{
    reflect_with(name, api, watcher::Config::default(), writer, on_event).await;
}

/// [`reflect`] with a watch configuration of its own (a field or label selector).
pub async fn reflect_with<K>(
    name: &'static str,
    api: Api<K>,
    config: watcher::Config,
    writer: Writer<K>,
    mut on_event: impl FnMut(watcher::Event<K>) -> bool,
) where
    K: Watched,
{
    let stream = reflector::reflector(writer, watcher(api, config).default_backoff());
    let mut stream = pin!(stream);
    while let Some(event) = stream.next().await {
        match event {
            Ok(event) => {
                if !on_event(event) {
                    return;
                }
            }
            Err(error) => tracing::warn!(watch = name, error = %error, "watch error"),
        }
    }
}
