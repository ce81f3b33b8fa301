//! Metadata blocks of relationships in content: `relationships: [ "a|B|c", … ]` (JSON-ish)
//! and YAML-style `relationships:` + `- a|B|c` lines.

use super::relationship::{
    FoundRelationship, MainNode, parse_relationship_with, strip_matching_quotes,
};
use super::{BLOCK_KEYWORD, offset_in};

struct BlockItem {
    start: usize,
    end: usize,
    text: String,
}

enum BlockScan {
    Found { end: usize, items: Vec<BlockItem> },
    NotBlock { scanned_to: usize },
}

fn is_ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b >= 0x80
}

/// Find metadata blocks, push their relationships, and return the byte regions they cover
/// (sorted, disjoint) so the inline scan skips them.
pub(super) fn scan_metadata_blocks(
    text: &str,
    main: &MainNode,
    found: &mut Vec<FoundRelationship>,
) -> Vec<(usize, usize)> {
    let bytes = text.as_bytes();
    let klen = BLOCK_KEYWORD.len();
    let mut regions = Vec::new();
    let mut i = 0usize;
    while i + klen <= bytes.len() {
        let b = bytes[i];
        if (b == b'r' || b == b'R')
            && bytes[i..i + klen].eq_ignore_ascii_case(BLOCK_KEYWORD)
            && (i == 0 || !is_ident_byte(bytes[i - 1]))
        {
            match parse_block(text, i + klen) {
                BlockScan::Found { end, items } => {
                    for item in items {
                        if let Some(rel) = parse_relationship_with(&item.text, main) {
                            found.push(FoundRelationship {
                                rel,
                                start: item.start,
                                end: item.end,
                            });
                        }
                    }
                    regions.push((i, end));
                    i = end.max(i + 1);
                }
                BlockScan::NotBlock { scanned_to } => {
                    i = scanned_to.max(i + 1);
                }
            }
            continue;
        }
        i += 1;
    }
    regions
}

/// After the keyword: an optional closing quote or Markdown emphasis (`"relationships":`,
/// `**Relationships:**`), `:` or `=`, then `[` (JSON-ish list, possibly on the next line) or
/// the end of the line (YAML-style list on the following lines).
fn parse_block(text: &str, mut pos: usize) -> BlockScan {
    let bytes = text.as_bytes();
    let len = bytes.len();
    let skip_wrappers = |mut p: usize| {
        let mut n = 0;
        while p < len && n < 3 && matches!(bytes[p], b'"' | b'\'' | b'*' | b'_') {
            p += 1;
            n += 1;
        }
        p
    };
    let skip_blanks = |mut p: usize| {
        while p < len && (bytes[p] == b' ' || bytes[p] == b'\t') {
            p += 1;
        }
        p
    };
    pos = skip_blanks(skip_wrappers(pos));
    if pos >= len || !(bytes[pos] == b':' || bytes[pos] == b'=') {
        return BlockScan::NotBlock { scanned_to: pos };
    }
    pos = skip_blanks(skip_wrappers(pos + 1));
    let mut q = pos;
    while q < len && bytes[q].is_ascii_whitespace() {
        q += 1;
    }
    if q < len && bytes[q] == b'[' {
        return parse_json_list(text, q + 1);
    }
    let mut p = pos;
    if p < len && bytes[p] == b'\r' {
        p += 1;
    }
    if p >= len || bytes[p] != b'\n' {
        return BlockScan::NotBlock {
            scanned_to: p.min(len),
        };
    }
    parse_yaml_list(text, p + 1)
}

/// Replace backslash escapes in a quoted list entry (`\"` → `"`, `\n` → space, …).
fn unescape(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('n' | 'r' | 't') => out.push(' '),
                Some(other) => out.push(other),
                None => {}
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// `[ "a|B|c", 'x->Y->z' ]` starting just after `[`. Only quoted entries, commas and
/// whitespace (including line breaks) are allowed; an entry may not span lines.
fn parse_json_list(text: &str, mut pos: usize) -> BlockScan {
    let bytes = text.as_bytes();
    let len = bytes.len();
    let mut items = Vec::new();
    loop {
        while pos < len && (bytes[pos].is_ascii_whitespace() || bytes[pos] == b',') {
            pos += 1;
        }
        if pos >= len {
            return BlockScan::NotBlock { scanned_to: len };
        }
        match bytes[pos] {
            b']' => {
                return BlockScan::Found {
                    end: pos + 1,
                    items,
                };
            }
            quote @ (b'"' | b'\'') => {
                let start = pos + 1;
                let mut j = start;
                let mut escaped = false;
                loop {
                    if j >= len {
                        return BlockScan::NotBlock { scanned_to: len };
                    }
                    let c = bytes[j];
                    if c == b'\\' {
                        escaped = true;
                        j += 2;
                        continue;
                    }
                    if c == quote {
                        break;
                    }
                    if c == b'\n' {
                        return BlockScan::NotBlock { scanned_to: j };
                    }
                    j += 1;
                }
                let raw = &text[start..j];
                let item_text = if escaped {
                    unescape(raw)
                } else {
                    raw.to_string()
                };
                items.push(BlockItem {
                    start,
                    end: j,
                    text: item_text,
                });
                pos = j + 1;
            }
            _ => return BlockScan::NotBlock { scanned_to: pos },
        }
    }
}

/// `- a|B|c` / `- "a|B|c"` lines (also `*` or `+` bullets) starting at `pos` (the line after
/// `relationships:`); the list ends at the first line that is not such an item.
fn parse_yaml_list(text: &str, mut pos: usize) -> BlockScan {
    let len = text.len();
    let mut items = Vec::new();
    let mut end = pos;
    while pos < len {
        let line_end = text[pos..].find('\n').map_or(len, |k| pos + k);
        let line = &text[pos..line_end];
        let t = line.trim_start_matches([' ', '\t']);
        let Some(rest) = t.strip_prefix(['-', '*', '+']) else {
            break;
        };
        if !(rest.starts_with(' ') || rest.starts_with('\t')) {
            break;
        }
        let item = strip_matching_quotes(rest.trim()).trim();
        if !item.is_empty() {
            let start = offset_in(text, item);
            items.push(BlockItem {
                start,
                end: start + item.len(),
                text: item.to_string(),
            });
        }
        end = line_end;
        pos = line_end + 1;
    }
    if items.is_empty() {
        BlockScan::NotBlock {
            scanned_to: pos.min(len),
        }
    } else {
        BlockScan::Found { end, items }
    }
}
