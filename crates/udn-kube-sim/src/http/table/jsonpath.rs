//! The JSONPath subset of CRD `additionalPrinterColumns` (Kubernetes' JSONPath without
//! the `{}` template): `.a.b`, `..name` (recursive descent), `[n]`, `[*]`, `.*`,
//! `['a.b']` and filters `[?(@.path=="value")]`, `!=`, `[?(@.path)]`.

use serde_json::Value;

/// One step of a path.
#[derive(Clone, Debug, PartialEq)]
enum Step {
    Child(String),
    Descend(String),
    Index(usize),
    Wildcard,
    Filter(Filter),
}

#[derive(Clone, Debug, PartialEq)]
struct Filter {
    path: Vec<Step>,
    test: Option<(bool, Value)>,
}

/// A parsed JSONPath expression.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct JsonPath {
    steps: Vec<Step>,
}

impl JsonPath {
    /// Parses `expr`; `None` when it uses syntax outside the subset.
    pub(crate) fn parse(expr: &str) -> Option<Self> {
        let expr = expr.trim();
        let expr = expr
            .strip_prefix('{')
            .and_then(|e| e.strip_suffix('}'))
            .unwrap_or(expr);
        let expr = expr.strip_prefix('$').unwrap_or(expr);
        parse_steps(expr).map(|steps| Self { steps })
    }

    /// Every value the path selects in `root`, in document order.
    pub(crate) fn find<'a>(&self, root: &'a Value) -> Vec<&'a Value> {
        eval(&self.steps, vec![root])
    }
}

fn parse_steps(mut rest: &str) -> Option<Vec<Step>> {
    let mut steps = Vec::new();
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("..") {
            let (name, tail) = split_name(after);
            if name.is_empty() {
                return None;
            }
            steps.push(Step::Descend(name.to_owned()));
            rest = tail;
        } else if let Some(after) = rest.strip_prefix('.') {
            let (name, tail) = split_name(after);
            match name {
                "" => {}
                "*" => steps.push(Step::Wildcard),
                name => steps.push(Step::Child(name.to_owned())),
            }
            rest = tail;
        } else if let Some(after) = rest.strip_prefix('[') {
            let (inner, tail) = split_bracket(after)?;
            steps.push(parse_bracket(inner)?);
            rest = tail;
        } else {
            let (name, tail) = split_name(rest);
            if name.is_empty() {
                return None;
            }
            steps.push(Step::Child(name.to_owned()));
            rest = tail;
        }
    }
    Some(steps)
}

fn split_name(s: &str) -> (&str, &str) {
    let end = s.find(['.', '[']).unwrap_or(s.len());
    s.split_at(end)
}

/// Splits `inner]tail`, honouring quotes and nested brackets inside a filter.
fn split_bracket(s: &str) -> Option<(&str, &str)> {
    let mut depth = 0usize;
    let mut quote: Option<char> = None;
    for (i, c) in s.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '[') => depth += 1,
            (None, ']') if depth == 0 => return Some((s.get(..i)?, s.get(i + 1..)?)),
            (None, ']') => depth -= 1,
            _ => {}
        }
    }
    None
}

fn parse_bracket(inner: &str) -> Option<Step> {
    let inner = inner.trim();
    if inner == "*" {
        return Some(Step::Wildcard);
    }
    if let Some(filter) = inner.strip_prefix("?(").and_then(|f| f.strip_suffix(')')) {
        return parse_filter(filter.trim()).map(Step::Filter);
    }
    if let Some(quoted) = unquote(inner) {
        return Some(Step::Child(quoted.to_owned()));
    }
    inner.parse::<usize>().ok().map(Step::Index)
}

fn unquote(s: &str) -> Option<&str> {
    s.strip_prefix('\'')
        .and_then(|s| s.strip_suffix('\''))
        .or_else(|| s.strip_prefix('"').and_then(|s| s.strip_suffix('"')))
}

fn parse_filter(filter: &str) -> Option<Filter> {
    let (lhs, test) = match (filter.split_once("=="), filter.split_once("!=")) {
        (_, Some((lhs, rhs))) => (lhs, Some((false, literal(rhs.trim())?))),
        (Some((lhs, rhs)), None) => (lhs, Some((true, literal(rhs.trim())?))),
        (None, None) => (filter, None),
    };
    let path = lhs.trim().strip_prefix('@')?;
    Some(Filter {
        path: parse_steps(path)?,
        test,
    })
}

fn literal(s: &str) -> Option<Value> {
    if let Some(text) = unquote(s) {
        return Some(Value::String(text.to_owned()));
    }
    serde_json::from_str(s).ok()
}

fn eval<'a>(steps: &[Step], mut current: Vec<&'a Value>) -> Vec<&'a Value> {
    for step in steps {
        let mut next = Vec::new();
        for node in current {
            apply(step, node, &mut next);
        }
        current = next;
    }
    current
}

fn apply<'a>(step: &Step, node: &'a Value, out: &mut Vec<&'a Value>) {
    match step {
        Step::Child(name) => out.extend(node.get(name.as_str())),
        Step::Index(i) => out.extend(node.as_array().and_then(|a| a.get(*i))),
        Step::Wildcard => match node {
            Value::Array(items) => out.extend(items.iter()),
            Value::Object(map) => out.extend(map.values()),
            _ => {}
        },
        Step::Descend(name) => {
            let mut all = Vec::new();
            descendants(node, &mut all);
            out.extend(all.into_iter().filter_map(|n| n.get(name.as_str())));
        }
        Step::Filter(filter) => {
            let candidates: Vec<&Value> = match node {
                Value::Array(items) => items.iter().collect(),
                other => vec![other],
            };
            out.extend(candidates.into_iter().filter(|item| matches(filter, item)));
        }
    }
}

fn descendants<'a>(node: &'a Value, out: &mut Vec<&'a Value>) {
    out.push(node);
    match node {
        Value::Array(items) => items.iter().for_each(|v| descendants(v, out)),
        Value::Object(map) => map.values().for_each(|v| descendants(v, out)),
        _ => {}
    }
}

fn matches(filter: &Filter, item: &Value) -> bool {
    let found = eval(&filter.path, vec![item]);
    match &filter.test {
        None => !found.is_empty(),
        Some((equal, expected)) => found.iter().any(|v| (*v == expected) == *equal),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn first(expr: &str, doc: &Value) -> Option<Value> {
        JsonPath::parse(expr)
            .unwrap()
            .find(doc)
            .first()
            .map(|v| (*v).clone())
    }

    #[test]
    fn evaluates_the_udn_printer_columns() {
        let udn = json!({
            "metadata": {"creationTimestamp": "2025-01-01T00:00:00Z"},
            "spec": {"topology": "Layer3", "layer3": {"role": "Primary"}},
            "status": {"conditions": [
                {"type": "Other", "status": "False"},
                {"type": "NetworkCreated", "status": "True"}
            ]}
        });
        assert_eq!(first(".spec.topology", &udn), Some(json!("Layer3")));
        assert_eq!(first(".spec..role", &udn), Some(json!("Primary")));
        assert_eq!(
            first(
                r#".status.conditions[?(@.type=="NetworkCreated")].status"#,
                &udn
            ),
            Some(json!("True"))
        );
        assert_eq!(
            first(".status.conditions[0].type", &udn),
            Some(json!("Other"))
        );
        assert_eq!(
            first(".status.conditions[*].type", &udn),
            Some(json!("Other"))
        );
        assert_eq!(first(".spec['topology']", &udn), Some(json!("Layer3")));
        assert_eq!(first("{.spec.missing}", &udn), None);
        assert_eq!(
            first(r#".status.conditions[?(@.type!="Other")].type"#, &udn),
            Some(json!("NetworkCreated"))
        );
    }

    #[test]
    fn rejects_syntax_outside_the_subset() {
        assert_eq!(JsonPath::parse(".a[?(@.b=="), None);
        assert_eq!(JsonPath::parse(".a[x]"), None);
    }
}
