//! Small fixtures for what the `fidelity` suite (issue 13) found missing against ctags:
//! JavaScript functions inside expressions, Rust `#[cfg]` alternatives, Go packages told apart
//! by directory and build variants by file.

use evident_code::{Language, outline};

/// `kind qualifiedName line` of every symbol.
fn symbols(lang: Language, path: &str, src: &str) -> Vec<String> {
    let o = outline(lang, path, src).expect("outline");
    assert_eq!(o.error_nodes, 0, "{path} parses cleanly");
    o.symbols
        .iter()
        .map(|s| format!("{} {} {}", s.kind.as_str(), s.qualified_name, s.line_start))
        .collect()
}

#[test]
fn javascript_functions_inside_expressions_are_symbols() {
    let src = "\
(function () {
  function inner() {}
  var bound = function () {};
})();
define(['dep'], function (dep) {
  function helper() {}
});
!function () { function bang() {} }();
const outer = function () {
  function nested() {}
};
items.forEach((x) => { function each() {} });
const ajax = (() => { function create() {} return create; })();
var __extends = (this && this.__extends) || (function () { var extendStatics = function () {}; })();
module.exports = (cls) => class Builder extends cls { build() {} };
";
    assert_eq!(
        symbols(Language::JavaScript, "lib/m.js", src),
        vec![
            "function lib/m.inner 2",
            "function lib/m.bound 3",
            "function lib/m.helper 6",
            "function lib/m.bang 8",
            "function lib/m.outer 9",
            "function lib/m.outer.nested 10",
            "function lib/m.each 12",
            "function lib/m.create 13",
            "function lib/m.extendStatics 14",
            "class lib/m.Builder 15",
            "method lib/m.Builder.build 15",
        ]
    );
}

#[test]
fn javascript_methods_of_an_object_in_a_callback_stay_methods() {
    let src = "\
module.exports = function (app) {
  const api = { run() {} };
  class Service { start() { function local() {} } }
};
";
    let got = symbols(Language::JavaScript, "s.js", src);
    for want in [
        "method s.api.run 2",
        "class s.Service 3",
        "method s.Service.start 3",
    ] {
        assert!(got.contains(&want.to_string()), "{want} in {got:?}");
    }
}

#[test]
fn rust_cfg_alternatives_are_each_a_definition() {
    let src = "\
#[cfg(not(feature = \"tokio\"))]
type TtlInstant = Instant;
#[cfg(feature = \"tokio\")]
type TtlInstant = tokio::time::Instant;
#[cfg(unix)]
pub struct Fd(i32);
#[cfg(windows)]
pub struct Fd(u64);
#[allow(non_snake_case)]
fn Fd() {}
";
    assert_eq!(
        symbols(Language::Rust, "krate/src/pool.rs", src),
        vec![
            "type krate::pool::TtlInstant 2",
            "type krate::pool::TtlInstant#2 4",
            "struct krate::pool::Fd 6",
            "struct krate::pool::Fd#2 8",
            // A function's key ends in `()`: it meets no type, so it is not renumbered.
            "function krate::pool::Fd 10",
        ]
    );
}

#[test]
fn go_packages_are_qualified_by_directory() {
    let main = "package main\n\nfunc main() {}\n";
    let cases = [
        ("cmd/vet/main.go", main, "function cmd/vet/main.main 3"),
        ("cmd/gofmt/gofmt.go", main, "function cmd/gofmt/main.main 3"),
        (
            "math/rand/rand.go",
            "package rand\n\nfunc Intn(n int) int { return 0 }\n",
            "function math/rand.Intn 3",
        ),
        (
            "crypto/rand/rand.go",
            "package rand\n\nfunc Int() {}\n",
            "function crypto/rand.Int 3",
        ),
        (
            "runtime/mkduff.go",
            "//go:build ignore\n\npackage main\n\nfunc main() {}\n",
            "function runtime/main@mkduff.main 5",
        ),
    ];
    for (path, src, want) in cases {
        assert_eq!(symbols(Language::Go, path, src), vec![want], "{path}");
    }
}

#[test]
fn go_build_variants_are_each_a_definition() {
    let src = "\
package runtime

type sigset uint32

func (s *sigset) clear() {}

func (m *mOS) init() {}
";
    let o = outline(Language::Go, "runtime/defs1_netbsd_386.go", src).expect("outline");
    let by_name = |n: &str| {
        o.symbols
            .iter()
            .find(|s| s.name == n)
            .unwrap_or_else(|| panic!("{n}"))
    };
    assert_eq!(
        by_name("sigset").qualified_name,
        "runtime@defs1_netbsd_386.sigset"
    );
    let clear = by_name("clear");
    assert_eq!(
        clear.qualified_name,
        "runtime@defs1_netbsd_386.sigset.clear"
    );
    assert_eq!(
        clear.parent.as_deref(),
        Some("runtime@defs1_netbsd_386.sigset"),
        "its receiver is declared in this variant"
    );
    assert_eq!(
        by_name("init").parent.as_deref(),
        Some("runtime.mOS"),
        "a receiver declared elsewhere is the plain type"
    );
}
