//! `udn-kube-sim`: (Skeleton: being implemented.)
fn main() {}
