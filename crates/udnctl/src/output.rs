//! Printing a [`Rendered`] result as YAML or JSON.

use std::fmt::Write;

use serde_json::{Map, Value, json};

use crate::pipeline::{Problem, Rendered};

fn encode_problem(err: &dyn std::fmt::Display) -> Problem {
    Problem::new("output".to_owned(), err.to_string())
}

/// `{"nads": [...], "networkIDs": {...}, "nodeSubnets": {...}}`.
pub(crate) fn json_document(rendered: &Rendered) -> Result<Value, Problem> {
    let nads = rendered
        .nads
        .iter()
        .map(serde_json::to_value)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| encode_problem(&e))?;
    let node_subnets: Map<String, Value> = rendered
        .node_subnets
        .iter()
        .map(|(node, networks)| {
            let networks: Map<String, Value> = networks
                .iter()
                .map(|(network, subnets)| {
                    let cidrs = subnets
                        .iter()
                        .map(|s| Value::String(s.to_string()))
                        .collect();
                    (network.clone(), Value::Array(cidrs))
                })
                .collect();
            (node.clone(), Value::Object(networks))
        })
        .collect();
    Ok(json!({
        "nads": nads,
        "networkIDs": rendered.network_ids,
        "nodeSubnets": node_subnets,
    }))
}

/// The JSON document, pretty-printed.
pub(crate) fn render_json(rendered: &Rendered) -> Result<String, Problem> {
    let mut text =
        serde_json::to_string_pretty(&json_document(rendered)?).map_err(|e| encode_problem(&e))?;
    text.push('\n');
    Ok(text)
}

/// A comment header with IDs and subnets, then the NADs as YAML documents (so the output
/// can be read by people and by `kubectl`).
pub(crate) fn render_yaml(rendered: &Rendered) -> Result<String, Problem> {
    let mut out = String::new();
    let w = |e: std::fmt::Error| encode_problem(&e);
    for note in &rendered.notes {
        writeln!(out, "# note: {note}").map_err(w)?;
    }
    writeln!(out, "# network IDs:").map_err(w)?;
    for (network, id) in &rendered.network_ids {
        writeln!(out, "#   {network}: {id}").map_err(w)?;
    }
    writeln!(out, "# node host subnets:").map_err(w)?;
    for (node, networks) in &rendered.node_subnets {
        if networks.is_empty() {
            writeln!(out, "#   {node}: none").map_err(w)?;
        }
        for (network, subnets) in networks {
            let cidrs: Vec<String> = subnets.iter().map(ToString::to_string).collect();
            writeln!(out, "#   {node}: {network}: {}", cidrs.join(", ")).map_err(w)?;
        }
    }
    for nad in &rendered.nads {
        out.push_str("---\n");
        out.push_str(&serde_saphyr::to_string(nad).map_err(|e| encode_problem(&e))?);
    }
    Ok(out)
}
