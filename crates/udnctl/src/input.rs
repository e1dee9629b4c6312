//! Reading YAML input files into documents.

use std::io::Read;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::pipeline::Problem;

/// One YAML document of the input, with where it came from.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Document {
    /// `FILE` for a single-document file, `FILE#N` (1-based) otherwise.
    pub(crate) origin: String,
    /// The document as JSON.
    pub(crate) value: Value,
}

/// Read every file (`-` is standard input) and split it into documents, in order.
/// Empty documents are skipped.
pub(crate) fn read_documents(files: &[PathBuf]) -> Result<Vec<Document>, Vec<Problem>> {
    let mut documents = Vec::new();
    let mut problems = Vec::new();
    for path in files {
        match read_file(path).and_then(|text| parse_documents(&display(path), &text)) {
            Ok(mut docs) => documents.append(&mut docs),
            Err(problem) => problems.push(problem),
        }
    }
    if problems.is_empty() {
        Ok(documents)
    } else {
        Err(problems)
    }
}

fn display(path: &Path) -> String {
    if path == Path::new("-") {
        "<stdin>".to_owned()
    } else {
        path.display().to_string()
    }
}

fn read_file(path: &Path) -> Result<String, Problem> {
    let mut text = String::new();
    let result = if path == Path::new("-") {
        std::io::stdin().read_to_string(&mut text).map(|_| ())
    } else {
        std::fs::read_to_string(path).map(|t| text = t)
    };
    result.map_err(|err| Problem::new(display(path), format!("cannot read file: {err}")))?;
    Ok(text)
}

/// Split YAML text into documents.
pub(crate) fn parse_documents(origin: &str, text: &str) -> Result<Vec<Document>, Problem> {
    let values: Vec<Value> = serde_saphyr::from_multiple(text)
        .map_err(|err| Problem::new(origin.to_owned(), format!("invalid YAML: {err}")))?;
    let values: Vec<Value> = values.into_iter().filter(|v| !v.is_null()).collect();
    let single = values.len() == 1;
    Ok(values
        .into_iter()
        .enumerate()
        .map(|(i, value)| Document {
            origin: if single {
                origin.to_owned()
            } else {
                format!("{origin}#{}", i + 1)
            },
            value,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_documents_and_skips_empty_ones() {
        let docs = parse_documents("f.yaml", "a: 1\n---\n---\nb: [x]\n").unwrap();
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[0].origin, "f.yaml#1");
        assert_eq!(docs[1].value, serde_json::json!({"b": ["x"]}));
    }

    #[test]
    fn invalid_yaml_names_the_file() {
        let problem = parse_documents("bad.yaml", "a: [1\n").unwrap_err();
        assert!(
            problem.to_string().starts_with("bad.yaml: invalid YAML:"),
            "{problem}"
        );
    }
}
