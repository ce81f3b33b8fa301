use super::*;

const VOCAB: &str = include_str!("../../assets/minilm-vocab.txt");

fn tokenizer() -> WordPiece {
    WordPiece::from_vocab_text(VOCAB)
}

fn ids(wp: &WordPiece, text: &str) -> Vec<u32> {
    let mut out = Vec::new();
    wp.tokenize_ids(text, &mut out);
    out
}

/// Expected ids were produced by the real HuggingFace `tokenizers` (0.23.3)
/// with all-MiniLM-L6-v2's tokenizer.json, `add_special_tokens=False`
/// (tools/distill/tokenizer_cases.py).
const CASES: &[(&str, &[u32])] = &[
    // ["pri", "##lis", "z", "##lu", "##tou", "##cky", "kun", "up", "##el", "da", "##bel", "##ske", "o", "##dy"]
    (
        "P\u{159}\u{ed}li\u{161} \u{17e}lu\u{165}ou\u{10d}k\u{fd} k\u{16f}\u{148} \u{fa}p\u{11b}l \u{10f}\u{e1}belsk\u{e9} \u{f3}dy",
        &[
            26927, 6856, 1062, 7630, 24826, 17413, 28919, 2039, 2884, 4830, 8671, 17140, 1051, 5149,
        ],
    ),
    // ["hello", ",", "world", "!", "!", "!", "(", "test", ")", "-", "-", "a", "/", "b", ";", "c", ":", "d",
    //  "'", "quoted", "'", "\"", "dq", "\"", "¿", "que", "?", "«", "gui", "##lle", "##met", "##s", "»", "—", "dash", "…"]
    (
        "Hello, world!!! (test) -- a/b; c:d 'quoted' \"dq\" \u{bf}qu\u{e9}? \u{ab}guillemets\u{bb} \u{2014} dash\u{2026}",
        &[
            7592, 1010, 2088, 999, 999, 999, 1006, 3231, 1007, 1011, 1011, 1037, 1013, 1038, 1025,
            1039, 1024, 1040, 1005, 9339, 1005, 1000, 25410, 1000, 1094, 10861, 1029, 1077, 26458,
            6216, 11368, 2015, 1090, 1517, 11454, 1529,
        ],
    ),
    // ["我", "[UNK]", "北", "京", "天", "安", "[UNK]", "and", "日", "本", "語", "テ", "##キ", "##ス", "##ト",
    //  "ᄒ", "##ᅡ", "##ᆫ", "##ᄀ", "##ᅮ", "##ᆨ", "##ᄋ", "##ᅥ"]
    (
        "\u{6211}\u{7231}\u{5317}\u{4eac}\u{5929}\u{5b89}\u{95e8} and \u{65e5}\u{672c}\u{8a9e}\u{30c6}\u{30ad}\u{30b9}\u{30c8} \u{d55c}\u{ad6d}\u{c5b4}",
        &[
            1855, 100, 1781, 1755, 1811, 1820, 100, 1998, 1864, 1876, 1950, 1713, 30227, 30233,
            30240, 1469, 30006, 30021, 29991, 30014, 30020, 29999, 30008,
        ],
    ),
    // ["una", "##ffa", "##ble"]
    ("unaffable", &[14477, 20961, 3468]),
    // ["i", "love", "[UNK]", "and", "[UNK]", "!", "[UNK]"]
    (
        "I love \u{1f980} and \u{1f600}! \u{1f44d}\u{1f3fd}",
        &[1045, 2293, 100, 1998, 100, 999, 100],
    ),
    // ["hello", "world", "iphone", "mcdonald", "'", "s", "σ", "##ι", "##σ", "##υ", "##φ", "##ο", "##σ"]
    (
        "HeLLo WoRLD iPhone McDonald's \u{3a3}\u{38a}\u{3a3}\u{3a5}\u{3a6}\u{39f}\u{3a3}",
        &[
            7592, 2088, 18059, 9383, 1005, 1055, 1173, 18199, 29733, 29735, 29736, 29730, 29733,
        ],
    ),
    // ["version", "3", ".", "14", ".", "159", "costs", "$", "1", ",", "000", ".", "50", "on", "202", "##4",
    //  "-", "01", "-", "02"]
    (
        "Version 3.14.159 costs $1,000.50 on 2024-01-02",
        &[
            2544, 1017, 1012, 2403, 1012, 18914, 5366, 1002, 1015, 1010, 2199, 1012, 2753, 2006,
            16798, 2549, 1011, 5890, 1011, 6185,
        ],
    ),
    // ["tab", "here", "n", "##bs", "##p", "##zer", "##oso", "##ft", "new", "##nu", "##ll", "##re", "##p", "##nel"]
    (
        "tab\there\u{a0}nbsp\u{200b}zero\u{ad}soft\r\nnew\u{0}null\u{fffd}rep\u{85}nel",
        &[
            21628, 2182, 1050, 5910, 2361, 6290, 19137, 6199, 2047, 11231, 3363, 2890, 2361, 11877,
        ],
    ),
    // ["foo", "[MASK]", "bar", "[CLS]", "[", "mask", "]", "[UNK]", "x"]
    (
        "foo[MASK]bar [CLS] [mask] [UNK]x",
        &[29379, 103, 3347, 101, 1031, 7308, 1033, 100, 1060],
    ),
    // ["naive", "cafe", "e", "istanbul", "क", "##ा", "ह", "##ि", "##न", "##द", "##ी"]
    (
        "na\u{ef}ve caf\u{e9} e\u{301} \u{130}stanbul \u{915}\u{93e}\u{902} \u{939}\u{93f}\u{928}\u{94d}\u{926}\u{940}",
        &[
            15743, 7668, 1041, 9960, 1315, 29876, 1339, 29877, 29863, 29861, 29878,
        ],
    ),
    // ["ﬁ", "[UNK]", "[UNK]", ";", "`"]
    (
        "\u{fb01} \u{216b} \u{338f} \u{37e} \u{1fef}",
        &[1984, 100, 100, 1025, 1036],
    ),
    // []
    ("", &[]),
    // []
    ("   \t\n ", &[]),
];

#[test]
fn matches_reference_tokenizer() {
    let wp = tokenizer();
    for (text, expected) in CASES {
        assert_eq!(ids(&wp, text), expected.to_vec(), "text: {text:?}");
    }
}

#[test]
fn long_and_unknown_words() {
    let wp = tokenizer();
    // 101 chars -> [UNK]; exactly 100 chars is still segmented ("y" + 99 x "##y");
    // a word containing an out-of-vocabulary char (U+2603) -> one [UNK].
    let text = format!(
        "{} {} foo\u{2603}bar supercalifragilisticexpialidocious",
        "x".repeat(101),
        "y".repeat(100)
    );
    let mut expected: Vec<u32> = vec![100, 1061];
    expected.extend(std::iter::repeat_n(2100, 99));
    expected.extend([
        100, 3565, 9289, 10128, 29181, 24411, 4588, 10288, 19312, 21273, 10085, 6313,
    ]);
    assert_eq!(ids(&wp, &text), expected);

    // The limit counts chars, not bytes: 60 two-byte chars are segmented,
    // 101 accented chars (101 chars after accent stripping) are not.
    let text = format!("{} {}", "\u{436}".repeat(60), "\u{e7}".repeat(101));
    let mut expected: Vec<u32> = vec![1186];
    expected.extend(std::iter::repeat_n(29743, 59));
    expected.push(100);
    assert_eq!(ids(&wp, &text), expected);
}

#[test]
fn appends_without_clearing() {
    let wp = tokenizer();
    let mut out = vec![7];
    wp.tokenize_ids("unaffable", &mut out);
    wp.tokenize_ids("unaffable", &mut out);
    assert_eq!(out, vec![7, 14477, 20961, 3468, 14477, 20961, 3468]);
}

#[test]
fn vocabulary_accessors() {
    let wp = tokenizer();
    assert_eq!(wp.vocab_size(), 30522);
    assert_eq!(wp.unk_id(), 100);
    assert_eq!(wp.token_id("[CLS]"), Some(101));
    assert_eq!(wp.token_id("hello"), Some(7592));
    assert_eq!(wp.token_id("##ble"), Some(3468));
    assert_eq!(wp.token_id("no-such-token"), None);
    for id in [0, 100, 101, 102, 103] {
        assert!(wp.is_special(id), "{id}");
    }
    assert!(!wp.is_special(7592));
}

#[test]
fn tiny_vocabulary_without_unk() {
    let wp = WordPiece::from_vocab_text("a\r\n##b\r\n\r\nc\r\n");
    assert_eq!(wp.vocab_size(), 4);
    assert_eq!(wp.unk_id(), u32::MAX);
    assert_eq!(
        ids(&wp, "ab C [UNK] abz"),
        vec![0, 1, 3, u32::MAX, u32::MAX, u32::MAX, u32::MAX]
    );
}

#[test]
fn character_tables_are_sorted_and_disjoint() {
    for table in [REMOVED_CHARS, NONSPACING_MARKS, PUNCTUATION] {
        for pair in table.windows(2) {
            assert!(pair[0].0 <= pair[0].1 && pair[0].1 < pair[1].0, "{pair:?}");
        }
    }
}

#[test]
fn large_input() {
    let wp = tokenizer();
    let text = "The quick brown fox jumps over the lazy dog. ".repeat(25_000);
    let mut out = Vec::new();
    wp.tokenize_ids(&text, &mut out);
    assert_eq!(out.len(), 10 * 25_000);
}
