//! A meeting transcript as a prepared source: a meeting node, its participants (speakers as
//! people, resolved through the alias registry like every other identity), and chunks cut at
//! speaker turns with `{meetingId, startMs, endMs, speaker}` locators.
//!
//! A speaker named once speaks until another is named: captions label turn changes, not
//! every line (a talk names its speaker on the first cue only).
//!
//! Chunking keeps a turn together: cues of one speaker are packed up to the token budget and a
//! new speaker starts a new chunk. Only turns too short to stand alone ("Yes.", "Agreed —") are
//! joined with the turns after them, because a one-word chunk is neither findable nor citable
//! on its own; such a chunk names each speaker in its text and has no single speaker in its
//! locator.

use std::collections::BTreeMap;

use evident_core::chunking::{ChunkingConfig, estimate_tokens};
use evident_core::hashing::content_hash;
use evident_core::prepared::props;
use evident_core::secrets::redact;
use evident_core::{
    EvidenceSpec, Locator, NodeKey, PreparedChunk, PreparedEdge, PreparedNode, PreparedSource,
    Scope, keys, refs,
};
use serde_json::{Map, Value};

use crate::transcript::{Cue, Transcript};

/// Bumped when what a transcript turns into changes (re-ingests unchanged files once).
const MEETING_VERSION: &str = "meeting-v1";

/// Where a transcript comes from.
pub struct MeetingContext<'a> {
    pub scope: &'a Scope,
    /// The registered source's id (URNs: `meeting:{source}:{meeting}`).
    pub source_id: &'a str,
    /// The meeting's id within the source (a file's path without extension, a recording id).
    pub meeting_id: &'a str,
    /// What citations name: the transcript's path or URL.
    pub uri: &'a str,
    /// Title when the transcript has none (e.g. the file name).
    pub fallback_title: Option<&'a str>,
    /// RFC 3339 time of the meeting when known (the transcript's own date wins).
    pub date: Option<&'a str>,
    pub chunking: &'a ChunkingConfig,
}

pub fn meeting_urn(source_id: &str, meeting_id: &str) -> String {
    format!("meeting:{source_id}:{meeting_id}")
}

pub fn meeting_key(source_id: &str, meeting_id: &str) -> NodeKey {
    refs::normalize_ref(&format!("meeting:{source_id}/{meeting_id}"))
        .unwrap_or_else(|| NodeKey::from_canonical("meeting:unnamed"))
}

/// Speaker labels that name a voice, not a person (`Speaker 2`, `Unknown`): kept in locators,
/// never turned into people (two meetings' "Speaker 1" are not one person).
pub fn is_generic_speaker(name: &str) -> bool {
    let lower = name.trim().to_lowercase();
    let word = lower.trim_end_matches(|c: char| c.is_ascii_digit() || c.is_whitespace());
    lower.is_empty()
        || matches!(
            word,
            "speaker" | "spk" | "unknown" | "narrator" | "voice" | "participant" | "guest"
        )
        || lower.starts_with("speaker_")
}

/// The cues with each unlabelled cue given the speaker named last before it.
fn with_carried_speakers(cues: &[Cue]) -> Vec<Cue> {
    let mut last: Option<String> = None;
    cues.iter()
        .map(|c| {
            let mut c = c.clone();
            match &c.speaker {
                Some(s) => last = Some(s.clone()),
                None => c.speaker = last.clone(),
            }
            c
        })
        .collect()
}

/// A run of consecutive cues by one speaker (or by nobody known).
struct Turn<'a> {
    speaker: Option<&'a str>,
    cues: &'a [Cue],
}

fn turns(cues: &[Cue]) -> Vec<Turn<'_>> {
    let mut out = Vec::new();
    let mut start = 0;
    for i in 1..=cues.len() {
        if i == cues.len() || cues[i].speaker != cues[start].speaker {
            out.push(Turn {
                speaker: cues[start].speaker.as_deref(),
                cues: &cues[start..i],
            });
            start = i;
        }
    }
    out
}

/// One chunk being built: the turns (or parts of one turn) it holds.
#[derive(Default)]
struct Piece<'a> {
    parts: Vec<(Option<&'a str>, &'a [Cue])>,
    tokens: usize,
}

impl<'a> Piece<'a> {
    fn speakers(&self) -> Vec<&'a str> {
        let mut out: Vec<&str> = Vec::new();
        for s in self.parts.iter().filter_map(|(s, _)| *s) {
            if !out.contains(&s) {
                out.push(s);
            }
        }
        out
    }

    /// The text: cue texts joined with spaces; when the piece mixes turns, each turn starts
    /// on its own line with its speaker.
    fn text(&self) -> String {
        let mixed = self.parts.len() > 1;
        let mut out = String::new();
        for (speaker, cues) in &self.parts {
            if !out.is_empty() {
                out.push('\n');
            }
            if mixed && let Some(s) = speaker {
                out.push_str(s);
                out.push_str(": ");
            }
            for (i, c) in cues.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                out.push_str(&c.text.replace('\n', " "));
            }
        }
        out
    }

    fn span(&self) -> (u64, u64) {
        let all = self.parts.iter().flat_map(|(_, cues)| cues.iter());
        let start = all.clone().map(|c| c.start_ms).min().unwrap_or(0);
        let end = all.map(|c| c.end_ms).max().unwrap_or(start);
        (start, end)
    }
}

/// Cuts the cues into pieces: a turn packed up to `max_tokens` per piece (split only between
/// cues), short turns joined with what follows.
fn pieces<'a>(cues: &'a [Cue], chunking: &ChunkingConfig) -> Vec<Piece<'a>> {
    let max = chunking.max_tokens.max(1);
    let min = chunking.min_tokens.min(max);
    let mut out: Vec<Piece<'a>> = Vec::new();
    let mut open: Option<Piece<'a>> = None;
    for turn in turns(cues) {
        let mut from = 0;
        let mut tokens = 0;
        let mut flush = |open: &mut Option<Piece<'a>>, from: usize, to: usize, tokens: usize| {
            let part = (turn.speaker, &turn.cues[from..to]);
            match open {
                // A short piece waits for the next turn when both fit together.
                Some(p) if p.tokens < min && p.tokens + tokens <= max => {
                    p.parts.push(part);
                    p.tokens += tokens;
                }
                _ => {
                    if let Some(done) = open.take() {
                        out.push(done);
                    }
                    *open = Some(Piece {
                        parts: vec![part],
                        tokens,
                    });
                }
            }
        };
        for (i, cue) in turn.cues.iter().enumerate() {
            let t = estimate_tokens(&cue.text).max(1);
            if i > from && tokens + t > max {
                flush(&mut open, from, i, tokens);
                from = i;
                tokens = 0;
            }
            tokens += t;
        }
        flush(&mut open, from, turn.cues.len(), tokens);
    }
    out.extend(open);
    out
}

/// The transcript as a prepared source (none when it has no speech).
pub fn transcript_source(t: &Transcript, ctx: &MeetingContext<'_>) -> Option<PreparedSource> {
    if t.cues.iter().all(|c| c.text.trim().is_empty()) {
        return None;
    }
    let meeting = meeting_key(ctx.source_id, ctx.meeting_id);
    let title = t
        .title
        .clone()
        .or_else(|| ctx.fallback_title.map(str::to_string))
        .unwrap_or_else(|| ctx.meeting_id.to_string());
    let Chunked {
        chunks,
        redacted,
        spoke_in,
    } = chunk_cues(t, ctx, &meeting, &title);
    let date = t.date.as_deref().or(ctx.date);
    let mut nodes = vec![meeting_node(t, ctx, &meeting, &title, date)];
    let mut edges = Vec::new();
    for (key, (name, at)) in spoke_in {
        nodes.push(PreparedNode {
            key: key.clone(),
            node_type: "person".into(),
            label: name.clone(),
            props: props([("name", name.into())]),
            evidence: EvidenceSpec::Chunks(at.clone()),
        });
        edges.push(PreparedEdge {
            from: meeting.clone(),
            to: key,
            edge_type: "has_participant".into(),
            props: Map::new(),
            evidence: EvidenceSpec::Chunks(at),
        });
    }
    let cues_digest = cues_digest(t);
    Some(PreparedSource {
        scope: ctx.scope.clone(),
        source_urn: meeting_urn(ctx.source_id, ctx.meeting_id),
        kind: "transcript".into(),
        title: Some(title.clone()),
        fingerprint: content_hash(&format!(
            "{MEETING_VERSION}\0{}\0{}\0{title}\0{date:?}\0{redacted}\0{}/{}\0{cues_digest}",
            ctx.meeting_id, ctx.uri, ctx.chunking.max_tokens, ctx.chunking.min_tokens
        )),
        observed_at: date.map(str::to_string),
        chunks,
        nodes,
        edges,
        // A speaker is named the way people say their name: that spelling is the alias other
        // sources (a mail's display name, a git author's name) register for the person.
        aliases: Vec::new(),
        merges: Vec::new(),
    })
}

/// The person a speaker label names; none for generic labels (`Speaker 1`, `Unknown`).
fn person_of(speaker: &str) -> Option<NodeKey> {
    (!is_generic_speaker(speaker))
        .then(|| keys::person(Some(speaker), None))
        .flatten()
}

/// A transcript's chunks, whether any secret was redacted from them, and which chunks each
/// speaker (person) speaks in: their participation's evidence.
struct Chunked {
    chunks: Vec<PreparedChunk>,
    redacted: bool,
    spoke_in: BTreeMap<NodeKey, (String, Vec<usize>)>,
}

/// Chunks the cues (speakers carried over unlabelled cues), each chunk located by its time
/// span, referring to the meeting, its speakers and what its text names.
fn chunk_cues(t: &Transcript, ctx: &MeetingContext<'_>, meeting: &NodeKey, title: &str) -> Chunked {
    let cues = with_carried_speakers(&t.cues);
    let mut out = Chunked {
        chunks: Vec::new(),
        redacted: false,
        spoke_in: BTreeMap::new(),
    };
    for piece in pieces(&cues, ctx.chunking) {
        let speakers = piece.speakers();
        let (start_ms, end_ms) = piece.span();
        let raw = piece.text();
        let text = match redact(&raw) {
            Some((clean, _)) => {
                out.redacted = true;
                clean
            }
            None => raw,
        };
        let mut c = PreparedChunk::new(
            text,
            Locator::Transcript {
                meeting_id: ctx.meeting_id.to_string(),
                start_ms,
                end_ms,
                speaker: (speakers.len() == 1).then(|| speakers[0].to_string()),
            },
        );
        c.context = Some(title.to_string());
        c.refs.push(meeting.clone());
        for s in &speakers {
            if let Some(k) = person_of(s) {
                out.spoke_in
                    .entry(k.clone())
                    .or_insert_with(|| (s.to_string(), Vec::new()))
                    .1
                    .push(out.chunks.len());
                c.refs.push(k);
            }
        }
        c.refs
            .extend(refs::extract_refs(&c.text).into_iter().map(|f| f.key));
        if !speakers.is_empty() {
            c.metadata.insert(
                "speakers".into(),
                Value::from(speakers.iter().map(|s| s.to_string()).collect::<Vec<_>>()),
            );
        }
        out.chunks.push(c);
    }
    out
}

/// The meeting's node: title, date, uri, duration, cue count and speakers.
fn meeting_node(
    t: &Transcript,
    ctx: &MeetingContext<'_>,
    meeting: &NodeKey,
    title: &str,
    date: Option<&str>,
) -> PreparedNode {
    let speakers = t.speakers();
    PreparedNode {
        key: meeting.clone(),
        node_type: "meeting".into(),
        label: title.to_string(),
        props: props([
            ("title", title.into()),
            ("date", date.map(Value::from).unwrap_or(Value::Null)),
            ("uri", ctx.uri.into()),
            ("durationMs", t.duration_ms().into()),
            ("cues", t.cues.len().into()),
            (
                "speakers",
                if speakers.is_empty() {
                    Value::Null
                } else {
                    Value::from(speakers)
                },
            ),
        ]),
        evidence: EvidenceSpec::AllChunks,
    }
}

/// Every cue's times, speaker and text: what the fingerprint covers of the transcript.
fn cues_digest(t: &Transcript) -> String {
    t.cues
        .iter()
        .map(|c| {
            format!(
                "{}\u{1}{}\u{1}{}\u{1}{}\u{2}",
                c.start_ms,
                c.end_ms,
                c.speaker.as_deref().unwrap_or(""),
                c.text
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transcript::{TranscriptFormat, parse};

    fn ctx<'a>(scope: &'a Scope, chunking: &'a ChunkingConfig) -> MeetingContext<'a> {
        MeetingContext {
            scope,
            source_id: "standups",
            meeting_id: "2026/11-20 planning",
            uri: "/srv/meetings/2026/11-20 planning.vtt",
            fallback_title: Some("11-20 planning"),
            date: Some("2026-11-20T09:00:00Z"),
            chunking,
        }
    }

    const DIALOGUE: &str = "WEBVTT\n\n00:00.000 --> 00:04.000\n<v Ann Lee>We ship the importer on Friday, after the schema migration lands.\n\n00:04.000 --> 00:08.000\n<v Ann Lee>The backfill runs overnight on the replica.\n\n00:08.000 --> 00:09.000\n<v Bob>Yes.\n\n00:09.000 --> 00:15.000\n<v Speaker 2>What about the rate limits on the export endpoint?\n\n00:15.000 --> 00:20.000\n<v Ann Lee>We cap it at fifty requests per second for now.\n";

    #[test]
    fn chunks_follow_turns_and_short_turns_join_the_next() {
        let t = parse(TranscriptFormat::Vtt, DIALOGUE).expect("parse");
        let scope = Scope::client("c1");
        let chunking = ChunkingConfig {
            max_tokens: 64,
            min_tokens: 4,
        };
        let src = transcript_source(&t, &ctx(&scope, &chunking)).expect("source");
        let got: Vec<(String, u64, u64, Option<String>)> = src
            .chunks
            .iter()
            .map(|c| match &c.locator {
                Locator::Transcript {
                    start_ms,
                    end_ms,
                    speaker,
                    ..
                } => (c.text.clone(), *start_ms, *end_ms, speaker.clone()),
                other => panic!("locator {other:?}"),
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (
                    "We ship the importer on Friday, after the schema migration lands. The backfill runs overnight on the replica.".into(),
                    0,
                    8000,
                    Some("Ann Lee".into())
                ),
                (
                    "Bob: Yes.\nSpeaker 2: What about the rate limits on the export endpoint?".into(),
                    8000,
                    15000,
                    None
                ),
                (
                    "We cap it at fifty requests per second for now.".into(),
                    15000,
                    20000,
                    Some("Ann Lee".into())
                ),
            ]
        );
        // People: Ann and Bob, not "Speaker 2"; Ann's evidence is the chunks she speaks in.
        let people: Vec<(&str, &EvidenceSpec)> = src
            .nodes
            .iter()
            .filter(|n| n.node_type == "person")
            .map(|n| (n.key.as_str(), &n.evidence))
            .collect();
        assert_eq!(
            people,
            vec![
                ("user:ann_lee", &EvidenceSpec::Chunks(vec![0, 2])),
                ("user:bob", &EvidenceSpec::Chunks(vec![1])),
            ]
        );
        assert!(src.edges.iter().all(|e| e.edge_type == "has_participant"));
        assert_eq!(src.edges.len(), 2);
        let meeting = &src.nodes[0];
        assert_eq!(meeting.node_type, "meeting");
        assert_eq!(meeting.label, "11-20 planning");
        assert_eq!(meeting.props["durationMs"], 20000);
        assert_eq!(src.source_urn, "meeting:standups:2026/11-20 planning");
    }

    #[test]
    fn long_turns_split_between_cues_only() {
        let mut vtt = String::from("WEBVTT\n\n");
        for i in 0..40 {
            vtt.push_str(&format!(
                "00:{:02}.000 --> 00:{:02}.500\n<v Kim>sentence number {i} about the cache eviction policy\n\n",
                i, i
            ));
        }
        let t = parse(TranscriptFormat::Vtt, &vtt).expect("parse");
        let scope = Scope::client("c1");
        let chunking = ChunkingConfig {
            max_tokens: 40,
            min_tokens: 8,
        };
        let src = transcript_source(&t, &ctx(&scope, &chunking)).expect("source");
        assert!(src.chunks.len() > 3, "{}", src.chunks.len());
        let mut next_start = 0;
        for c in &src.chunks {
            assert!(estimate_tokens(&c.text) <= 40, "{}", c.text);
            let Locator::Transcript {
                start_ms, speaker, ..
            } = &c.locator
            else {
                panic!()
            };
            assert_eq!(*start_ms, next_start, "no cue lost or repeated");
            assert_eq!(speaker.as_deref(), Some("Kim"));
            let cues_in = c.text.matches("sentence number").count() as u64;
            next_start += cues_in * 1000;
        }
        assert_eq!(next_start, 40_000);
    }

    #[test]
    fn generic_speakers_are_not_people() {
        for g in [
            "Speaker 2",
            "SPEAKER_01",
            "speaker",
            "Unknown",
            " ",
            "Guest 3",
        ] {
            assert!(is_generic_speaker(g), "{g}");
        }
        for p in ["Ann Lee", "Kelly", "Speakerman", "Dr. Who"] {
            assert!(!is_generic_speaker(p), "{p}");
        }
    }

    #[test]
    fn the_fingerprint_follows_the_words_and_silence_is_no_source() {
        let scope = Scope::client("c1");
        let chunking = ChunkingConfig::default();
        let a = parse(TranscriptFormat::Vtt, DIALOGUE).expect("parse");
        let mut b = a.clone();
        b.cues[2].text = "No.".into();
        let fa = transcript_source(&a, &ctx(&scope, &chunking))
            .expect("a")
            .fingerprint;
        let fb = transcript_source(&b, &ctx(&scope, &chunking))
            .expect("b")
            .fingerprint;
        assert_ne!(fa, fb);
        let again = transcript_source(&a, &ctx(&scope, &chunking))
            .expect("a")
            .fingerprint;
        assert_eq!(fa, again);
        let mut silent = a.clone();
        silent.cues.iter_mut().for_each(|c| c.text.clear());
        assert!(transcript_source(&silent, &ctx(&scope, &chunking)).is_none());
    }
}
