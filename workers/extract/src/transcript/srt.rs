//! SRT: numbered blocks with `-->` timings.

use super::*;

/// Parses a SubRip file.
///
/// A cue starts at a timing line, optionally preceded by its index line (a number, possibly
/// separated from the timing line by blank lines). Its text runs to the next cue start, so extra
/// blank lines inside or between cues lose nothing; blank lines are dropped from the text. Text
/// before the first cue is an error, because it usually means the file is not SRT at all.
pub fn parse_srt(text: &str) -> Result<Transcript, TranscriptError> {
    let text = strip_bom(text);
    if is_blank(text) {
        return Err(TranscriptError::Empty);
    }
    let lines = split_lines(text);
    let n = lines.len();
    let mut cues = Vec::new();
    let mut i = next_non_blank(&lines, 0);
    while i < n {
        // Here `i` is the first line of a cue: its index line or its timing line.
        let mut id = None;
        if !has_arrow(lines[i]) {
            let index = lines[i].trim();
            let timing = next_non_blank(&lines, i + 1);
            if is_srt_index(index) && timing < n && has_arrow(lines[timing]) {
                id = Some(index.to_string());
                i = timing;
            } else {
                return Err(malformed(
                    i + 1,
                    format!(
                        "expected a cue number or a timing line like \
                         \"00:00:01,000 --> 00:00:04,000\", found \"{}\"",
                        excerpt(index)
                    ),
                ));
            }
        }
        let (start_ms, end_ms) = parse_cue_timing(lines[i], i + 1, true)?;
        i += 1;
        let mut text_lines = Vec::new();
        while i < n && !starts_srt_cue(&lines, i) {
            if !is_blank(lines[i]) {
                text_lines.push(lines[i]);
            }
            i += 1;
        }
        push_cue(&mut cues, id, (start_ms, end_ms), &text_lines.join("\n"));
    }
    finish(TranscriptFormat::Srt, None, None, cues)
}

/// Whether line `i` starts an SRT cue: a timing line, or an index line whose next non-blank line
/// is a timing line. (A number alone that is not followed by a timing line is cue text: "42".)
pub(super) fn starts_srt_cue(lines: &[&str], i: usize) -> bool {
    let Some(line) = lines.get(i) else {
        return false;
    };
    if has_arrow(line) {
        return true;
    }
    if !is_srt_index(line.trim()) {
        return false;
    }
    // The look-ahead only crosses blank lines, which the caller then consumes anyway, so the
    // parse stays linear.
    lines
        .get(next_non_blank(lines, i + 1))
        .is_some_and(|next| has_arrow(next))
}

pub(super) fn is_srt_index(line: &str) -> bool {
    !line.is_empty() && line.bytes().all(|b| b.is_ascii_digit())
}

pub(super) fn next_non_blank(lines: &[&str], from: usize) -> usize {
    let mut i = from;
    while i < lines.len() && is_blank(lines[i]) {
        i += 1;
    }
    i
}
