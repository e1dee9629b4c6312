//! Logging: one `tracing` subscriber per process, writing to stderr as plain text or JSON
//! lines, filtered by an `EnvFilter` directive string.

use std::sync::Mutex;

use tracing_subscriber::EnvFilter;

/// The filter used when neither an explicit filter nor `RUST_LOG` is given: udn's crates
/// at info, everything else (kube, hyper, ...) at warn.
pub const DEFAULT_FILTER: &str = "udn=info,warn";

/// Whether a subscriber was installed by [`init`] (guarded so that concurrent calls agree).
static INSTALLED: Mutex<bool> = Mutex::new(false);

/// How log lines are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines (`2025-01-01T00:00:00Z  INFO target: message key=value`).
    #[default]
    Plain,
    /// One JSON object per line (`timestamp`, `level`, `fields`, `target`, `span(s)`).
    Json,
}

/// Setting up logging failed.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// The filter directives do not parse.
    #[error("invalid log filter {filter:?} (from {origin})")]
    Filter {
        /// The directive string.
        filter: String,
        /// Where it came from: `--log-filter` or `RUST_LOG`.
        origin: &'static str,
        /// The parser's complaint.
        #[source]
        source: tracing_subscriber::filter::ParseError,
    },
    /// Another global subscriber (not installed by [`init`]) is already in place.
    #[error("installing the tracing subscriber: another global subscriber is already set")]
    Install {
        /// The cause.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

/// Install the process-wide subscriber: `format` lines on stderr, filtered by `filter`
/// when given, else by `RUST_LOG` when set and non-empty, else by [`DEFAULT_FILTER`].
///
/// The filter is always parsed (and a bad one reported); once a subscriber has been
/// installed by this function, later calls change nothing and return `Ok`.
pub fn init(format: LogFormat, filter: Option<&str>) -> Result<(), TelemetryError> {
    let filter = build_filter(filter, std::env::var("RUST_LOG").ok().as_deref())?;
    let mut installed = INSTALLED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if *installed {
        return Ok(());
    }
    // Colours only for a person at a terminal, never into log files or collectors.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(ansi)
        .with_writer(std::io::stderr);
    let result = match format {
        LogFormat::Plain => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
    result.map_err(|source| TelemetryError::Install { source })?;
    *installed = true;
    Ok(())
}

/// The filter from the explicit directives, else `RUST_LOG`'s, else the default.
fn build_filter(explicit: Option<&str>, env: Option<&str>) -> Result<EnvFilter, TelemetryError> {
    let (filter, origin) = match (explicit, env) {
        (Some(filter), _) => (filter, "--log-filter"),
        (None, Some(filter)) if !filter.trim().is_empty() => (filter, "RUST_LOG"),
        (None, _) => (DEFAULT_FILTER, "the default"),
    };
    EnvFilter::try_new(filter).map_err(|source| TelemetryError::Filter {
        filter: filter.to_owned(),
        origin,
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explicit_filter_wins_over_rust_log() {
        let filter = build_filter(Some("udn_runtime=debug"), Some("trace")).unwrap();
        assert_eq!(filter.to_string(), "udn_runtime=debug");
    }

    #[test]
    fn rust_log_is_used_without_an_explicit_filter() {
        let filter = build_filter(None, Some("kube=debug")).unwrap();
        assert_eq!(filter.to_string(), "kube=debug");
    }

    #[test]
    fn default_filter_without_either() {
        assert_eq!(
            build_filter(None, None).unwrap().to_string(),
            "udn=info,warn"
        );
        assert_eq!(
            build_filter(None, Some(" ")).unwrap().to_string(),
            "udn=info,warn"
        );
    }

    #[test]
    fn bad_filter_names_itself_and_its_origin() {
        let error = build_filter(Some("udn=loud"), None).unwrap_err();
        assert_eq!(
            error.to_string(),
            "invalid log filter \"udn=loud\" (from --log-filter)"
        );
        let error = build_filter(None, Some("udn=loud")).unwrap_err();
        assert_eq!(
            error.to_string(),
            "invalid log filter \"udn=loud\" (from RUST_LOG)"
        );
    }

    #[test]
    fn init_twice_is_a_no_op() {
        init(LogFormat::Json, Some("udn=debug")).unwrap();
        init(LogFormat::Plain, None).unwrap();
        // A bad filter is still reported after installation.
        assert!(init(LogFormat::Plain, Some("udn=loud")).is_err());
    }
}
