//! No CEL rule of the generated CRDs goes untested: the rules enumerated from the
//! generated schemas are exactly the rules the `crd_rules` cases cover.

mod crd_support;

use std::collections::BTreeSet;

use crd_support::{Crd, all_cases, rules};

#[test]
fn every_generated_rule_has_a_case_and_every_case_a_rule() {
    let generated: BTreeSet<(Crd, String, String)> = [Crd::Udn, Crd::Cudn]
        .into_iter()
        .flat_map(|crd| {
            rules(crd)
                .into_keys()
                .map(move |(node, message)| (crd, node, message))
        })
        .collect();
    let covered: BTreeSet<(Crd, String, String)> =
        all_cases().iter().map(crd_support::Case::key).collect();
    let untested: Vec<_> = generated.difference(&covered).collect();
    let unknown: Vec<_> = covered.difference(&generated).collect();
    assert!(untested.is_empty(), "rules without a case: {untested:#?}");
    assert!(
        unknown.is_empty(),
        "cases for rules the CRDs lack: {unknown:#?}"
    );
    assert_eq!(generated.len(), covered.len());
}

#[test]
fn each_rule_has_exactly_one_case() {
    let cases = all_cases();
    let keys: BTreeSet<_> = cases.iter().map(crd_support::Case::key).collect();
    assert_eq!(keys.len(), cases.len(), "some rule is listed twice");
}

#[test]
fn rule_counts_match_upstream() {
    // Counted in the upstream generated YAML (helm/ovn-kubernetes/crds, controller-gen
    // v0.19.0): every x-kubernetes-validations entry of each CRD.
    assert_eq!(rules(Crd::Udn).len(), 49);
    assert_eq!(rules(Crd::Cudn).len(), 90);
}
