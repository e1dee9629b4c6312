//! CNI netconf.
