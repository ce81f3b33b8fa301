//! WebVTT: the signature, cue blocks and the blocks that are not cues.

use super::*;

/// Parses a WebVTT file.
///
/// The first line must start with `WEBVTT` (followed by nothing, a space or a tab, as the spec
/// requires); text after it is the title. Header lines run to the first blank line. `NOTE`,
/// `STYLE` and `REGION` blocks are skipped, and so are blocks with no timing line (the spec says
/// to ignore them). A line containing `-->` is a timing line: if it cannot be read, or its cue
/// ends before it starts, the file is rejected with that line's number rather than losing the cue.
pub fn parse_vtt(text: &str) -> Result<Transcript, TranscriptError> {
    let text = strip_bom(text);
    if is_blank(text) {
        return Err(TranscriptError::Empty);
    }
    let lines = split_lines(text);
    let first = lines.first().copied().unwrap_or_default();
    let title = vtt_signature(first).ok_or_else(|| {
        malformed(
            1,
            format!(
                "a WebVTT file must start with \"WEBVTT\", found \"{}\"",
                excerpt(first)
            ),
        )
    })?;

    let n = lines.len();
    let mut i = 1;
    // Header metadata (`Kind: captions`, `Language: en`) runs to the first blank line. Files that
    // forget that blank line and start a cue right away are common enough to accept: a timing
    // line also ends the header.
    while i < n && !is_blank(lines[i]) && !has_arrow(lines[i]) {
        i += 1;
    }

    let mut cues = Vec::new();
    while i < n {
        let head = lines[i];
        if is_blank(head) {
            i += 1;
            continue;
        }
        let (id, timing_at) = if has_arrow(head) {
            (None, i)
        } else if is_vtt_block_keyword(head) {
            i = end_of_block(&lines, i + 1);
            continue;
        } else if i + 1 < n && has_arrow(lines[i + 1]) {
            (non_empty(head.trim()), i + 1)
        } else {
            // Neither a cue nor a known block: the spec says to skip it.
            i = end_of_block(&lines, i + 1);
            continue;
        };
        let (start_ms, end_ms) = parse_cue_timing(lines[timing_at], timing_at + 1, false)?;
        // Cue text runs to a blank line, or to the next timing line when a file leaves out the
        // blank line between cues (the spec starts a new block there too).
        let text_end = end_of_block(&lines, timing_at + 1);
        let raw = lines[timing_at + 1..text_end].join("\n");
        i = text_end;
        push_cue(&mut cues, id, (start_ms, end_ms), &raw);
    }
    finish(TranscriptFormat::Vtt, title, None, cues)
}

/// The title of a WebVTT signature line (`WEBVTT`, `WEBVTT - Weekly sync`): `None` when the line
/// is not a signature, `Some(None)` when it carries no title.
pub(super) fn vtt_signature(line: &str) -> Option<Option<String>> {
    let rest = line.strip_prefix("WEBVTT")?;
    if !(rest.is_empty() || rest.starts_with([' ', '\t'])) {
        return None;
    }
    // `WEBVTT - Title` is the conventional spelling; the dash is punctuation, not title.
    let rest = rest.trim();
    let rest = rest.strip_prefix(['-', ':']).unwrap_or(rest).trim();
    Some(non_empty(rest))
}

/// Whether a block's first line opens a `NOTE`, `STYLE` or `REGION` block (the keyword alone or
/// followed by whitespace: `NOTEWORTHY` is a cue identifier).
pub(super) fn is_vtt_block_keyword(line: &str) -> bool {
    ["NOTE", "STYLE", "REGION"].into_iter().any(|keyword| {
        line.strip_prefix(keyword)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t']))
    })
}

/// The index of the first line at or after `from` that ends a WebVTT block: a blank line, a
/// timing line, or the end of the file.
pub(super) fn end_of_block(lines: &[&str], from: usize) -> usize {
    let mut i = from;
    while i < lines.len() && !is_blank(lines[i]) && !has_arrow(lines[i]) {
        i += 1;
    }
    i
}
