//! Evaluating a file's uses against the table: names through the scope chain, members through
//! types and their bases, calls to what they return. Rules per language: the module
//! documentation of [`super`].

use std::collections::HashSet;

use super::table::{FileUnit, SymbolTable};
use super::{Arg, Binding, Expr, Ref, RefKind, Resolution, SemanticEdge, TypeRef};
use crate::lang::Language;

/// How deep evaluation follows bindings, re-exports and bases before giving up.
const MAX_DEPTH: usize = 12;
/// Unresolved callee names kept per symbol.
const MAX_UNRESOLVED: usize = 24;
/// Candidates kept for an ambiguous use (more: no edge).
const MAX_CANDIDATES: usize = 4;

/// What an expression evaluates to.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Val {
    Module(String),
    /// The type itself (static access, a constructor call).
    Type(String),
    Instance(String),
    /// `super`: member lookup starts at this type's bases.
    Super(String),
    Callables(Vec<String>),
    Unknown,
}

/// Where an expression is read: a file and the symbol holding it.
#[derive(Clone, Copy)]
struct At<'a> {
    file: &'a FileUnit,
    symbol: Option<usize>,
}

pub(super) struct Resolver<'t> {
    t: &'t SymbolTable,
}

impl<'t> Resolver<'t> {
    pub(super) fn new(t: &'t SymbolTable) -> Resolver<'t> {
        Resolver { t }
    }

    /// `(type symbol index, base qualified name)` for the `extends` / `implements` of a file.
    pub(super) fn bases_of(&self, file: &FileUnit) -> Vec<(usize, String)> {
        file.facts
            .refs
            .iter()
            .filter(|r| matches!(r.kind, RefKind::Extends | RefKind::Implements))
            .filter_map(|r| {
                let at = At {
                    file,
                    symbol: file.symbols[r.from].enclosing,
                };
                match self.eval(at, &r.target, false, 0) {
                    Val::Instance(t) | Val::Type(t) => Some((r.from, t)),
                    _ => None,
                }
            })
            .collect()
    }

    pub(super) fn resolve_file(&self, file: &FileUnit) -> Resolution {
        let mut out = Resolution::default();
        let mut unresolved: HashSet<(usize, String)> = HashSet::new();
        for r in &file.facts.refs {
            let targets = self.resolve_ref(file, r);
            if targets.is_empty() {
                if r.kind == RefKind::Calls
                    && let Some(n) = r.target.last_name()
                    && out.unresolved.iter().filter(|(f, _)| *f == r.from).count() < MAX_UNRESOLVED
                    && unresolved.insert((r.from, n.to_string()))
                {
                    out.unresolved.push((r.from, n.to_string()));
                }
                continue;
            }
            if targets.len() > MAX_CANDIDATES {
                continue;
            }
            let n = targets.len();
            for to in targets {
                let to_type = self.t.kind_of(&to).is_some_and(|k| k.is_type());
                out.edges.push(SemanticEdge {
                    from: r.from,
                    kind: r.kind,
                    to,
                    to_type,
                    candidates: n,
                    line: r.line,
                });
            }
        }
        out.edges.sort();
        out.edges.dedup();
        out.unresolved.sort();
        out
    }

    /// The qualified names one use resolves to (empty: unresolved or outside the repository).
    fn resolve_ref(&self, file: &FileUnit, r: &Ref) -> Vec<String> {
        let holder = if matches!(r.kind, RefKind::Extends | RefKind::Implements) {
            file.symbols[r.from].enclosing
        } else {
            Some(r.from)
        };
        let at = At {
            file,
            symbol: holder,
        };
        if r.kind != RefKind::Calls {
            return match self.eval(at, &r.target, false, 0) {
                Val::Instance(t) | Val::Type(t) => vec![t],
                _ => Vec::new(),
            };
        }
        if r.constructor {
            let ty = match (&r.target, self.eval(at, &r.target, false, 0)) {
                (Expr::This, Val::Instance(t)) => Some(t),
                (Expr::Super, Val::Super(t)) => self.superclass(&t),
                (_, Val::Instance(t)) | (_, Val::Type(t)) => Some(t),
                _ => None,
            };
            let cs = ty
                .map(|t| self.constructors(file.language, &t, r.arity))
                .unwrap_or_default();
            return self.by_args(at, cs, &r.args);
        }
        match self.eval(at, &r.target, true, 0) {
            Val::Callables(cs) => self.by_args(at, self.by_arity(cs, r.arity), &r.args),
            // Python: calling a class calls its `__init__`.
            Val::Type(t) if file.language == Language::Python => {
                self.declared(&t, "__init__").unwrap_or_default()
            }
            _ => Vec::new(),
        }
    }

    /// The first base of `t` that is a class (Java `super(…)`).
    fn superclass(&self, t: &str) -> Option<String> {
        self.t
            .bases
            .get(t)?
            .iter()
            .find(|b| {
                self.t
                    .kind_of(b)
                    .is_some_and(|k| k != crate::outline::SymbolKind::Interface)
            })
            .cloned()
    }

    fn constructors(&self, lang: Language, t: &str, arity: Option<usize>) -> Vec<String> {
        let name = match lang {
            Language::Python => "__init__",
            _ => t.rsplit('.').next().unwrap_or(t),
        };
        self.by_arity(self.declared(t, name).unwrap_or_default(), arity)
    }

    /// Members named `name` declared by `t` itself.
    fn declared(&self, t: &str, name: &str) -> Option<Vec<String>> {
        self.t.members.get(t)?.get(name).cloned()
    }

    /// Callables whose parameter count admits `arity`; all of them when none or the count is
    /// unknown.
    fn by_arity(&self, cs: Vec<String>, arity: Option<usize>) -> Vec<String> {
        let Some(n) = arity else { return cs };
        let fit: Vec<String> = cs
            .iter()
            .filter(|c| self.params(c).is_none_or(|p| p == n))
            .cloned()
            .collect();
        if fit.is_empty() { cs } else { fit }
    }

    /// Among overloads of one argument count, those whose parameter types as written (in
    /// their keys) fit the arguments' types best, where known: literals, declared names,
    /// typed expressions. Array dimensions are not compared (declared types drop them).
    fn by_args(&self, at: At<'_>, cs: Vec<String>, args: &[Arg]) -> Vec<String> {
        if cs.len() < 2 || args.is_empty() {
            return cs;
        }
        let known: Vec<Option<Vec<String>>> = args.iter().map(|a| self.arg_types(at, a)).collect();
        let mut best = i64::MIN;
        let mut out = Vec::new();
        for c in &cs {
            let Some(params) = written_params(c) else {
                return cs;
            };
            if params.len() != args.len() {
                continue;
            }
            let score: i64 = params
                .iter()
                .zip(&known)
                .map(|(p, k)| k.as_ref().map_or(0, |ts| fit(p, ts)))
                .sum();
            if score > best {
                best = score;
                out = vec![c.clone()];
            } else if score == best {
                out.push(c.clone());
            }
        }
        if out.is_empty() { cs } else { out }
    }

    /// An argument's type and supertypes as simple names, when known.
    fn arg_types(&self, at: At<'_>, a: &Arg) -> Option<Vec<String>> {
        match a {
            Arg::Literal(t) => Some(vec![t.clone()]),
            Arg::Unknown => None,
            Arg::Expr(e) => {
                if let Expr::Name(n) = e
                    && let Some(t) = self.declared_type(at, n)
                {
                    let mut out = vec![t.last()?.clone()];
                    if let Some(q) = self.type_ref(at, &t, 1) {
                        out.extend(self.supertypes(&q));
                    }
                    return Some(out);
                }
                match self.eval(at, e, false, 0) {
                    Val::Instance(q) => {
                        let mut out = vec![simple(&q).to_string()];
                        out.extend(self.supertypes(&q));
                        Some(out)
                    }
                    _ => None,
                }
            }
        }
    }

    /// The declared type of a name in scope (a local, a parameter, a field of an enclosing
    /// type), as written.
    fn declared_type(&self, at: At<'_>, n: &str) -> Option<TypeRef> {
        let f = at.file;
        let mut s = at.symbol;
        while let Some(i) = s {
            if let Some(b) = binding(&f.facts.scopes[i].bindings, n) {
                return match b {
                    Binding::Type(t) => Some(t.clone()),
                    Binding::Value(_) => None,
                };
            }
            s = f.symbols[i].enclosing;
        }
        None
    }

    /// The simple names of a type's resolved bases, transitively.
    fn supertypes(&self, t: &str) -> Vec<String> {
        let mut out = Vec::new();
        let mut stack = vec![t.to_string()];
        let mut seen = HashSet::new();
        while let Some(x) = stack.pop() {
            if !seen.insert(x.clone()) {
                continue;
            }
            for b in self.t.bases.get(&x).into_iter().flatten() {
                out.push(simple(b).to_string());
                stack.push(b.clone());
            }
        }
        out
    }

    fn params(&self, qname: &str) -> Option<usize> {
        let (p, i) = self.t.defs.get(qname)?.first()?;
        self.t.files.get(p)?.facts.scopes.get(*i)?.params
    }

    fn eval(&self, at: At<'_>, e: &Expr, callee: bool, depth: usize) -> Val {
        if depth > MAX_DEPTH {
            return Val::Unknown;
        }
        match e {
            Expr::Name(n) => self.name(at, n, callee, depth + 1),
            Expr::This => self
                .enclosing_type(at)
                .map(Val::Instance)
                .unwrap_or(Val::Unknown),
            Expr::Super => self
                .enclosing_type(at)
                .map(Val::Super)
                .unwrap_or(Val::Unknown),
            Expr::Member(o, n) => {
                let v = self.eval(at, o, false, depth + 1);
                self.member(&v, n, callee, depth + 1)
            }
            Expr::Call(f) => match self.eval(at, f, true, depth + 1) {
                Val::Type(t) => Val::Instance(t),
                Val::Callables(cs) => cs
                    .iter()
                    .find_map(|c| self.returns(c, depth + 1))
                    .unwrap_or(Val::Unknown),
                _ => Val::Unknown,
            },
            Expr::Typed(t) => match self.type_ref(at, t, depth + 1) {
                Some(t) => Val::Instance(t),
                None => Val::Unknown,
            },
        }
    }

    /// The type a path names in `at`'s scope.
    fn type_ref(&self, at: At<'_>, t: &TypeRef, depth: usize) -> Option<String> {
        match self.eval(at, &Expr::path(t)?, false, depth) {
            Val::Type(t) => Some(t),
            _ => None,
        }
    }

    /// What a callable returns: an instance of its declared return type.
    fn returns(&self, qname: &str, depth: usize) -> Option<Val> {
        let (p, i) = self.t.defs.get(qname)?.first()?;
        let file = self.t.files.get(p)?;
        let r = file.facts.scopes.get(*i)?.returns.as_ref()?;
        let at = At {
            file,
            symbol: Some(*i),
        };
        self.type_ref(at, r, depth).map(Val::Instance)
    }

    fn enclosing_type(&self, at: At<'_>) -> Option<String> {
        let mut s = at.symbol;
        while let Some(i) = s {
            let d = &at.file.symbols[i];
            if d.kind.is_type() {
                return Some(d.qualified_name.clone());
            }
            s = d.enclosing;
        }
        None
    }

    /// A bare name: the scope chain, the file, its imports, its package, wildcard imports.
    fn name(&self, at: At<'_>, n: &str, callee: bool, depth: usize) -> Val {
        let f = at.file;
        let mut s = at.symbol;
        while let Some(i) = s {
            let d = &f.symbols[i];
            if d.kind.is_type() {
                // Python class bodies are not closures; Java members are in scope.
                if f.language == Language::Java {
                    let v = self.member(&Val::Type(d.qualified_name.clone()), n, callee, depth);
                    if v != Val::Unknown {
                        return v;
                    }
                }
            } else if let Some(b) = binding(&f.facts.scopes[i].bindings, n) {
                return self.binding(
                    At {
                        file: f,
                        symbol: Some(i),
                    },
                    b,
                    depth,
                );
            }
            s = d.enclosing;
        }
        let top = match &f.facts.module {
            Some(m) => format!("{m}.{n}"),
            None => n.to_string(),
        };
        if let Some(v) = self.def(&top) {
            return v;
        }
        if let Some(b) = binding(&f.facts.globals, n) {
            return self.binding(
                At {
                    file: f,
                    symbol: None,
                },
                b,
                depth,
            );
        }
        for i in &f.facts.imports {
            if i.local.as_deref() == Some(n) {
                return self.absolute(&i.target, depth);
            }
        }
        for i in f.facts.imports.iter().filter(|i| i.local.is_none()) {
            let v = self.member(&self.absolute(&i.target, depth), n, callee, depth);
            if v != Val::Unknown {
                return v;
            }
        }
        Val::Unknown
    }

    fn binding(&self, at: At<'_>, b: &Binding, depth: usize) -> Val {
        match b {
            Binding::Type(t) => match self.type_ref(at, t, depth) {
                Some(t) => Val::Instance(t),
                None => Val::Unknown,
            },
            // A name bound to a value: its value (a class bound to a name stays a class).
            Binding::Value(e) => self.eval(at, e, false, depth),
        }
    }

    /// A qualified name of the table as a value.
    fn def(&self, qname: &str) -> Option<Val> {
        let kind = self.t.kind_of(qname)?;
        Some(if kind.is_type() {
            Val::Type(qname.to_string())
        } else {
            Val::Callables(vec![qname.to_string()])
        })
    }

    /// An absolute dotted path: the longest prefix that is a symbol or a module (exactly, or
    /// else the one module ending with it), then members.
    fn absolute(&self, parts: &[String], depth: usize) -> Val {
        for k in (1..=parts.len()).rev() {
            let prefix = parts[..k].join(".");
            let v = self.def(&prefix).or_else(|| {
                self.t
                    .modules
                    .contains_key(&prefix)
                    .then(|| Val::Module(prefix.clone()))
            });
            if let Some(v) = v {
                return self.members(v, &parts[k..], depth);
            }
        }
        for k in (1..=parts.len()).rev() {
            let prefix = parts[..k].join(".");
            if let Some([one]) = self.t.module_suffix.get(&prefix).map(Vec::as_slice) {
                return self.members(Val::Module(one.clone()), &parts[k..], depth);
            }
        }
        Val::Unknown
    }

    fn members(&self, mut v: Val, rest: &[String], depth: usize) -> Val {
        for (i, p) in rest.iter().enumerate() {
            v = self.member(&v, p, i + 1 == rest.len(), depth + 1);
        }
        v
    }

    fn member(&self, v: &Val, n: &str, callee: bool, depth: usize) -> Val {
        if depth > MAX_DEPTH {
            return Val::Unknown;
        }
        match v {
            Val::Module(m) => self.module_member(m, n, depth),
            Val::Type(t) | Val::Instance(t) => {
                let mut seen = HashSet::new();
                self.type_member(t, n, callee, depth, &mut seen)
            }
            Val::Super(t) => {
                let mut seen = HashSet::new();
                seen.insert(t.clone());
                for b in self.t.bases.get(t).into_iter().flatten() {
                    let v = self.type_member(b, n, callee, depth, &mut seen);
                    if v != Val::Unknown {
                        return v;
                    }
                }
                Val::Unknown
            }
            Val::Callables(_) | Val::Unknown => Val::Unknown,
        }
    }

    /// A module's (package's) member: a symbol, a submodule, or a name its files bind (an
    /// import re-exported, a global).
    fn module_member(&self, m: &str, n: &str, depth: usize) -> Val {
        let q = format!("{m}.{n}");
        if let Some(v) = self.def(&q) {
            return v;
        }
        if self.t.modules.contains_key(&q) {
            return Val::Module(q);
        }
        for p in self.t.modules.get(m).into_iter().flatten() {
            let Some(file) = self.t.files.get(p) else {
                continue;
            };
            if file.language != Language::Python {
                continue;
            }
            if let Some(i) = file
                .facts
                .imports
                .iter()
                .find(|i| i.local.as_deref() == Some(n))
            {
                return self.absolute(&i.target, depth + 1);
            }
            if let Some(b) = binding(&file.facts.globals, n) {
                return self.binding(At { file, symbol: None }, b, depth + 1);
            }
        }
        Val::Unknown
    }

    /// A member of a type: declared (methods and nested types; fields typed), else inherited,
    /// depth-first through the bases. `callee`: a method is wanted before a field.
    fn type_member(
        &self,
        t: &str,
        n: &str,
        callee: bool,
        depth: usize,
        seen: &mut HashSet<String>,
    ) -> Val {
        if depth > MAX_DEPTH || !seen.insert(t.to_string()) {
            return Val::Unknown;
        }
        // A constructor is no member a name or a member access reaches (`new` and `this(…)`
        // call it): a type named like its enclosing type is the type itself.
        let simple = t.rsplit('.').next().unwrap_or(t);
        let declared = match self.declared(t, n) {
            Some(_) if n == simple => Vec::new(),
            d => d.unwrap_or_default(),
        };
        let (types, callables): (Vec<String>, Vec<String>) = declared
            .into_iter()
            .partition(|q| self.t.kind_of(q).is_some_and(|k| k.is_type()));
        let field = || self.field(t, n, depth);
        let found = if callee {
            (!callables.is_empty())
                .then(|| Val::Callables(callables.clone()))
                .or_else(|| types.first().map(|q| Val::Type(q.clone())))
                .or_else(field)
        } else {
            field()
                .or_else(|| types.first().map(|q| Val::Type(q.clone())))
                .or_else(|| (!callables.is_empty()).then(|| Val::Callables(callables.clone())))
        };
        if let Some(v) = found {
            return v;
        }
        for b in self.t.bases.get(t).into_iter().flatten() {
            let v = self.type_member(b, n, callee, depth + 1, seen);
            if v != Val::Unknown {
                return v;
            }
        }
        Val::Unknown
    }

    /// A field of type `t` (its bindings), as an instance of its type.
    fn field(&self, t: &str, n: &str, depth: usize) -> Option<Val> {
        for (p, i) in self.t.defs.get(t)? {
            let file = self.t.files.get(p)?;
            if let Some(b) = binding(&file.facts.scopes[*i].bindings, n) {
                let v = self.binding(
                    At {
                        file,
                        symbol: Some(*i),
                    },
                    b,
                    depth + 1,
                );
                if v != Val::Unknown {
                    return Some(v);
                }
            }
        }
        None
    }
}

fn simple(q: &str) -> &str {
    q.rsplit('.').next().unwrap_or(q)
}

/// The parameter types written in an overload's qualified name (`add(int[],T)` → `int`,
/// `T`), array dimensions and packages dropped; `None` for a name without a parameter list.
fn written_params(qname: &str) -> Option<Vec<String>> {
    let inner = qname.strip_suffix(')')?.rsplit_once('(')?.1;
    if inner.is_empty() {
        return Some(Vec::new());
    }
    Some(
        inner
            .split(',')
            .map(|p| {
                let p = p.trim().trim_end_matches("...").trim_end_matches("[]");
                let p = p.trim_end_matches("[]");
                simple(p).to_string()
            })
            .collect(),
    )
}

/// How well a parameter written `p` takes an argument of types `ts` (its own first, then its
/// supertypes): exact 3, a supertype 2, a conversion or a type variable 1, no fit -3.
fn fit(p: &str, ts: &[String]) -> i64 {
    let Some(t) = ts.first() else { return 0 };
    if p == t {
        return 3;
    }
    if ts.iter().any(|x| x == p) {
        return 2;
    }
    const PRIMITIVE: [&str; 8] = [
        "byte", "short", "char", "int", "long", "float", "double", "boolean",
    ];
    const BOXED: [&str; 8] = [
        "Byte",
        "Short",
        "Character",
        "Integer",
        "Long",
        "Float",
        "Double",
        "Boolean",
    ];
    let rank = |x: &str| PRIMITIVE.iter().position(|p| *p == x);
    let type_variable = p.len() <= 2 && p.chars().all(|c| c.is_ascii_uppercase());
    // byte < short < char < int < long < float < double; nothing widens to char.
    let widening = matches!((rank(t), rank(p)), (Some(a), Some(b)) if a < b && b < 7 && b != 2);
    let boxing = rank(t).is_some_and(|i| BOXED[i] == p) || rank(p).is_some_and(|i| BOXED[i] == t);
    let reference = rank(t).is_none()
        && matches!(p, "Object" | "CharSequence" if p == "Object" || t == "String" || t == "StringBuilder");
    if type_variable || widening || boxing || reference {
        1
    } else {
        -3
    }
}

fn binding<'a>(list: &'a [(String, Binding)], n: &str) -> Option<&'a Binding> {
    list.iter().find(|(k, _)| k == n).map(|(_, b)| b)
}
