//! Annotation formats (filled in by the annotations work).
