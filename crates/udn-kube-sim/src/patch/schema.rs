//! How the lists of each served kind merge, taken from the struct tags and markers of the
//! Kubernetes API types (`k8s.io/api`, `k8s.io/apimachinery` `ObjectMeta`,
//! `k8s.io/apiextensions-apiserver`):
//!
//! - strategic merge patch reads `patchStrategy:"merge"` and `patchMergeKey:"<key>"`;
//! - server-side apply reads `+listType=atomic|set|map` and `+listMapKey=<key>`.
//!
//! The two differ: `spec.ports` of a Service merges by `port` in a strategic merge patch
//! but is keyed by `port` and `protocol` for apply; Node `spec.taints` has no patch
//! strategy at all (a strategic merge patch replaces it). A list not in the table is
//! replaced by a strategic merge patch and atomic for apply. Custom resources get the
//! `metadata` rules from the table and everything else from their CRD's structural schema
//! ([`SchemaHints`], passed in through the patch context).

use serde_json::{Value, json};

use super::hints::{MapKey, SchemaHints};

/// How server-side apply treats a list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ListType<'a> {
    /// Replaced as a whole and owned as one field.
    Atomic,
    /// A set of scalars: merged by value, each value owned separately.
    Set,
    /// An associative list: merged by the key fields, each item owned separately.
    Map(MapKeys<'a>),
}

/// The key fields of an associative list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MapKeys<'a> {
    /// From the built-in table; defaults from [`key_default`].
    Builtin(&'static [&'static str]),
    /// From a CRD's `x-kubernetes-list-map-keys`, with the key fields' schema defaults.
    Schema(&'a [MapKey]),
}

impl<'a> MapKeys<'a> {
    /// The key field names with their defaults, in declaration order.
    pub(crate) fn fields(self) -> impl Iterator<Item = (&'a str, Option<Value>)> {
        let builtin: &'static [&'static str] = match self {
            Self::Builtin(names) => names,
            Self::Schema(_) => &[],
        };
        let schema: &'a [MapKey] = match self {
            Self::Builtin(_) => &[],
            Self::Schema(keys) => keys,
        };
        builtin.iter().map(|name| (*name, key_default(name))).chain(
            schema
                .iter()
                .map(|key| (key.name(), key.default().cloned())),
        )
    }
}

/// A built-in associative list keyed by `keys`.
const fn map(keys: &'static [&'static str]) -> ListType<'static> {
    ListType::Map(MapKeys::Builtin(keys))
}

/// How a strategic merge patch treats a list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SmpList {
    /// No `patchStrategy`: the patch value replaces the list.
    Replace,
    /// `patchStrategy:"merge"` on a list of scalars (union, `$deleteFromPrimitiveList`).
    MergeScalars,
    /// `patchStrategy:"merge"` with `patchMergeKey`.
    MergeByKey(&'static str),
}

#[derive(Debug)]
struct ListRule {
    /// Dotted field path from the object root, list items are transparent.
    path: &'static str,
    smp: SmpList,
    ssa: ListType<'static>,
}

const fn rule(path: &'static str, smp: SmpList, ssa: ListType<'static>) -> ListRule {
    ListRule { path, smp, ssa }
}

const NAME: &[&str] = &["name"];
const TYPE: &[&str] = &["type"];

static METADATA: &[ListRule] = &[
    rule(
        "metadata.ownerReferences",
        SmpList::MergeByKey("uid"),
        map(&["uid"]),
    ),
    rule("metadata.finalizers", SmpList::MergeScalars, ListType::Set),
];

/// The Pod lists, with those of `Container` repeated for each container list.
macro_rules! pod_rules {
    ($($containers:literal),*) => {
        &[
            $(
                rule($containers, SmpList::MergeByKey("name"), map(NAME)),
                rule(
                    concat!($containers, ".ports"),
                    SmpList::MergeByKey("containerPort"),
                    map(&["containerPort", "protocol"]),
                ),
                rule(
                    concat!($containers, ".env"),
                    SmpList::MergeByKey("name"),
                    map(NAME),
                ),
                rule(
                    concat!($containers, ".volumeMounts"),
                    SmpList::MergeByKey("mountPath"),
                    map(&["mountPath"]),
                ),
                rule(
                    concat!($containers, ".volumeDevices"),
                    SmpList::MergeByKey("devicePath"),
                    map(&["devicePath"]),
                ),
                rule(
                    concat!($containers, ".resources.claims"),
                    SmpList::Replace,
                    map(NAME),
                ),
            )*
            rule("spec.volumes", SmpList::MergeByKey("name"), map(NAME)),
            rule("spec.imagePullSecrets", SmpList::MergeByKey("name"), map(NAME)),
            rule("spec.hostAliases", SmpList::MergeByKey("ip"), map(&["ip"])),
            rule(
                "spec.topologySpreadConstraints",
                SmpList::MergeByKey("topologyKey"),
                map(&["topologyKey", "whenUnsatisfiable"]),
            ),
            rule("spec.schedulingGates", SmpList::MergeByKey("name"), map(NAME)),
            rule("spec.resourceClaims", SmpList::MergeByKey("name"), map(NAME)),
            rule("status.conditions", SmpList::MergeByKey("type"), map(TYPE)),
            rule("status.podIPs", SmpList::MergeByKey("ip"), map(&["ip"])),
            rule("status.hostIPs", SmpList::MergeByKey("ip"), ListType::Atomic),
            rule(
                "status.resourceClaimStatuses",
                SmpList::MergeByKey("name"),
                map(NAME),
            ),
        ]
    };
}

static POD: &[ListRule] = pod_rules!(
    "spec.containers",
    "spec.initContainers",
    "spec.ephemeralContainers"
);

static NODE: &[ListRule] = &[
    rule("spec.podCIDRs", SmpList::MergeScalars, ListType::Set),
    rule("status.conditions", SmpList::MergeByKey("type"), map(TYPE)),
    rule("status.addresses", SmpList::MergeByKey("type"), map(TYPE)),
];

static SERVICE: &[ListRule] = &[
    rule(
        "spec.ports",
        SmpList::MergeByKey("port"),
        map(&["port", "protocol"]),
    ),
    rule("status.conditions", SmpList::MergeByKey("type"), map(TYPE)),
];

static NAMESPACE: &[ListRule] = &[rule(
    "status.conditions",
    SmpList::MergeByKey("type"),
    map(TYPE),
)];

static CRD: &[ListRule] = &[rule("status.conditions", SmpList::Replace, map(TYPE))];

/// Groups whose kinds are compiled into the real server (strategic merge patch works).
const BUILTIN_GROUPS: &[&str] = &[
    "",
    "events.k8s.io",
    "discovery.k8s.io",
    "coordination.k8s.io",
    "apiextensions.k8s.io",
];

/// Kinds without a `status` (no status subresource, nothing to reset).
const WITHOUT_STATUS: &[(&str, &str)] = &[
    ("", "Event"),
    ("events.k8s.io", "Event"),
    ("discovery.k8s.io", "EndpointSlice"),
    ("coordination.k8s.io", "Lease"),
    ("", "ConfigMap"),
];

/// The merge rules of one kind.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TypeSchema<'a> {
    builtin: bool,
    has_status: bool,
    rules: &'static [ListRule],
    hints: Option<&'a SchemaHints>,
}

impl<'a> TypeSchema<'a> {
    /// The schema of `group`/`kind`; a custom resource's lists and maps outside `metadata`
    /// follow `hints` (its CRD's structural schema) when given.
    pub(crate) fn of(group: &str, kind: &str, hints: Option<&'a SchemaHints>) -> Self {
        let builtin = BUILTIN_GROUPS.contains(&group);
        let rules: &'static [ListRule] = match (group, kind) {
            ("", "Pod") => POD,
            ("", "Node") => NODE,
            ("", "Service") => SERVICE,
            ("", "Namespace") => NAMESPACE,
            ("apiextensions.k8s.io", "CustomResourceDefinition") => CRD,
            _ => &[],
        };
        Self {
            builtin,
            has_status: !WITHOUT_STATUS.contains(&(group, kind)),
            rules,
            hints: if builtin { None } else { hints },
        }
    }

    /// Whether the kind is compiled into the real server (not a custom resource).
    pub(crate) fn builtin(&self) -> bool {
        self.builtin
    }

    /// Whether the kind has a `status` that the main resource does not write.
    pub(crate) fn has_status(&self) -> bool {
        self.has_status
    }

    fn find(&self, path: &[String]) -> Option<&'static ListRule> {
        METADATA
            .iter()
            .chain(self.rules.iter())
            .find(|rule| dotted_eq(rule.path, path))
    }

    /// Strategic merge patch behaviour of the list at `path` (field names from the root).
    pub(crate) fn smp_list(&self, path: &[String]) -> SmpList {
        self.find(path).map_or(SmpList::Replace, |rule| rule.smp)
    }

    /// Server-side apply behaviour of the list at `path` (field names from the root) when
    /// the table names it.
    pub(crate) fn ssa_list(&self, path: &[String]) -> Option<ListType<'static>> {
        self.find(path).map(|rule| rule.ssa)
    }

    /// The CRD schema hints of a custom resource.
    pub(crate) fn hints(&self) -> Option<&'a SchemaHints> {
        self.hints
    }

    /// The object a new object's fields are compared with when an update is tracked: the
    /// zero value of the Go type, which has empty `spec` and `status` for built-in kinds.
    pub(crate) fn zero_object(&self) -> Value {
        if self.builtin {
            json!({"metadata": {}, "spec": {}, "status": {}})
        } else {
            json!({})
        }
    }
}

/// Default values of list-map key fields, as the OpenAPI schema declares them (`protocol`
/// of container and service ports defaults to `TCP`).
pub(crate) fn key_default(field: &str) -> Option<Value> {
    (field == "protocol").then(|| Value::String("TCP".to_owned()))
}

fn dotted_eq(dotted: &str, path: &[String]) -> bool {
    let mut parts = dotted.split('.');
    for name in path {
        if parts.next() != Some(name.as_str()) {
            return false;
        }
    }
    parts.next().is_none()
}
