use super::tokens::is_cjk;
use super::*;
use std::collections::HashSet;

fn cfg(max_tokens: usize, min_tokens: usize) -> ChunkingConfig {
    ChunkingConfig {
        max_tokens,
        min_tokens,
    }
}

/// Every invariant promised by the module, for any input and config.
pub(super) fn check_invariants(input: &str, cfg: &ChunkingConfig) {
    let chunks = chunk_text(input, cfg);
    let max = cfg.max_tokens.max(1);
    let mut prev_end = 0;
    for (i, c) in chunks.iter().enumerate() {
        assert_eq!(c.ordinal, i);
        assert!(c.byte_start < c.byte_end, "empty chunk {c:?}");
        assert!(c.byte_start >= prev_end, "overlap or disorder at {i}");
        prev_end = c.byte_end;
        assert_eq!(c.text, &input[c.byte_start..c.byte_end]);
        assert_eq!(c.char_start, input[..c.byte_start].chars().count());
        assert_eq!(c.char_end, input[..c.byte_end].chars().count());
        assert_eq!(c.text.trim(), c.text, "chunk not trimmed: {:?}", c.text);
        assert!(
            estimate_tokens(&c.text) <= max || !c.text.chars().any(char::is_whitespace),
            "chunk over budget ({} > {max}): {:?}",
            estimate_tokens(&c.text),
            c.text
        );
    }
    // Every non-whitespace char lies inside a chunk (chunks are sorted and disjoint).
    let mut k = 0;
    for (i, ch) in input.char_indices() {
        if ch.is_whitespace() {
            continue;
        }
        while k < chunks.len() && chunks[k].byte_end <= i {
            k += 1;
        }
        assert!(
            k < chunks.len() && chunks[k].byte_start <= i,
            "char {ch:?} at {i} not covered"
        );
    }
}

/// Deterministic pseudo-random text (no external RNG needed).
struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn below(&mut self, n: u64) -> usize {
        (self.next() % n) as usize
    }
}

const VOCAB: [&str; 24] = [
    "the",
    "index",
    "stores",
    "chunks",
    "with",
    "their",
    "source",
    "and",
    "a",
    "locator",
    "retrieval",
    "ranks",
    "evidence",
    "by",
    "score",
    "graph",
    "edges",
    "point",
    "to",
    "nodes",
    "client",
    "project",
    "query",
    "vector",
];

fn paragraph(rng: &mut Lcg, words: usize) -> String {
    let mut p = String::new();
    for w in 0..words {
        if w > 0 {
            p.push(' ');
        }
        p.push_str(VOCAB[rng.below(VOCAB.len() as u64)]);
        if w + 1 == words || rng.below(12) == 0 {
            p.push('.');
        }
    }
    p
}

#[test]
fn empty_and_whitespace_only_give_no_chunks() {
    assert!(chunk_text("", &ChunkingConfig::default()).is_empty());
    assert!(chunk_text(" \n\t\r\n \u{3000}\u{a0}\n\n", &ChunkingConfig::default()).is_empty());
}

#[test]
fn estimate_counts_words_and_cjk() {
    assert_eq!(estimate_tokens(""), 0);
    assert_eq!(estimate_tokens("one"), 2); // ceil(4/3)
    assert_eq!(estimate_tokens("one two three"), 4);
    assert_eq!(estimate_tokens("  a b  c\n"), 4);
    assert_eq!(estimate_tokens("東京都"), 3);
    assert_eq!(estimate_tokens("東京 tower"), 2 + 2);
    assert_eq!(estimate_tokens("Příliš žluťoučký kůň"), 4);
    assert_eq!(estimate_tokens("😀 🎉"), 3);
}

#[test]
fn small_document_is_one_chunk_trimmed() {
    let text = "\n\n  Hello world.\n\nSecond paragraph here.  \n\n";
    let chunks = chunk_text(text, &ChunkingConfig::default());
    assert_eq!(chunks.len(), 1);
    assert_eq!(chunks[0].text, "Hello world.\n\nSecond paragraph here.");
    assert_eq!(chunks[0].byte_start, 4);
    assert_eq!(chunks[0].char_start, 4);
    assert!(chunks[0].heading_path.is_empty());
    check_invariants(text, &ChunkingConfig::default());
}

#[test]
fn heading_paths_follow_the_outline() {
    let mut rng = Lcg(7);
    let body = |rng: &mut Lcg| paragraph(rng, 60);
    let text = format!(
        "# Guide\n\n{}\n\n## Install\n\n{}\n\n### Linux\n\n{}\n\n## Usage ##\n\n{}\n\nAPI\n---\n\n{}\n\nAppendix\n========\n\n{}\n",
        body(&mut rng),
        body(&mut rng),
        body(&mut rng),
        body(&mut rng),
        body(&mut rng),
        body(&mut rng)
    );
    let chunks = chunk_text(&text, &ChunkingConfig::default());
    check_invariants(&text, &ChunkingConfig::default());
    let paths: Vec<Vec<&str>> = chunks
        .iter()
        .map(|c| c.heading_path.iter().map(String::as_str).collect())
        .collect();
    let expect: Vec<Vec<&str>> = vec![
        vec!["Guide"],
        vec!["Guide", "Install"],
        vec!["Guide", "Install", "Linux"],
        vec!["Guide", "Usage"],
        vec!["Guide", "API"],
        vec!["Appendix"],
    ];
    for e in &expect {
        assert!(paths.contains(e), "missing path {e:?} in {paths:?}");
    }
    // No chunk straddles two sections: each section's text starts a chunk.
    for heading in [
        "## Install",
        "### Linux",
        "## Usage ##",
        "API\n---",
        "Appendix\n====",
    ] {
        assert!(
            chunks.iter().any(|c| c.text.starts_with(heading)),
            "{heading} does not start a chunk"
        );
    }
}

#[test]
fn tiny_title_section_packs_with_the_next_one() {
    let text =
        "# Title\n\n## Intro\n\nA short introduction paragraph with a handful of words in it.\n";
    let chunks = chunk_text(text, &ChunkingConfig::default());
    assert_eq!(chunks.len(), 1);
    assert_eq!(chunks[0].heading_path, vec!["Title".to_string()]);
}

#[test]
fn hashes_inside_code_fences_are_not_headings() {
    let text = "# Real\n\n```bash\n# not a heading\necho hi\n```\n\nafter\n";
    let chunks = chunk_text(text, &ChunkingConfig::default());
    assert_eq!(chunks.len(), 1);
    assert_eq!(chunks[0].heading_path, vec!["Real".to_string()]);
    assert!(
        !chunks
            .iter()
            .any(|c| c.heading_path.iter().any(|h| h.contains("not a heading")))
    );
}

#[test]
fn code_fences_are_kept_whole() {
    let mut rng = Lcg(11);
    let code = "```rust\nfn main() {\n    let x = 1;\n\n\n    // blank lines above do not split\n    println!(\"{x}\");\n}\n```";
    let tilde = "~~~\nline one\n\n# still code\n~~~~";
    let mut text = String::new();
    for i in 0..12 {
        text.push_str(&paragraph(&mut rng, 40));
        text.push_str("\n\n");
        if i % 3 == 0 {
            text.push_str(code);
            text.push_str("\n\n");
        }
        if i % 4 == 1 {
            text.push_str(tilde);
            text.push_str("\n\n");
        }
    }
    let c = cfg(64, 8);
    check_invariants(&text, &c);
    let chunks = chunk_text(&text, &c);
    let whole = |fence: &str| {
        text.match_indices(fence).all(|(at, _)| {
            chunks
                .iter()
                .any(|ch| ch.byte_start <= at && at + fence.len() <= ch.byte_end)
        })
    };
    assert!(whole(code), "a ``` block was split");
    assert!(whole(tilde), "a ~~~ block was split");
    assert!(chunks.iter().all(|ch| ch.heading_path.is_empty()));
}

#[test]
fn oversized_code_block_splits_at_lines() {
    let mut text = String::from("```\n");
    for i in 0..200usize {
        text.push_str(&format!(
            "let value_{i} = compute(value_{}, {i});\n",
            i.saturating_sub(1)
        ));
    }
    text.push_str("```\n");
    let c = cfg(64, 8);
    check_invariants(&text, &c);
    let chunks = chunk_text(&text, &c);
    assert!(chunks.len() > 1);
    for ch in &chunks {
        let before = text[..ch.byte_start].chars().next_back();
        let after = text[ch.byte_end..].chars().next();
        assert!(
            before.is_none_or(|b| b == '\n'),
            "chunk does not start at a line: {:?}",
            ch.text
        );
        assert!(
            after.is_none_or(|a| a == '\n'),
            "chunk does not end at a line: {:?}",
            ch.text
        );
    }
}

#[test]
fn multilingual_text_is_never_cut_inside_a_char_or_word() {
    let czech = "Příliš žluťoučký kůň úpěl ďábelské ódy. Šťastné žabky skáčou přes řeku! ";
    let cjk = "東京都は日本の首都です。人口はとても多いです。大阪も大きい都市です！";
    let emoji = "Deploy 🚀 finished ✅ without errors 🎉 and the team 👩‍💻👨‍💻 celebrated. ";
    let mut text = String::new();
    for i in 0..30 {
        text.push_str(czech);
        text.push_str(cjk);
        text.push_str(emoji);
        if i % 5 == 4 {
            text.push_str("\n\n");
        }
    }
    // A CJK run without any punctuation or spaces, longer than the budget.
    text.push_str("\n\n");
    text.push_str(&"漢字かな交じり文".repeat(40));
    for c in [cfg(16, 4), cfg(40, 8), cfg(7, 0), ChunkingConfig::default()] {
        check_invariants(&text, &c);
        for ch in chunk_text(&text, &c) {
            // Boundaries are at whitespace, after sentence punctuation, or next to a CJK char.
            let before = text[..ch.byte_start].chars().next_back();
            let first = ch.text.chars().next();
            assert!(
                before
                    .is_none_or(|b| b.is_whitespace() || is_cjk(b) || matches!(b, '.' | '!' | '?'))
                    || first.is_some_and(is_cjk),
                "bad start {:?}",
                ch.text
            );
            let after = text[ch.byte_end..].chars().next();
            let last = ch.text.chars().next_back();
            assert!(
                after.is_none_or(|a| a.is_whitespace() || is_cjk(a)) || last.is_some_and(is_cjk),
                "bad end {:?}",
                ch.text
            );
        }
    }
}

#[test]
fn huge_unpunctuated_paragraph_splits_at_spaces_under_budget() {
    let mut rng = Lcg(3);
    let mut text = String::with_capacity(800_000);
    for i in 0..100_000 {
        if i > 0 {
            text.push(' ');
        }
        text.push_str(VOCAB[rng.below(VOCAB.len() as u64)]);
        if i % 97 == 0 {
            text.push('ž'); // a multi-byte char glued to some words
        }
    }
    let c = ChunkingConfig::default();
    let chunks = chunk_text(&text, &c);
    let total = estimate_tokens(&text);
    assert!(
        chunks.len() >= total / c.max_tokens,
        "too few chunks: {}",
        chunks.len()
    );
    let bytes = text.as_bytes();
    for ch in &chunks {
        assert!(estimate_tokens(&ch.text) <= c.max_tokens);
        assert!(
            ch.byte_start == 0 || bytes[ch.byte_start - 1] == b' ',
            "cut inside a word"
        );
        assert!(
            ch.byte_end == text.len() || bytes[ch.byte_end] == b' ',
            "cut inside a word"
        );
    }
    let covered: usize = chunks.iter().map(|ch| ch.text.split(' ').count()).sum();
    assert_eq!(covered, 100_000);
}

#[test]
fn long_prose_paragraph_splits_at_sentences() {
    let mut rng = Lcg(5);
    let mut text = String::new();
    for _ in 0..80 {
        text.push_str(&paragraph(&mut rng, 12));
        text.push(' ');
    }
    let c = cfg(64, 16);
    check_invariants(&text, &c);
    let chunks = chunk_text(&text, &c);
    assert!(chunks.len() > 3);
    for ch in &chunks[..chunks.len() - 1] {
        assert!(
            ch.text.ends_with('.'),
            "not cut at a sentence end: {:?}",
            ch.text
        );
    }
}

#[test]
fn deterministic() {
    let mut rng = Lcg(9);
    let text: Vec<String> = (0..50).map(|_| paragraph(&mut rng, 30)).collect();
    let text = text.join("\n\n");
    assert_eq!(
        chunk_text(&text, &ChunkingConfig::default()),
        chunk_text(&text, &ChunkingConfig::default())
    );
}

#[test]
fn crlf_and_odd_whitespace() {
    let text = "# Title\r\n\r\nLine one.\r\nLine two.\r\n\r\n\u{a0}\u{2003}\r\n## Next\r\nBody\u{3000}text\r\n";
    check_invariants(text, &ChunkingConfig::default());
    check_invariants(text, &cfg(2, 1));
    // With min_tokens 0 the tiny first section is not packed with the next one.
    let chunks = chunk_text(text, &cfg(256, 0));
    assert_eq!(chunks.len(), 2);
    assert_eq!(chunks[0].text, "# Title\r\n\r\nLine one.\r\nLine two.");
    assert_eq!(
        chunks[1].heading_path,
        vec!["Title".to_string(), "Next".to_string()]
    );
    // With the default min_tokens it is.
    assert_eq!(chunk_text(text, &ChunkingConfig::default()).len(), 1);
}

/// Old chunk texts that no longer exist after the edit, and new ones that did not exist.
fn changed(old: &[TextChunk], new: &[TextChunk]) -> (usize, usize) {
    let o: HashSet<&str> = old.iter().map(|c| c.text.as_str()).collect();
    let n: HashSet<&str> = new.iter().map(|c| c.text.as_str()).collect();
    (o.difference(&n).count(), n.difference(&o).count())
}

fn edit_stability(
    paragraphs: &[String],
    edit: impl Fn(&str, &mut Lcg) -> String,
) -> (usize, usize, usize) {
    let c = ChunkingConfig::default();
    let doc = paragraphs.join("\n\n");
    let old = chunk_text(&doc, &c);
    let mut rng = Lcg(1234);
    let (mut total_removed, mut worst, mut edits) = (0, 0, 0);
    for k in 3..paragraphs.len() - 3 {
        let mut edited = paragraphs.to_vec();
        edited[k] = edit(&paragraphs[k], &mut rng);
        let new_doc = edited.join("\n\n");
        let new = chunk_text(&new_doc, &c);
        let (removed, added) = changed(&old, &new);
        // The edited paragraph's chunk must change; chunks far away must not.
        assert!(removed >= 1 && added >= 1);
        let start_k: usize = paragraphs[..k].iter().map(|p| p.len() + 2).sum();
        let end_k = start_k + paragraphs[k].len();
        let containing = old
            .iter()
            .filter(|ch| ch.byte_start < end_k && start_k < ch.byte_end)
            .count();
        assert!(
            removed <= containing + 2,
            "edit {k}: {removed} chunks changed, {containing} contained it"
        );
        let first_changed = old
            .iter()
            .position(|ch| !new.iter().any(|n| n.text == ch.text));
        let last_changed = old
            .iter()
            .rposition(|ch| !new.iter().any(|n| n.text == ch.text));
        let first_containing = old
            .iter()
            .position(|ch| start_k < ch.byte_end)
            .unwrap_or(old.len());
        if let (Some(a), Some(b)) = (first_changed, last_changed) {
            assert!(b - a < 5, "edit {k}: changes spread over chunks {a}..={b}");
            assert!(
                a + 1 >= first_containing,
                "edit {k}: chunk {a}, well before the edit, changed"
            );
        }
        total_removed += removed;
        worst = worst.max(removed);
        edits += 1;
    }
    (total_removed, worst, edits)
}

/// Each of `edits`, applied to the paragraphs one at a time, changes at most four chunks and
/// two on average (`edits` are named by their position in a failure).
/// An edit of one paragraph (`rng` for the text it adds).
type Edit<'a> = &'a dyn Fn(&str, &mut Lcg) -> String;

fn assert_edits_stay_local(paragraphs: &[String], edits: &[Edit<'_>]) {
    for (i, edit) in edits.iter().enumerate() {
        let (removed, worst, n) = edit_stability(paragraphs, edit);
        assert!(worst <= 4, "edit {i}: the worst changed {worst} chunks");
        assert!(
            removed * 10 <= n * 20,
            "edit {i}: on average {removed}/{n} chunks changed per edit"
        );
    }
}

#[test]
fn local_edit_changes_only_nearby_chunks_varied_paragraphs() {
    let mut rng = Lcg(42);
    let paragraphs: Vec<String> = (0..40)
        .map(|_| {
            let n = 10 + rng.below(110);
            paragraph(&mut rng, n)
        })
        .collect();
    let grow = |p: &str, rng: &mut Lcg| format!("{p} {}", paragraph(rng, 25));
    let shrink = |p: &str, _: &mut Lcg| p.split(' ').take(8).collect::<Vec<_>>().join(" ");
    let tweak = |p: &str, _: &mut Lcg| p.replacen("the", "THE", 1).replacen(' ', "  x ", 1);
    assert_edits_stay_local(&paragraphs, &[&grow, &shrink, &tweak]);
}

#[test]
fn local_edit_changes_only_nearby_chunks_uniform_paragraphs() {
    // Same-sized paragraphs are the worst case for greedy packing: one paragraph growing
    // shifts every later boundary. Content-defined anchors keep the change local.
    let mut rng = Lcg(99);
    let paragraphs: Vec<String> = (0..40).map(|_| paragraph(&mut rng, 45)).collect();
    let grow = |p: &str, rng: &mut Lcg| format!("{p} {}", paragraph(rng, 60));
    let shrink = |p: &str, _: &mut Lcg| p.split(' ').take(12).collect::<Vec<_>>().join(" ");
    assert_edits_stay_local(&paragraphs, &[&grow, &shrink]);
}

#[test]
fn large_input_is_handled() {
    let mut rng = Lcg(17);
    let mut text = String::new();
    while text.len() < 4_000_000 {
        if rng.below(20) == 0 {
            text.push_str("## Section\n\n");
        }
        let words = 5 + rng.below(150);
        text.push_str(&paragraph(&mut rng, words));
        text.push_str("\n\n");
    }
    let chunks = chunk_text(&text, &ChunkingConfig::default());
    assert!(chunks.len() > 1000);
    let last = chunks.last().map(|c| c.char_end);
    assert_eq!(last, Some(text.trim_end().chars().count()));
}

#[test]
fn tiny_budgets_do_not_break_invariants() {
    let text = "# A\nword another.\n\n```\ncode here\n```\n東京 😀 ok";
    for max in 0..6 {
        for min in 0..4 {
            check_invariants(text, &cfg(max, min));
        }
    }
}
