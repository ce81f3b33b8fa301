//! Symbols and imports of one fixed sample per language against a hand-checked expectation
//! (`tests/fixtures/<file>.expected`: `kind qualifiedName lineStart-lineEnd`, `import target line`).

use evident_code::{Language, outline};
use proptest::prelude::*;

const SAMPLES: [&str; 8] = [
    "sample.rs",
    "sample.py",
    "Sample.java",
    "sample.kt",
    "sample.go",
    "sample.ts",
    "sample.jsx",
    "sample.tsx",
];

fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/tests/fixtures/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .expect("fixture")
}

#[test]
fn every_language_yields_the_expected_symbols_and_imports() {
    for name in SAMPLES {
        let lang = Language::from_path(name).expect("known language");
        let o = outline(lang, &format!("src/{name}"), &fixture(name)).expect("outline");
        assert_eq!(o.error_nodes, 0, "{name} parses cleanly");
        let mut got = String::new();
        for s in &o.symbols {
            got.push_str(&format!(
                "{} {} {}-{}\n",
                s.kind.as_str(),
                s.qualified_name,
                s.line_start,
                s.line_end
            ));
        }
        for i in &o.imports {
            got.push_str(&format!("import {} {}\n", i.target, i.line));
        }
        assert_eq!(got, fixture(&format!("{name}.expected")), "{name}");
    }
}

#[test]
fn methods_know_their_type_and_signatures_stop_at_the_body() {
    let o = outline(Language::Go, "x.go", &fixture("sample.go")).expect("outline");
    let name = o
        .symbols
        .iter()
        .find(|s| s.qualified_name == "store.Store.Name")
        .expect("method");
    assert_eq!(name.parent.as_deref(), Some("store.Store"), "receiver type");
    assert_eq!(name.signature, "func (s *Store) Name() string");
    let o = outline(Language::Rust, "src/lib.rs", &fixture("sample.rs")).expect("outline");
    let get = o.symbols.iter().find(|s| s.name == "get").expect("method");
    assert_eq!(get.signature, "fn get(&self, k: &str) -> Option<&u32>");
    assert_eq!(get.parent.as_deref(), Some("Store"));
}

#[test]
fn rust_grouped_imports_are_one_import_per_path() {
    let src = "use evident_store::{HealthReport, Result, StoreError};\nuse a::{b::{C, d::E as F}, self, g::*, /* note */ h};\nuse ::std::io;\nuse x as y;\nuse z::*;\nuse {p::Q, r};\n";
    let o = outline(Language::Rust, "src/lib.rs", src).expect("outline");
    let got: Vec<(&str, usize)> = o
        .imports
        .iter()
        .map(|i| (i.target.as_str(), i.line))
        .collect();
    assert_eq!(
        got,
        vec![
            ("evident_store::HealthReport", 1),
            ("evident_store::Result", 1),
            ("evident_store::StoreError", 1),
            ("a::b::C", 2),
            ("a::b::d::E", 2),
            ("a", 2),
            ("a::g::*", 2),
            ("a::h", 2),
            ("::std::io", 3),
            ("x", 4),
            ("z::*", 5),
            ("p::Q", 6),
            ("r", 6),
        ]
    );
}

#[test]
fn named_types_and_aliases_are_symbols_in_every_language() {
    let cases = [
        (
            Language::Rust,
            "src/lib.rs",
            "pub type Result<T> = std::result::Result<T, Error>;\n",
            "Result",
        ),
        (
            Language::TypeScript,
            "src/a.ts",
            "export type Id = string;\n",
            "src/a.Id",
        ),
        (
            Language::Kotlin,
            "A.kt",
            "package p\n\ntypealias Names = List<String>\n",
            "p.Names",
        ),
        (
            Language::Go,
            "a.go",
            "package p\n\ntype (\n\tID int\n\tF func(int) error\n\tA = ID\n)\n",
            "p.F",
        ),
    ];
    for (lang, path, src, want) in cases {
        let o = outline(lang, path, src).expect("outline");
        assert!(
            o.symbols
                .iter()
                .any(|s| s.kind.as_str() == "type" && s.qualified_name == want),
            "{want} in {:?}",
            o.symbols
        );
    }
}

#[test]
fn class_fields_holding_functions_are_methods() {
    for (lang, path) in [
        (Language::JavaScript, "src/a.js"),
        (Language::TypeScript, "src/a.ts"),
    ] {
        let src = "class Panel {\n  count = 0;\n  onClick = () => {\n    this.count++;\n  };\n  render() {}\n}\n";
        let o = outline(lang, path, src).expect("outline");
        let methods: Vec<&str> = o
            .symbols
            .iter()
            .filter(|s| s.kind.as_str() == "method")
            .map(|s| s.qualified_name.as_str())
            .collect();
        assert_eq!(
            methods,
            vec!["src/a.Panel.onClick", "src/a.Panel.render"],
            "{path}"
        );
    }
}

#[test]
fn broken_code_still_yields_what_parses() {
    let src = "class Ok {\n  void fine() {}\n}\nclass Broken {\n  void half( {\n";
    let o = outline(Language::Java, "B.java", src).expect("outline");
    assert!(o.error_nodes > 0);
    assert!(
        o.symbols.iter().any(|s| s.qualified_name == "Ok.fine"),
        "{:?}",
        o.symbols
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    /// The extractor never panics, and every symbol span lies inside the input.
    #[test]
    fn outline_never_panics(src in "(?s).{0,400}", which in 0usize..8) {
        let lang = Language::ALL[which];
        let o = outline(lang, "src/x", &src).expect("tree-sitter always yields a tree");
        for s in &o.symbols {
            prop_assert!(s.byte_start <= s.byte_end && s.byte_end <= src.len());
            prop_assert!(s.line_start <= s.line_end);
        }
    }
}
