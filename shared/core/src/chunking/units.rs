//! Units: blocks split at sentences, lines, words or CJK characters until each fits the
//! budget, with the content-defined anchor drawn after each.

use super::anchors::{hash_bytes, mix};
use super::blocks::{Block, BlockKind};
use super::tokens::{TokenCount, is_cjk};

/// The smallest thing packing moves around: a block, a sentence/line, a word or a CJK piece.
/// Units are disjoint, in order, trimmed, and together cover every non-whitespace byte.
#[derive(Debug, Clone, Copy)]
pub(super) struct Unit {
    pub(super) start: usize,
    pub(super) end: usize,
    pub(super) tc: TokenCount,
    /// Hard boundary after this unit (content-defined anchor, or end of a split block).
    pub(super) cut_after: bool,
    /// First unit of a heading block: hard boundary before it.
    pub(super) heading: bool,
    pub(super) section: usize,
}

pub(super) struct UnitBuilder<'a> {
    pub(super) text: &'a str,
    pub(super) max: usize,
    /// `3 * target`: anchors fire when `hash % modulus < thirds(unit)`.
    pub(super) modulus: u64,
    pub(super) units: Vec<Unit>,
}

impl UnitBuilder<'_> {
    fn fires(&self, hash: u64, tc: TokenCount) -> bool {
        hash % self.modulus < tc.thirds()
    }

    fn push(&mut self, start: usize, end: usize, tc: TokenCount, cut_after: bool, section: usize) {
        self.units.push(Unit {
            start,
            end,
            tc,
            cut_after,
            heading: false,
            section,
        });
    }

    pub(super) fn push_block(&mut self, block: &Block) {
        let text = self.text;
        let s = &text[block.start..block.end];
        let tc = TokenCount::of(s);
        let first = self.units.len();
        if tc.estimate() <= self.max {
            let cut = self.fires(hash_bytes(s.as_bytes()), tc);
            self.push(block.start, block.end, tc, cut, block.section);
        } else {
            self.split_sentences(
                block.start,
                block.end,
                block.kind == BlockKind::Code,
                block.section,
            );
            // An oversized block always ends its segment: edits inside it stay inside it.
            if let Some(last) = self.units.last_mut() {
                last.cut_after = true;
            }
        }
        if block.kind == BlockKind::Heading
            && let Some(u) = self.units.get_mut(first)
        {
            u.heading = true;
        }
    }

    /// Splits at sentence ends and newlines (prose) or at newlines only (code).
    fn split_sentences(&mut self, start: usize, end: usize, code: bool, section: usize) {
        let text = self.text;
        let seg = &text[start..end];
        let mut unit_start: Option<usize> = None;
        let mut last_end = 0;
        let mut iter = seg.char_indices().peekable();
        while let Some((i, c)) = iter.next() {
            if c.is_whitespace() {
                if c == '\n'
                    && let Some(us) = unit_start.take()
                {
                    self.push_sentence(start + us, start + last_end, section);
                }
                continue;
            }
            if unit_start.is_none() {
                unit_start = Some(i);
            }
            last_end = i + c.len_utf8();
            if !code
                && is_sentence_end(c, iter.peek().map(|&(_, n)| n))
                && let Some(us) = unit_start.take()
            {
                self.push_sentence(start + us, start + last_end, section);
            }
        }
        if let Some(us) = unit_start {
            self.push_sentence(start + us, start + last_end, section);
        }
    }

    fn push_sentence(&mut self, start: usize, end: usize, section: usize) {
        let text = self.text;
        let s = &text[start..end];
        let tc = TokenCount::of(s);
        if tc.estimate() <= self.max {
            let cut = self.fires(hash_bytes(s.as_bytes()), tc);
            self.push(start, end, tc, cut, section);
        } else {
            self.split_words(start, end, section);
        }
    }

    fn split_words(&mut self, start: usize, end: usize, section: usize) {
        let text = self.text;
        let seg = &text[start..end];
        let mut prev_hash = 0u64;
        let mut word_start: Option<usize> = None;
        for (i, c) in seg.char_indices() {
            if c.is_whitespace() {
                if let Some(ws) = word_start.take() {
                    self.push_word(start + ws, start + i, section, &mut prev_hash);
                }
            } else if word_start.is_none() {
                word_start = Some(i);
            }
        }
        if let Some(ws) = word_start {
            self.push_word(start + ws, end, section, &mut prev_hash);
        }
    }

    fn push_word(&mut self, start: usize, end: usize, section: usize, prev_hash: &mut u64) {
        let text = self.text;
        let w = &text[start..end];
        let tc = TokenCount::of(w);
        let h = hash_bytes(w.as_bytes());
        // Anchor on the pair (previous word, word) so that a frequent word does not fire everywhere.
        let window = mix(prev_hash.rotate_left(29) ^ h);
        *prev_hash = h;
        if tc.estimate() <= self.max {
            let cut = self.fires(window, tc);
            self.push(start, end, tc, cut, section);
        } else {
            self.split_cjk_word(start, end, section);
        }
    }

    /// A single whitespace-free word over budget: greedy pieces cut only next to a CJK char
    /// (each CJK char is its own atom, each run of other chars is one atom and never cut).
    fn split_cjk_word(&mut self, start: usize, end: usize, section: usize) {
        let text = self.text;
        let word = &text[start..end];
        let mut piece_start = start;
        let mut piece = TokenCount::default();
        let mut iter = word.char_indices().peekable();
        while let Some((i, c)) = iter.next() {
            let atom_start = start + i;
            let atom = if is_cjk(c) {
                TokenCount { words: 0, cjk: 1 }
            } else {
                while iter.peek().is_some_and(|&(_, d)| !is_cjk(d)) {
                    iter.next();
                }
                TokenCount { words: 1, cjk: 0 }
            };
            let next = piece.plus(atom);
            if atom_start > piece_start && next.estimate() > self.max {
                self.push(piece_start, atom_start, piece, false, section);
                piece_start = atom_start;
                piece = atom;
            } else {
                piece = next;
            }
        }
        self.push(piece_start, end, piece, false, section);
    }
}

fn is_sentence_end(c: char, next: Option<char>) -> bool {
    match c {
        '.' | '?' | '!' => next.is_some_and(char::is_whitespace),
        '\u{3002}' | '\u{FF01}' | '\u{FF1F}' => true,
        _ => false,
    }
}
