//! The string formats kube-openapi's default registry checks (`date-time`, `ipv4`, `uuid`,
//! ...). A format the registry does not know is not checked, as in the apiserver.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::LazyLock;

use regex::Regex;

/// A compiled regular expression for a built-in format. The patterns are literals that are
/// known to compile; a failure leaves the format unchecked rather than panicking.
struct FormatRegex(Option<Regex>);

impl FormatRegex {
    fn new(pattern: &str) -> Self {
        Self(Regex::new(pattern).ok())
    }

    fn is_match(&self, text: &str) -> bool {
        self.0.as_ref().is_none_or(|regex| regex.is_match(text))
    }
}

static HOSTNAME: LazyLock<FormatRegex> = LazyLock::new(|| {
    FormatRegex::new(
        r"^([a-zA-Z0-9\p{S}\p{L}]((-?[a-zA-Z0-9\p{S}\p{L}]{0,62})?)|([a-zA-Z0-9\p{S}\p{L}](([a-zA-Z0-9-\p{S}\p{L}]{0,61}[a-zA-Z0-9\p{S}\p{L}])?)(\.)){1,}([a-zA-Z\p{L}]){2,63})$",
    )
});
static UUID: LazyLock<FormatRegex> = LazyLock::new(|| {
    FormatRegex::new(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$")
});
static UUID3: LazyLock<FormatRegex> = LazyLock::new(|| {
    FormatRegex::new(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$")
});
static UUID4: LazyLock<FormatRegex> = LazyLock::new(|| {
    FormatRegex::new(
        r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$",
    )
});
static UUID5: LazyLock<FormatRegex> = LazyLock::new(|| {
    FormatRegex::new(
        r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$",
    )
});
static TIME_OF_DAY: LazyLock<FormatRegex> = LazyLock::new(|| {
    FormatRegex::new(r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$")
});
static BASE64: LazyLock<FormatRegex> = LazyLock::new(|| {
    FormatRegex::new(
        r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})$",
    )
});
static GO_DURATION: LazyLock<FormatRegex> =
    LazyLock::new(|| FormatRegex::new(r"^[-+]?(0|((\d+(\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h))+)$"));
static LOOSE_DURATION: LazyLock<FormatRegex> =
    LazyLock::new(|| FormatRegex::new(r"(\d+)\s*([A-Za-zµ]+)"));
static HEX_COLOR: LazyLock<FormatRegex> =
    LazyLock::new(|| FormatRegex::new(r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$"));
static RGB_COLOR: LazyLock<FormatRegex> = LazyLock::new(|| {
    let byte = r"\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*";
    FormatRegex::new(&format!(r"^rgb\({byte},{byte},{byte}\)$"))
});
static SSN: LazyLock<FormatRegex> =
    LazyLock::new(|| FormatRegex::new(r"^\d{3}[- ]?\d{2}[- ]?\d{4}$"));
static EMAIL: LazyLock<FormatRegex> =
    LazyLock::new(|| FormatRegex::new(r"^[^\s@<>()\[\],;:]+@[^\s@<>()\[\],;:]+$"));
static URI: LazyLock<FormatRegex> =
    LazyLock::new(|| FormatRegex::new(r"^([a-zA-Z][a-zA-Z0-9+.-]*:[^\s]*|/[^\s]*)$"));
static DNS_LABEL: LazyLock<FormatRegex> =
    LazyLock::new(|| FormatRegex::new(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"));
static DNS_SUBDOMAIN: LazyLock<FormatRegex> = LazyLock::new(|| {
    FormatRegex::new(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
});

/// Check `text` against `format`. `None` when the registry does not know the format (the
/// value is then not checked), otherwise whether it is valid.
pub(crate) fn check(format: &str, text: &str) -> Option<bool> {
    let valid = match format.replace('-', "").as_str() {
        "datetime" => is_date_time(text),
        "date" => is_date(text),
        "duration" => is_duration(text),
        "byte" => BASE64.is_match(text),
        "password" => true,
        "ipv4" => parse_ip_sloppy(text).is_some() && text.contains('.'),
        "ipv6" => parse_ip_sloppy(text).is_some() && text.contains(':'),
        "cidr" => is_cidr(text),
        "mac" => is_mac(text),
        "uuid" => UUID.is_match(text),
        "uuid3" => UUID3.is_match(text),
        "uuid4" => UUID4.is_match(text),
        "uuid5" => UUID5.is_match(text),
        "hostname" => is_hostname(text),
        "email" => EMAIL.is_match(text),
        "uri" => URI.is_match(text),
        "hexcolor" => HEX_COLOR.is_match(text),
        "rgbcolor" => RGB_COLOR.is_match(text),
        "ssn" => SSN.is_match(text),
        "bsonobjectid" => text.len() == 24 && text.chars().all(|c| c.is_ascii_hexdigit()),
        "isbn" => is_isbn10(text) || is_isbn13(text),
        "isbn10" => is_isbn10(text),
        "isbn13" => is_isbn13(text),
        "creditcard" => is_credit_card(text),
        "k8sshortname" => text.len() <= 63 && DNS_LABEL.is_match(text),
        "k8slongname" => text.len() <= 253 && DNS_SUBDOMAIN.is_match(text),
        _ => return None,
    };
    Some(valid)
}

/// RFC 3339 date-time as strfmt's `IsDateTime` accepts it (case-insensitive `T`/`Z`).
fn is_date_time(text: &str) -> bool {
    if text.len() < 4 {
        return false;
    }
    let lower = text.to_lowercase();
    let mut parts = lower.split('t');
    let (Some(date), Some(time)) = (parts.next(), parts.next()) else {
        return false;
    };
    if !is_date(date) {
        return false;
    }
    let Some(regex) = TIME_OF_DAY.0.as_ref() else {
        return true;
    };
    let Some(captures) = regex.captures(time) else {
        return false;
    };
    let field = |i: usize| captures.get(i).map_or("", |m| m.as_str());
    field(1) <= "23" && field(2) <= "59" && field(3) <= "59"
}

/// `YYYY-MM-DD` naming a real day.
fn is_date(text: &str) -> bool {
    let bytes = text.as_bytes();
    if bytes.len() != 10 || bytes[4] != b'-' || bytes[7] != b'-' {
        return false;
    }
    let number = |range: std::ops::Range<usize>| -> Option<u32> {
        let part = text.get(range)?;
        if part.bytes().all(|b| b.is_ascii_digit()) {
            part.parse().ok()
        } else {
            None
        }
    };
    let (Some(year), Some(month), Some(day)) = (number(0..4), number(5..7), number(8..10)) else {
        return false;
    };
    let leap = year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400));
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day)
}

/// Go `time.ParseDuration` syntax, or strfmt's looser `<n> <unit>` sequences.
fn is_duration(text: &str) -> bool {
    if GO_DURATION.is_match(text) {
        return true;
    }
    let Some(regex) = LOOSE_DURATION.0.as_ref() else {
        return true;
    };
    const UNITS: [&[&str]; 8] = [
        &["ns", "nano"],
        &["us", "µs", "micro"],
        &["ms", "milli"],
        &["s", "sec"],
        &["m", "min"],
        &["h", "hr", "hour"],
        &["d", "day"],
        &["w", "wk", "week"],
    ];
    regex.captures_iter(text).any(|captures| {
        let unit = captures.get(2).map_or("", |m| m.as_str()).to_lowercase();
        UNITS.iter().any(|variants| {
            variants.iter().enumerate().any(|(i, variant)| {
                (i + 1 == variants.len() && unit.starts_with(variant)) || unit == *variant
            })
        })
    })
}

/// Go `netutils.ParseIPSloppy`: IPv4 octets may carry leading zeros.
fn parse_ip_sloppy(text: &str) -> Option<IpAddr> {
    if let Ok(v6) = text.parse::<Ipv6Addr>() {
        return Some(IpAddr::V6(v6));
    }
    let octets: Vec<&str> = text.split('.').collect();
    if octets.len() != 4 {
        return None;
    }
    let mut bytes = [0u8; 4];
    for (slot, octet) in bytes.iter_mut().zip(&octets) {
        if octet.is_empty() || octet.len() > 3 || !octet.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        *slot = octet.parse().ok()?;
    }
    Some(IpAddr::V4(Ipv4Addr::from(bytes)))
}

fn is_cidr(text: &str) -> bool {
    let Some((address, prefix)) = text.split_once('/') else {
        return false;
    };
    let Some(ip) = parse_ip_sloppy(address) else {
        return false;
    };
    let max = if ip.is_ipv4() { 32 } else { 128 };
    !prefix.is_empty()
        && prefix.len() <= 3
        && prefix.bytes().all(|b| b.is_ascii_digit())
        && prefix.parse::<u32>().is_ok_and(|p| p <= max)
}

/// Go `net.ParseMAC`: 6, 8 or 20 bytes as `aa:bb`, `aa-bb` or `aabb.ccdd` groups.
fn is_mac(text: &str) -> bool {
    let valid_len = |bytes: usize| matches!(bytes, 6 | 8 | 20);
    let hex = |group: &str, len: usize| {
        group.len() == len && group.bytes().all(|b| b.is_ascii_hexdigit())
    };
    for separator in [':', '-'] {
        if text.contains(separator) {
            let groups: Vec<&str> = text.split(separator).collect();
            return valid_len(groups.len()) && groups.iter().all(|g| hex(g, 2));
        }
    }
    let groups: Vec<&str> = text.split('.').collect();
    groups.len() > 1 && valid_len(groups.len() * 2) && groups.iter().all(|g| hex(g, 4))
}

fn is_hostname(text: &str) -> bool {
    HOSTNAME.is_match(text) && text.len() <= 255 && text.split('.').all(|part| part.len() <= 63)
}

fn digits(text: &str) -> Vec<u32> {
    text.chars()
        .filter(|c| *c != '-' && *c != ' ')
        .map(|c| c.to_digit(10).unwrap_or(u32::MAX))
        .collect()
}

fn is_isbn10(text: &str) -> bool {
    let cleaned: Vec<char> = text.chars().filter(|c| *c != '-' && *c != ' ').collect();
    if cleaned.len() != 10 {
        return false;
    }
    let mut sum = 0;
    for (i, c) in cleaned.iter().enumerate() {
        let value = match (i, c) {
            (9, 'X') => 10,
            (_, c) => match c.to_digit(10) {
                Some(d) => d,
                None => return false,
            },
        };
        sum += value * (10 - i as u32);
    }
    sum.is_multiple_of(11)
}

fn is_isbn13(text: &str) -> bool {
    let values = digits(text);
    if values.len() != 13 || values.contains(&u32::MAX) {
        return false;
    }
    let sum: u32 = values
        .iter()
        .enumerate()
        .map(|(i, d)| if i % 2 == 0 { *d } else { d * 3 })
        .sum();
    sum.is_multiple_of(10)
}

/// govalidator's `IsCreditCard`: 13 to 19 digits passing the Luhn check.
fn is_credit_card(text: &str) -> bool {
    let values = digits(text);
    if !(13..=19).contains(&values.len()) || values.contains(&u32::MAX) {
        return false;
    }
    let sum: u32 = values
        .iter()
        .rev()
        .enumerate()
        .map(|(i, d)| {
            if i % 2 == 1 {
                let doubled = d * 2;
                if doubled > 9 { doubled - 9 } else { doubled }
            } else {
                *d
            }
        })
        .sum();
    sum.is_multiple_of(10)
}

#[cfg(test)]
mod tests {
    use super::check;

    #[test]
    fn date_time_follows_strfmt() {
        assert_eq!(check("date-time", "2024-01-02T03:04:05Z"), Some(true));
        assert_eq!(
            check("date-time", "2024-01-02t03:04:05.123+02:00"),
            Some(true)
        );
        assert_eq!(check("date-time", "2024-02-30T03:04:05Z"), Some(false));
        assert_eq!(check("date-time", "garbage"), Some(false));
    }

    #[test]
    fn network_formats() {
        assert_eq!(check("ipv4", "10.0.0.1"), Some(true));
        assert_eq!(check("ipv4", "010.0.0.1"), Some(true));
        assert_eq!(check("ipv4", "fd00::1"), Some(false));
        assert_eq!(check("ipv6", "fd00::1"), Some(true));
        assert_eq!(check("cidr", "10.0.0.0/8"), Some(true));
        assert_eq!(check("cidr", "10.0.0.0/33"), Some(false));
        assert_eq!(check("mac", "0a:58:0a:80:00:05"), Some(true));
        assert_eq!(check("mac", "0a:58:0a"), Some(false));
    }

    #[test]
    fn other_formats() {
        assert_eq!(check("duration", "1h30m"), Some(true));
        assert_eq!(check("duration", "3 days"), Some(true));
        assert_eq!(check("duration", "soon"), Some(false));
        assert_eq!(check("byte", "aGVsbG8="), Some(true));
        assert_eq!(check("byte", "hello!"), Some(false));
        assert_eq!(
            check("uuid", "550e8400-e29b-41d4-a716-446655440000"),
            Some(true)
        );
        assert_eq!(check("k8s-short-name", "blue"), Some(true));
        assert_eq!(check("k8s-short-name", "Blue"), Some(false));
        assert_eq!(check("int32", "whatever"), None);
        assert_eq!(check("made-up", "x"), None);
    }
}
