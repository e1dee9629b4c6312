//! Watch plumbing shared by the allocating controllers: a reflector-backed watch whose
//! events are handed to a callback (which queues keys); the store is the cache.

use kube::api::Api;
use kube::runtime::reflector::store::Writer;
use kube::runtime::watcher;

/// Drives a reflector over `api` and calls `on_event` for every event
/// ([`udn_runtime::watch::reflect`]).
pub(crate) async fn pump<K>(
    controller: &'static str,
    api: Api<K>,
    writer: Writer<K>,
    on_event: impl Fn(watcher::Event<K>),
) where
    K: udn_runtime::watch::Watched,
{
    udn_runtime::watch::reflect(controller, api, writer, |event| {
        on_event(event);
        true
    })
    .await;
}
