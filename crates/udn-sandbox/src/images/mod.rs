//! Built-in test images (placeholder of the sandbox branch: filled in by its own work).

/// Why an image stopped.
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    /// Not built yet on this branch.
    #[error("no built-in images on this branch")]
    NotBuilt,
}

/// Runs built-in image `args[0]` with its arguments; returns when it exits.
pub fn run(args: &[String]) -> Result<(), ImageError> {
    let _ = args;
    Err(ImageError::NotBuilt)
}
