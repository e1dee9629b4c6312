//! The committed generated files match what `cargo xtask codegen` produces.

use xtask::codegen::{self, GeneratedFile};

fn files() -> Vec<GeneratedFile> {
    match codegen::generated_files() {
        Ok(files) => files,
        Err(error) => panic!("codegen fails: {error:#}"),
    }
}

#[test]
fn generated_files_are_fresh() {
    let root = codegen::workspace_root();
    for file in files() {
        if let Err(error) = codegen::ensure_file_contents(&root, &file) {
            panic!("{error}");
        }
    }
}

#[test]
fn crd_files_are_named_as_controller_gen_names_them() {
    let names: Vec<String> = files()
        .iter()
        .map(|file| file.path.display().to_string())
        .collect();
    assert_eq!(
        names,
        [
            "manifests/crds/k8s.ovn.org_userdefinednetworks.yaml",
            "manifests/crds/k8s.ovn.org_clusteruserdefinednetworks.yaml",
            "manifests/crds/k8s.cni.cncf.io_network-attachment-definitions.yaml",
            "manifests/crds/k8s.cni.cncf.io_ipamclaims.yaml",
        ]
    );
}

#[test]
fn yaml_reads_back_as_the_manifest() {
    let manifests = udn_api::crd::manifests();
    for (file, crd) in files().iter().zip(&manifests) {
        let parsed: serde_json::Value = match serde_saphyr::from_str(&file.contents) {
            Ok(value) => value,
            Err(error) => panic!("{} does not parse: {error}", file.path.display()),
        };
        let expected = match udn_api::crd::to_manifest_json(crd) {
            Ok(value) => value,
            Err(error) => panic!("{error}"),
        };
        assert_eq!(parsed, expected, "{}", file.path.display());
        assert!(file.contents.starts_with(codegen::HEADER));
    }
}

#[test]
fn rendering_is_deterministic() {
    assert_eq!(files(), files());
}
