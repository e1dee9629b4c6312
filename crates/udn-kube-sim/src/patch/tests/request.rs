//! Request checks that come before the patch: content type, `PatchOptions`, body syntax.

use serde_json::json;

use super::*;

#[test]
fn force_is_only_for_apply() {
    let ctx = PatchContext {
        force: true,
        ..pod_ctx()
    };
    let error = fails(run(Some(&pod()), PatchKind::Merge, &json!({}), &ctx));
    assert_eq!((error.code, error.reason), (422, "Invalid"));
    assert_eq!(
        error.message,
        "PatchOptions.meta.k8s.io \"\" is invalid: force: Forbidden: may not be specified for non-apply patch"
    );
    assert_eq!(error.causes[0].reason, "FieldValueForbidden");
    assert_eq!(error.causes[0].field, "force");
}

#[test]
fn field_managers_must_be_short_and_printable() {
    let long: &'static str = Box::leak("m".repeat(129).into_boxed_str());
    let ctx = PatchContext {
        force: true,
        ..by(long, pod_ctx())
    };
    let error = fails(run(Some(&pod()), PatchKind::Merge, &json!({}), &ctx));
    assert_eq!(
        error.message,
        "PatchOptions.meta.k8s.io \"\" is invalid: [force: Forbidden: may not be specified for non-apply patch, fieldManager: Too long: may not be more than 128 bytes]"
    );
    assert_eq!(error.causes.len(), 2);

    let error = fails(run(
        Some(&pod()),
        PatchKind::Merge,
        &json!({}),
        &by("a\u{1}", pod_ctx()),
    ));
    assert_eq!(
        error.message,
        "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Invalid value: \"a\\x01\": invalid character U+0001 (at position 1)"
    );
    assert_eq!(error.causes[0].reason, "FieldValueInvalid");
}

#[test]
fn checks_come_in_the_servers_order() {
    let ctx = PatchContext {
        force: true,
        ..udn_ctx()
    };
    let error = fails(run_raw(Some(&udn()), PatchKind::StrategicMerge, "{", &ctx));
    assert_eq!(error.code, 415);
    let error = fails(run_raw(None, PatchKind::Merge, "{", &ctx));
    assert_eq!(error.code, 422);
    let error = fails(run_raw(None, PatchKind::Merge, "{", &udn_ctx()));
    assert_eq!(
        (error.code, error.message.as_str()),
        (400, "invalid JSON patch")
    );
    let error = fails(run_raw(None, PatchKind::Merge, "{}", &udn_ctx()));
    assert_eq!(error.code, 404);
    assert_eq!(
        error.message,
        "userdefinednetworks.k8s.ovn.org \"net\" not found"
    );
}
