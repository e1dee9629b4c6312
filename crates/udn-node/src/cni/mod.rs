//! The CNI server (upstream `pkg/cni/cniserver.go`): `ovn-k8s-cni-overlay` forwards each
//! request here; ADD waits for the pod's annotation and wires the pod ([`add`], [`wire`]),
//! DEL unwires it ([`del`]), CHECK verifies ([`check`]), GC removes what the runtime no
//! longer lists ([`gc`]).

pub mod add;
pub mod check;
pub mod context;
pub mod del;
pub mod gc;
pub mod handler;
pub mod network;
pub mod server;
pub mod wire;

pub use context::CniContext;
pub use handler::CniHandler;
