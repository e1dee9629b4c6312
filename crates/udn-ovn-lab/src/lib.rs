//! A real OVN lab in network namespaces for udn's dataplane tests (work in progress).
