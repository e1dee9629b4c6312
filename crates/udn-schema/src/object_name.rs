//! `metadata.name` rules the API server applies before any schema: DNS-1123 subdomain for
//! most objects (custom resources included), DNS-1123 label for namespaces.

use crate::error::{FieldError, FieldErrorKind, FieldErrors};

const SUBDOMAIN_MAX: usize = 253;
const LABEL_MAX: usize = 63;

const SUBDOMAIN_MESSAGE: &str = "a lowercase RFC 1123 subdomain must consist of lower case \
alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character \
(e.g. 'example.com', regex used for validation is \
'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

// The double space after "'my-name'," is in apimachinery's message too.
const LABEL_MESSAGE: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric \
characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or \
'123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

fn is_label(text: &str) -> bool {
    let bytes = text.as_bytes();
    let alnum = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => {
            alnum(first) && alnum(last) && bytes.iter().all(|b| alnum(b) || *b == b'-')
        }
        _ => false,
    }
}

fn is_subdomain(text: &str) -> bool {
    text.split('.').all(is_label)
}

/// Check `metadata.name`: required, then DNS-1123 subdomain (`subdomain = true`, e.g.
/// custom resources) or DNS-1123 label (namespaces). Errors are the API server's.
pub fn validate_object_name(name: &str, subdomain: bool) -> Result<(), FieldErrors> {
    const PATH: &str = "metadata.name";
    if name.is_empty() {
        return Err(FieldErrors(vec![FieldError::new(
            PATH,
            FieldErrorKind::Required,
            None,
            "name or generateName is required",
        )]));
    }
    let quoted = || Some(format!("{name:?}"));
    let mut errors = Vec::new();
    let (max, valid, message) = if subdomain {
        (SUBDOMAIN_MAX, is_subdomain(name), SUBDOMAIN_MESSAGE)
    } else {
        (LABEL_MAX, is_label(name), LABEL_MESSAGE)
    };
    if name.len() > max {
        errors.push(FieldError::new(
            PATH,
            FieldErrorKind::Invalid,
            quoted(),
            format!("must be no more than {max} characters"),
        ));
    }
    if !valid {
        errors.push(FieldError::new(
            PATH,
            FieldErrorKind::Invalid,
            quoted(),
            message,
        ));
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(FieldErrors(errors))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn first(name: &str, subdomain: bool) -> String {
        validate_object_name(name, subdomain).unwrap_err().0[0].to_string()
    }

    #[test]
    fn accepts_valid_names() {
        assert!(validate_object_name("blue-network", true).is_ok());
        assert!(validate_object_name("a.b-c.d", true).is_ok());
        assert!(validate_object_name("blue", false).is_ok());
    }

    #[test]
    fn rejects_with_apiserver_messages() {
        assert_eq!(
            first("", true),
            "metadata.name: Required value: name or generateName is required"
        );
        assert!(first("Blue", true).starts_with(
            "metadata.name: Invalid value: \"Blue\": a lowercase RFC 1123 subdomain must consist"
        ));
        assert!(first("a.b", false).starts_with(
            "metadata.name: Invalid value: \"a.b\": a lowercase RFC 1123 label must consist"
        ));
        assert_eq!(
            first(&"a".repeat(64), false),
            format!(
                "metadata.name: Invalid value: \"{}\": must be no more than 63 characters",
                "a".repeat(64)
            )
        );
        assert!(first("-a", true).contains("subdomain"));
        assert!(first("a.", true).contains("subdomain"));
    }
}
