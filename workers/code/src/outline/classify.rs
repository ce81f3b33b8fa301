//! What each syntax node means for the outline, one table (a `match` over node kinds) per
//! language.

use tree_sitter::Node;

use super::syntax::{
    base_type_name, field, field_text, first_named_of, has_child_token, is_require, rust_use_paths,
    text, trait_segment, unquote,
};
use super::{Ctx, Decl, SymbolKind};
use crate::lang::Language;

/// What `node` declares in `lang`, given where it sits (`ctx`).
pub(super) fn classify<'t>(lang: Language, node: Node<'t>, src: &str, ctx: &Ctx) -> Decl<'t> {
    match lang {
        Language::Rust => rust(node, src, ctx),
        Language::Python => python(node, src, ctx),
        Language::Java => java(node, src),
        Language::Kotlin => kotlin(node, src, ctx),
        Language::Go => go(node, src),
        Language::JavaScript | Language::TypeScript | Language::Tsx => js(node, src, ctx),
    }
}

/// The node's `name` field as text (absent or empty: `None`).
fn name(node: Node<'_>, src: &str) -> Option<String> {
    field_text(node, "name", src)
}

/// A symbol of `kind` named `name` whose body is the node's `body` field; nothing without a
/// name.
fn symbol<'t>(kind: SymbolKind, node: Node<'t>, name: Option<String>) -> Decl<'t> {
    match name {
        Some(name) => Decl::Symbol {
            kind,
            name,
            body: field(node, "body"),
        },
        None => Decl::Skip,
    }
}

/// What a function declared at `ctx` is: inside a type body, a method.
fn callable_kind(ctx: &Ctx) -> SymbolKind {
    if ctx.in_type {
        SymbolKind::Method
    } else {
        SymbolKind::Function
    }
}

/// Rust: items, `impl` blocks (plain and trait), inline modules, `use` and `extern crate`.
fn rust<'t>(node: Node<'t>, src: &str, ctx: &Ctx) -> Decl<'t> {
    match node.kind() {
        "struct_item" | "union_item" => symbol(SymbolKind::Struct, node, name(node, src)),
        "enum_item" => symbol(SymbolKind::Enum, node, name(node, src)),
        "trait_item" => symbol(SymbolKind::Trait, node, name(node, src)),
        // `type X = …;`, and associated types of traits (`type Item;`) and impls.
        "type_item" | "associated_type" => match name(node, src) {
            Some(name) => Decl::Symbol {
                kind: SymbolKind::Type,
                name,
                body: None,
            },
            None => Decl::Skip,
        },
        "function_item" | "function_signature_item" => {
            symbol(callable_kind(ctx), node, name(node, src))
        }
        "impl_item" => match (
            field_text(node, "type", src),
            field_text(node, "trait", src),
        ) {
            (Some(t), Some(trait_name)) => Decl::TraitImpl {
                type_name: base_type_name(&t),
                trait_name: trait_segment(&trait_name),
                body: field(node, "body"),
            },
            (Some(t), None) => Decl::Scope {
                name: base_type_name(&t),
                in_type: true,
                body: field(node, "body"),
            },
            _ => Decl::Skip,
        },
        "mod_item" => match (name(node, src), field(node, "body")) {
            (Some(n), Some(body)) => Decl::Scope {
                name: n,
                in_type: false,
                body: Some(body),
            },
            _ => Decl::Skip,
        },
        "use_declaration" => match field(node, "argument") {
            Some(a) => {
                let mut targets = Vec::new();
                rust_use_paths(a, src, "", &mut targets);
                Decl::Imports(targets)
            }
            None => Decl::Skip,
        },
        "extern_crate_declaration" => match name(node, src) {
            Some(n) => Decl::Imports(vec![n]),
            None => Decl::Skip,
        },
        "source_file" | "declaration_list" | "foreign_mod_item" => Decl::Descend,
        _ => Decl::Skip,
    }
}

/// Python: classes, functions, imports, and the compound statements that may hold them.
fn python<'t>(node: Node<'t>, src: &str, ctx: &Ctx) -> Decl<'t> {
    match node.kind() {
        "class_definition" => symbol(SymbolKind::Class, node, name(node, src)),
        "function_definition" => symbol(callable_kind(ctx), node, name(node, src)),
        "import_statement" => {
            let mut cursor = node.walk();
            let targets = node
                .children_by_field_name("name", &mut cursor)
                .map(|n| match n.kind() {
                    "aliased_import" => field_text(n, "name", src).unwrap_or_default(),
                    _ => text(n, src).to_string(),
                })
                .filter(|t| !t.is_empty())
                .collect();
            Decl::Imports(targets)
        }
        "import_from_statement" => match field_text(node, "module_name", src) {
            Some(m) => Decl::Imports(vec![m]),
            None => Decl::Skip,
        },
        "module" | "decorated_definition" | "block" => Decl::Descend,
        // `if TYPE_CHECKING:` / `try: import x` / `with …:` blocks hold imports and
        // definitions too.
        "if_statement" | "elif_clause" | "else_clause" | "try_statement" | "except_clause"
        | "finally_clause" | "with_statement" | "for_statement" | "while_statement" => {
            Decl::Descend
        }
        _ => Decl::Skip,
    }
}

/// Java: the package, imports, classes, records, interfaces, enums, methods and constructors.
fn java<'t>(node: Node<'t>, src: &str) -> Decl<'t> {
    match node.kind() {
        "package_declaration" => match first_named_of(node, &["scoped_identifier", "identifier"]) {
            Some(n) => Decl::Package(text(n, src).to_string()),
            None => Decl::Skip,
        },
        "import_declaration" => match first_named_of(node, &["scoped_identifier", "identifier"]) {
            Some(n) => {
                let mut t = text(n, src).to_string();
                if first_named_of(node, &["asterisk"]).is_some() {
                    t.push_str(".*");
                }
                Decl::Imports(vec![t])
            }
            None => Decl::Skip,
        },
        "class_declaration" | "record_declaration" => {
            symbol(SymbolKind::Class, node, name(node, src))
        }
        "interface_declaration" | "annotation_type_declaration" => {
            symbol(SymbolKind::Interface, node, name(node, src))
        }
        "enum_declaration" => symbol(SymbolKind::Enum, node, name(node, src)),
        "method_declaration" | "constructor_declaration" | "compact_constructor_declaration" => {
            symbol(SymbolKind::Method, node, name(node, src))
        }
        "program"
        | "class_body"
        | "interface_body"
        | "enum_body"
        | "enum_body_declarations"
        | "annotation_type_body" => Decl::Descend,
        _ => Decl::Skip,
    }
}

/// Kotlin: the package, imports, classes (and enum classes, interfaces), objects, companion
/// objects, type aliases and functions.
fn kotlin<'t>(node: Node<'t>, src: &str, ctx: &Ctx) -> Decl<'t> {
    match node.kind() {
        "package_header" => match first_named_of(node, &["identifier"]) {
            Some(n) => Decl::Package(text(n, src).to_string()),
            None => Decl::Skip,
        },
        "import_header" => match first_named_of(node, &["identifier"]) {
            Some(n) => {
                let mut t = text(n, src).to_string();
                if first_named_of(node, &["wildcard_import"]).is_some() {
                    t.push_str(".*");
                }
                Decl::Imports(vec![t])
            }
            None => Decl::Skip,
        },
        "class_declaration" => kotlin_class(node, src),
        "type_alias" => match first_named_of(node, &["type_identifier"]) {
            Some(n) => Decl::Symbol {
                kind: SymbolKind::Type,
                name: text(n, src).to_string(),
                body: None,
            },
            None => Decl::Skip,
        },
        "object_declaration" => match first_named_of(node, &["type_identifier"]) {
            Some(n) => Decl::Symbol {
                kind: SymbolKind::Class,
                name: text(n, src).to_string(),
                body: first_named_of(node, &["class_body"]),
            },
            None => Decl::Skip,
        },
        "companion_object" => Decl::Scope {
            name: first_named_of(node, &["type_identifier"])
                .map(|n| text(n, src).to_string())
                .unwrap_or_else(|| "Companion".into()),
            in_type: true,
            body: first_named_of(node, &["class_body"]),
        },
        "function_declaration" => {
            let nm = first_named_of(node, &["simple_identifier"]).map(|n| text(n, src).to_string());
            match nm {
                Some(name) => Decl::Symbol {
                    kind: callable_kind(ctx),
                    name,
                    body: first_named_of(node, &["function_body"]),
                },
                None => Decl::Skip,
            }
        }
        "source_file" | "class_body" | "enum_class_body" | "import_list" => Decl::Descend,
        _ => Decl::Skip,
    }
}

/// A Kotlin `class` declaration: an interface, an enum class or a class.
fn kotlin_class<'t>(node: Node<'t>, src: &str) -> Decl<'t> {
    let nm = first_named_of(node, &["type_identifier"]).map(|n| text(n, src).to_string());
    // `enum class X` (the keyword is a token child) or its enum body.
    let is_enum =
        has_child_token(node, "enum") || first_named_of(node, &["enum_class_body"]).is_some();
    let kind = if has_child_token(node, "interface") {
        SymbolKind::Interface
    } else if is_enum {
        SymbolKind::Enum
    } else {
        SymbolKind::Class
    };
    match nm {
        Some(name) => Decl::Symbol {
            kind,
            name,
            body: first_named_of(node, &["class_body", "enum_class_body"]),
        },
        None => Decl::Skip,
    }
}

/// Go: the package, imports, functions, methods, and named types (struct, interface, other).
fn go<'t>(node: Node<'t>, src: &str) -> Decl<'t> {
    match node.kind() {
        "package_clause" => match first_named_of(node, &["package_identifier"]) {
            Some(n) => Decl::Package(text(n, src).to_string()),
            None => Decl::Skip,
        },
        "import_spec" => match field_text(node, "path", src) {
            Some(p) => Decl::Imports(vec![unquote(&p)]),
            None => Decl::Skip,
        },
        "function_declaration" => symbol(SymbolKind::Function, node, name(node, src)),
        "method_declaration" | "method_elem" => symbol(SymbolKind::Method, node, name(node, src)),
        "type_spec" => {
            let (kind, body) = match field(node, "type") {
                Some(t) if t.kind() == "struct_type" => (SymbolKind::Struct, Some(t)),
                Some(t) if t.kind() == "interface_type" => (SymbolKind::Interface, Some(t)),
                // A named type over any other type: `type ID int`, `type F func(…)`.
                _ => (SymbolKind::Type, None),
            };
            match name(node, src) {
                // The "body" is the struct or interface type: its method elements are
                // walked, and the signature reads `Store struct`.
                Some(name) => Decl::Symbol { kind, name, body },
                None => Decl::Skip,
            }
        }
        "type_alias" => match name(node, src) {
            Some(name) => Decl::Symbol {
                kind: SymbolKind::Type,
                name,
                body: None,
            },
            None => Decl::Skip,
        },
        "source_file" | "import_declaration" | "import_spec_list" | "type_declaration" => {
            Decl::Descend
        }
        _ => Decl::Skip,
    }
}

/// JavaScript and TypeScript: classes, interfaces, enums, type aliases, functions, methods,
/// function-valued fields and bindings, object literals bound to a name, namespaces, imports
/// (`import` and `require`).
fn js<'t>(node: Node<'t>, src: &str, ctx: &Ctx) -> Decl<'t> {
    match node.kind() {
        // A named class expression (`cls => class Builder extends cls {…}`) too.
        "class_declaration" | "abstract_class_declaration" | "class" => {
            symbol(SymbolKind::Class, node, name(node, src))
        }
        "interface_declaration" => symbol(SymbolKind::Interface, node, name(node, src)),
        "enum_declaration" => symbol(SymbolKind::Enum, node, name(node, src)),
        "type_alias_declaration" => match name(node, src) {
            Some(name) => Decl::Symbol {
                kind: SymbolKind::Type,
                name,
                body: None,
            },
            None => Decl::Skip,
        },
        "function_declaration" | "generator_function_declaration" | "function_signature" => {
            symbol(callable_kind(ctx), node, name(node, src))
        }
        // A method of an object literal bound to no name (`f({ run() {} })`, `return {…}`)
        // is a value, not a symbol; what its body declares is.
        "method_definition" if !ctx.in_type => match field(node, "body") {
            Some(body) => Decl::Anonymous { body },
            None => Decl::Skip,
        },
        // Names may be quoted (`'=' (a) {…}`): the name is what is between the quotes.
        "method_definition" | "method_signature" | "abstract_method_signature" => symbol(
            SymbolKind::Method,
            node,
            name(node, src).map(|n| unquote(&n)),
        ),
        "variable_declarator" if is_require(node, src) => js_require(node, src),
        // A class field holding a function (`onClick = () => {…}`) is a method.
        "field_definition" | "public_field_definition" if ctx.in_type => js_field_method(node, src),
        // An object bound to a name; a member of such an object (`in_type`) names its own.
        "variable_declarator" | "assignment_expression"
            if field(node, "value")
                .or_else(|| field(node, "right"))
                .is_some_and(|v| v.kind() == "object") =>
        {
            js_object_binding(node, src)
        }
        "pair" if ctx.in_type && value_is(node, &["object"]) => js_object_binding(node, src),
        // A member of an object literal holding a function: `{ run: function () {…} }`.
        "pair" if ctx.in_type => js_member_function(node, src),
        "variable_declarator" => js_function_binding(node, src, ctx),
        "assignment_expression" => js_assignment(node, src),
        "internal_module" | "module" => match field(node, "name") {
            Some(n) => Decl::Scope {
                name: unquote(text(n, src)),
                in_type: false,
                body: field(node, "body"),
            },
            None => Decl::Skip,
        },
        "import_statement" => match field_text(node, "source", src) {
            Some(s) => Decl::Imports(vec![unquote(&s)]),
            None => Decl::Skip,
        },
        "program"
        | "export_statement"
        | "expression_statement"
        | "class_body"
        | "interface_body"
        | "object_type"
        | "statement_block"
        | "lexical_declaration"
        | "variable_declaration"
        | "ambient_declaration"
        | "enum_body" => Decl::Descend,
        _ => js_expression(node, src),
    }
}

/// Kinds below which nothing is declared: names, literals, comments, and TypeScript types
/// (a type literal's members are not symbols; its methods are read only in interfaces and
/// type aliases).
const JS_LEAVES: &[&str] = &[
    "identifier",
    "property_identifier",
    "private_property_identifier",
    "shorthand_property_identifier",
    "shorthand_property_identifier_pattern",
    "type_identifier",
    "string",
    "template_string",
    "number",
    "regex",
    "comment",
    "html_comment",
    "hash_bang_line",
    "this",
    "super",
    "true",
    "false",
    "null",
    "undefined",
    "import_clause",
    "export_clause",
    "formal_parameters",
    "type_annotation",
    "type_arguments",
    "type_parameters",
    "predefined_type",
    "decorator",
];

/// JavaScript/TypeScript statements and expressions: every one may hold declarations
/// (a `function` inside an `if`, a `class` in a `return`, a callback's helpers), so all are
/// walked as anonymous code, and an anonymous function found there entered.
fn js_expression<'t>(node: Node<'t>, src: &str) -> Decl<'t> {
    match node.kind() {
        // Functions inside expressions: an IIFE (`(function () {…})()`, `!function () {…}()`)
        // or a callback passed as an argument (`define([…], function () {…})`). The anonymous
        // function is no symbol; what it declares is, qualified as if declared where the
        // expression stands (what ctags reports, and how such module patterns are read).
        // A named function expression not bound to a name (`return function iterator()
        // {…}`, `items.map(function getPriority(…) {…})`) is a function of its own name; one
        // bound to a name (`const f = function g() {}`) is named by the binding instead, and
        // is never visited here (the binding enters its body).
        "function_expression" | "function" | "generator_function"
            if field(node, "name").is_some() =>
        {
            symbol(SymbolKind::Function, node, name(node, src))
        }
        "function_expression" | "function" | "arrow_function" | "generator_function" => {
            match field(node, "body") {
                Some(body) => Decl::Anonymous { body },
                None => Decl::Skip,
            }
        }
        k if JS_LEAVES.contains(&k) || node.named_child_count() == 0 => Decl::Skip,
        // Statements (`if`, `for`, `try`, `switch`, `return`, …) and expressions (calls,
        // object and array literals, assignments, …): what they declare sits where they stand,
        // never as a member of a type.
        _ => Decl::Expression,
    }
}

/// Whether the node's `value` field is one of `kinds` (a function expression, say).
fn value_is(node: Node<'_>, kinds: &[&str]) -> bool {
    field(node, "value").is_some_and(|v| kinds.contains(&v.kind()))
}

/// The body of the function held by the node's `value` field: walked like a declared
/// function's, for the functions declared inside.
fn value_body<'t>(node: Node<'t>) -> Option<Node<'t>> {
    field(node, "value").and_then(|v| field(v, "body"))
}

/// `const x = require("m")`: an import of `m`.
fn js_require<'t>(node: Node<'t>, src: &str) -> Decl<'t> {
    let module = field(node, "value")
        .and_then(|call| field(call, "arguments"))
        .and_then(|args| first_named_of(args, &["string"]))
        .map(|s| unquote(text(s, src)));
    match module {
        Some(m) => Decl::Imports(vec![m]),
        None => Decl::Skip,
    }
}

/// A class field holding a function (`onClick = () => {…}`): a method named by the field.
fn js_field_method<'t>(node: Node<'t>, src: &str) -> Decl<'t> {
    let is_fn = value_is(node, &["arrow_function", "function_expression", "function"]);
    let name = field(node, "property").or_else(|| field(node, "name"));
    match (is_fn, name) {
        (true, Some(n))
            if matches!(
                n.kind(),
                "property_identifier" | "private_property_identifier"
            ) =>
        {
            Decl::Symbol {
                kind: SymbolKind::Method,
                name: text(n, src).to_string(),
                body: value_body(node),
            }
        }
        // Any other initialiser may hold functions (`handlers = { on() {} }`,
        // `cache = memo(() => { function key() {} })`): walked as anonymous code.
        (false, _) => match field(node, "value") {
            Some(value) => Decl::Anonymous { body: value },
            None => Decl::Skip,
        },
        _ => Decl::Skip,
    }
}

/// An object literal bound to a name (`const api = {…}`, `module.exports = {…}`, `a: {…}`):
/// its members are qualified by the name.
fn js_object_binding<'t>(node: Node<'t>, src: &str) -> Decl<'t> {
    let name = field(node, "name")
        .or_else(|| field(node, "left"))
        .or_else(|| field(node, "key"))
        .map(|n| unquote(text(n, src)));
    let body = field(node, "value").or_else(|| field(node, "right"));
    match (name, body) {
        (Some(name), Some(body)) if !name.is_empty() => Decl::Object { name, body },
        _ => Decl::Skip,
    }
}

/// What a function value may be written as, for members and bindings.
const FUNCTION_VALUES: &[&str] = &[
    "arrow_function",
    "function_expression",
    "function",
    "generator_function",
];

/// A member of an object literal holding a function (`{ run: function () {…} }`): a method.
fn js_member_function<'t>(node: Node<'t>, src: &str) -> Decl<'t> {
    // Computed keys (`[TYPE_URL]: (m) => …`) are named as written, like computed methods.
    let name = field(node, "key").filter(|k| {
        matches!(
            k.kind(),
            "property_identifier" | "string" | "number" | "computed_property_name"
        )
    });
    match (value_is(node, FUNCTION_VALUES), name, field(node, "value")) {
        (true, Some(n), _) => Decl::Symbol {
            kind: SymbolKind::Method,
            name: unquote(text(n, src)),
            body: value_body(node),
        },
        // Any other value may hold declarations (`Cache: class Cache {…}`, a call with a
        // callback): walked as anonymous code.
        (false, _, Some(value)) => Decl::Anonymous { body: value },
        _ => Decl::Skip,
    }
}

/// An assignment declaring a callable the way CommonJS and pre-class JavaScript do (what the
/// TypeScript compiler binds as declarations in JavaScript files): `Foo.prototype.run =
/// function () {…}` is a method `Foo.run`, `exports.parse = …` and `module.exports.parse =
/// …` a function `parse`. Any other assignment is an expression (walked for what it holds).
fn js_assignment<'t>(node: Node<'t>, src: &str) -> Decl<'t> {
    let (Some(left), Some(right)) = (field(node, "left"), field(node, "right")) else {
        return Decl::Skip;
    };
    let property = field(left, "property").filter(|p| p.kind() == "property_identifier");
    let object = field(left, "object");
    if left.kind() != "member_expression" || !FUNCTION_VALUES.contains(&right.kind()) {
        return Decl::Expression;
    }
    let (Some(property), Some(object)) = (property, object) else {
        return Decl::Expression;
    };
    let name = text(property, src).to_string();
    let body = field(right, "body");
    let object_text = text(object, src);
    // `Foo.prototype.run`: the owner is `Foo` (a name or a dotted path of names).
    let owner = (object.kind() == "member_expression")
        .then(|| (field(object, "object"), field(object, "property")))
        .and_then(|(o, p)| Some((o?, p?)))
        .filter(|(_, p)| text(*p, src) == "prototype")
        .map(|(o, _)| text(o, src))
        .filter(|o| is_name_path(o));
    match owner {
        Some(owner) => Decl::Member {
            owner: owner.to_string(),
            kind: SymbolKind::Method,
            name,
            body,
        },
        None if matches!(object_text, "exports" | "module.exports") => Decl::Symbol {
            kind: SymbolKind::Function,
            name,
            body,
        },
        None => Decl::Expression,
    }
}

/// `Foo`, `a.b.Foo`: names joined by dots, nothing computed.
fn is_name_path(s: &str) -> bool {
    !s.is_empty()
        && s.split('.').all(|part| {
            !part.is_empty()
                && part
                    .chars()
                    .all(|c| c.is_alphanumeric() || c == '_' || c == '$')
        })
}

/// A variable bound to a function (`const run = () => {…}`): a function (a method in a type).
fn js_function_binding<'t>(node: Node<'t>, src: &str, ctx: &Ctx) -> Decl<'t> {
    match (value_is(node, FUNCTION_VALUES), field(node, "name")) {
        (true, Some(n)) if n.kind() == "identifier" => Decl::Symbol {
            kind: callable_kind(ctx),
            name: text(n, src).to_string(),
            body: value_body(node),
        },
        // Any other value may hold functions (`const ajax = (() => { function f() {} })()`).
        (false, _) => Decl::Descend,
        _ => Decl::Skip,
    }
}
