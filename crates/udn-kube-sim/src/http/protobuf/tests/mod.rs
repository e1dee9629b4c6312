//! Tests of the protobuf transcoder: the tables against `k8s-pb`, bodies kubectl sends,
//! and round trips of every kind between prost's encoding and the JSON of `k8s-openapi`.

mod kinds;
mod kubectl;
mod tables;
