//! `metav1.Time` and `metav1.MicroTime`: a `Timestamp{seconds, nanos}` on the wire, RFC
//! 3339 text in JSON (seconds for Time, microseconds for MicroTime, always UTC `Z`).

use jiff::Timestamp;

/// Go's zero `time.Time` (year 1) in Unix seconds: JSON `null`.
const GO_ZERO_SECONDS: i64 = -62_135_596_800;

/// The JSON text of a time; `None` for Go's zero time (printed as `null`, so omitted).
pub(super) fn format(seconds: i64, nanos: i32, micro: bool) -> Option<String> {
    if seconds == GO_ZERO_SECONDS && (!micro || nanos == 0) {
        return None;
    }
    let timestamp = Timestamp::from_second(seconds).ok()?;
    let base = timestamp.strftime("%Y-%m-%dT%H:%M:%S").to_string();
    if micro {
        // MicroTime keeps microseconds (nanoseconds are truncated when decoded).
        let micros = nanos.clamp(0, 999_999_999) / 1000;
        Some(format!("{base}.{micros:06}Z"))
    } else {
        Some(format!("{base}Z"))
    }
}

/// Seconds and nanoseconds of an RFC 3339 text; Time keeps seconds only (as the
/// apiserver's `Time.ProtoTime` does), MicroTime microseconds.
pub(super) fn parse(text: &str, micro: bool) -> Option<(i64, i32)> {
    let timestamp: Timestamp = text.parse().ok()?;
    let nanos = if micro {
        timestamp.subsec_nanosecond() / 1000 * 1000
    } else {
        0
    };
    Some((timestamp.as_second(), nanos))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_like_go() {
        assert_eq!(
            format(1_700_000_000, 123_456_789, false).as_deref(),
            Some("2023-11-14T22:13:20Z")
        );
        assert_eq!(
            format(1_700_000_000, 123_456_789, true).as_deref(),
            Some("2023-11-14T22:13:20.123456Z")
        );
        assert_eq!(format(0, 0, false).as_deref(), Some("1970-01-01T00:00:00Z"));
        assert_eq!(format(GO_ZERO_SECONDS, 0, false), None);
        assert_eq!(
            parse("2023-11-14T23:13:20.5+01:00", false),
            Some((1_700_000_000, 0))
        );
        assert_eq!(
            parse("2023-11-14T22:13:20.123456789Z", true),
            Some((1_700_000_000, 123_456_000))
        );
        assert_eq!(parse("yesterday", false), None);
    }
}
