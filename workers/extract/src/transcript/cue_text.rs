//! Cue text: markup and entities stripped, the speaker found (voice tags, `Name:` prefixes).

use super::*;

/// A cue of `raw` text appended to `cues`, cleaned (speaker taken out); a cue with no text
/// left is dropped.
pub(super) fn push_cue(
    cues: &mut Vec<super::Cue>,
    id: Option<String>,
    (start_ms, end_ms): (u64, u64),
    raw: &str,
) {
    let (speaker, text) = clean_cue_text(raw);
    if !text.is_empty() {
        cues.push(super::Cue {
            id,
            start_ms,
            end_ms,
            speaker,
            text,
        });
    }
}

/// The speaker and plain text of a cue's raw text (its lines joined with `\n`).
///
/// Tags go first, then character references are decoded — in that order, so that an escaped
/// `&lt;b&gt;` stays visible text instead of becoming a tag. A named voice span wins; failing
/// one, a `Name:` / `[Name]` prefix on the first line names the speaker.
pub(super) fn clean_cue_text(raw: &str) -> (Option<String>, String) {
    let (voice, stripped) = strip_markup(raw);
    let text = normalise_lines(&decode_entities(&stripped));
    if voice.is_some() {
        return (voice, text);
    }
    match split_speaker_prefix(&text) {
        Some((speaker, rest)) => (Some(speaker), rest),
        None => (None, text),
    }
}

/// Removes tags, returning the first named voice (`<v Name>`, `<v.class Name>`) and the rest.
///
/// A tag is `<` followed by a letter, a digit (inline timestamps) or `/`, up to the next `>` on
/// the same line. Anything else is left as text, so a stray `a < b` in SRT survives. The scan for
/// `>` stops at the next `<` or line break, so every byte is looked at a bounded number of times.
/// Also removes SSA override blocks (`{\an8}`), which subtitle tools leave in SRT files.
pub(super) fn strip_markup(raw: &str) -> (Option<String>, String) {
    let bytes = raw.as_bytes();
    let mut out = String::with_capacity(raw.len());
    let mut voice: Option<String> = None;
    let mut literal_from = 0;
    let mut i = 0;
    while i < bytes.len() {
        let close = match bytes[i] {
            b'<' if bytes
                .get(i + 1)
                .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'/') =>
            {
                find_close(bytes, i + 1, b'>', b'<')
            }
            b'{' if bytes.get(i + 1) == Some(&b'\\') => find_close(bytes, i + 1, b'}', b'{'),
            _ => None,
        };
        match close {
            Some(close) => {
                out.push_str(&raw[literal_from..i]);
                if bytes[i] == b'<' && voice.is_none() {
                    voice = voice_name(&raw[i + 1..close]);
                }
                i = close + 1;
                literal_from = i;
            }
            None => i += 1,
        }
    }
    out.push_str(&raw[literal_from..]);
    (voice, out)
}

/// The index of `close` at or after `from`, unless `reopen` or a line break comes first.
pub(super) fn find_close(bytes: &[u8], from: usize, close: u8, reopen: u8) -> Option<usize> {
    bytes
        .get(from..)?
        .iter()
        .position(|&b| b == close || b == reopen || b == b'\n')
        .map(|offset| from + offset)
        .filter(|&at| bytes[at] == close)
}

/// The speaker of a tag's inside (`v Ann Lee`, `v.loud Ann`), when it is a voice tag with a name.
///
/// A voice without a name, or with a placeholder of punctuation only (`<v ->`, as some caption
/// tools write for "unknown speaker"), names nobody.
pub(super) fn voice_name(tag: &str) -> Option<String> {
    let (name, annotation) = match tag.split_once(|c: char| c.is_whitespace()) {
        Some((name, annotation)) => (name, annotation),
        None => (tag, ""),
    };
    // The tag name may carry classes (`v.first.loud`).
    let name = name.split('.').next().unwrap_or(name);
    if !name.eq_ignore_ascii_case("v") {
        return None;
    }
    let speaker = collapse_whitespace(&decode_entities(annotation));
    let names_someone = speaker.chars().any(char::is_alphanumeric);
    names_someone.then_some(speaker)
}

/// Splits a transcriber's speaker prefix off the first line: `JOHN: …`, `Ann Lee: …`,
/// `[Ann Lee] …`, `- Ann Lee: …`, `>> ANN: …`.
///
/// The name must be one to four capitalised words, so that prose such as "Privacy and
/// security: …" or "So, to summarise: …" is not mistaken for a speaker, and the colon must be
/// followed by a space or the end of the line (not `Http://`). A prefix with nothing after it is
/// left as text: "Example:" alone is more likely speech than a speaker saying nothing.
pub(super) fn split_speaker_prefix(text: &str) -> Option<(String, String)> {
    let (first, more) = match text.split_once('\n') {
        Some((first, more)) => (first, Some(more)),
        None => (text, None),
    };
    let line = first.trim_start();
    // Dialogue dashes and broadcast-caption chevrons mark a change of speaker before the name.
    let line = line
        .strip_prefix(">>")
        .or_else(|| line.strip_prefix(['-', '–']))
        .map_or(line, str::trim_start);

    let (speaker, after) = if let Some(bracketed) = line.strip_prefix('[') {
        let (inside, after) = bracketed.split_once(']')?;
        let after = after.trim_start();
        (
            speaker_name(inside)?,
            after.strip_prefix(':').unwrap_or(after),
        )
    } else {
        let (candidate, after) = line.split_once(':')?;
        if !(after.is_empty() || after.starts_with(char::is_whitespace)) {
            return None;
        }
        (speaker_name(candidate)?, after)
    };

    let mut rest = after.trim().to_string();
    if let Some(more) = more {
        if !rest.is_empty() {
            rest.push('\n');
        }
        rest.push_str(more);
    }
    if rest.is_empty() {
        return None;
    }
    Some((speaker, rest))
}

pub(super) const MAX_SPEAKER_WORDS: usize = 4;

/// One to four capitalised words (`JOHN`, `Ann Lee`, `Dr. O'Brien`), with single spaces.
///
/// After the first word a number is accepted too, for the `Speaker 2:` that speech-to-text
/// tools write when they tell voices apart but cannot name them.
pub(super) fn speaker_name(candidate: &str) -> Option<String> {
    let words: Vec<&str> = candidate
        .split_whitespace()
        .take(MAX_SPEAKER_WORDS + 1)
        .collect();
    let (first, others) = words.split_first()?;
    if words.len() > MAX_SPEAKER_WORDS || !is_capitalised_word(first) {
        return None;
    }
    others
        .iter()
        .all(|word| is_capitalised_word(word) || is_digits(word))
        .then(|| words.join(" "))
}

pub(super) fn is_capitalised_word(word: &str) -> bool {
    let mut chars = word.chars();
    chars.next().is_some_and(char::is_uppercase)
        && chars.all(|c| c.is_alphabetic() || matches!(c, '\'' | '’' | '-' | '.'))
}

/// The longest character reference we decode, without `&` and `;` (`#x10FFFF`, `nbsp`).
pub(super) const MAX_ENTITY_LEN: usize = 8;

/// Decodes `&amp;`, `&lt;`, `&gt;`, `&quot;`, `&apos;`, `&nbsp;`, `&lrm;`, `&rlm;` and numeric
/// references (`&#8217;`, `&#x2019;`). Anything else, including a bare `&`, stays as written.
pub(super) fn decode_entities(s: &str) -> String {
    if !s.contains('&') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        let after = &rest[amp + 1..];
        // Only a short look-ahead for the `;`, so a text full of `&` stays linear.
        let decoded = after
            .char_indices()
            .take(MAX_ENTITY_LEN + 1)
            .find(|&(_, c)| c == ';')
            .and_then(|(semi, _)| decode_entity(&after[..semi]).map(|c| (c, semi)));
        match decoded {
            Some((c, semi)) => {
                out.push(c);
                rest = &after[semi + 1..];
            }
            None => {
                out.push('&');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

pub(super) fn decode_entity(name: &str) -> Option<char> {
    match name {
        "amp" => Some('&'),
        "lt" => Some('<'),
        "gt" => Some('>'),
        "quot" => Some('"'),
        "apos" => Some('\''),
        "nbsp" => Some('\u{a0}'),
        "lrm" => Some('\u{200e}'),
        "rlm" => Some('\u{200f}'),
        _ => {
            let number = name.strip_prefix('#')?;
            let code = match number.strip_prefix(['x', 'X']) {
                Some(hex) if !hex.is_empty() && hex.bytes().all(|b| b.is_ascii_hexdigit()) => {
                    u32::from_str_radix(hex, 16).ok()?
                }
                Some(_) => return None,
                None if is_digits(number) => number.parse().ok()?,
                None => return None,
            };
            // NUL and surrogates are not text.
            char::from_u32(code).filter(|&c| c != '\0')
        }
    }
}
