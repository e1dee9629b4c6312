//! Unit tests of the topology: upstream's expectations (`layer3_user_defined_network_
//! controller_test.go`, `udn_isolation_test.go`, `zone_ic_handler_test.go`, spec §7) as
//! assertions on the built rows.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod default_network;
mod fixtures;
mod keyed;
mod layer2;
mod layer3;
mod lean;
mod localnet;
mod problems;
mod remote;
