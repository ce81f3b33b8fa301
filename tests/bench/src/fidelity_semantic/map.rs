//! Both sides as edges between stored nodes: the stored symbols of each file, the semantic
//! edges the store holds out of them, and the oracle's facts mapped onto the same keys.

use std::collections::{BTreeSet, HashMap};

use evident_core::{Scope, Visibility, keys};
use evident_kb::Kb;
use evident_store::{Direction, TraverseOptions};
use serde_json::Value;

use super::EDGE_TYPES;

/// `(edge type, from key, to key)`.
pub type Edge = (String, String, String);

#[derive(Debug, Clone)]
pub struct Sym {
    pub key: String,
    pub qname: String,
    pub name: String,
    pub kind: String,
    pub line_start: usize,
    pub line_end: usize,
}

impl Sym {
    fn is_callable(&self) -> bool {
        matches!(self.kind.as_str(), "function" | "method")
    }
}

/// The stored symbols, by file and by qualified name.
#[derive(Default)]
pub struct Stored {
    by_file: HashMap<String, Vec<Sym>>,
    by_qname: HashMap<String, Vec<Sym>>,
}

fn vis() -> Visibility {
    Visibility::of(Scope::client("bench"))
}

/// The symbols reachable from each file's node and declared in it.
pub async fn stored(kb: &Kb, repository: &str, files: &[String]) -> Stored {
    let mut out = Stored::default();
    for f in files {
        let sub = kb
            .stores()
            .graph
            .traverse(
                &vis(),
                &[keys::file(repository, f)],
                &TraverseOptions {
                    max_depth: 16,
                    direction: Direction::Out,
                    edge_types: vec!["contains".into(), "has_method".into()],
                    max_nodes: 1_000_000,
                },
            )
            .await
            .expect("traverse");
        for (n, _) in sub.nodes {
            let s = |k: &str| {
                n.props
                    .get(k)
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string()
            };
            let u = |k: &str| n.props.get(k).and_then(Value::as_u64).unwrap_or(0) as usize;
            if s("path") != *f || n.node_type == "file" {
                continue;
            }
            let sym = Sym {
                key: n.key.as_str().to_string(),
                qname: s("qualifiedName"),
                name: s("name"),
                kind: n.node_type.clone(),
                line_start: u("lineStart"),
                line_end: u("lineEnd"),
            };
            out.by_qname
                .entry(sym.qname.clone())
                .or_default()
                .push(sym.clone());
            out.by_file.entry(f.clone()).or_default().push(sym);
        }
    }
    out
}

/// The semantic edges stored out of every stored symbol.
pub async fn our_edges(kb: &Kb, stored: &Stored) -> BTreeSet<Edge> {
    let mut out = BTreeSet::new();
    for syms in stored.by_file.values() {
        let starts: Vec<evident_core::NodeKey> = syms
            .iter()
            .map(|s| evident_core::NodeKey::from_canonical(s.key.clone()))
            .collect();
        let sub = kb
            .stores()
            .graph
            .traverse(
                &vis(),
                &starts,
                &TraverseOptions {
                    max_depth: 1,
                    direction: Direction::Out,
                    edge_types: EDGE_TYPES.iter().map(|t| t.to_string()).collect(),
                    max_nodes: 1_000_000,
                },
            )
            .await
            .expect("traverse");
        let mine: BTreeSet<&str> = syms.iter().map(|s| s.key.as_str()).collect();
        for e in sub.edges {
            if mine.contains(e.from.as_str()) {
                out.insert((
                    e.edge_type,
                    e.from.as_str().to_string(),
                    e.to.as_str().to_string(),
                ));
            }
        }
    }
    out
}

impl Stored {
    /// The innermost stored symbol of `file` whose lines hold `line`.
    fn innermost(&self, file: &str, line: usize) -> Option<&Sym> {
        self.by_file
            .get(file)?
            .iter()
            .filter(|s| s.line_start <= line && line <= s.line_end)
            .min_by_key(|s| (s.line_end - s.line_start, std::cmp::Reverse(s.line_start)))
    }

    /// The stored symbol named `name` defined at `line` of `file` (innermost).
    fn defined_at(&self, file: &str, name: &str, line: usize) -> Option<&Sym> {
        self.by_file
            .get(file)?
            .iter()
            .filter(|s| s.name == name && s.line_start <= line && line <= s.line_end)
            .min_by_key(|s| s.line_end - s.line_start)
    }

    fn type_key(&self, qname: &str) -> Option<String> {
        self.by_qname
            .get(qname)?
            .iter()
            .find(|s| !s.is_callable())
            .map(|s| s.key.clone())
    }

    /// A Java member by class, name and descriptor: the overload whose parameter types as
    /// written (simple names) agree with the descriptor's in most places, among those of its
    /// argument count (a type variable erases to its bound, so a disagreement is not fatal).
    fn member_keys(
        &self,
        class: &str,
        name: &str,
        arity: usize,
        desc: Option<&str>,
    ) -> Vec<String> {
        let base = format!("{class}.{name}");
        let wanted = desc.map(descriptor_params);
        let mut scored: Vec<(usize, String)> = Vec::new();
        for (q, syms) in &self.by_qname {
            let params: Option<Vec<String>> = if q == &base {
                None
            } else if let Some(p) = q.strip_prefix(&base).and_then(|r| r.strip_prefix('(')) {
                let inner = p.trim_end_matches(')');
                Some(if inner.is_empty() {
                    Vec::new()
                } else {
                    inner.split(',').map(simple_type).collect()
                })
            } else {
                continue;
            };
            if params.as_ref().is_some_and(|p| p.len() != arity) {
                continue;
            }
            let score = match (&params, &wanted) {
                (Some(p), Some(w)) => p.iter().zip(w).filter(|(a, b)| a == b).count(),
                _ => 0,
            };
            for s in syms.iter().filter(|s| s.is_callable()) {
                scored.push((score, s.key.clone()));
            }
        }
        let best = scored.iter().map(|(s, _)| *s).max().unwrap_or(0);
        scored
            .into_iter()
            .filter(|(s, _)| *s == best)
            .map(|(_, k)| k)
            .collect()
    }
}

/// A written parameter type as a simple name: `java.util.List` → `List`, `T...` → `T[]`.
fn simple_type(t: &str) -> String {
    let t = t.trim().replace("...", "[]");
    let dims = t.matches("[]").count();
    let base = t.trim_end_matches("[]");
    let base = base.rsplit(['.', '$']).next().unwrap_or(base);
    format!("{base}{}", "[]".repeat(dims))
}

/// A descriptor's parameter types as simple names (`(ILjava/lang/String;[Z)V` → `int`,
/// `String`, `boolean[]`).
fn descriptor_params(desc: &str) -> Vec<String> {
    let inner = desc.trim_start_matches('(').split(')').next().unwrap_or("");
    let mut out = Vec::new();
    let mut chars = inner.chars().peekable();
    while chars.peek().is_some() {
        let mut dims = 0;
        while chars.peek() == Some(&'[') {
            chars.next();
            dims += 1;
        }
        let base = match chars.next() {
            Some('B') => "byte".to_string(),
            Some('C') => "char".to_string(),
            Some('D') => "double".to_string(),
            Some('F') => "float".to_string(),
            Some('I') => "int".to_string(),
            Some('J') => "long".to_string(),
            Some('S') => "short".to_string(),
            Some('Z') => "boolean".to_string(),
            Some('L') => {
                let name: String = chars.by_ref().take_while(|c| *c != ';').collect();
                name.rsplit(['/', '$']).next().unwrap_or("").to_string()
            }
            _ => break,
        };
        out.push(format!("{base}{}", "[]".repeat(dims)));
    }
    out
}

fn str_of<'a>(v: &'a Value, k: &str) -> Option<&'a str> {
    v.get(k).and_then(Value::as_str)
}

fn usize_of(v: &Value, k: &str) -> Option<usize> {
    v.get(k).and_then(Value::as_u64).map(|n| n as usize)
}

/// The oracle's facts as edges between stored nodes (facts whose ends are not stored are
/// outside the comparison).
pub fn oracle_edges(language: &str, facts: &[Value], stored: &Stored) -> BTreeSet<Edge> {
    let mut out = BTreeSet::new();
    for f in facts {
        let Some(kind) = str_of(f, "kind") else {
            continue;
        };
        let edges = match language {
            "python" => python_edge(kind, f, stored),
            _ => java_edge(kind, f, stored),
        };
        for (from, to) in edges {
            if from != to {
                out.insert((kind.to_string(), from, to));
            }
        }
    }
    out
}

fn python_edge(kind: &str, f: &Value, st: &Stored) -> Vec<(String, String)> {
    let (Some(file), Some(line), Some(tfile), Some(tline), Some(tname)) = (
        str_of(f, "file"),
        usize_of(f, "line"),
        str_of(f, "target_file"),
        usize_of(f, "target_line"),
        str_of(f, "target_name"),
    ) else {
        return Vec::new();
    };
    let Some(from) = st.innermost(file, line) else {
        return Vec::new();
    };
    let Some(target) = st.defined_at(tfile, tname, tline) else {
        return Vec::new();
    };
    let to = match kind {
        "calls" if !from.is_callable() => None,
        // A class called is its `__init__` (when it declares one).
        "calls" if !target.is_callable() => st
            .by_qname
            .get(&format!("{}.__init__", target.qname))
            .and_then(|v| v.first())
            .map(|s| s.key.clone()),
        "calls" => Some(target.key.clone()),
        "extends" | "uses_type" if target.is_callable() => None,
        "extends" if from.is_callable() => None,
        _ => Some(target.key.clone()),
    };
    to.map(|t| vec![(from.key.clone(), t)]).unwrap_or_default()
}

fn java_edge(kind: &str, f: &Value, st: &Stored) -> Vec<(String, String)> {
    let dotted = |s: &str| s.replace('$', ".");
    match kind {
        "calls" => {
            let (Some(file), Some(line), Some(class), Some(name), Some(arity)) = (
                str_of(f, "file"),
                usize_of(f, "line"),
                str_of(f, "to_class"),
                str_of(f, "to_name"),
                usize_of(f, "to_arity"),
            ) else {
                return Vec::new();
            };
            let Some(from) = st.innermost(file, line).filter(|s| s.is_callable()) else {
                return Vec::new();
            };
            let class = dotted(class);
            let name = if name == "<init>" {
                class.rsplit('.').next().unwrap_or(&class).to_string()
            } else {
                name.to_string()
            };
            st.member_keys(&class, &name, arity, str_of(f, "to_desc"))
                .into_iter()
                .map(|t| (from.key.clone(), t))
                .collect()
        }
        "extends" | "implements" => {
            let from = str_of(f, "from_class").and_then(|c| st.type_key(&dotted(c)));
            let to = str_of(f, "to_class").and_then(|c| st.type_key(&dotted(c)));
            from.zip(to).into_iter().collect()
        }
        "uses_type" => {
            let Some(class) = str_of(f, "from_class").map(dotted) else {
                return Vec::new();
            };
            let to = str_of(f, "to_class").and_then(|c| st.type_key(&dotted(c)));
            let from: Vec<String> = match (str_of(f, "from_name"), usize_of(f, "from_arity")) {
                (Some(name), Some(arity)) => {
                    let name = if name == "<init>" {
                        class.rsplit('.').next().unwrap_or(&class).to_string()
                    } else {
                        name.to_string()
                    };
                    st.member_keys(&class, &name, arity, str_of(f, "from_desc"))
                }
                _ => st.type_key(&class).into_iter().collect(),
            };
            match to {
                Some(t) => from.into_iter().map(|f| (f, t.clone())).collect(),
                None => Vec::new(),
            }
        }
        _ => Vec::new(),
    }
}
