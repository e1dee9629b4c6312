//! CNI spec types and the shim <-> server wire format (upstream `pkg/cni/types.go`).
