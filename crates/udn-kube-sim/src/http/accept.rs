//! Content negotiation: which representation the `Accept` header asks for. The server
//! only speaks JSON; the `as=` parameter selects Table, PartialObjectMetadata or
//! aggregated discovery as on the real server.

use crate::error::ApiError;

/// The representation of a response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Representation {
    /// The object (or list) as stored.
    Object,
    /// `meta.k8s.io/v1` Table (kubectl get).
    Table,
    /// `meta.k8s.io/v1` PartialObjectMetadata(List) (metadata-only watchers).
    PartialMetadata,
    /// `apidiscovery.k8s.io` APIGroupDiscoveryList of this version (`v2` or `v2beta1`).
    AggregatedDiscovery(&'static str),
}

/// One media range of an Accept header.
#[derive(Debug)]
struct MediaRange<'a> {
    essence: &'a str,
    params: Vec<(&'a str, &'a str)>,
}

impl<'a> MediaRange<'a> {
    fn parse(raw: &'a str) -> Self {
        let mut parts = raw.split(';').map(str::trim);
        let essence = parts.next().unwrap_or("");
        let params = parts
            .filter_map(|p| p.split_once('='))
            .map(|(k, v)| (k.trim(), v.trim().trim_matches('"')))
            .collect();
        Self { essence, params }
    }

    fn param(&self, name: &str) -> Option<&'a str> {
        self.params
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| *v)
    }
}

/// The first representation of `accept` that this server can produce, in the client's
/// order. `discovery` says whether the path is a discovery document (`/api`, `/apis`),
/// where aggregated discovery may be asked for. A missing header means JSON.
pub(crate) fn negotiate(accept: Option<&str>, discovery: bool) -> Result<Representation, ApiError> {
    let Some(accept) = accept.filter(|a| !a.trim().is_empty()) else {
        return Ok(Representation::Object);
    };
    for raw in accept.split(',') {
        let range = MediaRange::parse(raw);
        if !matches!(range.essence, "application/json" | "application/*" | "*/*") {
            continue;
        }
        let wanted = (range.param("as"), range.param("g"), range.param("v"));
        match wanted {
            (None, _, _) => return Ok(Representation::Object),
            (Some("Table"), Some("meta.k8s.io"), Some("v1" | "v1beta1")) if !discovery => {
                return Ok(Representation::Table);
            }
            (
                Some("PartialObjectMetadata" | "PartialObjectMetadataList"),
                Some("meta.k8s.io"),
                Some("v1" | "v1beta1"),
            ) if !discovery => return Ok(Representation::PartialMetadata),
            (Some("APIGroupDiscoveryList"), Some("apidiscovery.k8s.io"), Some("v2"))
                if discovery =>
            {
                return Ok(Representation::AggregatedDiscovery("v2"));
            }
            (Some("APIGroupDiscoveryList"), Some("apidiscovery.k8s.io"), Some("v2beta1"))
                if discovery =>
            {
                return Ok(Representation::AggregatedDiscovery("v2beta1"));
            }
            _ => {}
        }
    }
    Err(ApiError {
        code: 406,
        reason: "NotAcceptable",
        message: format!(
            "only the following media types are accepted: application/json, application/json;as=Table;v=v1;g=meta.k8s.io, application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io (got {accept:?})"
        ),
        name: None,
        group: None,
        kind: None,
        causes: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_the_first_supported_range() {
        let kubectl_get = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
        assert_eq!(
            negotiate(Some(kubectl_get), false).unwrap(),
            Representation::Table
        );
        let discovery = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
        assert_eq!(
            negotiate(Some(discovery), true).unwrap(),
            Representation::AggregatedDiscovery("v2")
        );
        assert_eq!(
            negotiate(Some(discovery), false).unwrap(),
            Representation::Object
        );
        assert_eq!(
            negotiate(
                Some("application/vnd.kubernetes.protobuf, application/json"),
                false
            )
            .unwrap(),
            Representation::Object
        );
        assert_eq!(negotiate(None, false).unwrap(), Representation::Object);
        assert_eq!(
            negotiate(Some("application/vnd.kubernetes.protobuf"), false).map_err(|e| e.code),
            Err(406)
        );
    }
}
