//! Small helpers shared by the parsers.

use super::*;

pub(super) fn strip_bom(text: &str) -> &str {
    text.strip_prefix('\u{feff}').unwrap_or(text)
}

/// Splits on `\n`, `\r\n` and lone `\r` (all three are WebVTT line terminators; `str::lines`
/// keeps a lone `\r`). Numbering the result from 1 gives the line numbers an editor shows.
pub(super) fn split_lines(text: &str) -> Vec<&str> {
    let bytes = text.as_bytes();
    let mut lines = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\n' => {
                lines.push(&text[start..i]);
                i += 1;
                start = i;
            }
            b'\r' => {
                lines.push(&text[start..i]);
                i += 1;
                if bytes.get(i) == Some(&b'\n') {
                    i += 1;
                }
                start = i;
            }
            _ => i += 1,
        }
    }
    if start < bytes.len() {
        lines.push(&text[start..]);
    }
    lines
}

/// Blank lines separate blocks. Whitespace-only lines count as blank: in hand-edited files they
/// are meant as separators, and the spec's strictness here would glue two cues together.
pub(super) fn is_blank(line: &str) -> bool {
    line.trim().is_empty()
}

pub(super) fn has_arrow(line: &str) -> bool {
    line.contains("-->")
}

/// Each line trimmed, empty lines (often left behind by removed tags) dropped, joined with `\n`.
pub(super) fn normalise_lines(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

pub(super) fn collapse_whitespace(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

pub(super) fn non_empty(s: &str) -> Option<String> {
    (!s.is_empty()).then(|| s.to_string())
}

/// The start of a line for an error message: enough to find it, bounded for arbitrary input.
pub(super) fn excerpt(line: &str) -> String {
    const MAX_CHARS: usize = 60;
    let line = line.trim();
    match line.char_indices().nth(MAX_CHARS) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_string(),
    }
}

pub(super) fn malformed(line_no: usize, what: String) -> TranscriptError {
    TranscriptError::Malformed(format!("line {line_no}: {what}"))
}

pub(super) fn finish(
    format: TranscriptFormat,
    title: Option<String>,
    date: Option<String>,
    cues: Vec<Cue>,
) -> Result<Transcript, TranscriptError> {
    if cues.is_empty() {
        return Err(TranscriptError::Empty);
    }
    Ok(Transcript {
        format,
        title,
        date,
        cues,
    })
}
