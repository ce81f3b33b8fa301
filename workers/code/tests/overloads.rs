//! Definitions that the fidelity suite (`evident-bench fidelity`) found merged or missing on
//! real code, each as a small fixture: every definition is its own symbol with its own key.

use evident_code::structure::symbol_key;
use evident_code::{Language, Symbol, outline};

fn symbols(lang: Language, path: &str, src: &str) -> Vec<Symbol> {
    let o = outline(lang, path, src).expect("outline");
    assert_eq!(o.error_nodes, 0, "{path} parses cleanly");
    o.symbols
}

/// `kind qualifiedName lineStart-lineEnd`, one per symbol.
fn listing(symbols: &[Symbol]) -> Vec<String> {
    symbols
        .iter()
        .map(|s| {
            format!(
                "{} {} {}-{}",
                s.kind.as_str(),
                s.qualified_name,
                s.line_start,
                s.line_end
            )
        })
        .collect()
}

fn keys(symbols: &[Symbol]) -> Vec<String> {
    symbols
        .iter()
        .map(|s| symbol_key("shop", s).as_str().to_string())
        .collect()
}

#[test]
fn java_overloads_are_keyed_by_their_parameter_types() {
    let src = "package com.acme;\n\
               class Cart {\n\
               \x20 Cart() {}\n\
               \x20 Cart(int size) {}\n\
               \x20 void add(final Item item, java.util.List<Item> more) {}\n\
               \x20 void add(@Deprecated String... names) {}\n\
               \x20 int total() { return 0; }\n\
               }\n";
    let s = symbols(Language::Java, "src/Cart.java", src);
    assert_eq!(
        keys(&s),
        [
            "symbol:shop/com.acme.Cart",
            "symbol:shop/com.acme.Cart.Cart()",
            "symbol:shop/com.acme.Cart.Cart(int)",
            "symbol:shop/com.acme.Cart.add(Item,java.util.List)",
            "symbol:shop/com.acme.Cart.add(String...)",
            // Not overloaded: the plain key.
            "symbol:shop/com.acme.Cart.total()",
        ]
    );
    assert!(
        s.iter()
            .skip(1)
            .all(|m| m.parent.as_deref() == Some("com.acme.Cart"))
    );
}

#[test]
fn python_nested_functions_and_blocks_are_definitions() {
    let src = "class C:\n\
               \x20   def m(self):\n\
               \x20       def inner():\n\
               \x20           class Local:\n\
               \x20               def lm(self): pass\n\
               \x20           return Local\n\
               \x20       return inner\n\
               with open('x') as f:\n\
               \x20   def in_with(): pass\n\
               for i in range(2):\n\
               \x20   def in_for(): pass\n";
    let s = symbols(Language::Python, "pkg/mod.py", src);
    assert_eq!(
        listing(&s),
        [
            "class pkg.mod.C 1-7",
            "method pkg.mod.C.m 2-7",
            "function pkg.mod.C.m.inner 3-6",
            "class pkg.mod.C.m.inner.Local 4-5",
            "method pkg.mod.C.m.inner.Local.lm 5-5",
            "function pkg.mod.in_with 9-9",
            "function pkg.mod.in_for 11-11",
        ]
    );
    // Nested definitions hang from the file, not from a type that does not exist.
    assert_eq!(s[2].parent, None);
    assert_eq!(s[4].parent.as_deref(), Some("pkg.mod.C.m.inner.Local"));
}

#[test]
fn python_redefinitions_are_numbered_not_merged() {
    let src = "class C:\n\
               \x20   @property\n\
               \x20   def x(self): return 1\n\
               \x20   @x.setter\n\
               \x20   def x(self, v): pass\n";
    let s = symbols(Language::Python, "m.py", src);
    assert_eq!(
        keys(&s),
        [
            "symbol:shop/m.C",
            "symbol:shop/m.C.x()",
            "symbol:shop/m.C.x#2()"
        ]
    );
}

#[test]
fn javascript_object_literal_members_holding_functions_are_methods() {
    let src = "const api = {\n\
               \x20 run() {},\n\
               \x20 stop: function () {},\n\
               \x20 'go': () => 1,\n\
               \x20 nested: { deep() {} },\n\
               \x20 value: 3,\n\
               };\n\
               module.exports = { exported() {} };\n";
    let s = symbols(Language::JavaScript, "lib/api.js", src);
    assert_eq!(
        listing(&s),
        [
            "method lib/api.api.run 2-2",
            "method lib/api.api.stop 3-3",
            "method lib/api.api.go 4-4",
            "method lib/api.api.nested.deep 5-5",
            "method lib/api.module.exports.exported 8-8",
        ]
    );
    // The object is a value, not a type node: its methods belong to the file.
    assert!(s.iter().all(|m| m.parent.is_none()));
}

#[test]
fn javascript_static_and_instance_methods_of_one_name_are_two_nodes() {
    let src = "class Lock { static load() {} load() {} get x() {} set x(v) {} '=' (a) {} }\n";
    let s = symbols(Language::JavaScript, "lock.js", src);
    assert_eq!(
        keys(&s),
        [
            "symbol:shop/lock.Lock",
            "symbol:shop/lock.Lock.load()",
            "symbol:shop/lock.Lock.load#2()",
            "symbol:shop/lock.Lock.x()",
            "symbol:shop/lock.Lock.x#2()",
            // A quoted name is the text between the quotes.
            "symbol:shop/lock.Lock.=()",
        ]
    );
}

#[test]
fn typescript_overload_signatures_are_one_function_with_their_implementation() {
    let src = "export function f(a: string): void;\n\
               export function f(a: number): void;\n\
               export function f(a: any) {}\n\
               class C {\n\
               \x20 m(a: string): void;\n\
               \x20 m(a: any) {}\n\
               \x20 n(a: string) {}\n\
               \x20 n(a: number, ...rest: Array<string>) {}\n\
               }\n";
    let s = symbols(Language::TypeScript, "src/f.ts", src);
    assert_eq!(
        listing(&s),
        [
            "function src/f.f 1-3",
            "class src/f.C 4-9",
            "method src/f.C.m 5-6",
            // Two bodies of one name (not valid TypeScript, but parsed): parameter types.
            "method src/f.C.n(string) 7-7",
            "method src/f.C.n(number,...Array) 8-8",
        ]
    );
}

#[test]
fn rust_members_of_several_trait_impls_are_qualified_by_their_trait() {
    let src = "pub struct P;\n\
               impl std::fmt::Debug for P { fn fmt(&self) {} }\n\
               impl std::fmt::Display for P { fn fmt(&self) {} }\n\
               impl From<u8> for P { fn from(x: u8) -> P { P } }\n\
               impl From<u16> for P { fn from(x: u16) -> P { P } }\n\
               impl Default for P { fn default() -> P { P } }\n\
               impl std::ops::Add for P { type Output = P; fn add(self, o: P) -> P { P } }\n\
               impl std::ops::Sub for P { type Output = P; fn sub(self, o: P) -> P { P } }\n\
               pub trait Store { type Mem: Copy; }\n";
    let s = symbols(Language::Rust, "shop/src/p.rs", src);
    assert_eq!(
        keys(&s),
        [
            "symbol:shop/shop.p.P",
            "symbol:shop/shop.p.P.Debug.fmt()",
            "symbol:shop/shop.p.P.Display.fmt()",
            "symbol:shop/shop.p.P.From<u8>.from()",
            "symbol:shop/shop.p.P.From<u16>.from()",
            // The only `default`: its plain key.
            "symbol:shop/shop.p.P.default()",
            "symbol:shop/shop.p.P.Add.Output",
            "symbol:shop/shop.p.P.add()",
            "symbol:shop/shop.p.P.Sub.Output",
            "symbol:shop/shop.p.P.sub()",
            // A trait's associated type is a type of the trait.
            "symbol:shop/shop.p.Store",
            "symbol:shop/shop.p.Store.Mem",
        ]
    );
    assert!(
        s[1..10]
            .iter()
            .all(|m| m.parent.as_deref() == Some("shop::p::P"))
    );
}

#[test]
fn go_init_functions_are_each_a_node() {
    let src = "package p\n\nfunc init() {}\n\nfunc init() {}\n";
    let s = symbols(Language::Go, "p/a.go", src);
    assert_eq!(keys(&s), ["symbol:shop/p.init()", "symbol:shop/p.init#2()"]);
}

#[test]
fn functions_and_items_inside_javascript_and_rust_functions_are_definitions() {
    let js = "function setup(env) {\n\
              \x20 function selectColor(ns) { return 1 }\n\
              \x20 const enable = (names) => {};\n\
              \x20 return { selectColor, enable };\n\
              }\n";
    let s = symbols(Language::JavaScript, "src/common.js", js);
    assert_eq!(
        listing(&s),
        [
            "function src/common.setup 1-5",
            "function src/common.setup.selectColor 2-2",
            "function src/common.setup.enable 3-3",
        ]
    );
    assert!(s.iter().all(|f| f.parent.is_none()));
    let rs = "fn outer() {\n\
              \x20   struct Closure;\n\
              \x20   fn inner() {}\n\
              \x20   let x = 1;\n\
              }\n";
    let s = symbols(Language::Rust, "k/src/lib.rs", rs);
    assert_eq!(
        listing(&s),
        [
            "function k::outer 1-5",
            "struct k::outer::Closure 2-2",
            "function k::outer::inner 3-3",
        ]
    );
}
