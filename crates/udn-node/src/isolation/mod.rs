//! Host isolation of primary-UDN pods (upstream `pkg/node/udn_isolation.go`).
