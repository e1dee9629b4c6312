//! `ovn-k8s-cni-overlay`: forwards a CNI request to the node agent and prints its answer.

fn main() {}
