//! Structural extraction: the symbols a file defines (classes, interfaces, structs, enums,
//! traits, functions, methods — with qualified names, signatures and line spans) and what it
//! imports, read from a tree-sitter syntax tree.
//!
//! One walk per file over declaration-level nodes, with a table per language of which node
//! kinds define what. Function bodies are walked for declarations only (nested `def`s and
//! classes are how Python declares decorators and callbacks, JavaScript modules hide their
//! functions in a factory, Rust declares items local to a function); expressions, closures
//! and Go/Java/Kotlin function bodies are not entered, except in JavaScript/TypeScript, where
//! every statement and expression is walked as anonymous code (a function in an `if`, a
//! class in a `return`, a callback's helpers are declarations like any other). Callables that would share a
//! qualified name in one file are told apart afterwards ([`crate::overloads`]).
//! Parse errors do not fail a file: tree-sitter recovers, and the count of ERROR nodes is
//! reported so callers can tell a partial outline from a clean one.

mod classify;
mod go_keys;
#[cfg(test)]
mod js_tests;
mod syntax;
mod walk;

use serde::{Deserialize, Serialize};
use tree_sitter::{Node, Parser};

use crate::lang::Language;

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
    /// A member assigned to a named owner outside its body (JavaScript
    /// `Foo.prototype.run = function () {…}`): a symbol qualified by the owner, whose member
    /// it is when the owner is a type declared earlier in the file.
    Member {
        owner: String,
        kind: SymbolKind,
        name: String,
        body: Option<Node<'t>>,
    },
    /// An anonymous function inside an expression (JavaScript IIFEs and callbacks): no
    /// symbol, but what its body declares is, with no qualifier of its own and never as
    /// methods.
    Anonymous {
        body: Node<'t>,
    },
    /// A statement or expression (JavaScript/TypeScript): no symbol, but its parts may
    /// declare some, walked like an anonymous function's body.
    Expression,
    Imports(Vec<String>),
    Package(String),
    /// Not a declaration itself, but may contain some (export wrappers, declaration lists).
    Descend,
    /// Nothing of interest below (expressions, function bodies).
    Skip,
}

/// Parses `src` and extracts its outline. `path` gives the module of languages that do not
/// declare a package.
pub fn outline(lang: Language, path: &str, src: &str) -> Result<Outline, OutlineError> {
    outline_with_facts(lang, path, src, false).map(|(o, _)| o)
}

/// [`outline`], and with `semantic` the file's [`crate::semantic::FileFacts`] read from the
/// same syntax tree (`None` for a language without semantic extraction).
pub fn outline_with_facts(
    lang: Language,
    path: &str,
    src: &str,
    semantic: bool,
) -> Result<(Outline, Option<crate::semantic::FileFacts>), OutlineError> {
    let mut parser = Parser::new();
    parser
        .set_language(&lang.grammar())
        .map_err(|e| OutlineError::Grammar(lang.name(), e.to_string()))?;
    let tree = parser.parse(src, None).ok_or(OutlineError::Unparsed)?;
    let root = tree.root_node();
    let out = Outline {
        language: lang,
        package: lang.module_of(path),
        symbols: Vec::new(),
        imports: Vec::new(),
        error_nodes: syntax::count_errors(root),
    };
    let outline = walk::Walk::new(lang, path, src, root, out).run();
    let facts = if semantic {
        crate::semantic::facts(&outline, root, src, path)
    } else {
        None
    };
    Ok((outline, facts))
}
