//! Unit tests of host isolation: the exact chain, the element plans, cgroup discovery on fake
//! trees, pods read from Pod objects, the manager against a recording executor.

mod cgroup;
mod elements;
mod manager;
mod pod;
mod table;
