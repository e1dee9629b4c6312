//! `Update` managers recorded by non-apply patches.

use serde_json::json;

use super::*;

const MERGE: PatchKind = PatchKind::Merge;

fn at(now: &'static str, ctx: PatchContext<'static>) -> PatchContext<'static> {
    PatchContext { now, ..ctx }
}

#[test]
fn a_patch_with_a_field_manager_records_an_update_manager() {
    let patch =
        json!({"metadata": {"labels": {"x": "y"}}, "spec": {"layer2": {"role": "Secondary"}}});
    let out = run(Some(&udn()), MERGE, &patch, &by("edit", udn_ctx())).unwrap();
    assert_eq!(
        managed_fields(&out),
        json!([{
            "manager": "edit",
            "operation": "Update",
            "apiVersion": "k8s.ovn.org/v1",
            "time": NOW,
            "fieldsType": "FieldsV1",
            "fieldsV1": {
                "f:metadata": {"f:labels": {".": {}, "f:x": {}}},
                "f:spec": {"f:layer2": {"f:role": {}}}
            }
        }])
    );

    let patch = json!({"spec": {"layer2": {"role": "Tertiary"}}});
    let out = run(
        Some(&out),
        MERGE,
        &patch,
        &by("other", at(LATER, udn_ctx())),
    )
    .unwrap();
    let entries = managed_fields(&out);
    assert_eq!(entries[0]["manager"], "edit");
    assert_eq!(
        entries[0]["fieldsV1"],
        json!({"f:metadata": {"f:labels": {".": {}, "f:x": {}}}})
    );
    assert_eq!(entries[0]["time"], NOW);
    assert_eq!(entries[1]["manager"], "other");
    assert_eq!(
        entries[1]["fieldsV1"],
        json!({"f:spec": {"f:layer2": {"f:role": {}}}})
    );
    assert_eq!(entries[1]["time"], LATER);

    let remove = json!([{"op": "remove", "path": "/metadata/labels"}]);
    let out = run(
        Some(&out),
        PatchKind::Json,
        &remove,
        &by("third", udn_ctx()),
    )
    .unwrap();
    let entries = managed_fields(&out);
    let names: Vec<&str> = entries
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["manager"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["other"]);
}

#[test]
fn without_a_field_manager_nothing_is_recorded() {
    let patch = json!({"spec": {"layer2": {"role": "Secondary"}}});
    let first = run(Some(&udn()), MERGE, &patch, &by("edit", udn_ctx())).unwrap();
    let patch = json!({"spec": {"layer2": {"role": "Tertiary"}}});
    let out = run(Some(&first), MERGE, &patch, &udn_ctx()).unwrap();
    assert_eq!(managed_fields(&out), managed_fields(&first));
    let plain = run(Some(&udn()), MERGE, &patch, &udn_ctx()).unwrap();
    assert!(plain["metadata"].get("managedFields").is_none());
}

#[test]
fn status_writes_record_the_subresource_and_only_status() {
    let ctx = PatchContext {
        subresource: Subresource::Status,
        ..by("ctl", udn_ctx())
    };
    let patch = json!({"status": {"phase": "Ready"}, "spec": {"topology": "Layer3"}});
    let out = run(Some(&udn()), MERGE, &patch, &ctx).unwrap();
    assert_eq!(
        managed_fields(&out),
        json!([{
            "manager": "ctl",
            "operation": "Update",
            "apiVersion": "k8s.ovn.org/v1",
            "time": NOW,
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:status": {".": {}, "f:phase": {}}},
            "subresource": "status"
        }])
    );
}

#[test]
fn main_resource_writes_do_not_own_status() {
    let patch = json!({"status": {"phase": "Ready"}, "metadata": {"annotations": {"a": "b"}}});
    let out = run(Some(&udn()), MERGE, &patch, &by("edit", udn_ctx())).unwrap();
    assert_eq!(
        managed_fields(&out)[0]["fieldsV1"],
        json!({"f:metadata": {"f:annotations": {".": {}, "f:a": {}}}})
    );
}

#[test]
fn clearing_managed_fields_resets_them() {
    let patch = json!({"spec": {"layer2": {"role": "Secondary"}}});
    let first = run(Some(&udn()), MERGE, &patch, &by("edit", udn_ctx())).unwrap();
    let reset = json!({"metadata": {"managedFields": []}});
    let out = run(Some(&first), MERGE, &reset, &by("edit", udn_ctx())).unwrap();
    assert!(out["metadata"].get("managedFields").is_none());
}

#[test]
fn apply_managers_sort_before_update_managers() {
    let patch = json!({"metadata": {"labels": {"x": "y"}}});
    let edited = run(Some(&udn()), MERGE, &patch, &by("edit", udn_ctx())).unwrap();
    let config = json!({
        "apiVersion": "k8s.ovn.org/v1",
        "kind": "UserDefinedNetwork",
        "metadata": {"name": "net", "annotations": {"k": "v"}}
    });
    let out = run(
        Some(&edited),
        PatchKind::Apply,
        &config,
        &by("zz", at(LATER, udn_ctx())),
    )
    .unwrap();
    let entries = managed_fields(&out);
    assert_eq!(
        (
            entries[0]["manager"].as_str(),
            entries[0]["operation"].as_str()
        ),
        (Some("zz"), Some("Apply"))
    );
    assert_eq!(
        (
            entries[1]["manager"].as_str(),
            entries[1]["operation"].as_str()
        ),
        (Some("edit"), Some("Update"))
    );
}

#[test]
fn more_than_ten_update_managers_are_capped_into_ancient_changes() {
    let times: Vec<String> = (0..11)
        .map(|i| format!("2024-05-01T10:00:{i:02}Z"))
        .collect();
    let names: Vec<String> = (0..11).map(|i| format!("m{i}")).collect();
    let mut object = udn();
    for (i, (time, name)) in times.iter().zip(&names).enumerate() {
        let ctx = PatchContext {
            now: time,
            field_manager: Some(name),
            ..udn_ctx()
        };
        let patch = json!({"metadata": {"labels": {format!("l{i}"): "v"}}});
        object = super::run(Some(&object), MERGE, &patch, &ctx).unwrap();
    }
    let entries = managed_fields(&object);
    let entries = entries.as_array().unwrap();
    assert_eq!(entries.len(), 10);
    assert_eq!(entries[0]["manager"], "ancient-changes");
    assert_eq!(entries[0]["time"], "2024-05-01T10:00:01Z");
    assert_eq!(
        entries[0]["fieldsV1"],
        json!({"f:metadata": {"f:labels": {".": {}, "f:l0": {}, "f:l1": {}}}})
    );
    assert_eq!(entries[1]["manager"], "m2");
    assert_eq!(entries[9]["manager"], "m10");
}

#[test]
fn times_are_whole_seconds_in_utc() {
    let ctx = PatchContext {
        now: "2024-05-01T12:00:00.123456+02:00",
        ..by("edit", udn_ctx())
    };
    let patch = json!({"metadata": {"labels": {"x": "y"}}});
    let out = run(Some(&udn()), MERGE, &patch, &ctx).unwrap();
    assert_eq!(managed_fields(&out)[0]["time"], "2024-05-01T10:00:00Z");
}
