//! Java facts: imports (single-type, on-demand, static), fields, parameters and locals with
//! their declared types, method and constructor calls, bases, and the types named in
//! signatures, fields and annotations.

use tree_sitter::Node;

use super::facts::{SymbolSpans, arity, field, line, named_children, text};
use super::{Arg, Binding, Expr, FileFacts, ImportBinding, Ref, RefKind, TypeRef};

struct Walk<'a, 's> {
    src: &'s str,
    symbols: &'a SymbolSpans,
    out: &'a mut FileFacts,
}

pub(super) fn extract(root: Node<'_>, src: &str, symbols: &SymbolSpans, out: &mut FileFacts) {
    let mut w = Walk { src, symbols, out };
    let mut stack: Vec<(Node<'_>, Option<usize>)> = vec![(root, None)];
    while let Some((node, at)) = stack.pop() {
        let Some(inner) = w.visit(node, at) else {
            continue;
        };
        for c in named_children(node).into_iter().rev() {
            stack.push((c, inner));
        }
    }
}

/// A type node as a path (`a.b.C`, `Map.Entry`), generic arguments and array brackets off.
fn type_path(node: Node<'_>, src: &str) -> Option<TypeRef> {
    match node.kind() {
        "type_identifier" | "identifier" => Some(vec![text(node, src).to_string()]),
        "scoped_type_identifier" | "scoped_identifier" => {
            let mut parts = Vec::new();
            for c in named_children(node) {
                parts.extend(type_path(c, src)?);
            }
            Some(parts)
        }
        "generic_type" => type_path(*named_children(node).first()?, src),
        "array_type" => type_path(field(node, "element")?, src),
        "annotated_type" => type_path(*named_children(node).last()?, src),
        _ => None,
    }
}

impl Walk<'_, '_> {
    /// Records what `node` says; the symbol its children belong to (`None` when not walked).
    /// Long because it is the table of what each node kind means, one arm per kind.
    fn visit(&mut self, node: Node<'_>, at: Option<usize>) -> Option<Option<usize>> {
        match node.kind() {
            "import_declaration" => {
                self.import(node);
                None
            }
            "class_declaration"
            | "interface_declaration"
            | "enum_declaration"
            | "record_declaration"
            | "annotation_type_declaration" => {
                let me = self.symbols.of(node);
                if let Some(me) = me {
                    self.bases(node, me);
                    self.annotations(node, me);
                }
                Some(me.or(at))
            }
            "method_declaration"
            | "constructor_declaration"
            | "compact_constructor_declaration" => {
                // A method of an anonymous class is not a symbol: what it does belongs to the
                // enclosing one.
                let me = self.symbols.of(node);
                if let Some(me) = me {
                    self.signature(node, me);
                }
                Some(me.or(at))
            }
            "field_declaration" | "constant_declaration" => {
                if let Some(me) = at {
                    self.declaration(node, me, true);
                }
                Some(at)
            }
            "local_variable_declaration" => {
                if let Some(me) = at {
                    self.declaration(node, me, false);
                }
                Some(at)
            }
            "enhanced_for_statement" | "catch_formal_parameter" | "resource" => {
                if let (Some(me), Some(t), Some(n)) = (
                    at,
                    field(node, "type").and_then(|t| type_path(t, self.src)),
                    field(node, "name"),
                ) {
                    self.bind(me, text(n, self.src), Binding::Type(t));
                }
                Some(at)
            }
            "method_invocation" => {
                if let Some(me) = at.filter(|s| !self.symbols.is_type(*s)) {
                    self.invocation(node, me);
                }
                Some(at)
            }
            "object_creation_expression" => {
                if let (Some(me), Some(t)) = (
                    at.filter(|s| !self.symbols.is_type(*s)),
                    field(node, "type").and_then(|t| type_path(t, self.src)),
                ) {
                    let n = arity(field(node, "arguments"), &[]);
                    self.push(me, RefKind::Calls, Expr::Typed(t), n, true, line(node));
                    self.with_args(field(node, "arguments"));
                }
                Some(at)
            }
            "explicit_constructor_invocation" => {
                if let Some(me) = at {
                    let target = match field(node, "constructor").map(|c| c.kind()) {
                        Some("this") => Some(Expr::This),
                        Some("super") => Some(Expr::Super),
                        _ => None,
                    };
                    if let Some(t) = target {
                        let n = arity(field(node, "arguments"), &[]);
                        self.push(me, RefKind::Calls, t, n, true, line(node));
                        self.with_args(field(node, "arguments"));
                    }
                }
                Some(at)
            }
            _ => Some(at),
        }
    }

    fn import(&mut self, node: Node<'_>) {
        let Some(path) = named_children(node)
            .into_iter()
            .find(|c| matches!(c.kind(), "scoped_identifier" | "identifier"))
            .and_then(|p| type_path(p, self.src))
        else {
            return;
        };
        let wildcard = named_children(node).iter().any(|c| c.kind() == "asterisk");
        self.out.imports.push(ImportBinding {
            local: if wildcard { None } else { path.last().cloned() },
            target: path,
            module: wildcard,
            line: line(node),
        });
    }

    /// `extends` / `implements` of a type declaration.
    fn bases(&mut self, node: Node<'_>, me: usize) {
        let interface = node.kind() == "interface_declaration";
        for c in named_children(node) {
            let kind = match c.kind() {
                "superclass" => RefKind::Extends,
                "super_interfaces" => RefKind::Implements,
                "extends_interfaces" if interface => RefKind::Extends,
                _ => continue,
            };
            let mut types = Vec::new();
            for t in named_children(c) {
                if t.kind() == "type_list" {
                    types.extend(named_children(t));
                } else {
                    types.push(t);
                }
            }
            for t in types {
                if let Some(p) = type_path(t, self.src) {
                    self.push(me, kind, Expr::Typed(p), None, false, line(t));
                }
                self.type_args(t, me);
            }
        }
    }

    /// Annotations on a declaration (its `modifiers`): `uses_type`.
    fn annotations(&mut self, node: Node<'_>, me: usize) {
        let Some(mods) = named_children(node)
            .into_iter()
            .find(|c| c.kind() == "modifiers")
        else {
            return;
        };
        for a in named_children(mods) {
            if matches!(a.kind(), "marker_annotation" | "annotation")
                && let Some(p) = field(a, "name").and_then(|n| type_path(n, self.src))
            {
                self.push(me, RefKind::UsesType, Expr::Typed(p), None, false, line(a));
            }
        }
    }

    /// Every type named inside a type node (generic arguments included): `uses_type`.
    fn uses_types(&mut self, node: Node<'_>, me: usize) {
        let mut stack = vec![node];
        while let Some(n) = stack.pop() {
            match n.kind() {
                "type_identifier" | "scoped_type_identifier" => {
                    if let Some(p) = type_path(n, self.src) {
                        self.push(me, RefKind::UsesType, Expr::Typed(p), None, false, line(n));
                    }
                }
                _ => stack.extend(named_children(n)),
            }
        }
    }

    /// The generic arguments of a base (`extends Base<Foo>` uses `Foo`).
    fn type_args(&mut self, node: Node<'_>, me: usize) {
        if node.kind() == "generic_type" {
            for c in named_children(node).into_iter().skip(1) {
                self.uses_types(c, me);
            }
        }
    }

    /// Parameters (bound, and types used), the return type, annotations.
    fn signature(&mut self, node: Node<'_>, me: usize) {
        self.annotations(node, me);
        if let Some(t) = field(node, "type") {
            self.uses_types(t, me);
            self.out.scopes[me].returns = type_path(t, self.src);
        }
        if let Some(params) = field(node, "parameters") {
            let all = named_children(params);
            let spread = all.iter().any(|p| p.kind() == "spread_parameter");
            let count = all
                .iter()
                .filter(|p| p.kind() == "formal_parameter")
                .count();
            self.out.scopes[me].params = (!spread).then_some(count);
            for p in all {
                let (ty, name) = match p.kind() {
                    "formal_parameter" => (field(p, "type"), field(p, "name")),
                    "spread_parameter" => (
                        named_children(p)
                            .into_iter()
                            .find(|c| !matches!(c.kind(), "modifiers" | "variable_declarator")),
                        named_children(p)
                            .into_iter()
                            .find(|c| c.kind() == "variable_declarator")
                            .and_then(|d| field(d, "name")),
                    ),
                    _ => (None, None),
                };
                if let Some(t) = ty {
                    self.uses_types(t, me);
                    if let (Some(path), Some(n)) = (type_path(t, self.src), name) {
                        self.bind(me, text(n, self.src), Binding::Type(path));
                    }
                }
            }
        }
    }

    /// A field (`field`: of the type `me`) or local declaration: its names bound.
    fn declaration(&mut self, node: Node<'_>, me: usize, is_field: bool) {
        let Some(t) = field(node, "type") else { return };
        if is_field {
            self.uses_types(t, me);
        }
        let declared = (text(t, self.src) != "var")
            .then(|| type_path(t, self.src))
            .flatten();
        let mut cursor = node.walk();
        let declarators: Vec<Node<'_>> = node
            .children_by_field_name("declarator", &mut cursor)
            .collect();
        for d in declarators {
            let Some(name) = field(d, "name").map(|n| text(n, self.src).to_string()) else {
                continue;
            };
            let binding = match (&declared, field(d, "value").and_then(|v| self.expr(v))) {
                (Some(t), _) => Binding::Type(t.clone()),
                (None, Some(e)) => Binding::Value(e),
                (None, None) => continue,
            };
            self.bind(me, &name, binding);
        }
    }

    fn bind(&mut self, me: usize, name: &str, b: Binding) {
        let list = &mut self.out.scopes[me].bindings;
        if !list.iter().any(|(n, _)| n == name) {
            list.push((name.to_string(), b));
        }
    }

    fn invocation(&mut self, node: Node<'_>, me: usize) {
        let Some(name) = field(node, "name").map(|n| text(n, self.src).to_string()) else {
            return;
        };
        let target = match field(node, "object") {
            Some(o) => match self.expr(o) {
                Some(e) => Expr::Member(Box::new(e), name),
                None => return,
            },
            None => Expr::Name(name),
        };
        let n = arity(field(node, "arguments"), &[]);
        self.push(me, RefKind::Calls, target, n, false, line(node));
        self.with_args(field(node, "arguments"));
    }

    /// Gives the last recorded use the arguments of `args`.
    fn with_args(&mut self, args: Option<Node<'_>>) {
        let a = self.args(args);
        if let Some(r) = self.out.refs.last_mut() {
            r.args = a;
        }
    }

    fn push(
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

    /// The arguments of a call (for overloads), literals typed.
    fn args(&self, args: Option<Node<'_>>) -> Vec<Arg> {
        let Some(args) = args else { return Vec::new() };
        named_children(args)
            .into_iter()
            .filter(|a| a.kind() != "comment")
            .map(|a| {
                let t = text(a, self.src);
                let lit = |s: &str| Arg::Literal(s.to_string());
                match a.kind() {
                    "string_literal" | "text_block" => lit("String"),
                    "character_literal" => lit("char"),
                    "true" | "false" => lit("boolean"),
                    "decimal_integer_literal"
                    | "hex_integer_literal"
                    | "octal_integer_literal"
                    | "binary_integer_literal" => lit(if t.ends_with(['l', 'L']) {
                        "long"
                    } else {
                        "int"
                    }),
                    "decimal_floating_point_literal" | "hex_floating_point_literal" => {
                        lit(if t.ends_with(['f', 'F']) {
                            "float"
                        } else {
                            "double"
                        })
                    }
                    _ => self.expr(a).map(Arg::Expr).unwrap_or(Arg::Unknown),
                }
            })
            .collect()
    }

    /// An expression resolution can read.
    fn expr(&self, node: Node<'_>) -> Option<Expr> {
        match node.kind() {
            "identifier" => Some(Expr::Name(text(node, self.src).to_string())),
            "this" => Some(Expr::This),
            "super" => Some(Expr::Super),
            "field_access" => {
                let object = self.expr(field(node, "object")?)?;
                let f = text(field(node, "field")?, self.src).to_string();
                Some(Expr::Member(Box::new(object), f))
            }
            "method_invocation" => {
                let name = text(field(node, "name")?, self.src).to_string();
                let callee = match field(node, "object") {
                    Some(o) => Expr::Member(Box::new(self.expr(o)?), name),
                    None => Expr::Name(name),
                };
                Some(Expr::Call(Box::new(callee)))
            }
            "object_creation_expression" | "cast_expression" => {
                Some(Expr::Typed(type_path(field(node, "type")?, self.src)?))
            }
            "parenthesized_expression" => self.expr(*named_children(node).first()?),
            _ => None,
        }
    }
}
