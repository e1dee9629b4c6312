//! Pods as the zone sees them: which network attachments a pod asks for (upstream
//! `GetPodNADToNetworkMappingWithActiveNetwork` plus the default network), and which of them
//! have addresses already. Pure.

mod view;
mod wanted;

pub use view::{PodView, pod_view};
pub use wanted::{PodProblem, Wanted, wanted_attachments};
