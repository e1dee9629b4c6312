//! Shared plumbing of udn binaries (being built).
