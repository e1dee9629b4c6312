//! LIST: selected objects sorted by namespace and name, paged with `limit` and an opaque
//! `continue` token, shaped as the real server shapes list items.

use serde_json::{Map, Value, json};

use super::filter::Filter;
use super::registry::TypeEntry;
use super::state::{Obj, State};
use crate::error::ApiError;
use crate::options::ListOptions;
use crate::resource::ResourceKey;

const CONTINUE_TOO_OLD: &str = "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.";

fn hex(text: &str) -> String {
    text.bytes().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<String> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    let bytes: Option<Vec<u8>> = (0..text.len())
        .step_by(2)
        .map(|i| {
            text.get(i..i + 2)
                .and_then(|pair| u8::from_str_radix(pair, 16).ok())
        })
        .collect();
    String::from_utf8(bytes?).ok()
}

/// The continue token of a page that ended at `(namespace, name)` of a list at `rv`.
fn encode_continue(rv: u64, namespace: &str, name: &str) -> String {
    format!("{rv}.{}.{}", hex(namespace), hex(name))
}

fn decode_continue(token: &str) -> Option<(u64, String, String)> {
    let mut parts = token.splitn(3, '.');
    let rv = parts.next()?.parse().ok()?;
    let namespace = unhex(parts.next()?)?;
    let name = unhex(parts.next()?)?;
    Some((rv, namespace, name))
}

/// An object as a list item: built-in types' items carry no apiVersion/kind (the typed
/// list encoding drops them); custom resources' items keep them.
pub(super) fn list_item(entry: &TypeEntry, obj: &Value) -> Value {
    let mut item = obj.clone();
    if !entry.is_custom()
        && let Some(map) = item.as_object_mut()
    {
        map.remove("apiVersion");
        map.remove("kind");
    }
    item
}

/// A `<Kind>List` with `items` and list metadata.
pub(super) fn list_object(
    entry: &TypeEntry,
    items: Vec<Value>,
    metadata: Map<String, Value>,
) -> Value {
    json!({
        "apiVersion": entry.api_version(),
        "kind": entry.rt.list_kind,
        "metadata": metadata,
        "items": items,
    })
}

impl State {
    /// The selected objects of a type (all namespaces when `namespace` is `None`).
    pub(super) fn select(
        &self,
        key: &ResourceKey,
        namespace: Option<&str>,
        filter: &Filter,
    ) -> Vec<Obj> {
        self.objects(key, namespace)
            .filter(|(_, obj)| filter.matches(obj))
            .map(|(_, obj)| Obj::clone(obj))
            .collect()
    }

    /// LIST.
    pub(super) fn list(
        &self,
        key: &ResourceKey,
        namespace: Option<&str>,
        opts: &ListOptions,
    ) -> Result<Value, ApiError> {
        let entry = self.registry.entry(key)?;
        let filter = Filter::new(&entry, opts)?;
        let namespace = if entry.rt.namespaced { namespace } else { None };
        let limit = opts
            .limit
            .filter(|l| *l > 0)
            .and_then(|l| usize::try_from(l).ok());
        let (list_rv, objects) = match opts.continue_token.as_deref().filter(|t| !t.is_empty()) {
            None => (self.rv, self.objects(key, namespace)),
            Some(token) => {
                let Some((rv, after_ns, after_name)) = decode_continue(token) else {
                    return Err(ApiError::bad_request(format!(
                        "continue key is not valid: {token:?}"
                    )));
                };
                if rv < self.history_start {
                    return Err(ApiError::gone(CONTINUE_TOO_OLD));
                }
                (rv, self.objects_after(key, (after_ns, after_name)))
            }
        };
        let mut items = Vec::new();
        let mut last = None;
        let mut more = false;
        let mut remaining = 0_usize;
        for ((ns, name), obj) in objects {
            if let Some(wanted) = namespace
                && ns != wanted
            {
                if ns.as_str() > wanted {
                    break;
                }
                continue;
            }
            if !filter.matches(obj) {
                continue;
            }
            if limit.is_some_and(|limit| items.len() >= limit) {
                more = true;
                remaining += 1;
                if !filter.is_empty() {
                    break;
                }
                continue;
            }
            items.push(list_item(&entry, obj));
            last = Some((ns.clone(), name.clone()));
        }
        let mut metadata = Map::new();
        metadata.insert("resourceVersion".to_owned(), json!(list_rv.to_string()));
        if more && let Some((ns, name)) = last {
            metadata.insert(
                "continue".to_owned(),
                json!(encode_continue(list_rv, &ns, &name)),
            );
            if filter.is_empty() {
                metadata.insert("remainingItemCount".to_owned(), json!(remaining));
            }
        }
        Ok(list_object(&entry, items, metadata))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continue_tokens_round_trip() {
        let token = encode_continue(42, "blue", "a.b-c");
        assert_eq!(
            decode_continue(&token),
            Some((42, "blue".to_owned(), "a.b-c".to_owned()))
        );
        assert_eq!(decode_continue("x"), None);
        assert_eq!(decode_continue("1.zz.00"), None);
    }
}
