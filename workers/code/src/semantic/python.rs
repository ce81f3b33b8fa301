//! Python facts: imports with their aliases (relative ones made absolute), parameters,
//! assignments and `self.` fields with their annotations or values, calls, bases, and the
//! types named in annotations.

use tree_sitter::Node;

use super::facts::{SymbolSpans, arity, field, line, named_children, text};
use super::{Binding, Expr, FileFacts, ImportBinding, Ref, RefKind, TypeRef};

/// Where a node sits: the innermost outline symbol, the enclosing class, the instance name.
#[derive(Clone, Default)]
struct Ctx {
    symbol: Option<usize>,
    /// The class whose method body this is (for `self.x = …` fields).
    class: Option<usize>,
    /// The first parameter of a method (`self`, `cls`): the instance.
    this: Option<String>,
}

struct Walk<'a, 's> {
    src: &'s str,
    symbols: &'a SymbolSpans,
    out: &'a mut FileFacts,
    /// The package relative imports start from.
    package: Vec<String>,
}

pub(super) fn extract(
    root: Node<'_>,
    src: &str,
    path: &str,
    symbols: &SymbolSpans,
    out: &mut FileFacts,
) {
    let module: Vec<String> = out
        .module
        .as_deref()
        .map(|m| m.split('.').map(str::to_string).collect())
        .unwrap_or_default();
    let is_package = path.ends_with("__init__.py") || path.ends_with("__init__.pyi");
    let package = if is_package || module.is_empty() {
        module
    } else {
        module[..module.len() - 1].to_vec()
    };
    let mut w = Walk {
        src,
        symbols,
        out,
        package,
    };
    let mut stack: Vec<(Node<'_>, Ctx)> = vec![(root, Ctx::default())];
    while let Some((node, ctx)) = stack.pop() {
        let inner = w.visit(node, &ctx);
        let Some(inner) = inner else { continue };
        let children = named_children(node);
        for c in children.into_iter().rev() {
            stack.push((c, inner.clone()));
        }
    }
}

impl Walk<'_, '_> {
    /// Records what `node` says; the context its children are walked in (`None`: not walked).
    fn visit(&mut self, node: Node<'_>, ctx: &Ctx) -> Option<Ctx> {
        match node.kind() {
            "class_definition" => Some(self.class(node, ctx)),
            "function_definition" => Some(self.function(node, ctx)),
            "import_statement" | "import_from_statement" => {
                self.import(node);
                None
            }
            "assignment" => {
                self.assignment(node, ctx);
                Some(ctx.clone())
            }
            "call" => {
                self.call(node, ctx);
                Some(ctx.clone())
            }
            "with_item" => {
                if let Some(v) = field(node, "value")
                    && v.kind() == "as_pattern"
                {
                    let value = named_children(v).first().and_then(|e| self.expr(*e, ctx));
                    let alias = field(v, "alias").and_then(|a| named_children(a).first().copied());
                    if let (Some(value), Some(alias)) = (value, alias)
                        && alias.kind() == "identifier"
                    {
                        self.bind(ctx, text(alias, self.src), Binding::Value(value));
                    }
                }
                Some(ctx.clone())
            }
            _ => Some(ctx.clone()),
        }
    }

    fn class(&mut self, node: Node<'_>, ctx: &Ctx) -> Ctx {
        let Some(me) = self.symbols.of(node) else {
            return ctx.clone();
        };
        if let Some(bases) = field(node, "superclasses") {
            for b in named_children(bases) {
                if matches!(b.kind(), "identifier" | "attribute")
                    && let Some(path) = self.dotted(b)
                {
                    self.push_ref(
                        me,
                        RefKind::Extends,
                        Expr::Typed(path),
                        None,
                        false,
                        line(b),
                    );
                }
            }
        }
        Ctx {
            symbol: Some(me),
            class: Some(me),
            this: None,
        }
    }

    fn function(&mut self, node: Node<'_>, ctx: &Ctx) -> Ctx {
        let Some(me) = self.symbols.of(node) else {
            return ctx.clone();
        };
        // A method of the class the context is in (not a function nested in a method).
        let method_of = ctx.class.filter(|c| ctx.symbol == Some(*c));
        let static_method = node.parent().is_some_and(|p| {
            p.kind() == "decorated_definition"
                && named_children(p).iter().any(|d| {
                    d.kind() == "decorator" && text(*d, self.src).trim() == "@staticmethod"
                })
        });
        let mut inner = Ctx {
            symbol: Some(me),
            class: method_of.or(ctx.class),
            this: if method_of.is_some() {
                None
            } else {
                ctx.this.clone()
            },
        };
        if let Some(params) = field(node, "parameters") {
            for (i, p) in named_children(params).into_iter().enumerate() {
                let (name, ty) = match p.kind() {
                    "identifier" => (Some(text(p, self.src).to_string()), None),
                    "typed_parameter" => (
                        named_children(p)
                            .first()
                            .filter(|n| n.kind() == "identifier")
                            .map(|n| text(*n, self.src).to_string()),
                        field(p, "type"),
                    ),
                    "default_parameter" | "typed_default_parameter" => (
                        field(p, "name").map(|n| text(n, self.src).to_string()),
                        field(p, "type"),
                    ),
                    _ => (None, None),
                };
                if let Some(t) = ty {
                    self.annotation(me, t);
                }
                let Some(name) = name else { continue };
                if i == 0 && method_of.is_some() && !static_method {
                    inner.this = Some(name);
                    continue;
                }
                if let Some(t) = ty.and_then(|t| self.inference_type(t)) {
                    self.out.scopes[me].bindings.push((name, Binding::Type(t)));
                }
            }
        }
        if let Some(r) = field(node, "return_type") {
            self.annotation(me, r);
            self.out.scopes[me].returns = self.inference_type(r);
        }
        self.out.scopes[me].static_method = static_method;
        inner
    }

    fn import(&mut self, node: Node<'_>) {
        let l = line(node);
        if node.kind() == "import_statement" {
            let mut cursor = node.walk();
            let names: Vec<Node<'_>> = node.children_by_field_name("name", &mut cursor).collect();
            for n in names {
                let (target, alias) = match n.kind() {
                    "aliased_import" => (field(n, "name"), field(n, "alias")),
                    _ => (Some(n), None),
                };
                let Some(target) = target.map(|t| dotted_parts(text(t, self.src))) else {
                    continue;
                };
                // `import a.b.c` binds `a`; `import a.b as x` binds `x` to `a.b`.
                let (local, target) = match alias {
                    Some(a) => (text(a, self.src).to_string(), target),
                    None => (target[0].clone(), target[..1].to_vec()),
                };
                self.out.imports.push(ImportBinding {
                    local: Some(local),
                    target,
                    module: true,
                    line: l,
                });
            }
            return;
        }
        let Some(module) = field(node, "module_name").map(|m| self.absolute(m)) else {
            return;
        };
        let mut cursor = node.walk();
        let names: Vec<Node<'_>> = node.children_by_field_name("name", &mut cursor).collect();
        if names.is_empty() {
            // `from m import *`
            self.out.imports.push(ImportBinding {
                local: None,
                target: module,
                module: true,
                line: l,
            });
            return;
        }
        for n in names {
            let (name, alias) = match n.kind() {
                "aliased_import" => (field(n, "name"), field(n, "alias")),
                _ => (Some(n), None),
            };
            let Some(name) = name.map(|t| text(t, self.src).to_string()) else {
                continue;
            };
            let local = alias
                .map(|a| text(a, self.src).to_string())
                .unwrap_or_else(|| name.clone());
            let mut target = module.clone();
            target.extend(dotted_parts(&name));
            self.out.imports.push(ImportBinding {
                local: Some(local),
                target,
                module: false,
                line: l,
            });
        }
    }

    /// A `from` import's module made absolute (`..m` from package `a.b` is `a.m`).
    fn absolute(&self, m: Node<'_>) -> Vec<String> {
        if m.kind() != "relative_import" {
            return dotted_parts(text(m, self.src));
        }
        let raw = text(m, self.src);
        let dots = raw.chars().take_while(|c| *c == '.').count();
        let mut base = self.package.clone();
        for _ in 1..dots {
            base.pop();
        }
        base.extend(dotted_parts(&raw[dots..]));
        base
    }

    fn assignment(&mut self, node: Node<'_>, ctx: &Ctx) {
        let (Some(left), right, ty) = (
            field(node, "left"),
            field(node, "right"),
            field(node, "type"),
        ) else {
            return;
        };
        let owner = ctx.symbol;
        // `x: T` and `self.x: T`: a use of `T` by the symbol holding the annotation.
        if let (Some(t), Some(o)) = (ty, owner) {
            self.annotation(o, t);
        }
        let binding = match (ty.and_then(|t| self.inference_type(t)), right) {
            (Some(t), _) => Binding::Type(t),
            (None, Some(r)) => match self.expr(r, ctx) {
                Some(e) => Binding::Value(e),
                None => return,
            },
            (None, None) => return,
        };
        match left.kind() {
            "identifier" => self.bind(ctx, text(left, self.src), binding),
            // `self.x = …` in a method: a field of the class.
            "attribute" => {
                let object = field(left, "object").map(|o| text(o, self.src));
                if let (Some(class), Some(this)) = (ctx.class, ctx.this.as_deref())
                    && object == Some(this)
                    && let Some(attr) = field(left, "attribute")
                {
                    let name = text(attr, self.src).to_string();
                    let fields = &mut self.out.scopes[class].bindings;
                    if !fields.iter().any(|(n, _)| *n == name) {
                        fields.push((name, binding));
                    }
                }
            }
            _ => {}
        }
    }

    /// Binds `name` in the innermost scope (the first binding wins: no flow is followed).
    fn bind(&mut self, ctx: &Ctx, name: &str, b: Binding) {
        let list = match ctx.symbol {
            Some(s) => &mut self.out.scopes[s].bindings,
            None => &mut self.out.globals,
        };
        if !list.iter().any(|(n, _)| n == name) {
            list.push((name.to_string(), b));
        }
    }

    fn call(&mut self, node: Node<'_>, ctx: &Ctx) {
        let Some(from) = ctx.symbol.filter(|s| !self.symbols.is_type(*s)) else {
            return;
        };
        let Some(function) = field(node, "function") else {
            return;
        };
        if function.kind() == "identifier" && text(function, self.src) == "super" {
            return; // `super()` itself; `super().m()` is the call of `m`
        }
        let Some(target) = self.expr(function, ctx) else {
            return;
        };
        let args = field(node, "arguments").filter(|a| a.kind() == "argument_list");
        let n = arity(args, &["list_splat", "dictionary_splat"]);
        self.push_ref(from, RefKind::Calls, target, n, false, line(node));
    }

    fn push_ref(
        &mut self,
        from: usize,
        kind: RefKind,
        target: Expr,
        arity: Option<usize>,
        constructor: bool,
        line: usize,
    ) {
        self.out.refs.push(Ref {
            from,
            kind,
            target,
            arity,
            constructor,
            args: Vec::new(),
            line,
        });
    }

    /// An expression resolution can read (names, members, calls, `self`, `super()`).
    fn expr(&self, node: Node<'_>, ctx: &Ctx) -> Option<Expr> {
        match node.kind() {
            "identifier" => {
                let t = text(node, self.src);
                Some(if ctx.this.as_deref() == Some(t) {
                    Expr::This
                } else {
                    Expr::Name(t.to_string())
                })
            }
            "attribute" => {
                let object = self.expr(field(node, "object")?, ctx)?;
                let attr = text(field(node, "attribute")?, self.src).to_string();
                Some(Expr::Member(Box::new(object), attr))
            }
            "call" => {
                let f = field(node, "function")?;
                if f.kind() == "identifier" && text(f, self.src) == "super" {
                    return Some(Expr::Super);
                }
                Some(Expr::Call(Box::new(self.expr(f, ctx)?)))
            }
            "parenthesized_expression" => self.expr(*named_children(node).first()?, ctx),
            _ => None,
        }
    }

    /// `a.b.c` as parts, when the node is names joined by dots.
    fn dotted(&self, node: Node<'_>) -> Option<TypeRef> {
        match node.kind() {
            "identifier" => Some(vec![text(node, self.src).to_string()]),
            "attribute" => {
                let mut parts = self.dotted(field(node, "object")?)?;
                parts.push(text(field(node, "attribute")?, self.src).to_string());
                Some(parts)
            }
            _ => None,
        }
    }

    /// Every type an annotation names (`Dict[str, Foo]`, `"Foo"`, `Foo | None`): `uses_type`
    /// from `from`.
    fn annotation(&mut self, from: usize, node: Node<'_>) {
        let mut found: Vec<(TypeRef, usize)> = Vec::new();
        let mut stack = vec![node];
        while let Some(n) = stack.pop() {
            match n.kind() {
                "identifier" | "attribute" => match self.dotted(n) {
                    Some(p) => found.push((p, line(n))),
                    None => stack.extend(named_children(n)),
                },
                "string" => {
                    for p in string_names(text(n, self.src)) {
                        found.push((p, line(n)));
                    }
                }
                _ => stack.extend(named_children(n)),
            }
        }
        for (p, l) in found {
            self.push_ref(from, RefKind::UsesType, Expr::Typed(p), None, false, l);
        }
    }

    /// The type an annotation gives a name for inference: `X`, `Optional[X]`, `X | None`,
    /// `"X"`; nothing for containers and unions of several types.
    fn inference_type(&self, node: Node<'_>) -> Option<TypeRef> {
        let n = if node.kind() == "type" {
            *named_children(node).first()?
        } else {
            node
        };
        match n.kind() {
            "identifier" | "attribute" => self.dotted(n),
            "string" => {
                let names = string_names(text(n, self.src));
                (names.len() == 1)
                    .then(|| names.into_iter().next())
                    .flatten()
            }
            "subscript" => {
                let value = self.dotted(field(n, "value")?)?;
                let last = value.last()?.as_str();
                if last != "Optional" {
                    return None;
                }
                self.inference_type(field(n, "subscript")?)
            }
            "binary_operator" => {
                let (l, r) = (field(n, "left")?, field(n, "right")?);
                if text(r, self.src) == "None" {
                    self.inference_type(l)
                } else if text(l, self.src) == "None" {
                    self.inference_type(r)
                } else {
                    None
                }
            }
            _ => None,
        }
    }
}

fn dotted_parts(s: &str) -> Vec<String> {
    s.split('.')
        .map(|p| p.trim().to_string())
        .filter(|p| !p.is_empty())
        .collect()
}

/// The dotted names in a string annotation (`"Optional[pkg.Foo]"` → `Optional`, `pkg.Foo`).
fn string_names(raw: &str) -> Vec<TypeRef> {
    let inner = raw.trim_matches(|c| c == '"' || c == '\'');
    let mut out = Vec::new();
    let mut cur = String::new();
    for c in inner.chars().chain(std::iter::once(' ')) {
        if c.is_alphanumeric() || c == '_' || c == '.' {
            cur.push(c);
        } else if !cur.is_empty() {
            let parts = dotted_parts(&cur);
            if !parts.is_empty()
                && parts
                    .iter()
                    .all(|p| !p.starts_with(|c: char| c.is_ascii_digit()))
            {
                out.push(parts);
            }
            cur.clear();
        }
    }
    out
}
