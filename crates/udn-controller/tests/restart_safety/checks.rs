//! What must hold after the workload: pod addresses never change once written and are never
//! shared, and the Northbound and Southbound databases hold exactly one copy of what the live
//! networks, nodes and pods need (nothing of deleted ones). Each check returns `Err` with what
//! is wrong.

use std::collections::{BTreeMap, BTreeSet};

use udn_api::annotations::{PodNetworks, parse_pod_networks};
use udn_api::names::ANNOTATION_POD_NETWORKS;
use udn_kube_sim::{ListOptions, ResourceKey, Sim};
use udn_ovsdb::client::Endpoint;
use udn_ovsdb::engine::{ID_KEY, OWNER_CONTROLLER_KEY, OWNER_KEY, OWNER_TYPE_KEY};
use udn_ovsdb::protocol::{Atom, Row, Value};

use crate::support::lsp_name;
use crate::workload::{LOCAL, NAMESPACES, NETWORKS, NODES, Topo, World};

const DEFAULT_CONTROLLER: &str = "default-network-controller";

fn pods_key() -> ResourceKey {
    ResourceKey {
        group: String::new(),
        plural: "pods".to_owned(),
    }
}

/// Live pods' `k8s.ovn.org/pod-networks`: key -> (uid, entries).
fn annotated_pods(sim: &Sim) -> Result<BTreeMap<String, (String, PodNetworks)>, String> {
    let list = sim
        .list(&pods_key(), None, &ListOptions::default())
        .map_err(|e| e.message)?;
    let mut out = BTreeMap::new();
    for pod in list["items"].as_array().into_iter().flatten() {
        let meta = &pod["metadata"];
        let key = format!(
            "{}/{}",
            meta["namespace"].as_str().unwrap_or_default(),
            meta["name"].as_str().unwrap_or_default()
        );
        let uid = meta["uid"].as_str().unwrap_or_default().to_owned();
        let entries = match meta["annotations"][ANNOTATION_POD_NETWORKS].as_str() {
            Some(value) => {
                parse_pod_networks(value).map_err(|e| format!("pod {key}: unreadable: {e}"))?
            }
            None => PodNetworks::new(),
        };
        out.insert(key, (uid, entries));
    }
    Ok(out)
}

/// Every pod's entries as first seen (by pod UID).
#[derive(Debug, Default)]
pub(crate) struct Records {
    first: BTreeMap<String, PodNetworks>,
}

impl Records {
    /// Records new entries; fails when a recorded entry changed or went away, or when two
    /// live pods share an address or MAC on a network.
    pub(crate) fn observe(&mut self, sim: &Sim) -> Result<(), String> {
        let pods = annotated_pods(sim)?;
        let mut held: BTreeMap<(String, String), String> = BTreeMap::new();
        for (key, (uid, entries)) in &pods {
            let recorded = self.first.entry(uid.clone()).or_default();
            for (nad_key, entry) in entries {
                match recorded.get(nad_key) {
                    Some(first) if first != entry => {
                        return Err(format!(
                            "pod {key} re-addressed on {nad_key}: {first:?} became {entry:?}"
                        ));
                    }
                    Some(_) => {}
                    None => {
                        recorded.insert(nad_key.clone(), entry.clone());
                    }
                }
            }
            if let Some(lost) = recorded.keys().find(|k| !entries.contains_key(*k)) {
                return Err(format!("pod {key} lost its {lost} entry"));
            }
            for (nad_key, entry) in entries {
                let claims = entry
                    .ip_addresses
                    .iter()
                    .map(|ip| ip.ip().to_string())
                    .chain(std::iter::once(entry.mac_address.to_string()));
                for claim in claims {
                    if let Some(other) = held.insert((nad_key.clone(), claim.clone()), key.clone())
                    {
                        return Err(format!("{claim} on {nad_key} held by {other} and {key}"));
                    }
                }
            }
        }
        Ok(())
    }
}

/// One database's rows by table.
pub(crate) struct Tables(BTreeMap<String, Vec<Row>>);

impl Tables {
    /// Reads the zone's tables of a database through a fresh client.
    pub(crate) async fn read(endpoint: Endpoint, northbound: bool) -> Self {
        let client = if northbound {
            udn_controller::zone::connect_nb(endpoint).await
        } else {
            udn_controller::zone::connect_sb(endpoint).await
        };
        let client = client.unwrap();
        let replica = client.replica();
        let tables = replica.schema().tables.keys().cloned().collect::<Vec<_>>();
        let rows = tables
            .into_iter()
            .map(|t| {
                let rows = replica.rows(&t).map(|(_, r)| r.clone()).collect();
                (t, rows)
            })
            .collect();
        Self(rows)
    }

    fn rows(&self, table: &str) -> &[Row] {
        self.0.get(table).map_or(&[], Vec::as_slice)
    }

    /// Names of a table's rows (with repeats).
    fn names(&self, table: &str) -> Vec<&str> {
        self.rows(table)
            .iter()
            .filter_map(|r| string(r, "name"))
            .collect()
    }
}

fn string<'r>(row: &'r Row, column: &str) -> Option<&'r str> {
    match row.get(column) {
        Some(Value::Atom(Atom::String(s))) => Some(s),
        _ => None,
    }
}

fn strings<'r>(row: &'r Row, column: &str) -> Vec<&'r str> {
    match row.get(column) {
        Some(Value::Atom(Atom::String(s))) => vec![s.as_str()],
        Some(Value::Set(atoms)) => atoms
            .iter()
            .filter_map(|a| match a {
                Atom::String(s) => Some(s.as_str()),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

fn external_ids(row: &Row) -> BTreeMap<&str, &str> {
    match row.get("external_ids") {
        Some(Value::Map(pairs)) => pairs
            .iter()
            .filter_map(|(k, v)| match (k, v) {
                (Atom::String(k), Atom::String(v)) => Some((k.as_str(), v.as_str())),
                _ => None,
            })
            .collect(),
        _ => BTreeMap::new(),
    }
}

fn duplicates<'a>(items: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let mut seen = BTreeSet::new();
    items.into_iter().filter(|i| !seen.insert(*i)).collect()
}

/// What the live objects need, derived from the world.
struct Expected {
    /// Live network controllers.
    controllers: BTreeSet<String>,
    /// Logical switches and routers that must exist.
    switches: BTreeSet<String>,
    routers: BTreeSet<String>,
    /// Load balancer groups that must exist (and no others).
    lb_groups: BTreeSet<String>,
    /// Pod ports per controller: port name -> (pod key, NAD key).
    ports: BTreeMap<String, BTreeMap<String, (String, String)>>,
    /// The NAD keys of each live pod's annotation.
    annotated: BTreeMap<String, BTreeSet<String>>,
    local_alive: bool,
    remote_alive: BTreeSet<String>,
}

/// `transit`: a remote node exists (the zone runs `--lean-transit-on-demand`, the default:
/// without one a Layer3 network has no transit switch).
fn network_names(
    prefix: &str,
    topology: Option<Topo>,
    primary: bool,
    local: bool,
    transit: bool,
) -> [Vec<String>; 2] {
    let mut switches = Vec::new();
    let mut routers = Vec::new();
    let node = |base: &str| format!("{base}{LOCAL}");
    match topology {
        None | Some(Topo::Layer3) => {
            routers.push(format!("{prefix}ovn_cluster_router"));
            if transit {
                switches.push(format!("{prefix}transit_switch"));
            }
            if primary {
                switches.push(format!("{prefix}join"));
            }
            if local {
                switches.push(node(prefix));
            }
        }
        Some(Topo::Layer2) => switches.push(format!("{prefix}ovn_layer2_switch")),
    }
    if primary && local {
        routers.push(node(&format!("GR_{prefix}")));
        switches.push(node(&format!("ext_{prefix}")));
    }
    [switches, routers]
}

impl Expected {
    fn of(world: &World) -> Self {
        let local_alive = world.nodes.contains_key(&0);
        let mut out = Self {
            controllers: BTreeSet::from([DEFAULT_CONTROLLER.to_owned()]),
            switches: BTreeSet::new(),
            routers: BTreeSet::new(),
            lb_groups: BTreeSet::new(),
            ports: BTreeMap::new(),
            annotated: BTreeMap::new(),
            local_alive,
            remote_alive: world
                .nodes
                .keys()
                .filter(|s| **s != 0)
                .map(|s| NODES[*s].to_owned())
                .collect(),
        };
        let mut networks = vec![(String::new(), None, true)];
        for slot in world.networks.keys() {
            let def = &NETWORKS[*slot];
            out.controllers.insert(def.controller());
            networks.push((def.prefix(), Some(def.topology), def.primary));
        }
        for (prefix, topology, primary) in &networks {
            let transit = !out.remote_alive.is_empty();
            let [switches, routers] =
                network_names(prefix, *topology, *primary, local_alive, transit);
            out.switches.extend(switches);
            out.routers.extend(routers);
            for base in [
                "clusterLBGroup",
                "clusterSwitchLBGroup",
                "clusterRouterLBGroup",
            ] {
                out.lb_groups.insert(format!("{prefix}{base}"));
            }
        }
        for controller in &out.controllers {
            out.ports.insert(controller.clone(), BTreeMap::new());
        }
        out.add_pods(world);
        out
    }

    /// Local pods: every attachment annotated and a port; remote pods: their Layer2
    /// attachments (cluster-manager's entries, remote ports on the shared switch) only.
    fn add_pods(&mut self, world: &World) {
        for ((ns, pod), model) in &world.pods {
            let (namespace, name) = (NAMESPACES[*ns], format!("p{pod}"));
            let key = format!("{namespace}/{name}");
            let mut keys = BTreeSet::new();
            for (nad_key, slot) in world.wanted(*ns, model).unwrap_or_default() {
                let layer2 = slot.is_some_and(|s| NETWORKS[s].topology == Topo::Layer2);
                if model.node != 0 && !layer2 {
                    continue;
                }
                let controller =
                    slot.map_or(DEFAULT_CONTROLLER.to_owned(), |s| NETWORKS[s].controller());
                let port = lsp_name(&nad_key, namespace, &name);
                self.ports
                    .entry(controller)
                    .or_default()
                    .insert(port, (key.clone(), nad_key.clone()));
                keys.insert(nad_key);
            }
            self.annotated.insert(key, keys);
        }
    }
}

/// Every live pod has exactly the entries it should (the zone writes none on remote pods).
pub(crate) fn check_annotations(world: &World, sim: &Sim) -> Result<(), String> {
    let expected = Expected::of(world);
    let pods = annotated_pods(sim)?;
    for (key, keys) in &expected.annotated {
        let Some((_, entries)) = pods.get(key) else {
            return Err(format!("pod {key} missing from the API server"));
        };
        let have: BTreeSet<String> = entries.keys().cloned().collect();
        if have != *keys {
            return Err(format!(
                "pod {key}: pod-networks keys {have:?}, want {keys:?}"
            ));
        }
    }
    Ok(())
}

/// No row twice, no row of anything deleted, every row the live objects need.
pub(crate) fn check_nb(world: &World, nb: &Tables, sim: &Sim) -> Result<(), String> {
    let expected = Expected::of(world);
    no_duplicates(nb)?;
    ownership(&expected, nb)?;
    for (table, want) in [
        ("Logical_Switch", &expected.switches),
        ("Logical_Router", &expected.routers),
    ] {
        let have: BTreeSet<&str> = nb.names(table).into_iter().collect();
        if let Some(missing) = want.iter().find(|n| !have.contains(n.as_str())) {
            return Err(format!("{table} {missing} missing; have {have:?}"));
        }
    }
    let groups: BTreeSet<String> = nb
        .names("Load_Balancer_Group")
        .into_iter()
        .map(str::to_owned)
        .collect();
    if groups != expected.lb_groups {
        return Err(format!(
            "load balancer groups {groups:?}, want {:?}",
            expected.lb_groups
        ));
    }
    let router_ports: BTreeSet<&str> = nb.names("Logical_Router_Port").into_iter().collect();
    for binding in nb.rows("Static_MAC_Binding") {
        let port = string(binding, "logical_port").unwrap_or_default();
        if !router_ports.contains(port) {
            return Err(format!("static MAC binding on missing router port {port}"));
        }
    }
    pod_ports(&expected, nb, sim)
}

fn no_duplicates(nb: &Tables) -> Result<(), String> {
    for (table, rows) in &nb.0 {
        let ids: Vec<String> = rows
            .iter()
            .filter_map(|row| {
                let ids = external_ids(row);
                Some(format!(
                    "{} {}",
                    ids.get(OWNER_CONTROLLER_KEY)?,
                    ids.get(ID_KEY)?
                ))
            })
            .collect();
        if let Some(dup) = duplicates(ids.iter().map(String::as_str)).first() {
            return Err(format!("{table}: two rows with controller and id {dup}"));
        }
    }
    for table in [
        "Logical_Switch",
        "Logical_Router",
        "Logical_Switch_Port",
        "Logical_Router_Port",
        "Port_Group",
        "Load_Balancer_Group",
        "Copp",
        "Meter",
    ] {
        if let Some(dup) = duplicates(nb.names(table)).first() {
            return Err(format!("{table}: two rows named {dup}"));
        }
    }
    Ok(())
}

/// Every owned row belongs to a live controller and a live unit; switches, routers and port
/// groups are all owned.
fn ownership(expected: &Expected, nb: &Tables) -> Result<(), String> {
    for (table, rows) in &nb.0 {
        for row in rows {
            let ids = external_ids(row);
            let Some(controller) = ids.get(OWNER_CONTROLLER_KEY) else {
                if matches!(
                    table.as_str(),
                    "Logical_Switch" | "Logical_Router" | "Port_Group"
                ) {
                    return Err(format!("{table} row without owner: {row:?}"));
                }
                continue;
            };
            let owner_type = ids.get(OWNER_TYPE_KEY).copied().unwrap_or_default();
            let owner = ids.get(OWNER_KEY).copied().unwrap_or_default();
            let unit = format!("{table} {owner_type}:{owner} of {controller}");
            if !expected.controllers.contains(*controller) {
                return Err(format!("orphan {unit} (network gone)"));
            }
            // Node units are named after the node, or `<network>/<node>`.
            let node = owner.rsplit('/').next().unwrap_or_default();
            let live = match owner_type {
                "Node" | "NetpolNode" => expected.local_alive && node == LOCAL,
                "RemoteNode" => expected.remote_alive.contains(node),
                "Pod" => expected.ports[*controller].contains_key(owner),
                _ => true,
            };
            if !live {
                return Err(format!("orphan {unit}"));
            }
        }
    }
    Ok(())
}

/// Every pod attachment has its port, with the annotation's addresses.
fn pod_ports(expected: &Expected, nb: &Tables, sim: &Sim) -> Result<(), String> {
    let pods = annotated_pods(sim)?;
    let ports: BTreeMap<&str, &Row> = nb
        .rows("Logical_Switch_Port")
        .iter()
        .filter_map(|r| Some((string(r, "name")?, r)))
        .collect();
    for wanted in expected.ports.values() {
        for (port, (pod, nad_key)) in wanted {
            let Some(row) = ports.get(port.as_str()) else {
                return Err(format!("pod {pod}: port {port} missing"));
            };
            let Some(entry) = pods.get(pod).and_then(|(_, e)| e.get(nad_key)) else {
                return Err(format!("pod {pod}: no {nad_key} entry"));
            };
            let ips: Vec<String> = entry
                .ip_addresses
                .iter()
                .map(|ip| ip.ip().to_string())
                .collect();
            let want = format!("{} {}", entry.mac_address, ips.join(" "));
            let have = strings(row, "addresses");
            if have != [want.as_str()] {
                return Err(format!("port {port}: addresses {have:?}, want [{want:?}]"));
            }
        }
    }
    Ok(())
}

/// One remote chassis per live remote node, nothing of deleted ones.
pub(crate) fn check_sb(world: &World, sb: &Tables) -> Result<(), String> {
    let want: BTreeSet<String> = world
        .nodes
        .keys()
        .filter(|s| **s != 0)
        .map(|s| format!("chassis-{}", NODES[*s]))
        .collect();
    let names = sb.names("Chassis");
    if let Some(dup) = duplicates(names.iter().copied()).first() {
        return Err(format!("two chassis named {dup}"));
    }
    let have: BTreeSet<String> = names.into_iter().map(str::to_owned).collect();
    if have != want {
        return Err(format!("chassis {have:?}, want {want:?}"));
    }
    let encaps: Vec<String> = sb
        .rows("Encap")
        .iter()
        .map(|r| format!("{:?} {:?}", string(r, "chassis_name"), string(r, "ip")))
        .collect();
    if let Some(dup) = duplicates(encaps.iter().map(String::as_str)).first() {
        return Err(format!("two encaps {dup}"));
    }
    Ok(())
}
