//! Every CEL rule of the generated UDN and CUDN CRDs, evaluated through `udn-schema`
//! against one object it accepts and one it rejects, with the exact upstream message at
//! the exact field path.

mod crd_support;

use crd_support::{Crd, cases_cudn, cases_layer2, cases_layer3, cases_udn, run};

#[test]
fn udn_spec_rules() {
    run(&cases_udn::cases());
}

#[test]
fn udn_layer3_rules() {
    run(&cases_layer3::cases(Crd::Udn));
}

#[test]
fn udn_layer2_rules() {
    run(&cases_layer2::cases(Crd::Udn));
}

#[test]
fn cudn_layer3_rules() {
    run(&cases_layer3::cases(Crd::Cudn));
}

#[test]
fn cudn_layer2_rules() {
    run(&cases_layer2::cases(Crd::Cudn));
}

#[test]
fn cudn_only_rules() {
    run(&cases_cudn::cases());
}
