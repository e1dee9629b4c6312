//! Snapshots: every stored object out (CRDs first, then namespaces, then the rest), and
//! back into an empty server with uids, resourceVersions and timestamps kept.

use serde_json::Value;

use super::crd;
use super::meta;
use super::registry::Builtin;
use super::state::{ObjRef, State, crds_key, namespaces_key};
use crate::error::ApiError;

impl State {
    /// Every object, CRDs first, then namespaces, then the other types in key order.
    pub(super) fn export(&self) -> Vec<Value> {
        let crds = crds_key();
        let namespaces = namespaces_key();
        let mut keys: Vec<_> = self.registry.all().map(|entry| entry.rt.key()).collect();
        keys.retain(|key| *key != crds && *key != namespaces);
        let mut out = Vec::new();
        for key in [crds, namespaces].into_iter().chain(keys) {
            out.extend(self.objects(&key, None).map(|(_, obj)| (**obj).clone()));
        }
        out
    }

    /// Restore exported objects. CRDs register their types as they come; the
    /// resourceVersion counter continues above the largest one restored.
    pub(super) fn import(&mut self, objects: Vec<Value>) -> Result<(), ApiError> {
        for obj in objects {
            let api_version = obj
                .get("apiVersion")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let kind = obj.get("kind").and_then(Value::as_str).unwrap_or_default();
            let Some(entry) = self.registry.by_kind(api_version, kind) else {
                return Err(ApiError::bad_request(format!(
                    "cannot restore {kind} of apiVersion {api_version:?}: the server does not serve that type"
                )));
            };
            let namespace = if entry.rt.namespaced {
                meta::meta_str(&obj, "namespace").to_owned()
            } else {
                String::new()
            };
            let name = meta::meta_str(&obj, "name").to_owned();
            let r = ObjRef::new(&entry.rt.key(), &namespace, &name);
            if self.get(&r).is_some() {
                return Err(ApiError::already_exists(
                    &entry.rt.group,
                    &entry.rt.plural,
                    &name,
                ));
            }
            if entry.is(Builtin::Service) {
                self.reserve_cluster_ip(&obj);
            }
            if entry.is(Builtin::Crd) {
                let served = crd::type_from_crd(&obj)?;
                self.registry.register(served);
            }
            self.restore(&r, obj);
        }
        Ok(())
    }

    /// Keep new Service ClusterIPs clear of a restored one.
    fn reserve_cluster_ip(&mut self, service: &Value) {
        let ip = service
            .pointer("/spec/clusterIP")
            .and_then(Value::as_str)
            .and_then(|ip| ip.parse::<std::net::Ipv4Addr>().ok());
        if let Some(ip) = ip {
            let bits = u32::from(ip);
            if bits & 0xfff0_0000 == 0x0a60_0000 {
                self.next_cluster_ip = self.next_cluster_ip.max((bits & 0x000f_ffff) + 1);
            }
        }
    }
}
