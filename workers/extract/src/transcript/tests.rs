use super::*;
use proptest::prelude::*;

const AC_ENCODING: &str = include_str!("../../tests/fixtures/transcripts/ac_encoding.vtt");
const AY_TENSORFLOW: &str = include_str!("../../tests/fixtures/transcripts/ay_tensorflow.vtt");
const KD_SPEECH: &str = include_str!("../../tests/fixtures/transcripts/kd_speech.vtt");

fn malformed_message(result: Result<Transcript, TranscriptError>) -> String {
    match result {
        Err(TranscriptError::Malformed(message)) => message,
        other => panic!("expected Malformed, got {other:?}"),
    }
}

/// Each cue as (id, start, end, speaker, text), the shape the parser tests compare.
type CueRow<'a> = (Option<&'a str>, u64, u64, Option<&'a str>, &'a str);

fn cue_rows(t: &Transcript) -> Vec<CueRow<'_>> {
    t.cues
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
        .collect()
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

/// `cue` has the identifier, times, speaker and text of its block in the fixture (a failure
/// names the identifier).
fn assert_cue(cue: &Cue, id: &str, times: (u64, u64), speaker: Option<&str>, text: &str) {
    assert_eq!(cue.id.as_deref(), Some(id));
    assert_eq!((cue.start_ms, cue.end_ms), times, "{id}");
    assert_eq!(cue.speaker.as_deref(), speaker, "{id}");
    assert_eq!(cue.text, text, "{id}");
}

#[test]
fn fixture_ac_encoding() {
    let t = parse_vtt(AC_ENCODING).expect("ac_encoding.vtt parses");
    // 168 timing lines. The numeric identifiers are not a count: they skip the numbers
    // around each slide-N cue ("5", "slide-2", "8"), so the last numbered cue is 179.
    assert_eq!(t.cues.len(), 168);
    assert_eq!(t.format, TranscriptFormat::Vtt);
    assert_eq!(t.title, None);

    // "slide-1 / 0:00:08.160 --> 0:00:10.320": one-digit hours.
    assert_cue(
        &t.cues[0],
        "slide-1",
        (8_160, 10_320),
        None,
        "Hello everybody, my name is Anita Chen",
    );

    // "slide-14 / 0:09:15.640 --> 0:09:27.360".
    assert_cue(
        t.cues.last().expect("a last cue"),
        "slide-14",
        (555_640, 567_360),
        None,
        "Thank you for watching my presentation and have a nice day!",
    );

    // "148 / 0:07:33.400 --> 0:07:36.560 / … image &amp; video processing," — the entity
    // is decoded.
    assert_cue(
        &t.cues[137],
        "148",
        (453_400, 456_560),
        None,
        "which is geared towards image & video processing,",
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
    assert_cue(&t.cues[0], "slide-1", (9_800, 10_840), None, "Slide one.");

    // "189 / 0:08:49.900 --> 0:08:50.183".
    assert_cue(
        t.cues.last().expect("a last cue"),
        "189",
        (529_900, 530_183),
        None,
        "Thank you very much.",
    );

    // "2 / 0:00:10.840 --> 0:00:14.710 line:15%": cue settings after the end time.
    assert_cue(
        &t.cues[1],
        "2",
        (10_840, 14_710),
        None,
        "Hi, my name is Ann, and I'm a software engineer at Google.",
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
    assert_cue(
        &t.cues[0],
        "slide-1",
        (9_226, 10_726),
        Some("Kelly"),
        "Hello.",
    );

    // "112 / 00:06:50.086 --> 00:06:51.136": no voice tag, and the speaker is not carried
    // over from the first cue.
    assert_cue(
        t.cues.last().expect("a last cue"),
        "112",
        (410_086, 411_136),
        None,
        "Thanks for listening.",
    );

    // "5 / 00:00:17.126 --> 00:00:21.366" and "83 / 00:04:57.496 --> 00:04:59.039": lines
    // ending in a colon that must not become speakers.
    assert_cue(
        &t.cues[4],
        "5",
        (17_126, 21_366),
        None,
        "is Wreck a Nice Beach in the Browser:",
    );
    assert_cue(
        &t.cues[82],
        "83",
        (297_496, 299_039),
        None,
        "Privacy and security:",
    );

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
    let t = parse_vtt("\u{feff}WEBVTT\r00:00.000 --> 00:01.000\rone\r00:01.000 --> 00:02.000\rtwo")
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
    let got = cue_rows(&t);
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
    let got = cue_rows(&t);
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
    let t = parse_json(r#"{"segments": [{"start": 1, "end": 2, "text": "x"}]}"#).expect("parses");
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
    prop::collection::vec(prop::sample::select(PIECES.to_vec()), 0..120).prop_map(|v| v.concat())
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
