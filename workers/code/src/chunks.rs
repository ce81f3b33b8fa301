//! Code chunks cut at symbol boundaries, never inside a line.
//!
//! A symbol that fits the token budget is one chunk; a larger type is cut into its header
//! (declaration and fields) and its members, recursively; a larger function into windows of
//! whole lines, preferring blank lines as cut points. Small neighbours (imports, one-line
//! functions, gaps) are packed together up to the budget, so a file of tiny functions does
//! not become hundreds of tiny chunks; a symbol of at least `min_tokens` always stands alone,
//! so its chunk cites exactly it.

use evident_core::chunking::estimate_tokens;

use crate::outline::Symbol;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CodeChunking {
    /// Token budget of one chunk.
    pub max_tokens: usize,
    /// A symbol at least this big gets a chunk of its own.
    pub min_tokens: usize,
}

impl Default for CodeChunking {
    fn default() -> Self {
        CodeChunking {
            max_tokens: 384,
            min_tokens: 96,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeChunk {
    /// Exactly the source lines `line_start..=line_end`.
    pub text: String,
    /// 1-based, inclusive.
    pub line_start: usize,
    pub line_end: usize,
    /// The qualified name the chunk is about: its one symbol, or the type its members share.
    pub symbol: Option<String>,
    /// Indexes of the symbols declared (first line) in this chunk.
    pub declares: Vec<usize>,
}

struct Lines<'a> {
    src: &'a str,
    /// (start byte, end byte without the newline)
    spans: Vec<(usize, usize)>,
    tokens: Vec<usize>,
}

impl<'a> Lines<'a> {
    fn new(src: &'a str) -> Lines<'a> {
        let mut spans = Vec::new();
        let mut start = 0;
        for (i, b) in src.bytes().enumerate() {
            if b == b'\n' {
                spans.push((start, i));
                start = i + 1;
            }
        }
        if start < src.len() {
            spans.push((start, src.len()));
        }
        let tokens = spans
            .iter()
            .map(|(s, e)| estimate_tokens(&src[*s..*e]))
            .collect();
        Lines { src, spans, tokens }
    }

    fn len(&self) -> usize {
        self.spans.len()
    }

    fn blank(&self, i: usize) -> bool {
        let (s, e) = self.spans[i];
        self.src[s..e].trim().is_empty()
    }

    fn tokens(&self, a: usize, b: usize) -> usize {
        self.tokens[a..=b].iter().sum()
    }
}

/// A run of lines and the symbol it belongs to.
#[derive(Debug, Clone, Copy)]
struct Unit {
    a: usize,
    b: usize,
    symbol: Option<usize>,
    /// Must be a chunk of its own.
    alone: bool,
}

/// Splits lines `a..=b` into windows within the budget, cutting after blank lines where it
/// can (a single line over budget is a window of its own: lines are never cut).
fn windows(
    lines: &Lines<'_>,
    a: usize,
    b: usize,
    max: usize,
    symbol: Option<usize>,
    out: &mut Vec<Unit>,
) {
    let mut start = a;
    while start <= b {
        let mut end = start;
        let mut total = lines.tokens[start];
        let mut last_blank = None;
        while end < b && total + lines.tokens[end + 1] <= max {
            end += 1;
            total += lines.tokens[end];
            if lines.blank(end) {
                last_blank = Some(end);
            }
        }
        if end < b
            && let Some(bl) = last_blank.filter(|bl| *bl > start + (end - start) / 2)
        {
            end = bl;
        }
        out.push(Unit {
            a: start,
            b: end,
            symbol,
            alone: symbol.is_some(),
        });
        start = end + 1;
    }
}

/// What cutting one file into units reads: its lines, symbols, their nesting and the budget.
struct Cutter<'a> {
    lines: &'a Lines<'a>,
    symbols: &'a [Symbol],
    tree: &'a [Vec<usize>],
    cfg: &'a CodeChunking,
}

/// Units covering lines `a..=b`, whose direct child symbols are `children`.
fn units(
    cut: &Cutter<'_>,
    a: usize,
    b: usize,
    children: &[usize],
    owner: Option<usize>,
    out: &mut Vec<Unit>,
) {
    let Cutter {
        lines,
        symbols,
        tree,
        cfg,
    } = *cut;
    let gap = |from: usize, to: usize, out: &mut Vec<Unit>| {
        if lines.tokens(from, to) <= cfg.max_tokens {
            out.push(Unit {
                a: from,
                b: to,
                symbol: owner,
                alone: false,
            });
        } else {
            windows(lines, from, to, cfg.max_tokens, None, out);
            if let Some(o) = owner {
                // Windows of a type's header still belong to the type.
                for u in out.iter_mut().rev().take_while(|u| u.a >= from) {
                    u.symbol = Some(o);
                }
            }
        }
    };
    let mut cur = a;
    for &c in children {
        let s = &symbols[c];
        let cs = (s.line_start - 1).max(cur);
        let ce = (s.line_end - 1).min(b);
        if cs > ce {
            continue;
        }
        if cur < cs {
            gap(cur, cs - 1, out);
        }
        let size = lines.tokens(cs, ce);
        if size <= cfg.max_tokens {
            out.push(Unit {
                a: cs,
                b: ce,
                symbol: Some(c),
                alone: size >= cfg.min_tokens,
            });
        } else if !tree[c].is_empty() {
            units(cut, cs, ce, &tree[c], Some(c), out);
        } else {
            windows(lines, cs, ce, cfg.max_tokens, Some(c), out);
        }
        cur = ce + 1;
    }
    if cur <= b {
        gap(cur, b, out);
    }
}

/// Children of each symbol and the top-level symbols, by line containment.
fn nest(symbols: &[Symbol]) -> (Vec<Vec<usize>>, Vec<usize>) {
    let mut order: Vec<usize> = (0..symbols.len()).collect();
    order.sort_by_key(|&i| {
        (
            symbols[i].byte_start,
            std::cmp::Reverse(symbols[i].byte_end),
        )
    });
    let mut tree = vec![Vec::new(); symbols.len()];
    let mut roots = Vec::new();
    let mut stack: Vec<usize> = Vec::new();
    for i in order {
        while let Some(&top) = stack.last() {
            if symbols[i].byte_start >= symbols[top].byte_end {
                stack.pop();
            } else {
                break;
            }
        }
        match stack.last() {
            Some(&p) => tree[p].push(i),
            None => roots.push(i),
        }
        stack.push(i);
    }
    (tree, roots)
}

/// Cuts a source file into chunks at its symbols' boundaries.
pub fn chunk_code(src: &str, symbols: &[Symbol], cfg: &CodeChunking) -> Vec<CodeChunk> {
    let lines = Lines::new(src);
    if lines.len() == 0 {
        return Vec::new();
    }
    let (tree, roots) = nest(symbols);
    let mut us = Vec::new();
    let cut = Cutter {
        lines: &lines,
        symbols,
        tree: &tree,
        cfg,
    };
    units(&cut, 0, lines.len() - 1, &roots, None, &mut us);
    pack(&lines, symbols, &us, cfg)
}

/// Cuts text without known symbols (a language Evident does not parse) into windows of whole
/// lines within the budget.
pub fn chunk_lines(src: &str, cfg: &CodeChunking) -> Vec<CodeChunk> {
    let lines = Lines::new(src);
    if lines.len() == 0 {
        return Vec::new();
    }
    let mut us = Vec::new();
    windows(&lines, 0, lines.len() - 1, cfg.max_tokens, None, &mut us);
    pack(&lines, &[], &us, cfg)
}

fn pack(
    lines: &Lines<'_>,
    symbols: &[Symbol],
    units: &[Unit],
    cfg: &CodeChunking,
) -> Vec<CodeChunk> {
    let mut groups: Vec<Vec<Unit>> = Vec::new();
    let mut current: Vec<Unit> = Vec::new();
    let mut current_tokens = 0;
    for u in units {
        let t = lines.tokens(u.a, u.b);
        if u.alone || current_tokens + t > cfg.max_tokens {
            if !current.is_empty() {
                groups.push(std::mem::take(&mut current));
            }
            current_tokens = 0;
        }
        if u.alone {
            groups.push(vec![*u]);
        } else {
            current.push(*u);
            current_tokens += t;
        }
    }
    if !current.is_empty() {
        groups.push(current);
    }
    groups
        .into_iter()
        .filter_map(|g| {
            let (mut a, mut b) = (g[0].a, g[g.len() - 1].b);
            while a < b && lines.blank(a) {
                a += 1;
            }
            while b > a && lines.blank(b) {
                b -= 1;
            }
            if lines.blank(a) {
                return None;
            }
            let text = lines.src[lines.spans[a].0..lines.spans[b].1].to_string();
            let mut owners: Vec<usize> = g.iter().filter_map(|u| u.symbol).collect();
            owners.dedup();
            let symbol = match owners.as_slice() {
                [] => None,
                [one] => Some(symbols[*one].qualified_name.clone()),
                many => {
                    // Members packed together: name the type they share.
                    let parent = symbols[many[0]].parent.clone();
                    parent.filter(|p| many.iter().all(|m| symbols[*m].parent.as_ref() == Some(p)))
                }
            };
            let declares = symbols
                .iter()
                .enumerate()
                .filter(|(_, s)| (a..=b).contains(&(s.line_start - 1)))
                .map(|(i, _)| i)
                .collect();
            Some(CodeChunk {
                text,
                line_start: a + 1,
                line_end: b + 1,
                symbol,
                declares,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Language, outline};

    fn java_class(methods: usize, body_lines: usize) -> String {
        let mut s = String::from(
            "package p;\n\nimport java.util.List;\n\npublic class Big {\n    private int x;\n\n",
        );
        for m in 0..methods {
            s.push_str(&format!("    public int method{m}(int a) {{\n"));
            for l in 0..body_lines {
                s.push_str(&format!(
                    "        a = a + {l} * compute(a, {m}, \"value {l}\");\n"
                ));
            }
            s.push_str("        return a;\n    }\n\n");
        }
        s.push_str("}\n");
        s
    }

    #[test]
    fn a_big_class_is_cut_at_its_methods_and_nothing_is_lost() {
        let src = java_class(8, 12);
        let o = outline(Language::Java, "Big.java", &src).expect("outline");
        let cfg = CodeChunking::default();
        let chunks = chunk_code(&src, &o.symbols, &cfg);
        assert!(chunks.len() >= 8, "{}", chunks.len());
        // Every non-blank line is in exactly one chunk, in order; lines are never cut.
        let mut covered = Vec::new();
        for c in &chunks {
            let expected: String = src
                .lines()
                .skip(c.line_start - 1)
                .take(c.line_end - c.line_start + 1)
                .collect::<Vec<_>>()
                .join("\n");
            assert_eq!(c.text, expected);
            covered.extend(c.line_start..=c.line_end);
            assert!(estimate_tokens(&c.text) <= cfg.max_tokens);
        }
        let mut sorted = covered.clone();
        sorted.dedup();
        assert_eq!(sorted.len(), covered.len(), "no line twice");
        for (i, line) in src.lines().enumerate() {
            if !line.trim().is_empty() {
                assert!(covered.contains(&(i + 1)), "line {} lost", i + 1);
            }
        }
        // Each method is one chunk that names it.
        for m in 0..8 {
            let q = format!("p.Big.method{m}");
            assert_eq!(
                chunks
                    .iter()
                    .filter(|c| c.symbol.as_deref() == Some(q.as_str()))
                    .count(),
                1,
                "{q}"
            );
        }
        // The class header (declaration, field) declares the class.
        let class = o
            .symbols
            .iter()
            .position(|s| s.name == "Big")
            .expect("class");
        let header = chunks
            .iter()
            .find(|c| c.declares.contains(&class))
            .expect("header chunk");
        assert!(header.text.contains("public class Big") && header.text.contains("private int x"));
    }

    #[test]
    fn small_neighbours_are_packed_and_huge_functions_split_by_lines() {
        let mut src = String::new();
        for i in 0..30 {
            src.push_str(&format!("fn f{i}() -> u8 {{ {i} }}\n"));
        }
        src.push_str("fn huge() {\n");
        for i in 0..400 {
            src.push_str(&format!(
                "    let v{i} = call_something(argument_one, argument_two, {i});\n"
            ));
            if i % 50 == 49 {
                src.push('\n');
            }
        }
        src.push_str("}\n");
        let o = outline(Language::Rust, "src/lib.rs", &src).expect("outline");
        let chunks = chunk_code(&src, &o.symbols, &CodeChunking::default());
        let tiny: Vec<&CodeChunk> = chunks
            .iter()
            .filter(|c| c.text.starts_with("fn f"))
            .collect();
        assert!(
            tiny.len() < 5,
            "30 one-liners packed into {} chunks",
            tiny.len()
        );
        let huge: Vec<&CodeChunk> = chunks
            .iter()
            .filter(|c| c.symbol.as_deref() == Some("huge"))
            .collect();
        assert!(huge.len() > 5);
        assert!(huge.windows(2).all(|w| w[0].line_end < w[1].line_start));
        assert!(huge.iter().all(|c| estimate_tokens(&c.text) <= 384));
    }

    #[test]
    fn text_without_symbols_is_cut_into_line_windows() {
        let src = "key: value\n".repeat(500);
        let chunks = chunk_lines(&src, &CodeChunking::default());
        assert!(chunks.len() > 1);
        assert_eq!(chunks[0].line_start, 1);
        assert_eq!(chunks.last().expect("last").line_end, 500);
        assert!(chunk_lines("", &CodeChunking::default()).is_empty());
        assert!(chunk_lines("\n\n  \n", &CodeChunking::default()).is_empty());
    }
}
