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

mod cue_text;
mod helpers;
mod json;
mod srt;
mod timings;
mod vtt;

use cue_text::*;
use helpers::*;
pub use json::*;
pub use srt::*;
use timings::*;
pub use vtt::*;

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

#[cfg(test)]
mod tests;
