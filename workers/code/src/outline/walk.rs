//! The walk over one file's declarations: an explicit stack of (node, context), each node
//! classified, and what it declares recorded in the outline.

use tree_sitter::Node;

use super::classify::classify;
use super::go_keys;
use super::syntax::{field, find_descendant, signature, text};
use super::{Ctx, Decl, Import, Outline, Symbol, SymbolKind};
use crate::lang::Language;
use crate::overloads;

/// The state of one walk: the outline so far and the nodes still to visit.
pub(super) struct Walk<'t, 's> {
    lang: Language,
    src: &'s str,
    /// The language's qualified-name separator (`::` or `.`).
    sep: &'static str,
    /// The package (declared, or derived from the path): the first part of qualified names.
    package_prefix: Option<Vec<String>>,
    /// Explicit stack: deeply nested input must not overflow the call stack.
    stack: Vec<(Node<'t>, Ctx)>,
    out: Outline,
    /// Per symbol, what tells overloads apart (parameter types, trait, signature or body).
    extras: Vec<overloads::Extra>,
    /// The file's path (Go qualifies symbols by directory, see [`go_keys`]).
    path: &'s str,
    /// Go: the package qualifier without this file's build variant.
    go_base: Option<String>,
}

impl<'t, 's> Walk<'t, 's> {
    /// A walk from `root` filling `out` (whose package, if any, qualifies the names).
    pub(super) fn new(
        lang: Language,
        path: &'s str,
        src: &'s str,
        root: Node<'t>,
        out: Outline,
    ) -> Self {
        Walk {
            lang,
            src,
            sep: lang.separator(),
            package_prefix: out.package.as_ref().map(|p| vec![p.clone()]),
            stack: vec![(root, Ctx::default())],
            out,
            extras: Vec::new(),
            path,
            go_base: None,
        }
    }

    /// Visits every node in source order, then tells overloads apart; the finished outline.
    pub(super) fn run(mut self) -> Outline {
        while let Some((node, ctx)) = self.stack.pop() {
            self.visit(node, ctx);
        }
        self.go_receivers_declared_elsewhere();
        overloads::disambiguate(self.lang, &mut self.out.symbols, self.extras);
        self.out
    }

    /// Records what `node` declares and queues what is to be walked below it.
    fn visit(&mut self, node: Node<'t>, ctx: Ctx) {
        match classify(self.lang, node, self.src, &ctx) {
            Decl::Package(p) => {
                let prefix = if self.lang == Language::Go {
                    let (variant, base) = go_keys::qualifier(self.path, &p, self.src);
                    self.go_base = Some(base);
                    variant
                } else {
                    p.clone()
                };
                self.package_prefix = Some(vec![prefix]);
                self.out.package = Some(p);
            }
            Decl::Imports(targets) => {
                for target in targets {
                    self.out.imports.push(Import {
                        target,
                        line: node.start_position().row + 1,
                    });
                }
            }
            Decl::Symbol { kind, name, body } => self.symbol(node, &ctx, kind, name, body),
            Decl::TraitImpl {
                type_name,
                trait_name,
                body,
            } => {
                if let Some(body) = body {
                    let mut inner = ctx.clone();
                    inner.qualifier.push(type_name);
                    inner.in_type = true;
                    inner.parent = Some(self.qualified(&inner.qualifier).join(self.sep));
                    inner.impl_trait = Some(trait_name);
                    self.push_children(body, inner);
                }
            }
            Decl::Object { name, body } => {
                let mut inner = ctx.clone();
                inner.qualifier.push(name);
                inner.in_type = true;
                inner.parent = None;
                self.push_children(body, inner);
            }
            Decl::Member {
                owner,
                kind,
                name,
                body,
            } => self.member(node, ctx, owner, kind, name, body),
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
                        inner.parent = Some(self.qualified(&inner.qualifier).join(self.sep));
                    }
                    self.push_children(body, inner);
                }
            }
            // A block, or an arrow function's expression body (which may hold more).
            Decl::Anonymous { body } => self.stack.push((body, anonymous(ctx))),
            Decl::Expression => self.push_children(node, anonymous(ctx)),
            Decl::Descend => self.push_children(node, ctx),
            Decl::Skip => {}
        }
    }

    /// Records a member assigned to `owner` outside its body (`Foo.prototype.run = …`):
    /// qualified by the owner, and its member when the owner is a type declared earlier.
    fn member(
        &mut self,
        node: Node<'t>,
        mut ctx: Ctx,
        owner: String,
        kind: SymbolKind,
        name: String,
        body: Option<Node<'t>>,
    ) {
        ctx.qualifier.push(owner);
        let owner = self.qualified(&ctx.qualifier).join(self.sep);
        ctx.parent = self
            .out
            .symbols
            .iter()
            .any(|s| s.kind.is_type() && s.qualified_name == owner)
            .then_some(owner);
        ctx.in_type = true;
        self.symbol(node, &ctx, kind, name, body);
    }

    /// Go, in a build-variant file: a method whose receiver type is not declared in this file
    /// belongs to the plain (variant-free) type.
    fn go_receivers_declared_elsewhere(&mut self) {
        let (Some(base), Some(prefix)) = (&self.go_base, self.package_prefix.as_ref()) else {
            return;
        };
        let variant = &prefix[0];
        if variant == base {
            return;
        }
        let local: std::collections::HashSet<String> = self
            .out
            .symbols
            .iter()
            .filter(|s| s.kind.is_type())
            .map(|s| s.qualified_name.clone())
            .collect();
        let from = format!("{variant}{}", self.sep);
        for s in &mut self.out.symbols {
            if let Some(p) = &s.parent
                && !local.contains(p)
                && let Some(rest) = p.strip_prefix(&from)
            {
                s.parent = Some(format!("{base}{}{rest}", self.sep));
            }
        }
    }

    /// The package prefix followed by `qualifier`.
    fn qualified(&self, qualifier: &[String]) -> Vec<String> {
        let mut parts = self.package_prefix.clone().unwrap_or_default();
        parts.extend(qualifier.iter().cloned());
        parts
    }

    /// Records the symbol `node` declares, then queues its body.
    fn symbol(
        &mut self,
        node: Node<'t>,
        ctx: &Ctx,
        kind: SymbolKind,
        name: String,
        body: Option<Node<'t>>,
    ) {
        let (qualified_name, parent) = self.qualify(node, ctx, &name);
        self.extras.push(overloads::Extra::of(
            self.lang,
            node,
            self.src,
            ctx.impl_trait.as_deref(),
        ));
        self.out.symbols.push(Symbol {
            kind,
            name: name.clone(),
            qualified_name: qualified_name.clone(),
            parent,
            signature: signature(node, body, self.src),
            line_start: node.start_position().row + 1,
            line_end: node.end_position().row + 1,
            byte_start: node.start_byte(),
            byte_end: node.end_byte(),
        });
        if let Some(body) = body {
            self.symbol_body(ctx, kind, name, qualified_name, body);
        }
    }

    /// The qualified name of symbol `name` declared by `node`, and its parent's.
    fn qualify(&self, node: Node<'t>, ctx: &Ctx, name: &str) -> (String, Option<String>) {
        let mut parts = self.qualified(&ctx.qualifier);
        let mut parent = ctx.parent.clone();
        // Go methods belong to their receiver's type.
        if self.lang == Language::Go
            && node.kind() == "method_declaration"
            && let Some(recv) =
                field(node, "receiver").and_then(|r| find_descendant(r, "type_identifier"))
        {
            let t = text(recv, self.src).to_string();
            parts.push(t.clone());
            let mut p = self.package_prefix.clone().unwrap_or_default();
            p.push(t);
            parent = Some(p.join(self.sep));
        }
        parts.push(name.to_string());
        (parts.join(self.sep), parent)
    }

    /// Queues the body of a symbol: a type's members have it as parent; functions of the
    /// languages that nest definitions are entered for those.
    fn symbol_body(
        &mut self,
        ctx: &Ctx,
        kind: SymbolKind,
        name: String,
        qualified_name: String,
        body: Node<'t>,
    ) {
        if kind.is_type() {
            let mut inner = ctx.clone();
            inner.qualifier.push(name);
            inner.parent = Some(qualified_name);
            inner.in_type = true;
            inner.impl_trait = None;
            self.push_children(body, inner);
        } else if matches!(
            self.lang,
            Language::Python
                | Language::Rust
                | Language::JavaScript
                | Language::TypeScript
                | Language::Tsx
        ) {
            // Nested functions and types are definitions too (Python decorators and
            // callbacks, JavaScript module-pattern functions, Rust items local to a
            // function): qualified by the function, contained by the file.
            let mut inner = ctx.clone();
            inner.qualifier.push(name);
            inner.parent = None;
            inner.in_type = false;
            self.push_children(body, inner);
        }
    }

    /// Pushes `n`'s named children in reverse, so the stack yields them in source order.
    fn push_children(&mut self, n: Node<'t>, ctx: Ctx) {
        let mut cursor = n.walk();
        let children: Vec<Node<'t>> = n.named_children(&mut cursor).collect();
        for c in children.into_iter().rev() {
            self.stack.push((c, ctx.clone()));
        }
    }
}

/// The context of anonymous code (a function's body in an expression, a JavaScript statement
/// or expression): the qualifier where it stands, no parent, never a type body.
fn anonymous(mut ctx: Ctx) -> Ctx {
    ctx.in_type = false;
    ctx.parent = None;
    ctx.impl_trait = None;
    ctx
}
