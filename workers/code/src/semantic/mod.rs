//! Code semantics from the syntax tree: `calls`, `extends`, `implements` and `uses_type`
//! edges, resolved against a per-repository symbol table built from the structural pass.
//!
//! Two steps, both without I/O:
//! 1. **Facts** ([`facts`]): while a file is outlined, the same syntax tree is walked once more
//!    for what its symbols *use* — call sites (the callee as an expression: `f`, `self.f`,
//!    `mod.f`, `x.f` with `x` a typed local, `Foo()` / `new Foo()`), base types, and the
//!    types named in signatures, fields and annotations — and for what names are bound where
//!    (imports and their aliases, parameters and locals with their declared or assigned
//!    values, fields, return types). Nothing is resolved here: a file's facts depend only on
//!    its own text.
//! 2. **Resolution** ([`SymbolTable`]): the facts of every file of a branch form the table —
//!    qualified names, members by simple name, modules or packages, resolved base types.
//!    Each use is evaluated in its file's scope chain; a use that does not resolve to a
//!    symbol defined in the repository gives no edge (calls keep the callee's name in the
//!    caller's `callsUnresolved` property): an edge never points at a guessed node.
//!
//! Every edge is evidenced by the chunk holding the use, which the write path also gives to
//! both endpoints. An edge into another file's symbol therefore lives exactly as long as the
//! using file says so: when the target's file changes, [`SymbolTable::update`] names the files
//! whose resolution changed, and the indexer writes them again (their chunks unchanged, so
//! nothing is embedded again); the stale edges lose their evidence and go, and a target node
//! kept only by them goes with them.
//!
//! ## Resolution rules, per language
//!
//! Common to all: a name is looked up innermost first — locals and parameters of the
//! enclosing callables, then (Java) the members of the enclosing types and their bases, then
//! the file's own top-level definitions, its imports (aliases included), its package (Java)
//! and wildcard imports. `self` / `this` is an instance of the enclosing type; `super` starts
//! the member lookup at its bases. A member of an instance is looked up in its type, then
//! depth-first in its resolved bases. A local's type is its declared type, else the type of
//! the value first assigned to it (a constructor call, a call of a function with a declared
//! return type, another typed name); flow is not followed.
//!
//! - **Python**: modules from paths (`pkg/sub/mod.py` → `pkg.sub.mod`, a leading `src/`
//!   dropped); an absolute import that names no module exactly resolves to the one module
//!   whose name ends with it (a package below another directory), relative imports against the
//!   file's package; a module's names include what it imports (re-exports through
//!   `__init__.py`). Class scopes are not closures: inside a method, a bare name is never a
//!   class attribute. `self.x = …` in any method types the field `x`. `Foo()` calls
//!   `Foo.__init__` when the class declares it (else no edge). Annotations (parameters,
//!   returns, class-level and `self.` fields, strings included) give `uses_type` and types
//!   for inference (`Optional[X]` and `X | None` read as `X`). Bases are `extends`.
//! - **Java**: packages from `package`, single-type, on-demand and static imports, nested
//!   types of the enclosing types and of their bases, same-package types; `extends` for a
//!   class's superclass and an interface's super-interfaces, `implements` for a class's,
//!   enum's or record's interfaces. `new T(…)`, `this(…)` and `super(…)` call `T`'s
//!   constructors. Overloads: candidates are filtered by argument count; when several
//!   remain, every one is kept with `confidence` 1/n (no argument types are inferred).
//!   `uses_type`: parameter, return and field types (generic arguments included) and
//!   annotations.
//! - Rust, Go, JavaScript, TypeScript, Kotlin: no semantic edges yet (structure only).

mod facts;
mod graph;
mod java;
mod python;
mod resolve;
mod table;
#[cfg(test)]
mod tests;

use serde::{Deserialize, Serialize};

use crate::lang::Language;

pub use facts::facts;
pub use graph::{semantic_edges, unresolved_by_symbol};
pub use table::{FileUnit, SymbolTable};

/// Bump when what resolution yields changes, so every file's edges are derived again.
pub const SEMANTIC_VERSION: &str = "semantic-v1";

/// Whether files of `lang` have semantic edges (facts are extracted and resolved).
pub fn supported(lang: Language) -> bool {
    matches!(lang, Language::Python | Language::Java)
}

/// Semantic edge types (the CPG vocabulary of [`crate::cpg::CPG_EDGE_TYPES`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum RefKind {
    Calls,
    Extends,
    Implements,
    UsesType,
}

impl RefKind {
    pub fn as_str(self) -> &'static str {
        match self {
            RefKind::Calls => "calls",
            RefKind::Extends => "extends",
            RefKind::Implements => "implements",
            RefKind::UsesType => "uses_type",
        }
    }
}

/// A type as written: its dotted path, generic arguments dropped (`Map.Entry`, `pkg.Foo`).
pub type TypeRef = Vec<String>;

/// An expression as far as resolution reads it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Expr {
    Name(String),
    /// `self` / `this`: an instance of the enclosing type.
    This,
    /// `super` (Java) / `super()` (Python): member lookup starts at the enclosing type's bases.
    Super,
    Member(Box<Expr>, String),
    /// The value a call of the expression returns (an instance, for a type).
    Call(Box<Expr>),
    /// An instance of a type as written (`new T()`, a cast, a declared type).
    Typed(TypeRef),
}

impl Expr {
    /// `a.b.c` as `Member(Member(Name(a), b), c)`.
    pub fn path(parts: &[String]) -> Option<Expr> {
        let (first, rest) = parts.split_first()?;
        Some(rest.iter().fold(Expr::Name(first.clone()), |e, p| {
            Expr::Member(Box::new(e), p.clone())
        }))
    }

    /// The name a use finally designates (the last member, or the name), if any.
    pub fn last_name(&self) -> Option<&str> {
        match self {
            Expr::Name(n) | Expr::Member(_, n) => Some(n),
            Expr::Typed(t) => t.last().map(String::as_str),
            Expr::Call(e) => e.last_name(),
            Expr::This | Expr::Super => None,
        }
    }

    /// Every name the expression mentions (for the index of who uses what).
    fn names<'a>(&'a self, out: &mut Vec<&'a str>) {
        match self {
            Expr::Name(n) => out.push(n),
            Expr::Member(e, n) => {
                out.push(n);
                e.names(out);
            }
            Expr::Call(e) => e.names(out),
            Expr::Typed(t) => out.extend(t.iter().map(String::as_str)),
            Expr::This | Expr::Super => {}
        }
    }
}

/// What a name is bound to in a scope.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Binding {
    /// Declared or annotated with this type.
    Type(TypeRef),
    /// Assigned this value.
    Value(Expr),
}

/// One import: `local` names `target` (dotted parts); a wildcard has no local name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ImportBinding {
    pub local: Option<String>,
    pub target: Vec<String>,
    /// Python: the target is a module (`import a.b`), not a name inside one.
    pub module: bool,
    pub line: usize,
}

/// Per outline symbol: the names it binds and what it returns.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ScopeFacts {
    /// Callables: parameters and locals; types: fields (and Python class attributes).
    pub bindings: Vec<(String, Binding)>,
    pub returns: Option<TypeRef>,
    /// Python: a method whose first parameter is not the instance (`@staticmethod`).
    pub static_method: bool,
    /// Java: how many arguments a call passes (`None`: variable, or not known).
    pub params: Option<usize>,
}

/// An argument of a call as far as its type is known from syntax.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Arg {
    /// A literal of this type (`String`, `int`, `char`, …).
    Literal(String),
    Expr(Expr),
    Unknown,
}

/// One use: from the outline symbol `from`, of `target`, on `line`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Ref {
    pub from: usize,
    pub kind: RefKind,
    /// For calls, the callee; for the other kinds, the type (an [`Expr::Typed`] or a path).
    pub target: Expr,
    /// Arguments passed, when countable (no splats).
    pub arity: Option<usize>,
    /// `new T(…)`, `this(…)`, `super(…)`: the target is a type whose constructor is called.
    pub constructor: bool,
    /// Java: the arguments, which tell overloads of one argument count apart.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<Arg>,
    pub line: usize,
}

/// What a file says about names: bindings, imports and uses, by outline symbol index.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileFacts {
    /// The qualified-name prefix of the file's top-level symbols (module or package).
    pub module: Option<String>,
    pub imports: Vec<ImportBinding>,
    /// One per outline symbol, same order.
    pub scopes: Vec<ScopeFacts>,
    /// Module-level bindings (Python globals).
    pub globals: Vec<(String, Binding)>,
    pub refs: Vec<Ref>,
}

impl FileFacts {
    /// Every name the file's uses, bindings and imports mention.
    pub(crate) fn mentioned(&self) -> std::collections::BTreeSet<String> {
        let mut names: Vec<&str> = Vec::new();
        for r in &self.refs {
            r.target.names(&mut names);
        }
        let bindings = self
            .scopes
            .iter()
            .flat_map(|s| s.bindings.iter())
            .chain(self.globals.iter());
        for (_, b) in bindings {
            match b {
                Binding::Type(t) => names.extend(t.iter().map(String::as_str)),
                Binding::Value(e) => e.names(&mut names),
            }
        }
        for s in &self.scopes {
            if let Some(r) = &s.returns {
                names.extend(r.iter().map(String::as_str));
            }
        }
        for i in &self.imports {
            names.extend(i.target.iter().map(String::as_str));
        }
        names.into_iter().map(str::to_string).collect()
    }
}

/// A resolved use: from outline symbol `from` to the symbol `to` (a qualified name).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct SemanticEdge {
    pub from: usize,
    pub kind: RefKind,
    pub to: String,
    /// Whether `to` is a type (its key has no `()`).
    pub to_type: bool,
    /// Candidates the use had (1: exact); the edge's confidence is 1 / this.
    pub candidates: usize,
    pub line: usize,
}

/// A file's resolution: its edges, and per symbol the callees that resolved to nothing in the
/// repository (names only).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Resolution {
    pub edges: Vec<SemanticEdge>,
    pub unresolved: Vec<(usize, String)>,
}

impl Resolution {
    /// A stable digest of the resolution (part of the file's fingerprint).
    pub fn digest(&self) -> String {
        let mut s = String::from(SEMANTIC_VERSION);
        for e in &self.edges {
            s.push_str(&format!(
                "\n{} {} {} {} {} {}",
                e.from,
                e.kind.as_str(),
                e.to,
                e.to_type,
                e.candidates,
                e.line
            ));
        }
        for (i, n) in &self.unresolved {
            s.push_str(&format!("\n? {i} {n}"));
        }
        evident_core::hashing::content_hash(&s)
    }
}
