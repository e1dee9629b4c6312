//! Netlink: links, addresses, routes and rules, in the host or a pod network namespace.
