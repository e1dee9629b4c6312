//! udn allocators.
