//! Recording benchmark figures in `docs/benchmarks.md`: each benchmark owns one section
//! between `<!-- bench:NAME -->` and `<!-- /bench:NAME -->`, replaced on every run.

use std::path::Path;

use anyhow::Context;

/// Replace (or append) the section `name` of `docs/benchmarks.md` under `root` with `body`.
pub fn record(root: &Path, name: &str, title: &str, body: &str) -> anyhow::Result<()> {
    let path = root.join("docs/benchmarks.md");
    let current = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => HEADER.to_owned(),
        Err(err) => return Err(err).with_context(|| format!("reading {}", path.display())),
    };
    let start = format!("<!-- bench:{name} -->");
    let end = format!("<!-- /bench:{name} -->");
    let section = format!("{start}\n## {title}\n\n{}\n{end}", body.trim_end());
    let updated = match (current.find(&start), current.find(&end)) {
        (Some(a), Some(b)) if a < b => {
            format!("{}{section}{}", &current[..a], &current[b + end.len()..])
        }
        _ => format!("{}\n{section}\n", current.trim_end()),
    };
    std::fs::write(&path, updated).with_context(|| format!("writing {}", path.display()))
}

const HEADER: &str = "# Benchmarks\n\n\
Figures written by `cargo xtask bench <target>` on the project's 2-core machines. Each \
section is replaced when its benchmark runs again; the command that produced it is in the \
section.\n";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_are_replaced_in_place() {
        let dir = std::env::temp_dir().join(format!("udn-bench-report-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("docs")).unwrap();
        record(&dir, "a", "A", "first").unwrap();
        record(&dir, "b", "B", "second").unwrap();
        record(&dir, "a", "A", "third").unwrap();
        let text = std::fs::read_to_string(dir.join("docs/benchmarks.md")).unwrap();
        assert!(text.starts_with("# Benchmarks"));
        assert!(!text.contains("first"));
        let a = text.find("third").unwrap();
        let b = text.find("second").unwrap();
        assert!(a < b, "{text}");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
