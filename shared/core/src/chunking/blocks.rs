//! Blocks: the Markdown subset (paragraphs, ATX and setext headings, fenced code) that
//! gives a document its structure and each chunk its heading path.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum BlockKind {
    Paragraph,
    Code,
    Heading,
}

#[derive(Debug, Clone, Copy)]
pub(super) struct Block {
    pub(super) start: usize,
    pub(super) end: usize,
    pub(super) kind: BlockKind,
    /// Index into `ParsedDoc::paths`.
    pub(super) section: usize,
}

pub(super) struct ParsedDoc {
    pub(super) blocks: Vec<Block>,
    /// `paths[0]` is the empty path before the first heading; one more per heading.
    pub(super) paths: Vec<Vec<String>>,
}

#[derive(Debug, Clone, Copy)]
struct Line {
    start: usize,
    /// End of the line content, excluding the `\n`.
    end: usize,
}

fn split_lines(text: &str) -> Vec<Line> {
    let mut lines = Vec::new();
    let mut start = 0;
    while start < text.len() {
        match text[start..].find('\n') {
            Some(off) => {
                lines.push(Line {
                    start,
                    end: start + off,
                });
                start += off + 1;
            }
            None => {
                lines.push(Line {
                    start,
                    end: text.len(),
                });
                start = text.len();
            }
        }
    }
    lines
}

fn line_at<'a>(text: &'a str, line: &Line) -> &'a str {
    &text[line.start..line.end]
}

fn is_blank(line: &str) -> bool {
    line.trim().is_empty()
}

/// The byte range of `text[start..end]` without leading and trailing whitespace.
fn trim_span(text: &str, start: usize, end: usize) -> Option<(usize, usize)> {
    let s = &text[start..end];
    let lead = s.len() - s.trim_start().len();
    let trimmed = s.trim();
    if trimmed.is_empty() {
        None
    } else {
        Some((start + lead, start + lead + trimmed.len()))
    }
}

/// Strips up to three leading spaces; `None` for deeper indentation (an indented code line).
fn strip_indent(line: &str) -> Option<&str> {
    let n = line.bytes().take_while(|&b| b == b' ').count();
    if n > 3 { None } else { Some(&line[n..]) }
}

/// ATX heading: level and title.
fn atx_heading(line: &str) -> Option<(u8, &str)> {
    let rest = strip_indent(line)?;
    let hashes = rest.bytes().take_while(|&b| b == b'#').count();
    if hashes == 0 || hashes > 6 {
        return None;
    }
    let after = &rest[hashes..];
    if after.chars().next().is_some_and(|c| !c.is_whitespace()) {
        return None;
    }
    let mut title = after.trim();
    let without_closing = title.trim_end_matches('#');
    if without_closing.len() != title.len()
        && (without_closing.is_empty() || without_closing.ends_with(char::is_whitespace))
    {
        title = without_closing.trim_end();
    }
    Some((hashes as u8, title))
}

/// Opening code fence: fence char and length.
fn fence_open(line: &str) -> Option<(u8, usize)> {
    let rest = strip_indent(line)?;
    let ch = *rest.as_bytes().first()?;
    if ch != b'`' && ch != b'~' {
        return None;
    }
    let n = rest.bytes().take_while(|&b| b == ch).count();
    if n < 3 {
        return None;
    }
    // A backtick fence's info string may not contain backticks (``` `x` ``` is inline code).
    if ch == b'`' && rest[n..].contains('`') {
        return None;
    }
    Some((ch, n))
}

fn fence_close(line: &str, ch: u8, n: usize) -> bool {
    let Some(rest) = strip_indent(line) else {
        return false;
    };
    let m = rest.bytes().take_while(|&b| b == ch).count();
    m >= n && rest[m..].trim().is_empty()
}

/// Setext underline (at least three `=` or `-`): heading level.
fn setext_underline(line: &str) -> Option<u8> {
    let rest = strip_indent(line)?.trim_end();
    let ch = *rest.as_bytes().first()?;
    if (ch != b'=' && ch != b'-') || rest.len() < 3 || !rest.bytes().all(|b| b == ch) {
        return None;
    }
    Some(if ch == b'=' { 1 } else { 2 })
}

fn enter_heading(
    stack: &mut Vec<(u8, String)>,
    paths: &mut Vec<Vec<String>>,
    level: u8,
    title: &str,
) -> usize {
    while stack.last().is_some_and(|(l, _)| *l >= level) {
        stack.pop();
    }
    stack.push((level, title.to_string()));
    paths.push(stack.iter().map(|(_, t)| t.clone()).collect());
    paths.len() - 1
}

fn push_block(
    blocks: &mut Vec<Block>,
    text: &str,
    (start, end): (usize, usize),
    kind: BlockKind,
    section: usize,
) {
    if let Some((start, end)) = trim_span(text, start, end) {
        blocks.push(Block {
            start,
            end,
            kind,
            section,
        });
    }
}

pub(super) fn parse_blocks(text: &str) -> ParsedDoc {
    let lines = split_lines(text);
    let mut blocks = Vec::new();
    let mut paths: Vec<Vec<String>> = vec![Vec::new()];
    let mut stack: Vec<(u8, String)> = Vec::new();
    let mut section = 0;

    let mut i = 0;
    while i < lines.len() {
        let line = line_at(text, &lines[i]);
        if is_blank(line) {
            i += 1;
            continue;
        }
        if let Some((ch, n)) = fence_open(line) {
            let mut last = lines.len() - 1;
            for (j, l) in lines.iter().enumerate().skip(i + 1) {
                if fence_close(line_at(text, l), ch, n) {
                    last = j;
                    break;
                }
            }
            push_block(
                &mut blocks,
                text,
                (lines[i].start, lines[last].end),
                BlockKind::Code,
                section,
            );
            i = last + 1;
            continue;
        }
        if let Some((level, title)) = atx_heading(line) {
            section = enter_heading(&mut stack, &mut paths, level, title);
            push_block(
                &mut blocks,
                text,
                (lines[i].start, lines[i].end),
                BlockKind::Heading,
                section,
            );
            i += 1;
            continue;
        }
        if i + 1 < lines.len()
            && setext_underline(line).is_none()
            && let Some(level) = setext_underline(line_at(text, &lines[i + 1]))
        {
            section = enter_heading(&mut stack, &mut paths, level, line.trim());
            push_block(
                &mut blocks,
                text,
                (lines[i].start, lines[i + 1].end),
                BlockKind::Heading,
                section,
            );
            i += 2;
            continue;
        }
        // Paragraph: until a blank line, a fence or an ATX heading (both interrupt paragraphs).
        let first = i;
        i += 1;
        while i < lines.len() {
            let l = line_at(text, &lines[i]);
            if is_blank(l) || fence_open(l).is_some() || atx_heading(l).is_some() {
                break;
            }
            i += 1;
        }
        push_block(
            &mut blocks,
            text,
            (lines[first].start, lines[i - 1].end),
            BlockKind::Paragraph,
            section,
        );
    }
    ParsedDoc { blocks, paths }
}
