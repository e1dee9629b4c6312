//! Content negotiation: which representation and encoding the `Accept` header asks for.
//! The `as=` parameter selects Table, PartialObjectMetadata or aggregated discovery as on
//! the real server; `application/vnd.kubernetes.protobuf` selects protobuf for the types
//! that have a protobuf form (built-in kinds and PartialObjectMetadata; not custom
//! resources, Tables or discovery documents).

use crate::error::ApiError;

use super::protobuf;

/// How a response body is encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Encoding {
    Json,
    Protobuf,
}

/// What a response carries and how.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Negotiated {
    /// Object, Table, PartialObjectMetadata or aggregated discovery.
    pub(crate) representation: Representation,
    /// JSON or protobuf.
    pub(crate) encoding: Encoding,
}

/// Where a response is negotiated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Endpoint {
    /// A discovery document (`/api`, `/apis`), where aggregated discovery may be asked for.
    Discovery,
    /// A resource path; `protobuf` says whether its objects have a protobuf form.
    Resource { protobuf: bool },
}

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

/// The first representation of `accept` that this server can produce for `endpoint`, in
/// the client's order. A missing header means JSON.
pub(crate) fn negotiate(accept: Option<&str>, endpoint: Endpoint) -> Result<Negotiated, ApiError> {
    let json = |representation| Negotiated {
        representation,
        encoding: Encoding::Json,
    };
    let Some(accept) = accept.filter(|a| !a.trim().is_empty()) else {
        return Ok(json(Representation::Object));
    };
    let discovery = endpoint == Endpoint::Discovery;
    let protobuf_objects = endpoint == (Endpoint::Resource { protobuf: true });
    for raw in accept.split(',') {
        let range = MediaRange::parse(raw);
        let encoding = match range.essence {
            "application/json" | "application/*" | "*/*" => Encoding::Json,
            protobuf::MEDIA_TYPE => Encoding::Protobuf,
            _ => continue,
        };
        let pb = encoding == Encoding::Protobuf;
        let with = |representation| Negotiated {
            representation,
            encoding,
        };
        let wanted = (range.param("as"), range.param("g"), range.param("v"));
        match wanted {
            (None, _, _) if pb && !protobuf_objects => {}
            (None, _, _) => return Ok(with(Representation::Object)),
            // A Table has no protobuf form.
            (Some("Table"), Some("meta.k8s.io"), Some("v1" | "v1beta1")) if !discovery && !pb => {
                return Ok(with(Representation::Table));
            }
            (
                Some("PartialObjectMetadata" | "PartialObjectMetadataList"),
                Some("meta.k8s.io"),
                Some("v1"),
            ) if !discovery => return Ok(with(Representation::PartialMetadata)),
            (
                Some("PartialObjectMetadata" | "PartialObjectMetadataList"),
                Some("meta.k8s.io"),
                Some("v1beta1"),
            ) if !discovery && !pb => return Ok(with(Representation::PartialMetadata)),
            (Some("APIGroupDiscoveryList"), Some("apidiscovery.k8s.io"), Some("v2"))
                if discovery && !pb =>
            {
                return Ok(with(Representation::AggregatedDiscovery("v2")));
            }
            (Some("APIGroupDiscoveryList"), Some("apidiscovery.k8s.io"), Some("v2beta1"))
                if discovery && !pb =>
            {
                return Ok(with(Representation::AggregatedDiscovery("v2beta1")));
            }
            _ => {}
        }
    }
    let protobuf_listed = if protobuf_objects {
        format!(", {}", protobuf::MEDIA_TYPE)
    } else {
        String::new()
    };
    Err(ApiError {
        code: 406,
        reason: "NotAcceptable",
        message: format!(
            "only the following media types are accepted: application/json{protobuf_listed}, application/json;as=Table;v=v1;g=meta.k8s.io, application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io (got {accept:?})"
        ),
        name: None,
        group: None,
        kind: None,
        causes: Vec::new(),
    })
}

/// The encoding of an error (`metav1.Status`): the first JSON or protobuf media range
/// without an `as=` transformation, as the apiserver's `ErrorNegotiated` picks it; JSON
/// when there is none.
pub(crate) fn error_encoding(accept: Option<&str>) -> Encoding {
    accept
        .unwrap_or("")
        .split(',')
        .map(MediaRange::parse)
        .filter(|range| range.param("as").is_none())
        .find_map(|range| match range.essence {
            "application/json" | "application/*" | "*/*" => Some(Encoding::Json),
            protobuf::MEDIA_TYPE => Some(Encoding::Protobuf),
            _ => None,
        })
        .unwrap_or(Encoding::Json)
}

#[cfg(test)]
mod tests {
    use super::*;

    const BUILTIN: Endpoint = Endpoint::Resource { protobuf: true };
    const CUSTOM: Endpoint = Endpoint::Resource { protobuf: false };

    fn representation(accept: &str, endpoint: Endpoint) -> Representation {
        negotiate(Some(accept), endpoint).unwrap().representation
    }

    #[test]
    fn picks_the_first_supported_range() {
        let kubectl_get = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
        assert_eq!(representation(kubectl_get, BUILTIN), Representation::Table);
        let discovery = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
        assert_eq!(
            representation(discovery, Endpoint::Discovery),
            Representation::AggregatedDiscovery("v2")
        );
        assert_eq!(representation(discovery, BUILTIN), Representation::Object);
        assert_eq!(negotiate(None, BUILTIN).unwrap().encoding, Encoding::Json);
    }

    #[test]
    fn protobuf_for_builtin_kinds_and_metadata_only() {
        let client_go = "application/vnd.kubernetes.protobuf, application/json";
        let negotiated = |accept, endpoint| negotiate(Some(accept), endpoint).unwrap();
        assert_eq!(
            negotiated(client_go, BUILTIN),
            Negotiated {
                representation: Representation::Object,
                encoding: Encoding::Protobuf
            }
        );
        assert_eq!(negotiated(client_go, CUSTOM).encoding, Encoding::Json);
        assert_eq!(
            negotiate(Some(protobuf::MEDIA_TYPE), CUSTOM).map_err(|e| e.code),
            Err(406)
        );
        let metadata = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";
        assert_eq!(
            negotiated(metadata, CUSTOM),
            Negotiated {
                representation: Representation::PartialMetadata,
                encoding: Encoding::Protobuf
            }
        );
        let table =
            "application/vnd.kubernetes.protobuf;as=Table;g=meta.k8s.io;v=v1,application/json";
        assert_eq!(
            negotiated(table, BUILTIN),
            Negotiated {
                representation: Representation::Object,
                encoding: Encoding::Json
            }
        );
        assert_eq!(
            negotiated(client_go, Endpoint::Discovery).encoding,
            Encoding::Json
        );
    }

    #[test]
    fn errors_take_the_first_plain_range() {
        assert_eq!(
            error_encoding(Some(
                "application/vnd.kubernetes.protobuf, application/json"
            )),
            Encoding::Protobuf
        );
        assert_eq!(
            error_encoding(Some(
                "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
            )),
            Encoding::Json
        );
        assert_eq!(
            error_encoding(Some(protobuf::MEDIA_TYPE)),
            Encoding::Protobuf
        );
        assert_eq!(error_encoding(None), Encoding::Json);
    }
}
