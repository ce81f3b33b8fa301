//! Reading a syntax tree: node text and fields, names, Rust use trees, signatures, error
//! counts.

use tree_sitter::Node;

/// The node's source text (empty when it is not valid UTF-8).
pub(super) fn text<'s>(node: Node<'_>, src: &'s str) -> &'s str {
    node.utf8_text(src.as_bytes()).unwrap_or("")
}

/// The child in field `name`.
pub(super) fn field<'t>(node: Node<'t>, name: &str) -> Option<Node<'t>> {
    node.child_by_field_name(name)
}

/// The text of the child in field `name`; `None` when absent or empty.
pub(super) fn field_text(node: Node<'_>, name: &str, src: &str) -> Option<String> {
    field(node, name)
        .map(|n| text(n, src).to_string())
        .filter(|s| !s.is_empty())
}

/// The first named child of one of `kinds`.
pub(super) fn first_named_of<'t>(node: Node<'t>, kinds: &[&str]) -> Option<Node<'t>> {
    let mut cursor = node.walk();

    node.named_children(&mut cursor)
        .find(|c| kinds.contains(&c.kind()))
}

/// Whether one of the node's children (named or not) is the token `token`.
pub(super) fn has_child_token(node: Node<'_>, token: &str) -> bool {
    let mut cursor = node.walk();

    node.children(&mut cursor).any(|c| c.kind() == token)
}

/// `s` without surrounding quotes or backticks.
pub(super) fn unquote(s: &str) -> String {
    s.trim_matches(|c| c == '"' || c == '\'' || c == '`')
        .to_string()
}

/// The name of a type as used for qualification: `Foo<T>` → `Foo`, `&mut a::Foo` → `a::Foo`.
pub(super) fn base_type_name(raw: &str) -> String {
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

/// The paths a Rust use tree imports, one per leaf: `a::{B, c::D as E, f::*, self}` gives
/// `a::B`, `a::c::D`, `a::f::*` and `a` (a rename imports its path; comments are skipped).
pub(super) fn rust_use_paths(node: Node<'_>, src: &str, prefix: &str, out: &mut Vec<String>) {
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
pub(super) fn trait_segment(raw: &str) -> String {
    let t: String = raw.split_whitespace().collect();
    let (path, generics) = t.split_at(t.find('<').unwrap_or(t.len()));
    let last = path.rsplit("::").next().unwrap_or(path);
    format!("{last}{generics}")
}

/// `const x = require("m")` (CommonJS import).
pub(super) fn is_require(node: Node<'_>, src: &str) -> bool {
    field(node, "value").is_some_and(|v| {
        v.kind() == "call_expression"
            && field(v, "function").is_some_and(|f| text(f, src) == "require")
    })
}

/// The signature: the declaration from its start to its body (or its first line), on one line.
pub(super) fn signature(node: Node<'_>, body: Option<Node<'_>>, src: &str) -> String {
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

/// The number of ERROR nodes in the tree under `root`.
pub(super) fn count_errors(root: Node<'_>) -> usize {
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

/// The first node of `kind` at or under `node`, in source order.
pub(super) fn find_descendant<'t>(node: Node<'t>, kind: &str) -> Option<Node<'t>> {
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
