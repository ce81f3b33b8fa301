//! Property tests of [`super`]: idempotence of normalisation, no panics, spans on char
//! boundaries.

use proptest::prelude::*;

use super::tests::key;
use super::*;

fn check_spans_rel(text: &str) -> Result<(), TestCaseError> {
    for f in find_relationships(text, None) {
        prop_assert!(f.start <= f.end && f.end <= text.len());
        prop_assert!(text.is_char_boundary(f.start) && text.is_char_boundary(f.end));
    }
    let main = key("jira:task-1");
    for f in find_relationships(text, Some(&main)) {
        prop_assert!(text.is_char_boundary(f.start) && text.is_char_boundary(f.end));
    }
    Ok(())
}

fn check_spans_refs(text: &str) -> Result<(), TestCaseError> {
    for r in extract_refs(text) {
        prop_assert!(r.start < r.end && r.end <= text.len());
        prop_assert!(text.is_char_boundary(r.start) && text.is_char_boundary(r.end));
    }
    Ok(())
}

proptest! {
    #[test]
    fn normalize_is_idempotent(s in ".*") {
        if let Some(k) = normalize_ref(&s)
            && k.as_str().contains(':')
        {
            prop_assert_eq!(normalize_ref(k.as_str()), Some(k.clone()));
        }
    }

    #[test]
    fn normalize_is_idempotent_on_ref_like_input(s in "[A-Za-zŽžŘřÍíŠšŤťŮůÝýÉéÆæØøßł0-9 _.:@/\\\\-]{0,40}") {
        if let Some(k) = normalize_ref(&s) {
            if k.as_str().contains(':') {
                prop_assert_eq!(normalize_ref(k.as_str()), Some(k.clone()));
            }
            if let Some(f) = ascii_fold_key(&k) {
                prop_assert!(f.as_str().is_ascii());
            }
        }
    }

    #[test]
    fn parsers_never_panic(s in ".*") {
        let _ = parse_relationship(&s, None);
        let _ = parse_relationship(&s, Some(&key("jira:task-1")));
        let _ = canonical_relation(&s);
        check_spans_rel(&s)?;
        check_spans_refs(&s)?;
    }

    #[test]
    fn parsers_never_panic_on_any_chars(v in proptest::collection::vec(any::<char>(), 0..200)) {
        let s: String = v.into_iter().collect();
        let _ = parse_relationship(&s, None);
        if let Some(k) = normalize_ref(&s) {
            let _ = ascii_fold_key(&k);
        }
        check_spans_rel(&s)?;
        check_spans_refs(&s)?;
    }

    #[test]
    fn parsers_never_panic_on_syntax_soup(s in "[a-zA-Z0-9:|\\-\\[\\]>\" \n,_.Ž/]{0,120}") {
        let _ = parse_relationship(&s, None);
        check_spans_rel(&s)?;
        check_spans_refs(&s)?;
        let wrapped = format!("relationships: [\"{s}\"]\nrelationships:\n - {s}\n");
        check_spans_rel(&wrapped)?;
    }
}

proptest! {
    #[test]
    fn free_text_never_yields_a_reserved_namespace(
        prose in "[A-Za-z0-9 .,:@/_$>\n-]{0,80}",
        ns in proptest::sample::select(crate::keys::RESERVED_NAMESPACES),
        value in "[A-Za-z0-9][A-Za-z0-9_.-]{0,12}",
        tail in "[A-Za-z0-9 .,:@/_-]{0,40}",
    ) {
        let text = format!("{prose} {ns}:{value} {tail}");
        let found = extract_refs(&text);
        for r in &found {
            prop_assert!(!crate::keys::is_reserved(&r.key), "{} in {text:?}", r.key);
        }
        // What free text yields is a subset of what a question yields.
        let asked: Vec<NodeKey> = extract_query_refs(&text).into_iter().map(|r| r.key).collect();
        for r in &found {
            prop_assert!(asked.contains(&r.key));
        }
    }
}
