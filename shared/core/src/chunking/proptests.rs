use super::tests::check_invariants;
use super::*;
use proptest::prelude::*;

const PIECES: &[&str] = &[
    "word ",
    "other ",
    "a",
    "b",
    "Příliš ",
    "žluť",
    "東京",
    "。",
    "😀",
    "👩‍💻",
    " ",
    "  ",
    "\n",
    "\n\n",
    "\r\n",
    "\t",
    "\u{a0}",
    "\u{3000}",
    "\u{2028}",
    ". ",
    "? ",
    "! ",
    "# ",
    "## Head\n",
    "#",
    "```",
    "```\n",
    "~~~\n",
    "===\n",
    "---\n",
    "    ",
    "-",
    "=",
    "`",
    "~",
    "é",
    "\u{301}",
    "ab.cd",
];

fn structured() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(PIECES.to_vec()), 0..200).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn invariants_hold_for_arbitrary_strings(s in any::<String>(), max in 0usize..48, min in 0usize..16) {
        check_invariants(&s, &ChunkingConfig { max_tokens: max, min_tokens: min });
    }

    #[test]
    fn invariants_hold_for_markdownish_strings(s in structured(), max in 0usize..48, min in 0usize..16) {
        check_invariants(&s, &ChunkingConfig { max_tokens: max, min_tokens: min });
    }

    #[test]
    fn invariants_hold_with_default_config(s in structured()) {
        check_invariants(&s, &ChunkingConfig::default());
    }
}
