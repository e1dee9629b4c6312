//! Storage and semantics behind [`crate::Sim`]. (Skeleton: being implemented.)

use serde_json::Value;

use crate::error::ApiError;
use crate::options::{
    DeleteOptions, ListOptions, PatchKind, Subresource, WatchOptions, WriteOptions,
};
use crate::resource::{ResourceKey, ResourceType};
use crate::sim::{SimConfig, WatchStream};

#[derive(Debug)]
pub(crate) struct Shared {
    config: SimConfig,
}

fn pending() -> ApiError {
    ApiError::internal("not implemented yet")
}

#[allow(clippy::unused_self, unused_variables, clippy::needless_pass_by_value)]
impl Shared {
    pub(crate) fn new(config: SimConfig) -> Self {
        Self { config }
    }
    pub(crate) fn resource_types(&self) -> Vec<ResourceType> {
        Vec::new()
    }
    pub(crate) fn resource_type(
        &self,
        group: &str,
        version: &str,
        plural: &str,
    ) -> Option<ResourceType> {
        None
    }
    pub(crate) fn resource_version(&self) -> u64 {
        0
    }
    pub(crate) fn get(
        &self,
        key: &ResourceKey,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Value, ApiError> {
        Err(pending())
    }
    pub(crate) fn list(
        &self,
        key: &ResourceKey,
        namespace: Option<&str>,
        opts: &ListOptions,
    ) -> Result<Value, ApiError> {
        Err(pending())
    }
    pub(crate) fn create(
        &self,
        key: &ResourceKey,
        namespace: Option<&str>,
        object: Value,
        opts: &WriteOptions,
    ) -> Result<Value, ApiError> {
        Err(pending())
    }
    pub(crate) fn update(
        &self,
        key: &ResourceKey,
        namespace: Option<&str>,
        name: &str,
        object: Value,
        subresource: Subresource,
        opts: &WriteOptions,
    ) -> Result<Value, ApiError> {
        Err(pending())
    }
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn patch(
        &self,
        key: &ResourceKey,
        namespace: Option<&str>,
        name: &str,
        kind: PatchKind,
        body: &[u8],
        subresource: Subresource,
        opts: &WriteOptions,
    ) -> Result<Value, ApiError> {
        Err(pending())
    }
    pub(crate) fn delete(
        &self,
        key: &ResourceKey,
        namespace: Option<&str>,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<Value, ApiError> {
        Err(pending())
    }
    pub(crate) fn delete_collection(
        &self,
        key: &ResourceKey,
        namespace: Option<&str>,
        list: &ListOptions,
        opts: &DeleteOptions,
    ) -> Result<Value, ApiError> {
        Err(pending())
    }
    pub(crate) fn watch(
        &self,
        key: &ResourceKey,
        namespace: Option<&str>,
        opts: &WatchOptions,
    ) -> Result<WatchStream, ApiError> {
        Err(pending())
    }
    pub(crate) fn compact(&self) {}
    pub(crate) fn export(&self) -> Vec<Value> {
        Vec::new()
    }
    pub(crate) fn import(&self, objects: Vec<Value>) -> Result<(), ApiError> {
        Err(pending())
    }
}
