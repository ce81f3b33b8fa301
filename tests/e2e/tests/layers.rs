//! The dependency rule per layer, as written in ARCHITECTURE.md ("Layers"), checked against
//! the workspace's own manifests (`cargo metadata --no-deps --offline`): a crate depends
//! (normal and build dependencies; dev-dependencies are free) only on crates of the layers
//! its row names.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::Value;

/// One row of the table: its layer, its crates, and the layers it may depend on (`None`: any).
#[derive(Debug)]
struct Layer {
    name: String,
    crates: Vec<String>,
    may_use: Option<Vec<String>>,
}

/// The rows of the "Layers" table of ARCHITECTURE.md.
fn layers(architecture: &str) -> Vec<Layer> {
    let section = architecture
        .split("\n## ")
        .find(|s| s.starts_with("Layers\n"))
        .expect("ARCHITECTURE.md has a `## Layers` section");
    let ticked = |cell: &str| -> Vec<String> {
        cell.split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect()
    };
    section
        .lines()
        .filter(|l| l.starts_with('|') && !l.starts_with("|---") && !l.starts_with("| layer "))
        .map(|l| {
            let cells: Vec<&str> = l.trim_matches('|').split('|').map(str::trim).collect();
            assert_eq!(cells.len(), 3, "a Layers row has three cells: {l}");
            let may_use = match cells[2] {
                "any" => None,
                "—" | "-" => Some(Vec::new()),
                list => Some(list.split(',').map(|s| s.trim().to_string()).collect()),
            };
            Layer {
                name: cells[0].to_string(),
                crates: ticked(cells[1]),
                may_use,
            }
        })
        .collect()
}

/// Workspace crate → the workspace crates it depends on (normal and build dependencies).
type Graph = BTreeMap<String, BTreeSet<String>>;

fn workspace_graph() -> Graph {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = std::process::Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .arg("--manifest-path")
        .arg(root.join("Cargo.toml"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: Value = serde_json::from_slice(&out.stdout).expect("cargo metadata JSON");
    graph_of(&meta)
}

fn graph_of(meta: &Value) -> Graph {
    let packages = meta["packages"].as_array().expect("packages");
    let names: BTreeSet<String> = packages
        .iter()
        .filter_map(|p| p["name"].as_str().map(str::to_string))
        .collect();
    packages
        .iter()
        .map(|p| {
            let deps = p["dependencies"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|d| d["kind"].as_str() != Some("dev"))
                .filter_map(|d| d["name"].as_str())
                .filter(|d| names.contains(*d))
                .map(str::to_string)
                .collect();
            (p["name"].as_str().unwrap_or_default().to_string(), deps)
        })
        .collect()
}

/// Every broken rule, one line each (empty: the graph keeps the layers).
fn violations(layers: &[Layer], graph: &Graph) -> Vec<String> {
    let mut out = Vec::new();
    let mut layer_of: BTreeMap<&str, &Layer> = BTreeMap::new();
    for layer in layers {
        for c in &layer.crates {
            if layer_of.insert(c, layer).is_some() {
                out.push(format!("`{c}` is in more than one layer"));
            }
        }
        for used in layer.may_use.iter().flatten() {
            if !layers.iter().any(|l| &l.name == used) {
                out.push(format!(
                    "layer `{}` names an unknown layer `{used}`",
                    layer.name
                ));
            }
        }
    }
    for (krate, deps) in graph {
        let Some(layer) = layer_of.get(krate.as_str()) else {
            out.push(format!(
                "`{krate}` is in no layer: give it a row in ARCHITECTURE.md's Layers table"
            ));
            continue;
        };
        let Some(may_use) = &layer.may_use else {
            continue;
        };
        for dep in deps {
            let allowed = layer_of
                .get(dep.as_str())
                .is_some_and(|l| may_use.contains(&l.name));
            if !allowed {
                let dep_layer = layer_of.get(dep.as_str()).map_or("none", |l| &l.name);
                out.push(format!(
                    "`{krate}` (layer {}) depends on `{dep}` (layer {dep_layer}); it may depend on: {}",
                    layer.name,
                    if may_use.is_empty() {
                        "nothing of ours".to_string()
                    } else {
                        may_use.join(", ")
                    }
                ));
            }
        }
    }
    out
}

fn architecture() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../ARCHITECTURE.md");
    std::fs::read_to_string(&path).expect("ARCHITECTURE.md")
}

#[test]
fn every_crate_depends_only_on_the_layers_its_row_names() {
    let broken = violations(&layers(&architecture()), &workspace_graph());
    assert!(
        broken.is_empty(),
        "layering rules broken (ARCHITECTURE.md, Layers):\n  {}",
        broken.join("\n  ")
    );
}

/// The checker itself: the rules the layering exists for are caught, dev-dependencies are
/// free, and a crate without a layer is named.
#[test]
fn the_checker_names_what_breaks_a_rule() {
    let layers = layers(&architecture());
    let dep = |name: &str, kind: Option<&str>| serde_json::json!({"name": name, "kind": kind});
    let meta = |extra: Vec<(&str, Vec<Value>)>| {
        let mut packages: Vec<Value> = workspace_graph()
            .into_iter()
            .map(|(name, deps)| {
                let deps: Vec<Value> = deps.iter().map(|d| dep(d, None)).collect();
                serde_json::json!({"name": name, "dependencies": deps})
            })
            .collect();
        for (name, deps) in extra {
            for p in packages.iter_mut().filter(|p| p["name"] == name) {
                p["dependencies"]
                    .as_array_mut()
                    .expect("deps")
                    .extend(deps.clone());
            }
            if !packages.iter().any(|p| p["name"] == name) {
                packages.push(serde_json::json!({"name": name, "dependencies": deps}));
            }
        }
        graph_of(&serde_json::json!({ "packages": packages }))
    };
    for (krate, on) in [
        ("evident-api", "evident-indexers"),
        ("evident-api", "evident-runtime"),
        ("evident-api", "evident-qualifier"),
        ("evident-api", "evident-store-embedded"),
        ("evident-core", "evident-store"),
        ("evident-store", "evident-kb"),
        ("evident-store-mongo", "evident-kb"),
        ("evident-kb", "evident-indexers"),
        ("evident-kb", "evident-store-arango"),
        ("evident-indexers", "evident-api"),
        ("evident-qualifier", "evident-api"),
        ("evident-sources", "evident-indexers"),
    ] {
        let broken = violations(&layers, &meta(vec![(krate, vec![dep(on, None)])]));
        assert!(
            broken
                .iter()
                .any(|b| b.starts_with(&format!("`{krate}`")) && b.contains(&format!("`{on}`"))),
            "{krate} → {on} must break a rule: {broken:?}"
        );
    }
    let dev_only = meta(vec![(
        "evident-api",
        vec![dep("evident-store-embedded", Some("dev"))],
    )]);
    assert_eq!(violations(&layers, &dev_only), Vec::<String>::new());
    let stray = violations(&layers, &meta(vec![("evident-new", vec![])]));
    assert!(
        stray
            .iter()
            .any(|b| b.contains("`evident-new` is in no layer")),
        "{stray:?}"
    );
}
