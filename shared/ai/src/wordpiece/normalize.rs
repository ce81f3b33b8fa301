//! Normalization (BertNormalizer: removed chars, whitespace, CJK spacing, NFD without
//! non-spacing marks, lowercase) and the pre-tokenizer's character classes.

use super::*;

/// Appends the BertNormalizer output for `segment` to `normalized`; `run` is
/// scratch space.
pub(super) fn normalize_into(segment: &str, normalized: &mut String, run: &mut String) {
    let bytes = segment.as_bytes();
    let mut pos = 0usize;
    while pos < bytes.len() {
        let b = bytes[pos];
        if b < 0x80 {
            match b {
                b'\t' | b'\n' | b'\r' | b' ' => normalized.push(' '),
                0x00..=0x1F | 0x7F => {} // control characters are dropped
                _ => normalized.push(char::from(b.to_ascii_lowercase())),
            }
            pos += 1;
        } else {
            // A maximal run of non-ASCII characters. ASCII characters are NFD
            // starters that never reorder with their neighbours, so running
            // NFD per run gives the same result as NFD over the whole text.
            let mut end = pos + 1;
            while end < bytes.len() && bytes[end] >= 0x80 {
                end += 1;
            }
            normalize_non_ascii(&segment[pos..end], normalized, run);
            pos = end;
        }
    }
}

pub(super) fn normalize_non_ascii(text: &str, normalized: &mut String, run: &mut String) {
    // clean_text + handle_chinese_chars
    run.clear();
    for c in text.chars() {
        if in_table(c, REMOVED_CHARS) {
            continue;
        }
        if c.is_whitespace() {
            run.push(' ');
        } else if is_chinese_char(c) {
            run.push(' ');
            run.push(c);
            run.push(' ');
        } else {
            run.push(c);
        }
    }
    // strip_accents (NFD, drop Mn) + lowercase
    for c in run.as_str().nfd() {
        if c.is_ascii() {
            normalized.push(c.to_ascii_lowercase());
        } else if !in_table(c, NONSPACING_MARKS) {
            for lower in c.to_lowercase() {
                normalized.push(lower);
            }
        }
    }
}

/// The "Chinese character" ranges of BERT / `tokenizers` (CJK ideographs only;
/// kana and Hangul are not included).
pub(super) fn is_chinese_char(c: char) -> bool {
    matches!(
        u32::from(c),
        0x4E00..=0x9FFF
            | 0x3400..=0x4DBF
            | 0x20000..=0x2A6DF
            | 0x2A700..=0x2B73F
            | 0x2B740..=0x2B81F
            | 0x2B920..=0x2CEAF
            | 0xF900..=0xFAFF
            | 0x2F800..=0x2FA1F
    )
}

#[inline]
pub(super) fn ascii_split_class(b: u8) -> Split {
    match b {
        0x09..=0x0D | b' ' => Split::Whitespace,
        b'!'..=b'/' | b':'..=b'@' | b'['..=b'`' | b'{'..=b'~' => Split::Punctuation,
        _ => Split::Other,
    }
}

#[inline]
pub(super) fn char_split_class(c: char) -> Split {
    if c.is_whitespace() {
        Split::Whitespace
    } else if in_table(c, PUNCTUATION) {
        Split::Punctuation
    } else {
        Split::Other
    }
}

/// Whether `c` lies in one of the sorted, disjoint inclusive ranges of `table`.
#[inline]
pub(super) fn in_table(c: char, table: &[(u32, u32)]) -> bool {
    let cp = u32::from(c);
    table
        .binary_search_by(|&(lo, hi)| {
            if hi < cp {
                Ordering::Less
            } else if lo > cp {
                Ordering::Greater
            } else {
                Ordering::Equal
            }
        })
        .is_ok()
}
