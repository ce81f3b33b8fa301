//! Meeting transcripts: WebVTT, SRT and a simple JSON form, parsed into timed cues with
//! speakers.
//!
//! A transcript is a list of [`Cue`]s: a time span, an optional speaker and plain text. The three
//! formats are the ones recordings actually come with:
//!
//! * **WebVTT** (W3C), as written by browsers' caption tools and meeting platforms. The parser
//!   follows the spec's block structure (header, `NOTE` / `STYLE` / `REGION` blocks, cues with an
//!   optional identifier) and its cue-text markup (`<v Speaker>` voice spans, `<c>`, `<i>`, `<b>`,
//!   `<u>`, `<ruby>`, `<rt>`, `<lang>`, inline timestamps, character references).
//! * **SRT** (SubRip): numbered blocks with `hh:mm:ss,ttt --> hh:mm:ss,ttt` timings and HTML-ish
//!   formatting tags.
//! * **JSON**: `{"title"?, "date"?, "segments": [{"start", "end", "speaker"?, "text"}]}` with times
//!   in seconds, or `"cues"` with `startMs` / `endMs` in milliseconds — the shape speech-to-text
//!   tools and our own exports produce.
//!
//! Speakers come from the format where it has them (WebVTT voice spans, the JSON `speaker`);
//! otherwise from the transcriber's convention of starting a line with `NAME:`, `Ann Lee:`,
//! `[Ann Lee]` or `- Ann Lee:`. A cue's speaker is what its own markup says: the parser does
//! not carry a speaker over to the following cues (the meeting view does, in
//! [`crate::meeting`], where turn-taking is interpreted).
//!
//! Where the real world deviates harmlessly from the specs the parsers accept it: one-digit hours
//! (`0:00:08.160`, common in human-edited WebVTT), one to three fraction digits, `.` as SRT's
//! millisecond separator, a missing blank line after the `WEBVTT` header, missing SRT index lines,
//! extra blank lines, `\r\n`, lone `\r` and a UTF-8 byte-order mark. What would silently lose or
//! misplace speech instead — a timing line that cannot be read, a cue that ends before it starts —
//! is an error naming the 1-based line.
//!
//! Everything is a pure function of the text, linear in its length, and never panics.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One timed piece of speech.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Cue {
    /// The cue identifier when the format has one (`slide-3`, `12`).
    pub id: Option<String>,
    /// Start of the cue, in milliseconds from the start of the recording.
    pub start_ms: u64,
    /// End of the cue, in milliseconds from the start of the recording; never before `start_ms`.
    pub end_ms: u64,
    /// From `<v Name>` (WebVTT), a `NAME:` / `[Name]` line prefix (SRT, WebVTT without voice tags), or the JSON `speaker`.
    pub speaker: Option<String>,
    /// Plain text: markup removed, entities decoded (&amp; &lt; &gt; &nbsp; &lrm; &rlm; and numeric), lines joined with '\n', trimmed.
    pub text: String,
}

/// The three transcript formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TranscriptFormat {
    /// WebVTT (`.vtt`).
    Vtt,
    /// SubRip (`.srt`).
    Srt,
    /// The JSON segment list (`.json`).
    Json,
}

impl TranscriptFormat {
    /// By file extension (`.vtt`, `.srt`, `.json`), case-insensitive.
    pub fn from_path(path: &str) -> Option<TranscriptFormat> {
        // Only the last path component: a directory called `talks.vtt/` says nothing about its files.
        let name = path.rsplit(['/', '\\']).next().unwrap_or(path);
        let (_, extension) = name.rsplit_once('.')?;
        if extension.eq_ignore_ascii_case("vtt") {
            Some(TranscriptFormat::Vtt)
        } else if extension.eq_ignore_ascii_case("srt") {
            Some(TranscriptFormat::Srt)
        } else if extension.eq_ignore_ascii_case("json") {
            Some(TranscriptFormat::Json)
        } else {
            None
        }
    }
}

/// A parsed transcript.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Transcript {
    pub format: TranscriptFormat,
    /// Title when the format carries one (JSON `title`; WebVTT header text after `WEBVTT`, if any).
    pub title: Option<String>,
    /// JSON `date` (as given), none for the others.
    pub date: Option<String>,
    /// The cues in the order of the file (not re-sorted: the file's order is the transcriber's).
    pub cues: Vec<Cue>,
}

impl Transcript {
    /// Distinct speakers in order of first appearance.
    pub fn speakers(&self) -> Vec<String> {
        let mut seen: HashSet<&str> = HashSet::new();
        let mut speakers = Vec::new();
        for speaker in self.cues.iter().filter_map(|cue| cue.speaker.as_deref()) {
            if seen.insert(speaker) {
                speakers.push(speaker.to_string());
            }
        }
        speakers
    }

    /// End of the last cue.
    ///
    /// Taken as the latest end of any cue, which is the last cue's end in a time-ordered file and
    /// still the length of the recording when a file lists its cues out of order. Zero when there
    /// are no cues.
    pub fn duration_ms(&self) -> u64 {
        self.cues.iter().map(|cue| cue.end_ms).max().unwrap_or(0)
    }
}

/// Why a transcript could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TranscriptError {
    /// Carries a human sentence naming the line (1-based) and what is wrong.
    #[error("{0}")]
    Malformed(String),
    #[error("the transcript has no cues")]
    Empty,
}

/// Parses `text` as `format`.
pub fn parse(format: TranscriptFormat, text: &str) -> Result<Transcript, TranscriptError> {
    match format {
        TranscriptFormat::Vtt => parse_vtt(text),
        TranscriptFormat::Srt => parse_srt(text),
        TranscriptFormat::Json => parse_json(text),
    }
}

// ---------------------------------------------------------------------------------------------
// WebVTT
// ---------------------------------------------------------------------------------------------

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
        let (speaker, text) = clean_cue_text(&raw);
        if text.is_empty() {
            continue;
        }
        cues.push(Cue {
            id,
            start_ms,
            end_ms,
            speaker,
            text,
        });
    }
    finish(TranscriptFormat::Vtt, title, None, cues)
}

/// The title of a WebVTT signature line (`WEBVTT`, `WEBVTT - Weekly sync`): `None` when the line
/// is not a signature, `Some(None)` when it carries no title.
fn vtt_signature(line: &str) -> Option<Option<String>> {
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
fn is_vtt_block_keyword(line: &str) -> bool {
    ["NOTE", "STYLE", "REGION"].into_iter().any(|keyword| {
        line.strip_prefix(keyword)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t']))
    })
}

/// The index of the first line at or after `from` that ends a WebVTT block: a blank line, a
/// timing line, or the end of the file.
fn end_of_block(lines: &[&str], from: usize) -> usize {
    let mut i = from;
    while i < lines.len() && !is_blank(lines[i]) && !has_arrow(lines[i]) {
        i += 1;
    }
    i
}

// ---------------------------------------------------------------------------------------------
// SRT
// ---------------------------------------------------------------------------------------------

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
        let (speaker, text) = clean_cue_text(&text_lines.join("\n"));
        if text.is_empty() {
            continue;
        }
        cues.push(Cue {
            id,
            start_ms,
            end_ms,
            speaker,
            text,
        });
    }
    finish(TranscriptFormat::Srt, None, None, cues)
}

/// Whether line `i` starts an SRT cue: a timing line, or an index line whose next non-blank line
/// is a timing line. (A number alone that is not followed by a timing line is cue text: "42".)
fn starts_srt_cue(lines: &[&str], i: usize) -> bool {
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

fn is_srt_index(line: &str) -> bool {
    !line.is_empty() && line.bytes().all(|b| b.is_ascii_digit())
}

fn next_non_blank(lines: &[&str], from: usize) -> usize {
    let mut i = from;
    while i < lines.len() && is_blank(lines[i]) {
        i += 1;
    }
    i
}

// ---------------------------------------------------------------------------------------------
// JSON
// ---------------------------------------------------------------------------------------------

type JsonObject = serde_json::Map<String, Value>;

/// Parses the JSON form.
///
/// `{"title"?: string, "date"?: string, "segments": [{"start": seconds, "end": seconds,
/// "speaker"?: string, "text": string, "id"?: string | number}]}`; `"cues"` may stand for
/// `"segments"`, and `startMs` / `endMs` (milliseconds) for `start` / `end` (seconds, fractions
/// allowed). The text is taken as plain text — JSON is data, not markup, so `<` and `&` in it are
/// kept — with its lines trimmed; the speaker comes only from `speaker`.
pub fn parse_json(text: &str) -> Result<Transcript, TranscriptError> {
    let text = strip_bom(text);
    if is_blank(text) {
        return Err(TranscriptError::Empty);
    }
    let value: Value = serde_json::from_str(text)
        .map_err(|e| TranscriptError::Malformed(format!("invalid JSON transcript: {e}")))?;
    let Value::Object(root) = value else {
        return Err(TranscriptError::Malformed(
            "a JSON transcript must be an object with a \"segments\" (or \"cues\") array".into(),
        ));
    };
    let title =
        json_string(&root, "title", "the transcript")?.and_then(|title| non_empty(title.trim()));
    // The date is kept as written: its format is the producer's, and parsing it is not ours.
    let date = json_string(&root, "date", "the transcript")?.filter(|date| !is_blank(date));

    let (key, list) = match (root.get("segments"), root.get("cues")) {
        (Some(list), _) if !list.is_null() => ("segments", list),
        (_, Some(list)) if !list.is_null() => ("cues", list),
        _ => {
            return Err(TranscriptError::Malformed(
                "the JSON transcript has no \"segments\" (or \"cues\") array".into(),
            ));
        }
    };
    let Value::Array(items) = list else {
        return Err(TranscriptError::Malformed(format!(
            "\"{key}\" must be an array of segments"
        )));
    };

    let mut cues = Vec::new();
    for (index, item) in items.iter().enumerate() {
        let owner = format!("{key}[{index}]");
        let Value::Object(segment) = item else {
            return Err(TranscriptError::Malformed(format!(
                "{owner} must be an object with \"start\", \"end\" and \"text\""
            )));
        };
        let start_ms = json_time(segment, "start", "startMs", &owner)?;
        let end_ms = json_time(segment, "end", "endMs", &owner)?;
        if end_ms < start_ms {
            return Err(TranscriptError::Malformed(format!(
                "{owner} ends ({}) before it starts ({})",
                format_ms(end_ms),
                format_ms(start_ms)
            )));
        }
        let raw_text = match segment.get("text") {
            Some(Value::String(text)) => text,
            Some(_) => {
                return Err(TranscriptError::Malformed(format!(
                    "{owner}: \"text\" must be a string"
                )));
            }
            None => {
                return Err(TranscriptError::Malformed(format!(
                    "{owner}: missing \"text\""
                )));
            }
        };
        let text = normalise_lines(raw_text);
        if text.is_empty() {
            continue;
        }
        let speaker = json_string(segment, "speaker", &owner)?
            .and_then(|speaker| non_empty(&collapse_whitespace(&speaker)));
        let id = match segment.get("id") {
            Some(Value::String(id)) => non_empty(id.trim()),
            Some(Value::Number(id)) => Some(id.to_string()),
            _ => None,
        };
        cues.push(Cue {
            id,
            start_ms,
            end_ms,
            speaker,
            text,
        });
    }
    finish(TranscriptFormat::Json, title, date, cues)
}

/// An optional string member: absent or `null` is `None`, anything but a string is an error.
fn json_string(
    object: &JsonObject,
    key: &str,
    owner: &str,
) -> Result<Option<String>, TranscriptError> {
    match object.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(TranscriptError::Malformed(format!(
            "{owner}: \"{key}\" must be a string"
        ))),
    }
}

/// A time in milliseconds from `ms_key` (preferred: it is exact) or `seconds_key`.
fn json_time(
    segment: &JsonObject,
    seconds_key: &str,
    ms_key: &str,
    owner: &str,
) -> Result<u64, TranscriptError> {
    if let Some(value) = segment.get(ms_key).filter(|v| !v.is_null()) {
        // Integers are what the form asks for; whole-valued floats (`1500.0`) from loosely typed
        // producers mean the same thing.
        return value
            .as_u64()
            .or_else(|| value.as_f64().and_then(float_to_ms))
            .ok_or_else(|| {
                TranscriptError::Malformed(format!(
                    "{owner}: \"{ms_key}\" must be a non-negative number of milliseconds"
                ))
            });
    }
    if let Some(value) = segment.get(seconds_key).filter(|v| !v.is_null()) {
        return value
            .as_f64()
            .and_then(|seconds| float_to_ms(seconds * 1000.0))
            .ok_or_else(|| {
                TranscriptError::Malformed(format!(
                    "{owner}: \"{seconds_key}\" must be a non-negative number of seconds"
                ))
            });
    }
    Err(TranscriptError::Malformed(format!(
        "{owner}: missing \"{seconds_key}\" (seconds) or \"{ms_key}\" (milliseconds)"
    )))
}

/// Rounds a millisecond count to an integer, refusing negatives, NaN and values beyond `u64`.
fn float_to_ms(ms: f64) -> Option<u64> {
    // Rounding absorbs binary fractions: 0.1 s * 1000 is 100.00000000000001 ms.
    // NaN and infinities are outside the range too.
    (0.0..=u64::MAX as f64)
        .contains(&ms)
        .then(|| ms.round() as u64)
}

// ---------------------------------------------------------------------------------------------
// Timings
// ---------------------------------------------------------------------------------------------

/// Reads a timing line `START --> END [settings]`, reporting `line_no` when it cannot.
fn parse_cue_timing(line: &str, line_no: usize, srt: bool) -> Result<(u64, u64), TranscriptError> {
    let (start_ms, end_ms) = parse_timing(line, srt).ok_or_else(|| {
        let example = if srt {
            "00:01:02,345 --> 00:01:04,000"
        } else {
            "00:01:02.345 --> 00:01:04.000"
        };
        malformed(
            line_no,
            format!(
                "malformed cue timing \"{}\"; expected \"START --> END\" like \"{example}\"",
                excerpt(line)
            ),
        )
    })?;
    if end_ms < start_ms {
        return Err(malformed(
            line_no,
            format!(
                "the cue ends ({}) before it starts ({})",
                format_ms(end_ms),
                format_ms(start_ms)
            ),
        ));
    }
    Ok((start_ms, end_ms))
}

fn parse_timing(line: &str, srt: bool) -> Option<(u64, u64)> {
    let (left, right) = line.split_once("-->")?;
    let start = parse_timestamp(left.trim(), srt)?;
    // WebVTT cue settings (`line:15%`) and SRT coordinates (`X1:…`) follow the end time.
    let end = parse_timestamp(right.split_whitespace().next()?, srt)?;
    Some((start, end))
}

/// `[h…:]mm:ss.ttt` in milliseconds; SRT also allows `,` before the fraction.
///
/// Hours may have any number of digits, including one (`0:00:08.160` is how many human-edited
/// WebVTT files are written, though the spec asks for two). Minutes and seconds have one or two
/// digits below 60, the fraction one to three digits (`.5` is half a second). Arithmetic is
/// checked, so absurd hour counts are malformed rather than an overflow.
fn parse_timestamp(s: &str, srt: bool) -> Option<u64> {
    let separator = s.rfind(['.', ','])?;
    let (clock, fraction) = (&s[..separator], &s[separator + 1..]);
    if !srt && s[separator..].starts_with(',') {
        return None;
    }
    if fraction.len() > 3 || !is_digits(fraction) {
        return None;
    }
    // Scale "5" to 500 and "25" to 250.
    let mut millis: u64 = fraction.parse().ok()?;
    for _ in fraction.len()..3 {
        millis *= 10;
    }

    let mut parts = clock.split(':');
    let (hours, minutes, seconds) = match (parts.next(), parts.next(), parts.next(), parts.next()) {
        (Some(m), Some(sec), None, None) => ("0", m, sec),
        (Some(h), Some(m), Some(sec), None) => (h, m, sec),
        _ => return None,
    };
    if !is_digits(hours) || !is_clock_field(minutes) || !is_clock_field(seconds) {
        return None;
    }
    let hours: u64 = hours.parse().ok()?;
    let minutes: u64 = minutes.parse().ok()?;
    let seconds: u64 = seconds.parse().ok()?;
    if minutes >= 60 || seconds >= 60 {
        return None;
    }
    hours
        .checked_mul(3_600_000)?
        .checked_add(minutes * 60_000 + seconds * 1000 + millis)
}

fn is_clock_field(s: &str) -> bool {
    (1..=2).contains(&s.len()) && is_digits(s)
}

/// Non-empty and ASCII digits only (`str::parse` would also take a leading `+`).
fn is_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// `hh:mm:ss.mmm`, for error messages.
fn format_ms(ms: u64) -> String {
    format!(
        "{:02}:{:02}:{:02}.{:03}",
        ms / 3_600_000,
        ms / 60_000 % 60,
        ms / 1000 % 60,
        ms % 1000
    )
}

// ---------------------------------------------------------------------------------------------
// Cue text
// ---------------------------------------------------------------------------------------------

/// The speaker and plain text of a cue's raw text (its lines joined with `\n`).
///
/// Tags go first, then character references are decoded — in that order, so that an escaped
/// `&lt;b&gt;` stays visible text instead of becoming a tag. A named voice span wins; failing
/// one, a `Name:` / `[Name]` prefix on the first line names the speaker.
fn clean_cue_text(raw: &str) -> (Option<String>, String) {
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
fn strip_markup(raw: &str) -> (Option<String>, String) {
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
fn find_close(bytes: &[u8], from: usize, close: u8, reopen: u8) -> Option<usize> {
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
fn voice_name(tag: &str) -> Option<String> {
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
fn split_speaker_prefix(text: &str) -> Option<(String, String)> {
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

const MAX_SPEAKER_WORDS: usize = 4;

/// One to four capitalised words (`JOHN`, `Ann Lee`, `Dr. O'Brien`), with single spaces.
///
/// After the first word a number is accepted too, for the `Speaker 2:` that speech-to-text
/// tools write when they tell voices apart but cannot name them.
fn speaker_name(candidate: &str) -> Option<String> {
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

fn is_capitalised_word(word: &str) -> bool {
    let mut chars = word.chars();
    chars.next().is_some_and(char::is_uppercase)
        && chars.all(|c| c.is_alphabetic() || matches!(c, '\'' | '’' | '-' | '.'))
}

/// The longest character reference we decode, without `&` and `;` (`#x10FFFF`, `nbsp`).
const MAX_ENTITY_LEN: usize = 8;

/// Decodes `&amp;`, `&lt;`, `&gt;`, `&quot;`, `&apos;`, `&nbsp;`, `&lrm;`, `&rlm;` and numeric
/// references (`&#8217;`, `&#x2019;`). Anything else, including a bare `&`, stays as written.
fn decode_entities(s: &str) -> String {
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

fn decode_entity(name: &str) -> Option<char> {
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

// ---------------------------------------------------------------------------------------------
// Small helpers
// ---------------------------------------------------------------------------------------------

fn strip_bom(text: &str) -> &str {
    text.strip_prefix('\u{feff}').unwrap_or(text)
}

/// Splits on `\n`, `\r\n` and lone `\r` (all three are WebVTT line terminators; `str::lines`
/// keeps a lone `\r`). Numbering the result from 1 gives the line numbers an editor shows.
fn split_lines(text: &str) -> Vec<&str> {
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
fn is_blank(line: &str) -> bool {
    line.trim().is_empty()
}

fn has_arrow(line: &str) -> bool {
    line.contains("-->")
}

/// Each line trimmed, empty lines (often left behind by removed tags) dropped, joined with `\n`.
fn normalise_lines(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

fn collapse_whitespace(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn non_empty(s: &str) -> Option<String> {
    (!s.is_empty()).then(|| s.to_string())
}

/// The start of a line for an error message: enough to find it, bounded for arbitrary input.
fn excerpt(line: &str) -> String {
    const MAX_CHARS: usize = 60;
    let line = line.trim();
    match line.char_indices().nth(MAX_CHARS) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_string(),
    }
}

fn malformed(line_no: usize, what: String) -> TranscriptError {
    TranscriptError::Malformed(format!("line {line_no}: {what}"))
}

fn finish(
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const AC_ENCODING: &str = include_str!("../tests/fixtures/transcripts/ac_encoding.vtt");
    const AY_TENSORFLOW: &str = include_str!("../tests/fixtures/transcripts/ay_tensorflow.vtt");
    const KD_SPEECH: &str = include_str!("../tests/fixtures/transcripts/kd_speech.vtt");

    fn malformed_message(result: Result<Transcript, TranscriptError>) -> String {
        match result {
            Err(TranscriptError::Malformed(message)) => message,
            other => panic!("expected Malformed, got {other:?}"),
        }
    }

    // ---- the real fixtures -------------------------------------------------------------------
    //
    // How the expected values were counted: each file was split on blank lines (after dropping
    // the BOM and turning \r\n into \n) and the blocks holding a `-->` timing line were counted
    // with a throwaway script; `grep -c -- '-->'` on the raw file gives the same number, since no
    // cue text contains `-->`. Every cue has exactly one text line, none is empty after markup
    // removal, and no identifier repeats, so the cue count equals the number of timing lines.
    // Positions (`cues[137]`) are 0-based indices into that block list; times were converted by
    // hand from the timing lines quoted next to them.

    #[test]
    fn fixture_ac_encoding() {
        let t = parse_vtt(AC_ENCODING).expect("ac_encoding.vtt parses");
        // 168 timing lines. The numeric identifiers are not a count: they skip the numbers
        // around each slide-N cue ("5", "slide-2", "8"), so the last numbered cue is 179.
        assert_eq!(t.cues.len(), 168);
        assert_eq!(t.format, TranscriptFormat::Vtt);
        assert_eq!(t.title, None);

        // "slide-1 / 0:00:08.160 --> 0:00:10.320": one-digit hours.
        let first = &t.cues[0];
        assert_eq!(first.id.as_deref(), Some("slide-1"));
        assert_eq!((first.start_ms, first.end_ms), (8_160, 10_320));
        assert_eq!(first.speaker, None);
        assert_eq!(first.text, "Hello everybody, my name is Anita Chen");

        // "slide-14 / 0:09:15.640 --> 0:09:27.360".
        let last = t.cues.last().expect("a last cue");
        assert_eq!(last.id.as_deref(), Some("slide-14"));
        assert_eq!((last.start_ms, last.end_ms), (555_640, 567_360));
        assert_eq!(last.speaker, None);
        assert_eq!(
            last.text,
            "Thank you for watching my presentation and have a nice day!"
        );

        // "148 / 0:07:33.400 --> 0:07:36.560 / … image &amp; video processing," — the entity
        // is decoded.
        let cue = &t.cues[137];
        assert_eq!(cue.id.as_deref(), Some("148"));
        assert_eq!((cue.start_ms, cue.end_ms), (453_400, 456_560));
        assert_eq!(
            cue.text,
            "which is geared towards image & video processing,"
        );
        // Curly apostrophes (UTF-8) pass through untouched.
        assert_eq!(t.cues[106].id.as_deref(), Some("115"));
        assert!(t.cues[106].text.ends_with("Model Loader API’s"));

        // No voice tags and no line looks like "Name: …" ("However, there are various types of
        // content:" has a comma and lower-case words).
        assert!(t.speakers().is_empty());
        assert_eq!(t.duration_ms(), 567_360);
    }

    #[test]
    fn fixture_ay_tensorflow() {
        let t = parse_vtt(AY_TENSORFLOW).expect("ay_tensorflow.vtt parses");
        // 189 timing lines; here the identifiers do run 1…189 with slide-N in place of some.
        assert_eq!(t.cues.len(), 189);

        // "slide-1 / 0:00:09.800 --> 0:00:10.840 / <v ->Slide one.</v>": a voice span whose
        // name is the placeholder "-", which names nobody.
        let first = &t.cues[0];
        assert_eq!(first.id.as_deref(), Some("slide-1"));
        assert_eq!((first.start_ms, first.end_ms), (9_800, 10_840));
        assert_eq!(first.speaker, None);
        assert_eq!(first.text, "Slide one.");

        // "189 / 0:08:49.900 --> 0:08:50.183".
        let last = t.cues.last().expect("a last cue");
        assert_eq!(last.id.as_deref(), Some("189"));
        assert_eq!((last.start_ms, last.end_ms), (529_900, 530_183));
        assert_eq!(last.speaker, None);
        assert_eq!(last.text, "Thank you very much.");

        // "2 / 0:00:10.840 --> 0:00:14.710 line:15%": cue settings after the end time.
        let cue = &t.cues[1];
        assert_eq!(cue.id.as_deref(), Some("2"));
        assert_eq!((cue.start_ms, cue.end_ms), (10_840, 14_710));
        assert_eq!(
            cue.text,
            "Hi, my name is Ann, and I'm a software engineer at Google."
        );
        // "slide-10 / 0:07:31.650 --> 0:07:35.200".
        let cue = &t.cues[160];
        assert_eq!(cue.id.as_deref(), Some("slide-10"));
        assert_eq!(cue.start_ms, 451_650);
        assert!(cue.text.contains("inference speeds for the Posenet model"));

        assert!(t.speakers().is_empty());
        assert_eq!(t.duration_ms(), 530_183);
    }

    #[test]
    fn fixture_kd_speech() {
        // This one has a byte-order mark and \r\n line endings.
        assert!(KD_SPEECH.starts_with('\u{feff}'));
        assert!(KD_SPEECH.contains("\r\n"));
        let t = parse_vtt(KD_SPEECH).expect("kd_speech.vtt parses");
        // 112 timing lines (identifiers 1…112 with slide-N in place of some).
        assert_eq!(t.cues.len(), 112);

        // "slide-1 / 00:00:09.226 --> 00:00:10.726 / <v Kelly>Hello.</v>".
        let first = &t.cues[0];
        assert_eq!(first.id.as_deref(), Some("slide-1"));
        assert_eq!((first.start_ms, first.end_ms), (9_226, 10_726));
        assert_eq!(first.speaker.as_deref(), Some("Kelly"));
        assert_eq!(first.text, "Hello.");

        // "112 / 00:06:50.086 --> 00:06:51.136": no voice tag, and the speaker is not carried
        // over from the first cue.
        let last = t.cues.last().expect("a last cue");
        assert_eq!(last.id.as_deref(), Some("112"));
        assert_eq!((last.start_ms, last.end_ms), (410_086, 411_136));
        assert_eq!(last.speaker, None);
        assert_eq!(last.text, "Thanks for listening.");

        // "5 / 00:00:17.126 --> 00:00:21.366" and "83 / 00:04:57.496 --> 00:04:59.039": lines
        // ending in a colon that must not become speakers.
        let cue = &t.cues[4];
        assert_eq!(cue.id.as_deref(), Some("5"));
        assert_eq!((cue.start_ms, cue.end_ms), (17_126, 21_366));
        assert_eq!(cue.text, "is Wreck a Nice Beach in the Browser:");
        assert_eq!(cue.speaker, None);
        let cue = &t.cues[82];
        assert_eq!(cue.id.as_deref(), Some("83"));
        assert_eq!((cue.start_ms, cue.end_ms), (297_496, 299_039));
        assert_eq!(cue.text, "Privacy and security:");
        assert_eq!(cue.speaker, None);

        assert_eq!(t.speakers(), vec!["Kelly".to_string()]);
        assert_eq!(t.duration_ms(), 411_136);
    }

    // ---- WebVTT ------------------------------------------------------------------------------

    #[test]
    fn vtt_voice_tags() {
        let t = parse_vtt(
            "WEBVTT\n\n\
             00:00:01.000 --> 00:00:02.000\n<v Bob>Hello there.</v>\n\n\
             00:00:02.000 --> 00:00:03.000\n<v.loud.angry Ann Lee>Stop!\n\n\
             00:00:03.000 --> 00:00:05.000\n<v Bob>Hi</v>\n<v Ann>Hello</v>\n\n\
             00:00:05.000 --> 00:00:06.000\n<v>No name given\n",
        )
        .expect("parses");
        let speakers: Vec<_> = t.cues.iter().map(|c| c.speaker.as_deref()).collect();
        assert_eq!(speakers, [Some("Bob"), Some("Ann Lee"), Some("Bob"), None]);
        assert_eq!(t.cues[0].text, "Hello there.");
        // Closing tag optional; the classes are not part of the name.
        assert_eq!(t.cues[1].text, "Stop!");
        // Several voices: the first is the speaker, all the text is kept.
        assert_eq!(t.cues[2].text, "Hi\nHello");
        assert_eq!(t.cues[3].text, "No name given");
        assert_eq!(t.speakers(), vec!["Bob".to_string(), "Ann Lee".to_string()]);
    }

    #[test]
    fn vtt_name_prefixes() {
        let t = parse_vtt(
            "WEBVTT\n\n\
             00:01.000 --> 00:02.000\nJOHN: Good morning.\n\n\
             00:02.000 --> 00:03.000\nAnn Lee: Morning!\nHow are you?\n\n\
             00:03.000 --> 00:04.000\n[Dr. O'Brien] Fine.\n\n\
             00:04.000 --> 00:05.000\nSo, to summarise: nothing.\n\n\
             00:05.000 --> 00:06.000\nthe agenda: budget\n\n\
             00:06.000 --> 00:07.000\nSee Http://example.org\n\n\
             00:07.000 --> 00:08.000\n<v Kim>ANN: quoted\n\n\
             00:08.000 --> 00:09.000\nSummary:\n\n\
             00:09.000 --> 00:10.000\nSpeaker 2: Yes.\n\n\
             00:10.000 --> 00:11.000\n2 Speakers: no.\n",
        )
        .expect("parses");
        let got: Vec<_> = t
            .cues
            .iter()
            .map(|c| (c.speaker.as_deref(), c.text.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                (Some("JOHN"), "Good morning."),
                (Some("Ann Lee"), "Morning!\nHow are you?"),
                (Some("Dr. O'Brien"), "Fine."),
                (None, "So, to summarise: nothing."),
                (None, "the agenda: budget"),
                (None, "See Http://example.org"),
                // A voice tag wins over a prefix, which then stays text.
                (Some("Kim"), "ANN: quoted"),
                // A name with nothing after it is text.
                (None, "Summary:"),
                (Some("Speaker 2"), "Yes."),
                (None, "2 Speakers: no."),
            ]
        );
    }

    #[test]
    fn vtt_short_timestamps_and_long_hours() {
        let t = parse_vtt(
            "WEBVTT\n\n00:01.500 --> 01:02.250\nshort\n\n123:00:00.000 --> 123:00:01.000\nlong\n",
        )
        .expect("parses");
        assert_eq!((t.cues[0].start_ms, t.cues[0].end_ms), (1_500, 62_250));
        assert_eq!(t.cues[1].start_ms, 123 * 3_600_000);
        assert_eq!(t.duration_ms(), 123 * 3_600_000 + 1_000);
    }

    #[test]
    fn vtt_skips_note_style_region_and_header() {
        let t = parse_vtt(
            "WEBVTT - Weekly sync\nKind: captions\nLanguage: en\n\n\
             STYLE\n::cue { color: yellow }\n\n\
             REGION\nid:fred width:40%\n\n\
             NOTE this is a comment\nspanning lines\n\n\
             NOTE\nanother\n\n\
             intro\n00:00:00.000 --> 00:00:01.000 align:start\nFirst.\n\n\
             NOTE between cues\n\n\
             00:00:01.000 --> 00:00:02.000\nSecond.\n",
        )
        .expect("parses");
        assert_eq!(t.title.as_deref(), Some("Weekly sync"));
        let texts: Vec<_> = t.cues.iter().map(|c| c.text.as_str()).collect();
        assert_eq!(texts, ["First.", "Second."]);
        assert_eq!(t.cues[0].id.as_deref(), Some("intro"));
        assert_eq!(t.cues[1].id, None);
    }

    #[test]
    fn vtt_strips_markup_and_decodes_entities() {
        let t = parse_vtt(
            "WEBVTT\n\n00:00.000 --> 00:05.000\n\
             <c.yellow>Fish</c> &amp; <i>chips</i> <00:00:01.000><b>for</b> <u>two</u>\n\
             <lang en-GB>tea &lt;hot&gt;</lang>&nbsp;&#8217;&#x2019;&lrm;&bogus; &amp\n",
        )
        .expect("parses");
        assert_eq!(
            t.cues[0].text,
            "Fish & chips for two\ntea <hot>\u{a0}’’\u{200e}&bogus; &amp"
        );
    }

    #[test]
    fn vtt_drops_cues_without_text() {
        let t = parse_vtt(
            "WEBVTT\n\n00:00.000 --> 00:01.000\n<i></i>\n\n00:01.000 --> 00:02.000\n\n\
             00:02.000 --> 00:03.000\nkept\n",
        )
        .expect("parses");
        assert_eq!(t.cues.len(), 1);
        assert_eq!(t.cues[0].text, "kept");
    }

    #[test]
    fn vtt_malformed_timing_names_its_line() {
        // Line 8 uses SRT's comma, which WebVTT does not allow.
        let message = malformed_message(parse_vtt(
            "WEBVTT\n\n1\n00:00:00.000 --> 00:00:01.000\nok\n\n2\n00:00:01,000 --> 00:00:02,000\nbad\n",
        ));
        assert!(message.starts_with("line 8:"), "{message}");
        assert!(
            message.contains("00:00:01,000 --> 00:00:02,000"),
            "{message}"
        );

        // Seconds out of range, on a cue that follows another without a blank line (line 5).
        let message = malformed_message(parse_vtt(
            "WEBVTT\n\n00:00.000 --> 00:01.000\nok\n00:61.000 --> 00:62.000\nbad\n",
        ));
        assert!(message.starts_with("line 5:"), "{message}");
        assert!(message.contains("00:61.000"), "{message}");

        let message = malformed_message(parse_vtt(
            "WEBVTT\r\n\r\nslide-1\r\n00:00:05.000 --> 00:00:04.000\r\nbackwards\r\n",
        ));
        assert!(message.starts_with("line 4:"), "{message}");
        assert!(message.contains("before it starts"), "{message}");
    }

    #[test]
    fn vtt_requires_the_signature() {
        let message = malformed_message(parse_vtt("1\n00:00:01,000 --> 00:00:02,000\nHi\n"));
        assert!(message.starts_with("line 1:"), "{message}");
        assert!(message.contains("WEBVTT"), "{message}");
        assert!(matches!(
            parse_vtt("WEBVTTX\n\n00:00.000 --> 00:01.000\nx\n"),
            Err(TranscriptError::Malformed(_))
        ));
    }

    #[test]
    fn vtt_tolerates_missing_blank_lines_and_lone_cr() {
        let t =
            parse_vtt("\u{feff}WEBVTT\r00:00.000 --> 00:01.000\rone\r00:01.000 --> 00:02.000\rtwo")
                .expect("parses");
        let texts: Vec<_> = t.cues.iter().map(|c| c.text.as_str()).collect();
        assert_eq!(texts, ["one", "two"]);
    }

    // ---- SRT ---------------------------------------------------------------------------------

    #[test]
    fn srt_with_crlf_tags_and_speakers() {
        let t = parse_srt(
            "\u{feff}1\r\n00:00:01,000 --> 00:00:02,500\r\n<i>JOHN:</i> Hello.\r\n\r\n\
             2\r\n00:00:02,500 --> 00:00:04,000\r\n[Ann Lee] Hi, <font color=\"#ff0\">John</font>.\r\n\
             How are you?\r\n\r\n\r\n\
             3\r\n00:00:04,000 --> 00:00:05,000 X1:10 X2:20\r\n- Bob: Fine.\r\n- Good.\r\n\r\n\
             4\r\n00:00:05.000 --> 00:00:06.000\r\n{\\an8}1 < 2, said <b>nobody</b>\r\n",
        )
        .expect("parses");
        assert_eq!(t.format, TranscriptFormat::Srt);
        let got: Vec<_> = t
            .cues
            .iter()
            .map(|c| {
                (
                    c.id.as_deref(),
                    c.start_ms,
                    c.end_ms,
                    c.speaker.as_deref(),
                    c.text.as_str(),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                (Some("1"), 1_000, 2_500, Some("JOHN"), "Hello."),
                (
                    Some("2"),
                    2_500,
                    4_000,
                    Some("Ann Lee"),
                    "Hi, John.\nHow are you?"
                ),
                (Some("3"), 4_000, 5_000, Some("Bob"), "Fine.\n- Good."),
                (Some("4"), 5_000, 6_000, None, "1 < 2, said nobody"),
            ]
        );
        assert_eq!(t.speakers(), ["JOHN", "Ann Lee", "Bob"].map(String::from));
    }

    #[test]
    fn srt_without_index_lines_and_with_extra_blank_lines() {
        let t = parse_srt(
            "\n\n00:00:01,000 --> 00:00:02,000\nFirst\n\nstill first\n\n\n\
             00:00:02,000 --> 00:00:03,000\n42\n\n7\n\n00:00:03,000 --> 00:00:04,000\nThird\n",
        )
        .expect("parses");
        let got: Vec<_> = t
            .cues
            .iter()
            .map(|c| (c.id.as_deref(), c.text.as_str()))
            .collect();
        // "42" is text (no timing line follows it); "7" is the next cue's index even with a
        // blank line before its timing line.
        assert_eq!(
            got,
            [
                (None, "First\nstill first"),
                (None, "42"),
                (Some("7"), "Third"),
            ]
        );
    }

    #[test]
    fn srt_errors_name_their_line() {
        let message = malformed_message(parse_srt(
            "1\n00:00:01,000 --> 00:00:02,000\nok\n\n2\n00:00:02,000 --> 00:00:0x,000\nbad\n",
        ));
        assert!(message.starts_with("line 6:"), "{message}");

        let message = malformed_message(parse_srt("WEBVTT\n\n00:00.000 --> 00:01.000\nx\n"));
        assert!(message.starts_with("line 1:"), "{message}");
    }

    // ---- JSON --------------------------------------------------------------------------------

    #[test]
    fn json_segments_in_seconds() {
        let t = parse_json(
            r#"{"title": " Weekly sync ", "date": "2024-03-05",
                "segments": [
                  {"start": 0, "end": 1.5, "speaker": "Ann", "text": " Hello.  "},
                  {"start": 1.5, "end": 3.1, "text": "No speaker <here> & there"},
                  {"start": 3.1, "end": 4, "speaker": "Bob", "text": "   "},
                  {"id": 9, "start": 4, "end": 5.25, "speaker": "Bob", "text": "Bye\n now"}
                ]}"#,
        )
        .expect("parses");
        assert_eq!(t.format, TranscriptFormat::Json);
        assert_eq!(t.title.as_deref(), Some("Weekly sync"));
        assert_eq!(t.date.as_deref(), Some("2024-03-05"));
        // The whitespace-only segment is dropped.
        let got: Vec<_> = t
            .cues
            .iter()
            .map(|c| {
                (
                    c.id.as_deref(),
                    c.start_ms,
                    c.end_ms,
                    c.speaker.as_deref(),
                    c.text.as_str(),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                (None, 0, 1_500, Some("Ann"), "Hello."),
                (None, 1_500, 3_100, None, "No speaker <here> & there"),
                (Some("9"), 4_000, 5_250, Some("Bob"), "Bye\nnow"),
            ]
        );
        assert_eq!(t.speakers(), ["Ann", "Bob"].map(String::from));
        assert_eq!(t.duration_ms(), 5_250);
    }

    #[test]
    fn json_cues_in_milliseconds() {
        let t = parse_json(
            "\u{feff}{\"cues\": [{\"startMs\": 250, \"endMs\": 1250, \"speaker\": \"Kim\", \"text\": \"Hi\"}]}",
        )
        .expect("parses");
        assert_eq!(t.title, None);
        assert_eq!(t.date, None);
        assert_eq!(
            t.cues,
            vec![Cue {
                id: None,
                start_ms: 250,
                end_ms: 1_250,
                speaker: Some("Kim".into()),
                text: "Hi".into(),
            }]
        );
    }

    #[test]
    fn json_errors_say_what_is_wrong() {
        let message = malformed_message(parse_json("{\"segments\": [}"));
        assert!(message.contains("invalid JSON"), "{message}");
        let message = malformed_message(parse_json("[]"));
        assert!(message.contains("object"), "{message}");
        let message = malformed_message(parse_json("{\"title\": \"x\"}"));
        assert!(message.contains("segments"), "{message}");
        let message = malformed_message(parse_json(r#"{"segments": [{"start": 1, "text": "x"}]}"#));
        assert!(
            message.contains("segments[0]") && message.contains("\"end\""),
            "{message}"
        );
        let message = malformed_message(parse_json(r#"{"cues": [{"startMs": 1, "endMs": 2}]}"#));
        assert!(
            message.contains("cues[0]") && message.contains("\"text\""),
            "{message}"
        );
        let message = malformed_message(parse_json(
            r#"{"segments": [{"start": -1, "end": 2, "text": "x"}]}"#,
        ));
        assert!(message.contains("non-negative"), "{message}");
        let message = malformed_message(parse_json(
            r#"{"segments": [{"start": 3, "end": 2, "text": "x"}]}"#,
        ));
        assert!(message.contains("before it starts"), "{message}");
    }

    // ---- common ------------------------------------------------------------------------------

    #[test]
    fn empty_input_has_no_cues() {
        for text in ["", "\u{feff}", " \r\n\n"] {
            assert_eq!(parse_vtt(text), Err(TranscriptError::Empty));
            assert_eq!(parse_srt(text), Err(TranscriptError::Empty));
            assert_eq!(parse_json(text), Err(TranscriptError::Empty));
        }
        assert_eq!(parse_vtt("WEBVTT\n"), Err(TranscriptError::Empty));
        assert_eq!(
            parse_vtt("WEBVTT\n\nNOTE only a note\n"),
            Err(TranscriptError::Empty)
        );
        assert_eq!(
            parse_json(r#"{"segments": []}"#),
            Err(TranscriptError::Empty)
        );
        assert_eq!(
            TranscriptError::Empty.to_string(),
            "the transcript has no cues"
        );
    }

    #[test]
    fn format_from_path_and_dispatch() {
        assert_eq!(
            TranscriptFormat::from_path("talks/kd.VTT"),
            Some(TranscriptFormat::Vtt)
        );
        assert_eq!(
            TranscriptFormat::from_path("a.b.srt"),
            Some(TranscriptFormat::Srt)
        );
        assert_eq!(
            TranscriptFormat::from_path("C:\\x\\m.Json"),
            Some(TranscriptFormat::Json)
        );
        assert_eq!(TranscriptFormat::from_path("notes.txt"), None);
        assert_eq!(TranscriptFormat::from_path("vtt"), None);
        assert_eq!(TranscriptFormat::from_path("dir.vtt/readme"), None);

        let srt = "1\n00:00:00,000 --> 00:00:01,000\nx\n";
        assert_eq!(parse(TranscriptFormat::Srt, srt), parse_srt(srt));
        assert_eq!(
            parse(TranscriptFormat::Vtt, KD_SPEECH).map(|t| t.cues.len()),
            Ok(112)
        );
    }

    #[test]
    fn serialises_in_camel_case() {
        let t =
            parse_json(r#"{"segments": [{"start": 1, "end": 2, "text": "x"}]}"#).expect("parses");
        let json = serde_json::to_value(&t).expect("serialises");
        assert_eq!(json["format"], "json");
        assert_eq!(json["cues"][0]["startMs"], 1_000);
        assert_eq!(json["cues"][0]["endMs"], 2_000);
        let back: Transcript = serde_json::from_value(json).expect("deserialises");
        assert_eq!(back, t);
    }

    #[test]
    fn pathological_input_is_handled_quickly() {
        // Quadratic scanning would take minutes on these; linear parsing takes milliseconds.
        let many_tags = format!(
            "WEBVTT\n\n00:00.000 --> 00:01.000\n{}x\n",
            "<a".repeat(200_000)
        );
        assert!(parse_vtt(&many_tags).is_ok());
        let many_amps = format!(
            "1\n00:00:00,000 --> 00:00:01,000\n{}\n",
            "&".repeat(200_000)
        );
        assert!(parse_srt(&many_amps).is_ok());
        // Every "1" line makes the SRT parser look ahead for a timing line across the blank
        // lines after it; the look-ahead must not rescan the rest of the file each time.
        let many_numbers = format!(
            "1\n00:00:00,000 --> 00:00:01,000\n{}",
            "1\n\n\n".repeat(100_000)
        );
        let t = parse_srt(&many_numbers).expect("parses");
        assert_eq!(t.cues.len(), 1);
    }

    /// Pieces of caption syntax, so that generated inputs reach the deeper parser paths.
    const PIECES: &[&str] = &[
        "WEBVTT",
        "\n",
        "\r\n",
        "\r",
        "\n\n",
        " ",
        "-->",
        " --> ",
        "00:00:01.000",
        "01:02.5",
        "00:00:01,000",
        "99999999999999999999:00:00.000",
        "1",
        "42",
        "slide-3",
        "NOTE",
        "STYLE",
        "<v Bob>",
        "<v.x ->",
        "</v>",
        "<",
        ">",
        "<i>",
        "<00:00:02.000>",
        "{\\an8}",
        "{",
        "}",
        "&",
        "&amp;",
        "&#",
        "&#x110000;",
        ";",
        ":",
        "JOHN:",
        "[Ann Lee]",
        "- ",
        ">> ",
        "é",
        "\u{feff}",
        "text",
        "\"",
        "{\"segments\":[",
        "{\"start\":1,\"end\":2,\"text\":\"a\"}",
        "]}",
        ",",
        "\"startMs\":",
        "-1",
        "1e400",
    ];

    fn caption_like() -> impl Strategy<Value = String> {
        prop::collection::vec(prop::sample::select(PIECES.to_vec()), 0..120)
            .prop_map(|v| v.concat())
    }

    proptest! {
        #[test]
        fn never_panics(s in "(?s).{0,2000}") {
            let _ = parse_vtt(&s);
            let _ = parse_srt(&s);
            let _ = parse_json(&s);
        }

        #[test]
        fn never_panics_on_caption_like_input(s in caption_like()) {
            let _ = parse_vtt(&s);
            let _ = parse_vtt(&format!("WEBVTT\n\n{s}"));
            let _ = parse_srt(&s);
            let _ = parse_json(&s);
        }

        #[test]
        fn parsed_cues_are_well_formed(s in caption_like()) {
            for t in [parse_vtt(&format!("WEBVTT\n\n{s}")), parse_srt(&s), parse_json(&s)].into_iter().flatten() {
                prop_assert!(!t.cues.is_empty());
                for cue in &t.cues {
                    prop_assert!(cue.start_ms <= cue.end_ms);
                    prop_assert!(!cue.text.is_empty());
                    prop_assert_eq!(cue.text.trim(), cue.text.as_str());
                }
            }
        }
    }
}
