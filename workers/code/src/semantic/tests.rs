use super::*;
use crate::lang::Language;
use crate::outline::outline_with_facts;

fn unit(path: &str, src: &str) -> FileUnit {
    let lang = Language::from_path(path).expect("language");
    let (o, f) = outline_with_facts(lang, path, src, true).expect("parse");
    FileUnit::new(path, &o, f.expect("facts"))
}

fn table(files: &[(&str, &str)]) -> SymbolTable {
    let mut t = SymbolTable::new();
    t.update(
        files
            .iter()
            .map(|(p, s)| (p.to_string(), Some(unit(p, s))))
            .collect(),
    );
    t
}

/// `(from qualified name, edge type, to)` of a file's resolution.
fn edges(t: &SymbolTable, path: &str) -> Vec<(String, &'static str, String)> {
    let u = &t.files[path];
    let mut out: Vec<(String, &'static str, String)> = t
        .resolution(path)
        .expect("resolved")
        .edges
        .iter()
        .map(|e| {
            (
                u.symbols[e.from].qualified_name.clone(),
                e.kind.as_str(),
                e.to.clone(),
            )
        })
        .collect();
    out.dedup();
    out
}

fn has(e: &[(String, &'static str, String)], from: &str, kind: &str, to: &str) -> bool {
    e.iter().any(|(f, k, t)| f == from && *k == kind && t == to)
}

const SHAPES: &str = "\
class Shape:
    def area(self) -> float:
        return 0.0

    def describe(self):
        return str(self.area())


class Square(Shape):
    def __init__(self, side: float):
        self.side = side

    def area(self):
        return self.side * self.side
";

const APP: &str = "\
from geo.shapes import Square as Sq
from geo import shapes
import geo.util


def build(n) -> 'Sq':
    return Sq(n)


def main():
    s = build(2)
    s.describe()
    t = shapes.Square(3)
    t.area()
    geo.util.helper(t)
    print(s)


class Report:
    shape: Sq

    def __init__(self, shape: shapes.Shape):
        self.shape = shape

    def total(self):
        return self.shape.area() + helper2()


def helper2():
    return 1
";

const UTIL: &str = "def helper(x):\n    return x\n";

#[test]
fn python_calls_follow_imports_aliases_self_and_inferred_locals() {
    let t = table(&[
        ("geo/shapes.py", SHAPES),
        ("geo/app.py", APP),
        ("geo/util.py", UTIL),
        ("geo/__init__.py", ""),
    ]);
    let s = edges(&t, "geo/shapes.py");
    assert!(
        has(&s, "geo.shapes.Square", "extends", "geo.shapes.Shape"),
        "{s:?}"
    );
    assert!(
        has(
            &s,
            "geo.shapes.Shape.describe",
            "calls",
            "geo.shapes.Shape.area"
        ),
        "{s:?}"
    );
    let a = edges(&t, "geo/app.py");
    for (from, kind, to) in [
        ("geo.app.build", "calls", "geo.shapes.Square.__init__"),
        ("geo.app.build", "uses_type", "geo.shapes.Square"),
        ("geo.app.main", "calls", "geo.app.build"),
        // `s` is what `build` returns (its annotation, a string naming an alias).
        ("geo.app.main", "calls", "geo.shapes.Shape.describe"),
        ("geo.app.main", "calls", "geo.shapes.Square.__init__"),
        ("geo.app.main", "calls", "geo.shapes.Square.area"),
        ("geo.app.main", "calls", "geo.util.helper"),
        ("geo.app.Report", "uses_type", "geo.shapes.Square"),
        ("geo.app.Report.__init__", "uses_type", "geo.shapes.Shape"),
        // `self.shape` is the class-level annotated field (`Sq`), not the parameter.
        ("geo.app.Report.total", "calls", "geo.shapes.Square.area"),
        ("geo.app.Report.total", "calls", "geo.app.helper2"),
    ] {
        assert!(has(&a, from, kind, to), "{from} {kind} {to} in {a:?}");
    }
    // `print` is no symbol of the repository: no edge, its name kept.
    let r = t.resolution("geo/app.py").expect("resolved");
    assert!(r.edges.iter().all(|e| !e.to.ends_with("print")));
    let main = t.files["geo/app.py"]
        .symbols
        .iter()
        .position(|s| s.name == "main")
        .expect("main");
    assert!(
        r.unresolved.contains(&(main, "print".to_string())),
        "{:?}",
        r.unresolved
    );
}

#[test]
fn python_relative_imports_and_reexports_through_init() {
    let t = table(&[
        ("pkg/__init__.py", "from .core import Engine\n"),
        (
            "pkg/core.py",
            "class Engine:\n    def run(self):\n        pass\n",
        ),
        (
            "pkg/sub/use.py",
            "from .. import Engine\nfrom ..core import Engine as E2\n\ndef go():\n    Engine().run()\n    E2().run()\n",
        ),
        (
            "other.py",
            "import pkg\n\ndef f():\n    pkg.Engine().run()\n",
        ),
    ]);
    let u = edges(&t, "pkg/sub/use.py");
    assert!(
        has(&u, "pkg.sub.use.go", "calls", "pkg.core.Engine.run"),
        "{u:?}"
    );
    let o = edges(&t, "other.py");
    assert!(has(&o, "other.f", "calls", "pkg.core.Engine.run"), "{o:?}");
}

#[test]
fn a_changed_definition_re_resolves_its_users_only() {
    let mut t = table(&[
        ("geo/shapes.py", SHAPES),
        ("geo/app.py", APP),
        ("geo/util.py", UTIL),
        ("geo/__init__.py", ""),
        ("lone.py", "def lonely():\n    return 1\n"),
    ]);
    // The same file again (another batch at the same commit) changes nothing.
    assert!(
        t.update(vec![("geo/app.py".into(), Some(unit("geo/app.py", APP)))])
            .is_empty()
    );
    assert!(
        t.resolution("geo/app.py")
            .is_some_and(|r| !r.edges.is_empty())
    );
    // `helper` renamed: app.py's call no longer resolves; lone.py is not looked at.
    let renamed = "def helper_v2(x):\n    return x\n";
    let again = t.update(vec![(
        "geo/util.py".into(),
        Some(unit("geo/util.py", renamed)),
    )]);
    assert_eq!(again, vec!["geo/app.py".to_string()]);
    let a = edges(&t, "geo/app.py");
    assert!(
        !has(&a, "geo.app.main", "calls", "geo.util.helper"),
        "{a:?}"
    );
    // A body-only change resolves the same: nothing else to write.
    let body = "def helper_v2(x):\n    return x + 1\n";
    assert!(
        t.update(vec![(
            "geo/util.py".into(),
            Some(unit("geo/util.py", body))
        )])
        .is_empty()
    );
    // Deleting the shapes module takes the edges into it away from its users.
    let again = t.update(vec![("geo/shapes.py".into(), None)]);
    assert_eq!(again, vec!["geo/app.py".to_string()]);
    let a = edges(&t, "geo/app.py");
    assert!(
        a.iter().all(|(_, _, to)| !to.starts_with("geo.shapes")),
        "{a:?}"
    );
}

const BASE_JAVA: &str = "\
package shop;

import shop.model.Item;

public abstract class Base implements Priced {
    protected Item first;

    public Base() {}

    public int price() { return 0; }

    public abstract int total(int n);
}
";

const PRICED_JAVA: &str =
    "package shop;\n\npublic interface Priced extends Comparable<Priced> {\n    int price();\n}\n";

const ITEM_JAVA: &str = "package shop.model;\n\npublic class Item {\n    public int cost() { return 1; }\n    public Item copy() { return new Item(); }\n}\n";

const CART_JAVA: &str = "\
package shop;

import java.util.List;
import shop.model.Item;

@Deprecated
public class Cart extends Base {
    private List<Item> items;
    private Helper helper = new Helper();

    public Cart(int n) {
        super();
    }

    public Cart() {
        this(0);
    }

    @Override
    public int total(int n) {
        int sum = price() + first.cost();
        Item i = first.copy();
        sum += i.cost() + helper.twice(n) + Helper.zero();
        var j = new Item();
        return sum + j.copy().cost() + add(n) + add(n, n);
    }

    int add(int a) { return a; }
    int add(int a, int b) { return a + b; }

    static class Helper {
        int twice(int n) { return total2(); }
        static int zero() { return 0; }
    }

    static int total2() { return 2; }
}
";

#[test]
fn java_calls_bases_and_type_uses() {
    let t = table(&[
        ("src/shop/Base.java", BASE_JAVA),
        ("src/shop/Priced.java", PRICED_JAVA),
        ("src/shop/model/Item.java", ITEM_JAVA),
        ("src/shop/Cart.java", CART_JAVA),
    ]);
    let b = edges(&t, "src/shop/Base.java");
    assert!(has(&b, "shop.Base", "implements", "shop.Priced"), "{b:?}");
    assert!(
        has(&b, "shop.Base", "uses_type", "shop.model.Item"),
        "{b:?}"
    );
    let p = edges(&t, "src/shop/Priced.java");
    assert!(
        p.iter().all(|(_, k, _)| *k != "extends"),
        "Comparable is not in the repository: {p:?}"
    );
    let c = edges(&t, "src/shop/Cart.java");
    for (from, kind, to) in [
        ("shop.Cart", "extends", "shop.Base"),
        ("shop.Cart", "uses_type", "shop.model.Item"),
        ("shop.Cart.Cart(int)", "calls", "shop.Base.Base"),
        ("shop.Cart.Cart()", "calls", "shop.Cart.Cart(int)"),
        ("shop.Cart.total", "calls", "shop.Base.price"),
        ("shop.Cart.total", "calls", "shop.model.Item.cost"),
        ("shop.Cart.total", "calls", "shop.model.Item.copy"),
        ("shop.Cart.total", "calls", "shop.model.Item.Item"),
        ("shop.Cart.total", "calls", "shop.Cart.Helper.twice"),
        ("shop.Cart.total", "calls", "shop.Cart.Helper.zero"),
        ("shop.Cart.total", "calls", "shop.Cart.add(int)"),
        ("shop.Cart.total", "calls", "shop.Cart.add(int,int)"),
        ("shop.Cart.Helper.twice", "calls", "shop.Cart.total2"),
    ] {
        if to == "shop.model.Item.Item" {
            // No declared constructor: nothing to call.
            assert!(!has(&c, from, kind, to), "{c:?}");
            continue;
        }
        assert!(has(&c, from, kind, to), "{from} {kind} {to} in {c:?}");
    }
    // Resolved overloads are exact (argument count).
    let r = t.resolution("src/shop/Cart.java").expect("resolved");
    assert!(
        r.edges
            .iter()
            .filter(|e| e.to.starts_with("shop.Cart.add"))
            .all(|e| e.candidates == 1)
    );
}

#[test]
fn java_overloads_of_one_argument_count_are_told_apart_by_argument_types() {
    let util = "package u;\n\npublic class Str {\n    public static String join(String a, String b) { return a; }\n    public static String join(int a, int b) { return null; }\n    public static String join(Object a, long b) { return null; }\n    public static int size(CharSequence s) { return 0; }\n    public static int size(int[] s) { return 0; }\n}\n";
    let user = "package u;\n\nclass User {\n    void go(String name, int n, long[] xs) {\n        Str.join(name, \"x\");\n        Str.join(1, n);\n        Str.join(this, 2L);\n        Str.size(name);\n    }\n}\n";
    let t = table(&[("u/Str.java", util), ("u/User.java", user)]);
    let e = edges(&t, "u/User.java");
    for to in [
        "u.Str.join(String,String)",
        "u.Str.join(int,int)",
        "u.Str.join(Object,long)",
        "u.Str.size(CharSequence)",
    ] {
        assert!(has(&e, "u.User.go", "calls", to), "{to} in {e:?}");
    }
    let r = t.resolution("u/User.java").expect("resolved");
    assert!(r.edges.iter().all(|e| e.candidates == 1), "{:?}", r.edges);
}
