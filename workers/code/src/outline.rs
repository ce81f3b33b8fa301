//! Structural extraction: the symbols a file defines (classes, interfaces, structs, enums,
//! traits, functions, methods — with qualified names, signatures and line spans) and what it
//! imports, read from a tree-sitter syntax tree.
//!
//! One walk per file over declaration-level nodes, with a table per language of which node
//! kinds define what. Function bodies are walked for declarations only (nested `def`s and
//! classes are how Python declares decorators and callbacks, JavaScript modules hide their
//! functions in a factory, Rust declares items local to a function); expressions, closures
//! and Go/Java/Kotlin function bodies are not entered. Callables that would share a
//! qualified name in one file are told apart afterwards ([`crate::overloads`]).
//! Parse errors do not fail a file: tree-sitter recovers, and the count of ERROR nodes is
//! reported so callers can tell a partial outline from a clean one.

use serde::{Deserialize, Serialize};
use tree_sitter::{Node, Parser};

use crate::lang::Language;
use crate::overloads;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SymbolKind {
    Class,
    Interface,
    Struct,
    Enum,
    Trait,
    /// Any other named type: Go `type ID int` / `type F func()`, type aliases (Rust `type`,
    /// TypeScript `type`, Kotlin `typealias`, Go `type A = B`).
    Type,
    Function,
    Method,
}

impl SymbolKind {
    pub fn as_str(self) -> &'static str {
        match self {
            SymbolKind::Class => "class",
            SymbolKind::Interface => "interface",
            SymbolKind::Struct => "struct",
            SymbolKind::Enum => "enum",
            SymbolKind::Trait => "trait",
            SymbolKind::Type => "type",
            SymbolKind::Function => "function",
            SymbolKind::Method => "method",
        }
    }

    pub fn parse(s: &str) -> Option<SymbolKind> {
        [
            SymbolKind::Class,
            SymbolKind::Interface,
            SymbolKind::Struct,
            SymbolKind::Enum,
            SymbolKind::Trait,
            SymbolKind::Type,
            SymbolKind::Function,
            SymbolKind::Method,
        ]
        .into_iter()
        .find(|k| k.as_str() == s)
    }

    /// Types that hold methods.
    pub fn is_type(self) -> bool {
        !matches!(self, SymbolKind::Function | SymbolKind::Method)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Symbol {
    pub kind: SymbolKind,
    pub name: String,
    /// `package.Outer.Inner.method`, `crate::module::Type::method`.
    pub qualified_name: String,
    /// Qualified name of the enclosing type (or Rust `impl` target), if any.
    pub parent: Option<String>,
    /// The declaration up to its body, whitespace collapsed.
    pub signature: String,
    /// 1-based, inclusive.
    pub line_start: usize,
    pub line_end: usize,
    pub byte_start: usize,
    pub byte_end: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Import {
    /// What is imported, as written (`java.util.List`, `./util`, `std::io::Read`).
    pub target: String,
    /// 1-based line of the import.
    pub line: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Outline {
    pub language: Language,
    /// Declared package (Java, Kotlin, Go) or the module derived from the path.
    pub package: Option<String>,
    pub symbols: Vec<Symbol>,
    pub imports: Vec<Import>,
    /// ERROR nodes in the tree: 0 for a clean parse.
    pub error_nodes: usize,
}

#[derive(Debug, thiserror::Error)]
pub enum OutlineError {
    #[error("the {0} grammar could not be loaded: {1}")]
    Grammar(&'static str, String),
    #[error("the parser gave up on this file")]
    Unparsed,
}

/// Where a declaration sits: the qualifier parts above it and what encloses it.
#[derive(Clone, Default)]
struct Ctx {
    qualifier: Vec<String>,
    /// Qualified name of the enclosing type or impl target (methods attach to it).
    parent: Option<String>,
    /// Inside a type body: functions here are methods.
    in_type: bool,
    /// Inside a Rust `impl Trait for Type`: the trait as written (`Display`, `From<u8>`).
    impl_trait: Option<String>,
}

/// What a node means for the outline.
enum Decl<'t> {
    /// Defines a symbol; its children are walked with it as the parent when it is a type.
    Symbol {
        kind: SymbolKind,
        name: String,
        body: Option<Node<'t>>,
    },
    /// Adds a qualifier without being a symbol (Rust `mod`/`impl`, TS namespaces, Kotlin
    /// companion objects); `in_type` when functions inside are methods.
    Scope {
        name: String,
        in_type: bool,
        body: Option<Node<'t>>,
    },
    /// A Rust `impl Trait for Type` block: a scope named by the type whose methods also know
    /// the trait (it tells apart `fmt` of `Debug` and of `Display`).
    TraitImpl {
        type_name: String,
        trait_name: String,
        body: Option<Node<'t>>,
    },
    /// A JavaScript object literal bound to a name (`const api = {…}`, `module.exports =
    /// {…}`): its function-valued members are methods qualified by the name, but the object
    /// is a value, not a type node.
    Object {
        name: String,
        body: Node<'t>,
    },
    Imports(Vec<String>),
    Package(String),
    /// Not a declaration itself, but may contain some (export wrappers, declaration lists).
    Descend,
    /// Nothing of interest below (expressions, function bodies).
    Skip,
}

fn text<'s>(node: Node<'_>, src: &'s str) -> &'s str {
    node.utf8_text(src.as_bytes()).unwrap_or("")
}

fn field<'t>(node: Node<'t>, name: &str) -> Option<Node<'t>> {
    node.child_by_field_name(name)
}

fn field_text(node: Node<'_>, name: &str, src: &str) -> Option<String> {
    field(node, name)
        .map(|n| text(n, src).to_string())
        .filter(|s| !s.is_empty())
}

fn first_named_of<'t>(node: Node<'t>, kinds: &[&str]) -> Option<Node<'t>> {
    let mut cursor = node.walk();

    node.named_children(&mut cursor)
        .find(|c| kinds.contains(&c.kind()))
}

fn has_child_token(node: Node<'_>, token: &str) -> bool {
    let mut cursor = node.walk();

    node.children(&mut cursor).any(|c| c.kind() == token)
}

fn unquote(s: &str) -> String {
    s.trim_matches(|c| c == '"' || c == '\'' || c == '`')
        .to_string()
}

/// The name of a type as used for qualification: `Foo<T>` → `Foo`, `&mut a::Foo` → `a::Foo`.
fn base_type_name(raw: &str) -> String {
    let t = raw
        .trim_start_matches('&')
        .trim_start_matches("mut ")
        .trim();
    let t = t.split('<').next().unwrap_or(t);
    t.split('[')
        .next()
        .unwrap_or(t)
        .trim_start_matches('*')
        .trim()
        .to_string()
}

fn classify<'t>(lang: Language, node: Node<'t>, src: &str, ctx: &Ctx) -> Decl<'t> {
    let name = |n: Node<'t>| field_text(n, "name", src);
    let symbol = |kind, n: Node<'t>, nm: Option<String>| match nm {
        Some(name) => Decl::Symbol {
            kind,
            name,
            body: field(n, "body"),
        },
        None => Decl::Skip,
    };
    let function_kind = if ctx.in_type {
        SymbolKind::Method
    } else {
        SymbolKind::Function
    };
    match lang {
        Language::Rust => match node.kind() {
            "struct_item" | "union_item" => symbol(SymbolKind::Struct, node, name(node)),
            "enum_item" => symbol(SymbolKind::Enum, node, name(node)),
            "trait_item" => symbol(SymbolKind::Trait, node, name(node)),
            // `type X = …;`, and associated types of traits (`type Item;`) and impls.
            "type_item" | "associated_type" => match name(node) {
                Some(name) => Decl::Symbol {
                    kind: SymbolKind::Type,
                    name,
                    body: None,
                },
                None => Decl::Skip,
            },
            "function_item" | "function_signature_item" => symbol(function_kind, node, name(node)),
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
            "mod_item" => match (name(node), field(node, "body")) {
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
            "extern_crate_declaration" => match name(node) {
                Some(n) => Decl::Imports(vec![n]),
                None => Decl::Skip,
            },
            "source_file" | "declaration_list" | "foreign_mod_item" => Decl::Descend,
            _ => Decl::Skip,
        },
        Language::Python => match node.kind() {
            "class_definition" => symbol(SymbolKind::Class, node, name(node)),
            "function_definition" => symbol(function_kind, node, name(node)),
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
        },
        Language::Java => match node.kind() {
            "package_declaration" => {
                match first_named_of(node, &["scoped_identifier", "identifier"]) {
                    Some(n) => Decl::Package(text(n, src).to_string()),
                    None => Decl::Skip,
                }
            }
            "import_declaration" => {
                match first_named_of(node, &["scoped_identifier", "identifier"]) {
                    Some(n) => {
                        let mut t = text(n, src).to_string();
                        if first_named_of(node, &["asterisk"]).is_some() {
                            t.push_str(".*");
                        }
                        Decl::Imports(vec![t])
                    }
                    None => Decl::Skip,
                }
            }
            "class_declaration" | "record_declaration" => {
                symbol(SymbolKind::Class, node, name(node))
            }
            "interface_declaration" | "annotation_type_declaration" => {
                symbol(SymbolKind::Interface, node, name(node))
            }
            "enum_declaration" => symbol(SymbolKind::Enum, node, name(node)),
            "method_declaration"
            | "constructor_declaration"
            | "compact_constructor_declaration" => symbol(SymbolKind::Method, node, name(node)),
            "program"
            | "class_body"
            | "interface_body"
            | "enum_body"
            | "enum_body_declarations"
            | "annotation_type_body" => Decl::Descend,
            _ => Decl::Skip,
        },
        Language::Kotlin => match node.kind() {
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
            "class_declaration" => {
                let nm =
                    first_named_of(node, &["type_identifier"]).map(|n| text(n, src).to_string());
                // `enum class X` (the keyword is a token child) or its enum body.
                let is_enum = has_child_token(node, "enum")
                    || first_named_of(node, &["enum_class_body"]).is_some();
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
                let nm =
                    first_named_of(node, &["simple_identifier"]).map(|n| text(n, src).to_string());
                match nm {
                    Some(name) => Decl::Symbol {
                        kind: function_kind,
                        name,
                        body: first_named_of(node, &["function_body"]),
                    },
                    None => Decl::Skip,
                }
            }
            "source_file" | "class_body" | "enum_class_body" | "import_list" => Decl::Descend,
            _ => Decl::Skip,
        },
        Language::Go => match node.kind() {
            "package_clause" => match first_named_of(node, &["package_identifier"]) {
                Some(n) => Decl::Package(text(n, src).to_string()),
                None => Decl::Skip,
            },
            "import_spec" => match field_text(node, "path", src) {
                Some(p) => Decl::Imports(vec![unquote(&p)]),
                None => Decl::Skip,
            },
            "function_declaration" => symbol(SymbolKind::Function, node, name(node)),
            "method_declaration" | "method_elem" => symbol(SymbolKind::Method, node, name(node)),
            "type_spec" => {
                let (kind, body) = match field(node, "type") {
                    Some(t) if t.kind() == "struct_type" => (SymbolKind::Struct, Some(t)),
                    Some(t) if t.kind() == "interface_type" => (SymbolKind::Interface, Some(t)),
                    // A named type over any other type: `type ID int`, `type F func(…)`.
                    _ => (SymbolKind::Type, None),
                };
                match name(node) {
                    // The "body" is the struct or interface type: its method elements are
                    // walked, and the signature reads `Store struct`.
                    Some(name) => Decl::Symbol { kind, name, body },
                    None => Decl::Skip,
                }
            }
            "type_alias" => match name(node) {
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
        },
        Language::JavaScript | Language::TypeScript | Language::Tsx => match node.kind() {
            "class_declaration" | "abstract_class_declaration" => {
                symbol(SymbolKind::Class, node, name(node))
            }
            "interface_declaration" => symbol(SymbolKind::Interface, node, name(node)),
            "enum_declaration" => symbol(SymbolKind::Enum, node, name(node)),
            "type_alias_declaration" => match name(node) {
                Some(name) => Decl::Symbol {
                    kind: SymbolKind::Type,
                    name,
                    body: None,
                },
                None => Decl::Skip,
            },
            "function_declaration" | "generator_function_declaration" | "function_signature" => {
                symbol(function_kind, node, name(node))
            }
            // Names may be quoted (`'=' (a) {…}`): the name is what is between the quotes.
            "method_definition" | "method_signature" | "abstract_method_signature" => {
                symbol(SymbolKind::Method, node, name(node).map(|n| unquote(&n)))
            }
            "variable_declarator" if is_require(node, src) => {
                let module = field(node, "value")
                    .and_then(|call| field(call, "arguments"))
                    .and_then(|args| first_named_of(args, &["string"]))
                    .map(|s| unquote(text(s, src)));
                match module {
                    Some(m) => Decl::Imports(vec![m]),
                    None => Decl::Skip,
                }
            }
            // A class field holding a function (`onClick = () => {…}`) is a method.
            "field_definition" | "public_field_definition" if ctx.in_type => {
                let is_fn = field(node, "value").is_some_and(|v| {
                    matches!(
                        v.kind(),
                        "arrow_function" | "function_expression" | "function"
                    )
                });
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
                            body: None,
                        }
                    }
                    _ => Decl::Skip,
                }
            }
            "variable_declarator" | "assignment_expression" | "pair"
                if field(node, "value")
                    .or_else(|| field(node, "right"))
                    .is_some_and(|v| v.kind() == "object") =>
            {
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
            // A member of an object literal holding a function: `{ run: function () {…} }`.
            "pair" if ctx.in_type => {
                let is_fn = field(node, "value").is_some_and(|v| {
                    matches!(
                        v.kind(),
                        "arrow_function"
                            | "function_expression"
                            | "function"
                            | "generator_function"
                    )
                });
                let name = field(node, "key")
                    .filter(|k| matches!(k.kind(), "property_identifier" | "string" | "number"));
                match (is_fn, name) {
                    (true, Some(n)) => Decl::Symbol {
                        kind: SymbolKind::Method,
                        name: unquote(text(n, src)),
                        body: None,
                    },
                    _ => Decl::Skip,
                }
            }
            "variable_declarator" => {
                let is_fn = field(node, "value").is_some_and(|v| {
                    matches!(
                        v.kind(),
                        "arrow_function"
                            | "function_expression"
                            | "function"
                            | "generator_function"
                    )
                });
                match (is_fn, field(node, "name")) {
                    (true, Some(n)) if n.kind() == "identifier" => Decl::Symbol {
                        kind: function_kind,
                        name: text(n, src).to_string(),
                        body: None,
                    },
                    _ => Decl::Skip,
                }
            }
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
            _ => Decl::Skip,
        },
    }
}

/// The paths a Rust use tree imports, one per leaf: `a::{B, c::D as E, f::*, self}` gives
/// `a::B`, `a::c::D`, `a::f::*` and `a` (a rename imports its path; comments are skipped).
fn rust_use_paths(node: Node<'_>, src: &str, prefix: &str, out: &mut Vec<String>) {
    let join = |p: &str, s: &str| {
        let s: String = s.split_whitespace().collect();
        match (p.is_empty(), s.is_empty()) {
            (true, _) => s,
            (false, true) => p.to_string(),
            (false, false) => format!("{p}::{s}"),
        }
    };
    match node.kind() {
        "line_comment" | "block_comment" => {}
        "use_as_clause" => {
            if let Some(path) = field(node, "path") {
                rust_use_paths(path, src, prefix, out);
            }
        }
        "scoped_use_list" => {
            let path = field(node, "path").map_or(String::new(), |p| text(p, src).to_string());
            let inner = join(prefix, &path);
            if let Some(list) = field(node, "list") {
                rust_use_paths(list, src, &inner, out);
            }
        }
        "use_list" => {
            let mut cursor = node.walk();
            let items: Vec<Node<'_>> = node.named_children(&mut cursor).collect();
            for item in items {
                rust_use_paths(item, src, prefix, out);
            }
        }
        // `{self}` imports the enclosing path itself.
        "self" if !prefix.is_empty() => out.push(prefix.to_string()),
        _ => {
            let t = join(prefix, text(node, src));
            if !t.is_empty() {
                out.push(t);
            }
        }
    }
}

/// A trait as one name segment: its last path segment with its generic arguments,
/// `std::fmt::Display` → `Display`, `core::convert::From<u8>` → `From<u8>`.
fn trait_segment(raw: &str) -> String {
    let t: String = raw.split_whitespace().collect();
    let (path, generics) = t.split_at(t.find('<').unwrap_or(t.len()));
    let last = path.rsplit("::").next().unwrap_or(path);
    format!("{last}{generics}")
}

/// `const x = require("m")` (CommonJS import).
fn is_require(node: Node<'_>, src: &str) -> bool {
    field(node, "value").is_some_and(|v| {
        v.kind() == "call_expression"
            && field(v, "function").is_some_and(|f| text(f, src) == "require")
    })
}

/// The signature: the declaration from its start to its body (or its first line), on one line.
fn signature(node: Node<'_>, body: Option<Node<'_>>, src: &str) -> String {
    let start = node.start_byte();
    // A Go type's "body" is its type expression: read the declaration's first line instead.
    let body = body.filter(|b| !matches!(b.kind(), "struct_type" | "interface_type"));
    let end = match body {
        Some(b) if b.start_byte() > start => b.start_byte(),
        _ => src[start..node.end_byte()]
            .find('\n')
            .map_or(node.end_byte(), |i| start + i),
    };
    let mut sig: String = src[start..end]
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    if sig.chars().count() > 240 {
        sig = sig.chars().take(239).collect::<String>() + "…";
    }
    sig.trim_end_matches(['{', ':', ' ', '=']).to_string()
}

fn count_errors(root: Node<'_>) -> usize {
    if !root.has_error() {
        return 0;
    }
    let mut errors = 0;
    let mut cursor = root.walk();
    'outer: loop {
        let node = cursor.node();
        if node.is_error() {
            errors += 1;
        }
        // Only descend where errors are (has_error is cached per node).
        if node.has_error() && cursor.goto_first_child() {
            continue;
        }
        while !cursor.goto_next_sibling() {
            if !cursor.goto_parent() {
                break 'outer;
            }
        }
    }
    errors
}

/// Parses `src` and extracts its outline. `path` gives the module of languages that do not
/// declare a package.
pub fn outline(lang: Language, path: &str, src: &str) -> Result<Outline, OutlineError> {
    let mut parser = Parser::new();
    parser
        .set_language(&lang.grammar())
        .map_err(|e| OutlineError::Grammar(lang.name(), e.to_string()))?;
    let tree = parser.parse(src, None).ok_or(OutlineError::Unparsed)?;
    let root = tree.root_node();
    let mut out = Outline {
        language: lang,
        package: lang.module_of(path),
        symbols: Vec::new(),
        imports: Vec::new(),
        error_nodes: count_errors(root),
    };
    let sep = lang.separator();
    // Explicit stack: deeply nested input must not overflow the call stack.
    let mut stack: Vec<(Node<'_>, Ctx)> = vec![(root, Ctx::default())];
    let mut package_prefix: Option<Vec<String>> = out.package.as_ref().map(|p| vec![p.clone()]);
    // Per symbol, what tells overloads apart (parameter types, trait, signature or body).
    let mut extras: Vec<overloads::Extra> = Vec::new();
    while let Some((node, ctx)) = stack.pop() {
        match classify(lang, node, src, &ctx) {
            Decl::Package(p) => {
                package_prefix = Some(vec![p.clone()]);
                out.package = Some(p);
            }
            Decl::Imports(targets) => {
                for target in targets {
                    out.imports.push(Import {
                        target,
                        line: node.start_position().row + 1,
                    });
                }
            }
            Decl::Symbol { kind, name, body } => {
                let mut parts = package_prefix.clone().unwrap_or_default();
                parts.extend(ctx.qualifier.iter().cloned());
                // Go methods belong to their receiver's type.
                let mut parent = ctx.parent.clone();
                if lang == Language::Go
                    && node.kind() == "method_declaration"
                    && let Some(recv) =
                        field(node, "receiver").and_then(|r| find_descendant(r, "type_identifier"))
                {
                    let t = text(recv, src).to_string();
                    parts.push(t.clone());
                    let mut p = package_prefix.clone().unwrap_or_default();
                    p.push(t);
                    parent = Some(p.join(sep));
                }
                parts.push(name.clone());
                let qualified_name = parts.join(sep);
                extras.push(overloads::Extra::of(
                    lang,
                    node,
                    src,
                    ctx.impl_trait.as_deref(),
                ));
                out.symbols.push(Symbol {
                    kind,
                    name,
                    qualified_name: qualified_name.clone(),
                    parent,
                    signature: signature(node, body, src),
                    line_start: node.start_position().row + 1,
                    line_end: node.end_position().row + 1,
                    byte_start: node.start_byte(),
                    byte_end: node.end_byte(),
                });
                if kind.is_type()
                    && let Some(body) = body
                {
                    let mut inner = ctx.clone();
                    inner
                        .qualifier
                        .push(parts.last().cloned().unwrap_or_default());
                    inner.parent = Some(qualified_name);
                    inner.in_type = true;
                    inner.impl_trait = None;
                    push_children(body, inner, &mut stack);
                } else if matches!(
                    lang,
                    Language::Python
                        | Language::Rust
                        | Language::JavaScript
                        | Language::TypeScript
                        | Language::Tsx
                ) && let Some(body) = body
                {
                    // Nested functions and types are definitions too (Python decorators and
                    // callbacks, JavaScript module-pattern functions, Rust items local to a
                    // function): qualified by the function, contained by the file.
                    let mut inner = ctx.clone();
                    inner
                        .qualifier
                        .push(parts.last().cloned().unwrap_or_default());
                    inner.parent = None;
                    inner.in_type = false;
                    push_children(body, inner, &mut stack);
                }
            }
            Decl::TraitImpl {
                type_name,
                trait_name,
                body,
            } => {
                if let Some(body) = body {
                    let mut inner = ctx.clone();
                    inner.qualifier.push(type_name);
                    inner.in_type = true;
                    let mut parts = package_prefix.clone().unwrap_or_default();
                    parts.extend(inner.qualifier.iter().cloned());
                    inner.parent = Some(parts.join(sep));
                    inner.impl_trait = Some(trait_name);
                    push_children(body, inner, &mut stack);
                }
            }
            Decl::Object { name, body } => {
                let mut inner = ctx.clone();
                inner.qualifier.push(name);
                inner.in_type = true;
                inner.parent = None;
                push_children(body, inner, &mut stack);
            }
            Decl::Scope {
                name,
                in_type,
                body,
            } => {
                if let Some(body) = body {
                    let mut inner = ctx.clone();
                    inner.qualifier.push(name);
                    inner.in_type = in_type;
                    inner.impl_trait = None;
                    if in_type {
                        let mut parts = package_prefix.clone().unwrap_or_default();
                        parts.extend(inner.qualifier.iter().cloned());
                        inner.parent = Some(parts.join(sep));
                    }
                    push_children(body, inner, &mut stack);
                }
            }
            Decl::Descend => push_children(node, ctx, &mut stack),
            Decl::Skip => {}
        }
    }
    overloads::disambiguate(lang, &mut out.symbols, extras);
    Ok(out)
}

/// Pushes `n`'s named children in reverse, so the stack yields them in source order.
fn push_children<'t>(n: Node<'t>, ctx: Ctx, stack: &mut Vec<(Node<'t>, Ctx)>) {
    let mut cursor = n.walk();
    let children: Vec<Node<'t>> = n.named_children(&mut cursor).collect();
    for c in children.into_iter().rev() {
        stack.push((c, ctx.clone()));
    }
}

fn find_descendant<'t>(node: Node<'t>, kind: &str) -> Option<Node<'t>> {
    let mut stack = vec![node];
    while let Some(n) = stack.pop() {
        if n.kind() == kind {
            return Some(n);
        }
        let mut cursor = n.walk();
        let children: Vec<Node<'t>> = n.named_children(&mut cursor).collect();
        stack.extend(children.into_iter().rev());
    }
    None
}
