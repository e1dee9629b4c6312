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
//! replaced by a strategic merge patch and atomic for apply. Custom resources get only the
//! `metadata` rules (CRD schema hints such as `x-kubernetes-list-map-keys` are not passed
//! to the patch code, so their lists are atomic).

use serde_json::{Value, json};

/// How server-side apply treats a list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ListType {
    /// Replaced as a whole and owned as one field.
    Atomic,
    /// A set of scalars: merged by value, each value owned separately.
    Set,
    /// An associative list: merged by the key fields, each item owned separately.
    Map(&'static [&'static str]),
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
    ssa: ListType,
}

const fn rule(path: &'static str, smp: SmpList, ssa: ListType) -> ListRule {
    ListRule { path, smp, ssa }
}

const NAME: &[&str] = &["name"];
const TYPE: &[&str] = &["type"];

static METADATA: &[ListRule] = &[
    rule(
        "metadata.ownerReferences",
        SmpList::MergeByKey("uid"),
        ListType::Map(&["uid"]),
    ),
    rule("metadata.finalizers", SmpList::MergeScalars, ListType::Set),
];

/// The Pod lists, with those of `Container` repeated for each container list.
macro_rules! pod_rules {
    ($($containers:literal),*) => {
        &[
            $(
                rule($containers, SmpList::MergeByKey("name"), ListType::Map(NAME)),
                rule(
                    concat!($containers, ".ports"),
                    SmpList::MergeByKey("containerPort"),
                    ListType::Map(&["containerPort", "protocol"]),
                ),
                rule(
                    concat!($containers, ".env"),
                    SmpList::MergeByKey("name"),
                    ListType::Map(NAME),
                ),
                rule(
                    concat!($containers, ".volumeMounts"),
                    SmpList::MergeByKey("mountPath"),
                    ListType::Map(&["mountPath"]),
                ),
                rule(
                    concat!($containers, ".volumeDevices"),
                    SmpList::MergeByKey("devicePath"),
                    ListType::Map(&["devicePath"]),
                ),
                rule(
                    concat!($containers, ".resources.claims"),
                    SmpList::Replace,
                    ListType::Map(NAME),
                ),
            )*
            rule("spec.volumes", SmpList::MergeByKey("name"), ListType::Map(NAME)),
            rule("spec.imagePullSecrets", SmpList::MergeByKey("name"), ListType::Map(NAME)),
            rule("spec.hostAliases", SmpList::MergeByKey("ip"), ListType::Map(&["ip"])),
            rule(
                "spec.topologySpreadConstraints",
                SmpList::MergeByKey("topologyKey"),
                ListType::Map(&["topologyKey", "whenUnsatisfiable"]),
            ),
            rule("spec.schedulingGates", SmpList::MergeByKey("name"), ListType::Map(NAME)),
            rule("spec.resourceClaims", SmpList::MergeByKey("name"), ListType::Map(NAME)),
            rule("status.conditions", SmpList::MergeByKey("type"), ListType::Map(TYPE)),
            rule("status.podIPs", SmpList::MergeByKey("ip"), ListType::Map(&["ip"])),
            rule("status.hostIPs", SmpList::MergeByKey("ip"), ListType::Atomic),
            rule(
                "status.resourceClaimStatuses",
                SmpList::MergeByKey("name"),
                ListType::Map(NAME),
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
    rule(
        "status.conditions",
        SmpList::MergeByKey("type"),
        ListType::Map(TYPE),
    ),
    rule(
        "status.addresses",
        SmpList::MergeByKey("type"),
        ListType::Map(TYPE),
    ),
];

static SERVICE: &[ListRule] = &[
    rule(
        "spec.ports",
        SmpList::MergeByKey("port"),
        ListType::Map(&["port", "protocol"]),
    ),
    rule(
        "status.conditions",
        SmpList::MergeByKey("type"),
        ListType::Map(TYPE),
    ),
];

static NAMESPACE: &[ListRule] = &[rule(
    "status.conditions",
    SmpList::MergeByKey("type"),
    ListType::Map(TYPE),
)];

static CRD: &[ListRule] = &[rule(
    "status.conditions",
    SmpList::Replace,
    ListType::Map(TYPE),
)];

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
];

/// The merge rules of one kind.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TypeSchema {
    builtin: bool,
    has_status: bool,
    rules: &'static [ListRule],
}

impl TypeSchema {
    /// The schema of `group`/`kind`.
    pub(crate) fn of(group: &str, kind: &str) -> Self {
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

    /// Server-side apply behaviour of the list at `path` (field names from the root).
    pub(crate) fn ssa_list(&self, path: &[String]) -> ListType {
        self.find(path).map_or(ListType::Atomic, |rule| rule.ssa)
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
