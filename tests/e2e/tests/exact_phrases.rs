//! Exact phrases win retrieval, through the real router: a quoted phrase is found first
//! among near-duplicates that BM25 alone ranks higher, and a 10-word phrase copied from a
//! talk's captions (real WebVTT, `fixtures/transcripts`) is cited in the top 3 with a time
//! range that contains it — or, when a chunk boundary cuts it, the chunk holding most of it.

use evident_ai::Priority;
use evident_core::chunking::ChunkingConfig;
use evident_core::{Locator, Scope, Visibility};
use evident_e2e::{Embed, TestApp};
use evident_extract::meeting::{MeetingContext, transcript_source};
use evident_extract::transcript::parse_vtt;
use evident_kb::EvidencePack;
use serde_json::json;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/transcripts");
const TALKS: [&str; 3] = ["kd_speech", "ac_encoding", "ay_tensorflow"];

async fn retrieve(app: &TestApp, query: &str, max: usize) -> EvidencePack {
    let pack = app
        .post_ok(
            "/api/v1/retrieve",
            &json!({ "query": query, "clientId": "acme", "maxResults": max }),
        )
        .await;
    serde_json::from_value(pack).expect("evidence pack")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quoted_phrase_wins_among_near_duplicates() {
    let app = TestApp::new(Embed::Static).await;
    let filler = "The agenda covered hiring, the office move, budget lines for the quarter, \
                  the support rota and the customer survey results in some detail. ";
    let exact = format!(
        "{}We agreed that the release train leaves after the freeze review, as before. {}",
        filler.repeat(3),
        filler.repeat(3)
    );
    let docs = [
        ("doc:minutes", exact.as_str()),
        (
            "doc:dup-1",
            "Release train review: the freeze leaves after the release train review.",
        ),
        (
            "doc:dup-2",
            "After the release review the train leaves; the freeze review train release.",
        ),
        (
            "doc:dup-3",
            "The freeze review leaves the release train after the train release review.",
        ),
    ];
    for (urn, content) in docs {
        let body = json!({"clientId": "acme", "sourceUrn": urn, "kind": "doc", "content": content});
        app.post_ok("/api/v1/ingest", &body).await;
    }
    // Unquoted, the 8 words are a verbatim query: BM25 prefers the dense near-duplicates
    // (what the phrase has to overcome), the verified phrase puts the minutes first.
    let plain = retrieve(&app, "the release train leaves after the freeze review", 4).await;
    let bm25_of = |pack: &EvidencePack, urn: &str| {
        pack.items
            .iter()
            .find(|i| i.source_urn == urn)
            .and_then(|i| i.scores.bm25)
            .unwrap_or(0.0)
    };
    let best_dup = ["doc:dup-1", "doc:dup-2", "doc:dup-3"]
        .iter()
        .map(|u| bm25_of(&plain, u))
        .fold(0.0, f32::max);
    assert!(bm25_of(&plain, "doc:minutes") < best_dup, "{plain:#?}");
    assert_eq!(plain.items[0].source_urn, "doc:minutes", "{plain:#?}");
    assert_eq!(plain.items[0].scores.phrase, Some(1.0));
    // Fewer words are no verbatim query: no phrase channel.
    let short = retrieve(&app, "release train leaves after the freeze", 4).await;
    assert!(
        short.items.iter().all(|i| i.scores.phrase.is_none()),
        "{short:#?}"
    );

    // Quoted, in other case and punctuation: the one chunk holding it comes first.
    let quoted = retrieve(
        &app,
        "what did we say about \"The release-train leaves, after the FREEZE review\"?",
        4,
    )
    .await;
    assert_eq!(quoted.items[0].source_urn, "doc:minutes", "{quoted:#?}");
    assert_eq!(quoted.items[0].scores.phrase, Some(1.0));
    assert!(
        quoted.items[1..].iter().all(|i| i.scores.phrase.is_none()),
        "{quoted:#?}"
    );
    assert!(
        quoted.summary.contains("exact phrase in 1 chunk(s)"),
        "{}",
        quoted.summary
    );
}

/// A caption token with the time span of its cue.
struct Token {
    text: String,
    start_ms: u64,
    end_ms: u64,
}

/// Every whitespace-separated token of every cue, with its cue's span.
fn tokens(vtt: &str) -> Vec<Token> {
    let transcript = parse_vtt(vtt).expect("vtt");
    transcript
        .cues
        .iter()
        .flat_map(|c| {
            c.text.split_whitespace().map(|t| Token {
                text: t.to_string(),
                start_ms: c.start_ms,
                end_ms: c.end_ms,
            })
        })
        .collect()
}

async fn ingest_talk(app: &TestApp, talk: &str, vtt: &str) {
    let scope = Scope::client("acme");
    let chunking = ChunkingConfig::default();
    let uri = format!("captions/{talk}.vtt");
    let ctx = MeetingContext {
        scope: &scope,
        source_id: "w3c-ml",
        meeting_id: talk,
        uri: &uri,
        fallback_title: Some(talk),
        date: None,
        chunking: &chunking,
    };
    let src = transcript_source(&parse_vtt(vtt).expect("vtt"), &ctx).expect("speech");
    app.kb
        .ingest_prepared(src, Priority::DEFAULT)
        .await
        .expect("ingest");
}

/// The (start, end) spans of a talk's chunks.
async fn chunk_spans(app: &TestApp, talk: &str) -> Vec<(u64, u64)> {
    let urn = evident_extract::meeting::meeting_urn("w3c-ml", talk);
    let chunks = &app.kb.stores().chunks;
    let ids: Vec<String> = chunks
        .source_chunks("acme", &urn)
        .await
        .expect("source chunks")
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    let vis = Visibility::of(Scope::client("acme"));
    let got = chunks.get(&vis, &ids).await.expect("chunks");
    got.iter()
        .filter_map(|c| match &c.locator {
            Locator::Transcript {
                start_ms, end_ms, ..
            } => Some((*start_ms, *end_ms)),
            _ => None,
        })
        .collect()
}

/// How many of `phrase`'s tokens were spoken within `span`.
fn held(phrase: &[Token], span: (u64, u64)) -> usize {
    phrase
        .iter()
        .filter(|t| t.start_ms >= span.0 && t.end_ms <= span.1)
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_verbatim_caption_phrase_is_cited_with_its_time_range() {
    let app = TestApp::new(Embed::Static).await;
    let mut talks = Vec::new();
    for talk in TALKS {
        let vtt = std::fs::read_to_string(format!("{FIXTURES}/{talk}.vtt")).expect("fixture");
        ingest_talk(&app, talk, &vtt).await;
        talks.push((talk, tokens(&vtt), chunk_spans(&app, talk).await));
    }
    let mut checked = (0, 0);
    for (talk, tokens, spans) in &talks {
        assert!(spans.len() > 3, "{talk}: several chunks");
        for start in (0..tokens.len() - 10).step_by(41) {
            let phrase = &tokens[start..start + 10];
            let query: Vec<&str> = phrase.iter().map(|t| t.text.as_str()).collect();
            let query = query.join(" ");
            // The chunk holding most of the phrase (all of it unless a boundary cuts it).
            let most = spans.iter().map(|s| held(phrase, *s)).max().unwrap_or(0);
            let pack = retrieve(&app, &query, 3).await;
            let cited = pack.items.iter().any(|i| match &i.locator {
                Locator::Transcript {
                    meeting_id,
                    start_ms,
                    end_ms,
                    ..
                } => meeting_id == talk && held(phrase, (*start_ms, *end_ms)) == most,
                _ => false,
            });
            assert!(
                cited,
                "{talk} @{start}: `{query}` not cited in the top 3: {pack:#?}"
            );
            if most == phrase.len() {
                checked.0 += 1;
            } else {
                checked.1 += 1;
            }
        }
    }
    assert!(checked.0 >= 30, "phrases inside one chunk: {checked:?}");
}
