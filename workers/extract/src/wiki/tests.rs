use super::*;
use crate::document::{document_source, extract};
use proptest::prelude::*;

const PAGED: &str =
    include_str!("../../../indexers/tests/fixtures/rest/confluence-pages-paged.json");
const INCREMENTAL: &str =
    include_str!("../../../indexers/tests/fixtures/rest/confluence-incremental.json");
const HTML_PAGE: &str =
    include_str!("../../../indexers/tests/fixtures/rest/github-html-instead-of-json.json");

const LIST: &str = "/wiki/rest/api/content";
const SEARCH: &str = "/wiki/rest/api/content/search";
const JAN_ACCOUNT: &str = "712020:9b0c3d4e-1f2a-4b5c-8d6e-7f8091a2b3c4";
const GRACE_ACCOUNT: &str = "712020:2e7d1c55-8a90-4f3b-b1c2-d3e4f5a6b7c8";

/// The response body of the first exchange with this request path whose query has these
/// parameters (JSON bodies re-serialised, string bodies as they are).
fn body(fixture: &str, path: &str, query: &[(&str, &str)]) -> Vec<u8> {
    let exchanges: Vec<Value> = serde_json::from_str(fixture).expect("fixture is JSON");
    let hit = exchanges
        .iter()
        .find(|x| {
            x["request"]["path"] == path
                && query.iter().all(|(k, v)| x["request"]["query"][*k] == *v)
        })
        .expect("recorded exchange");
    match &hit["response"]["body"] {
        Value::String(s) => s.clone().into_bytes(),
        other => serde_json::to_vec(other).expect("body"),
    }
}

fn pages(fixture: &str, path: &str, query: &[(&str, &str)]) -> ContentPage {
    content_page(&body(fixture, path, query)).expect("content page")
}

fn find<'a>(list: &'a ContentPage, id: &str) -> &'a WikiPage {
    list.pages.iter().find(|p| p.id == id).expect("page")
}

fn source(page: &WikiPage) -> PreparedSource {
    let scope = Scope::client("acme");
    let chunking = ChunkingConfig::default();
    page_source(
        page,
        &WikiContext {
            scope: &scope,
            source_id: "acme-wiki",
            chunking: &chunking,
        },
    )
}

/// `(type, to, evidence)` of every edge; all of them start at the page.
fn edges_of(src: &PreparedSource) -> Vec<(&str, &str, &EvidenceSpec)> {
    let page = match &src.chunks[0].locator {
        Locator::Page { page_id, .. } => page_key(page_id),
        other => panic!("{other:?}"),
    };
    assert!(src.edges.iter().all(|e| e.from == page), "{:#?}", src.edges);
    src.edges
        .iter()
        .map(|e| (e.edge_type.as_str(), e.to.as_str(), &e.evidence))
        .collect()
}

fn section_of(c: &PreparedChunk) -> Option<&str> {
    match &c.locator {
        Locator::Page { section, .. } => section.as_deref(),
        other => panic!("{other:?}"),
    }
}

/// The chunk holding `needle` (exactly one must).
fn chunk_with(src: &PreparedSource, needle: &str) -> usize {
    let hits: Vec<usize> = (0..src.chunks.len())
        .filter(|i| src.chunks[*i].text.contains(needle))
        .collect();
    assert_eq!(hits.len(), 1, "{needle:?} in {:#?}", src.chunks);
    hits[0]
}

/// Section labels in chunk order, consecutive repeats collapsed (a long section may take
/// several chunks).
fn section_run(src: &PreparedSource) -> Vec<Option<&str>> {
    let mut out: Vec<Option<&str>> = Vec::new();
    for c in &src.chunks {
        let s = section_of(c);
        if out.last() != Some(&s) {
            out.push(s);
        }
    }
    out
}

#[test]
fn content_pages_parse_and_follow_next_links() {
    let first = pages(PAGED, LIST, &[("start", "0")]);
    let got: Vec<(&str, &str, u64)> = first
        .pages
        .iter()
        .map(|p| (p.id.as_str(), p.title.as_str(), p.version))
        .collect();
    assert_eq!(
        got,
        vec![
            ("65538", "Engineering Handbook", 3),
            ("65541", "Deploying the shop", 4)
        ]
    );
    let next = "/rest/api/content?spaceKey=ENG&type=page&expand=body.storage,version,ancestors,metadata.labels,space&limit=2&start=2";
    assert_eq!(first.next.as_deref(), Some(next));
    assert_eq!(first.base.as_deref(), Some("{BASE}/wiki"));
    assert_eq!(
        absolute(first.base.as_deref(), next),
        format!("{{BASE}}/wiki{next}")
    );

    let handbook = find(&first, "65538");
    assert!(handbook.ancestors.is_empty());
    assert_eq!(handbook.labels, vec!["handbook"]);
    let deploy = find(&first, "65541");
    assert_eq!(deploy.space.as_deref(), Some("ENG"));
    assert_eq!(
        deploy.ancestors,
        vec![("65538".to_string(), "Engineering Handbook".to_string())]
    );
    assert_eq!(deploy.labels, vec!["deploy", "runbook"]);
    assert_eq!(deploy.modified.as_deref(), Some("2026-01-12T14:30:45.019Z"));
    assert_eq!(
        deploy.author,
        Some(WikiPerson {
            account_id: Some(JAN_ACCOUNT.into()),
            name: Some("Jan Novák".into()),
            email: Some("jan.novak@example.com".into()),
        })
    );
    assert_eq!(
        deploy.url.as_deref(),
        Some("{BASE}/wiki/spaces/ENG/pages/65541/Deploying+the+shop")
    );
    assert!(deploy.storage.starts_with("<h1>Deploying the shop</h1>"));

    let second = pages(PAGED, LIST, &[("start", "2")]);
    let got: Vec<(&str, &str, u64)> = second
        .pages
        .iter()
        .map(|p| (p.id.as_str(), p.title.as_str(), p.version))
        .collect();
    assert_eq!(got, vec![("65544", "On-call rota", 2)]);
    assert_eq!(second.next, None, "the last page has only a prev link");
    assert_eq!(find(&second, "65544").labels, vec!["oncall"]);
}

#[test]
fn search_results_parse_like_listings() {
    let found = pages(INCREMENTAL, SEARCH, &[("limit", "2")]);
    let got: Vec<(&str, u64, Option<&str>)> = found
        .pages
        .iter()
        .map(|p| (p.id.as_str(), p.version, p.modified.as_deref()))
        .collect();
    assert_eq!(
        got,
        vec![
            ("65544", 2, Some("2026-01-16T08:15:27.650Z")),
            ("65541", 5, Some("2026-01-21T11:05:03.772Z")),
        ]
    );
    // Two results with limit 2, yet no next link: the envelope, not the count, ends paging.
    assert_eq!(found.next, None);
    let deploy = find(&found, "65541");
    assert_eq!(
        deploy.author.as_ref().and_then(|a| a.name.as_deref()),
        Some("Grace Hopper")
    );
    // The unchanged rota comes back identical, so its source is skipped as unchanged.
    let paged = pages(PAGED, LIST, &[("start", "2")]);
    assert_eq!(find(&paged, "65544"), find(&found, "65544"));
    assert_eq!(
        source(find(&paged, "65544")).fingerprint,
        source(find(&found, "65544")).fingerprint
    );
    let v4 = pages(PAGED, LIST, &[("start", "0")]);
    assert_ne!(
        source(find(&v4, "65541")).fingerprint,
        source(deploy).fingerprint
    );
}

#[test]
fn a_page_is_cut_at_its_headings_and_keeps_its_code() {
    let list = pages(PAGED, LIST, &[("start", "0")]);
    let src = source(find(&list, "65541"));
    assert_eq!(src.source_urn, "wiki:acme-wiki:65541");
    assert_eq!(src.kind, "wiki");
    assert_eq!(src.title.as_deref(), Some("Deploying the shop"));
    assert_eq!(src.observed_at.as_deref(), Some("2026-01-12T14:30:45.019Z"));
    assert_eq!(
        section_run(&src),
        vec![
            None,
            Some("Before you deploy"),
            Some("Deploy"),
            Some("Rollback")
        ]
    );
    for c in &src.chunks {
        match &c.locator {
            Locator::Page {
                page_id,
                version,
                uri,
                section,
            } => {
                assert_eq!((page_id.as_str(), *version), ("65541", 4));
                assert_eq!(
                    uri.as_deref(),
                    Some("{BASE}/wiki/spaces/ENG/pages/65541/Deploying+the+shop")
                );
                assert_eq!(&c.context, section, "context is the section");
            }
            other => panic!("{other:?}"),
        }
        assert!(!c.text.contains(HEADING_MARK));
        assert_eq!(c.refs[0], page_key("65541"));
    }
    let intro = chunk_with(&src, "Production deploys run from the main branch");
    assert!(src.chunks[intro].text.starts_with("# Deploying the shop"));
    assert_eq!(section_of(&src.chunks[intro]), None);

    let code = chunk_with(&src, "git fetch --tags origin");
    assert_eq!(section_of(&src.chunks[code]), Some("Deploy"));
    let text = &src.chunks[code].text;
    assert!(text.starts_with("## Deploy"), "{text}");
    assert!(
            text.contains("./scripts/deploy.sh --env production --tag \"$RELEASE_TAG\" && ./scripts/smoke.sh --env production"),
            "{text}"
        );
    assert!(
        !text.contains("bash") && !text.contains("Release from main"),
        "macro parameters are not content: {text}"
    );

    // `<li><p>…</p></li>` items keep their bullet on their own line.
    let item = chunk_with(
        &src,
        "\n- The main pipeline is green, including the checkout",
    );
    assert_eq!(section_of(&src.chunks[item]), Some("Before you deploy"));
    // The body-less attachment link keeps the file name as its text.
    let rollback = chunk_with(&src, "Follow the checklist in runbook.txt. Rolling back");
    assert_eq!(section_of(&src.chunks[rollback]), Some("Rollback"));
}

#[test]
fn a_page_names_its_parent_space_labels_and_editor() {
    let list = pages(PAGED, LIST, &[("start", "0")]);
    let src = source(find(&list, "65541"));
    let jan = "user:jan_novak_example_com";
    let code = chunk_with(&src, "git fetch --tags origin");
    let edges = edges_of(&src);
    let one = EvidenceSpec::chunk(0);
    for expected in [
        ("child_of", "confluence:65538", &one),
        ("in_space", "space:eng", &one),
        ("authored_by", jan, &one),
        ("labeled", "label:confluence_deploy", &one),
        ("labeled", "label:confluence_runbook", &one),
    ] {
        assert!(edges.contains(&expected), "{expected:?} in {edges:?}");
    }
    // The release owner mentioned in the Deploy section is the editor himself.
    let at_code = EvidenceSpec::chunk(code);
    assert!(edges.contains(&("mentions", jan, &at_code)), "{edges:?}");
    assert!(
        src.chunks[code]
            .refs
            .contains(&NodeKey::from_canonical(jan))
    );
    assert!(
        src.chunks[code]
            .text
            .contains(&format!("page the release owner, @{JAN_ACCOUNT}"))
    );
    assert!(!edges.iter().any(|(t, _, _)| *t == "links_to"));

    let node = |key: &str| {
        src.nodes
            .iter()
            .find(|n| n.key.as_str() == key)
            .unwrap_or_else(|| panic!("node {key} in {:#?}", src.nodes))
    };
    let page = node("confluence:65541");
    assert_eq!(page.node_type, "page");
    assert_eq!(page.label, "Deploying the shop");
    assert_eq!(page.evidence, EvidenceSpec::AllChunks);
    assert_eq!(page.props["version"], 4);
    assert_eq!(page.props["space"], "ENG");
    assert_eq!(
        page.props["labels"],
        serde_json::json!(["deploy", "runbook"])
    );
    assert_eq!(page.props["modified"], "2026-01-12T14:30:45.019Z");
    let person = node(jan);
    assert_eq!(person.node_type, "person");
    assert_eq!(person.label, "Jan Novák");
    assert_eq!(person.props["accountId"], JAN_ACCOUNT);
    assert_eq!(person.evidence, EvidenceSpec::Chunks(vec![0, code]));
    assert_eq!(node("space:eng").node_type, "space");
    assert_eq!(node("label:confluence_runbook").label, "runbook");

    let aliases: Vec<(&str, &str)> = src
        .aliases
        .iter()
        .map(|(a, c)| (a.as_str(), c.as_str()))
        .collect();
    assert_eq!(
        aliases,
        vec![
            ("user:jan_novák", jan),
            ("user:7120209b0c3d4e-1f2a-4b5c-8d6e-7f8091a2b3c4", jan),
            ("page_title:eng_deploying_the_shop", "confluence:65541"),
        ]
    );
}

#[test]
fn links_to_other_pages_go_by_title_and_mentions_by_account() {
    let list = pages(PAGED, LIST, &[("start", "0")]);
    let src = source(find(&list, "65538"));
    assert_eq!(
        section_run(&src),
        vec![None, Some("Principles"), Some("Where to start")]
    );
    let start = chunk_with(
        &src,
        "Read Deploying the shop before your first release and check the On-call rota to see when you are on call.",
    );
    assert_eq!(section_of(&src.chunks[start]), Some("Where to start"));
    let edges = edges_of(&src);
    let at_start = EvidenceSpec::chunk(start);
    assert!(edges.contains(&("links_to", "page_title:eng_deploying_the_shop", &at_start)));
    assert!(edges.contains(&("links_to", "page_title:eng_on-call_rota", &at_start)));
    assert!(
        !edges.iter().any(|(t, _, _)| *t == "child_of"),
        "a root page"
    );
    // The maintainer mentioned in the intro is the editor (Grace).
    let intro = chunk_with(&src, "maintained by");
    assert_eq!(intro, 0);
    assert!(
        src.chunks[0]
            .text
            .contains(&format!("maintained by @{GRACE_ACCOUNT}"))
    );
    assert!(edges.contains(&(
        "mentions",
        "user:grace_example_com",
        &EvidenceSpec::chunk(0)
    )));

    // The rota (edited by Ada) mentions Jan and Grace by account id only.
    let rota_list = pages(INCREMENTAL, SEARCH, &[("limit", "2")]);
    let rota = source(find(&rota_list, "65544"));
    let january = chunk_with(
        &rota,
        "Week 2: @712020:9b0c3d4e-1f2a-4b5c-8d6e-7f8091a2b3c4",
    );
    assert_eq!(section_of(&rota.chunks[january]), Some("January 2026"));
    assert!(rota.chunks[january].text.contains("\n- Week 3: @"));
    let mentioned: Vec<(&str, &EvidenceSpec)> = rota
        .edges
        .iter()
        .filter(|e| e.edge_type == "mentions")
        .map(|e| (e.to.as_str(), &e.evidence))
        .collect();
    let at_january = EvidenceSpec::chunk(january);
    assert_eq!(
        mentioned,
        vec![
            (
                "user:7120209b0c3d4e-1f2a-4b5c-8d6e-7f8091a2b3c4",
                &at_january
            ),
            ("user:ada_example_com", &at_january),
            (
                "user:7120202e7d1c55-8a90-4f3b-b1c2-d3e4f5a6b7c8",
                &at_january
            ),
        ]
    );
    let people: Vec<&str> = rota
        .nodes
        .iter()
        .filter(|n| n.node_type == "person")
        .map(|n| n.key.as_str())
        .collect();
    assert_eq!(
        people,
        vec!["user:ada_example_com"],
        "only the editor is described"
    );
    // Grace's account id resolves to her once one of her pages is written.
    let grace_v5 = source(find(&rota_list, "65541"));
    assert!(grace_v5.aliases.contains(&(
        NodeKey::from_canonical("user:7120202e7d1c55-8a90-4f3b-b1c2-d3e4f5a6b7c8"),
        NodeKey::from_canonical("user:grace_example_com")
    )));
}

#[test]
fn attachments_parse_and_become_documents() {
    let (none, next) = attachments(&body(
        PAGED,
        "/wiki/rest/api/content/65538/child/attachment",
        &[],
    ))
    .expect("empty list");
    assert!(none.is_empty() && next.is_none());
    let (list, next) = attachments(&body(
        PAGED,
        "/wiki/rest/api/content/65541/child/attachment",
        &[],
    ))
    .expect("list");
    assert_eq!(next, None);
    assert_eq!(
            list,
            vec![WikiAttachment {
                id: "att65601".into(),
                title: "runbook.txt".into(),
                media_type: Some("text/plain".into()),
                size: Some(422),
                version: Some(1),
                modified: Some("2026-01-12T14:28:03.441Z".into()),
                download: Some(
                    "/download/attachments/65541/runbook.txt?version=1&modificationDate=1768228083441&cacheVersion=1&api=v2"
                        .into()
                ),
            }]
        );

    let listing = pages(PAGED, LIST, &[("start", "0")]);
    let page = find(&listing, "65541");
    let meta = attachment_meta("acme-wiki", page, &list[0], listing.base.as_deref());
    assert_eq!(meta.source_urn, "wiki:acme-wiki:65541:attachment:att65601");
    assert_eq!(
        meta.uri,
        "{BASE}/wiki/download/attachments/65541/runbook.txt?version=1&modificationDate=1768228083441&cacheVersion=1&api=v2"
    );
    assert_eq!(meta.node.as_str(), "attachment:confluence_65541_att65601");
    assert_eq!(meta.format, Some(Format::Text));
    assert_eq!(
        meta.observed_at.as_deref(),
        Some("2026-01-12T14:28:03.441Z")
    );

    let bytes = body(PAGED, "/wiki/download/attachments/65541/runbook.txt", &[]);
    let doc = extract(Format::Text, &bytes).expect("text");
    let scope = Scope::client("acme");
    let att =
        document_source(&meta.meta(&scope), &doc, &ChunkingConfig::default()).expect("document");
    assert_eq!(att.kind, ATTACHMENT_KIND);
    assert_eq!(att.title.as_deref(), Some("runbook.txt"));
    assert_eq!(att.nodes[0].key, meta.node);
    assert!(
        att.chunks[0]
            .text
            .contains("ROLLBACK CHECKLIST - ACME shop")
    );

    let mut src = source(page);
    let before = src.fingerprint.clone();
    add_attachments(&mut src, page, &[]);
    assert_eq!(src.fingerprint, before, "no attachments, no change");
    add_attachments(&mut src, page, &list);
    assert_ne!(
        src.fingerprint, before,
        "a new attachment re-writes the page"
    );
    let edge = src.edges.last().expect("edge");
    assert_eq!(edge, &attachment_edge(page, &list[0]));
    assert_eq!(
        (edge.edge_type.as_str(), edge.to.as_str()),
        ("has_attachment", "attachment:confluence_65541_att65601")
    );
}

#[test]
fn html_instead_of_json_and_wrong_shapes_are_errors() {
    let html = body(HTML_PAGE, "/repos/acme/shop/issues", &[]);
    match content_page(&html) {
        Err(WikiError::NotJson(why)) => assert!(why.contains("<!DOCTYPE html>"), "{why}"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(attachments(&html), Err(WikiError::NotJson(_))));
    assert!(matches!(content_page(b"[]"), Err(WikiError::Shape(_))));
    match content_page(br#"{"results": [{"id": "1", "title": "T", "version": {"number": 2}}]}"#) {
        Err(WikiError::Shape(why)) => assert!(why.contains("body.storage"), "{why}"),
        other => panic!("{other:?}"),
    }
    // Non-page results of a search are skipped, not errors.
    let mixed =
        br#"{"results": [{"id": "9", "type": "attachment", "title": "a.png"}], "_links": {}}"#;
    assert_eq!(content_page(mixed).expect("skipped").pages, Vec::new());
}

#[test]
fn hash_lines_in_code_and_text_are_not_headings() {
    let page = WikiPage {
            id: "7".into(),
            title: "Setup guide".into(),
            version: 1,
            storage: r#"<h1>Setup</h1><ac:structured-macro ac:name="code"><ac:plain-text-body><![CDATA[# install deps
make deps]]></ac:plain-text-body></ac:structured-macro><h2>Usage</h2><p># of users is 3</p><h2></h2>"#
                .into(),
            ..WikiPage::default()
        };
    let src = source(&page);
    assert_eq!(
        section_run(&src),
        vec![Some("Setup"), Some("Setup > Usage")]
    );
    let code = chunk_with(&src, "# install deps\nmake deps");
    assert_eq!(section_of(&src.chunks[code]), Some("Setup"));
    let text = chunk_with(&src, "# of users is 3");
    assert_eq!(section_of(&src.chunks[text]), Some("Setup > Usage"));
}

#[test]
fn an_empty_page_still_has_one_chunk_for_its_evidence() {
    let page = WikiPage {
        id: "8".into(),
        title: "Blank".into(),
        version: 1,
        space: Some("ENG".into()),
        ancestors: vec![("7".into(), "Setup guide".into())],
        ..WikiPage::default()
    };
    let src = source(&page);
    assert_eq!(src.chunks.len(), 1);
    assert_eq!(src.chunks[0].text, "Blank");
    assert!(edges_of(&src).contains(&("child_of", "confluence:7", &EvidenceSpec::chunk(0))));
}

/// Storage-format-like text: the pieces this module and xml.rs look at, in any order.
fn storage_like() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        proptest::sample::select(vec![
            "<h1>",
            "</h1>",
            "<h2 class=\"x\">",
            "</h2>",
            "<h3/>",
            "<p>",
            "</p>",
            "<ul><li>",
            "</li></ul>",
            "<ac:link>",
            "</ac:link>",
            "<ri:page ri:content-title=\"A &amp; B\" />",
            "<ri:page ri:space-key='X' ri:content-title=\"",
            "<ri:attachment ri:filename=\"f<\" />",
            "<ri:user ri:account-id=\"",
            "<ri:user ri:username='u' />",
            "\" />",
            "\"",
            "@",
            "# ",
            "-",
            "\n",
            " ",
            "&amp;",
            "&bogus;",
            "&#x1F600;",
            "<![CDATA[",
            "]]>",
            "<ac:parameter>",
            "</ac:parameter>",
            "\u{E000}",
            "word",
            "Ž",
            "password = hunter2-secret-9",
        ]),
        0..40,
    )
    .prop_map(|parts| parts.concat())
}

proptest! {
    #[test]
    fn never_panics(
        bytes in proptest::collection::vec(any::<u8>(), 0..400),
        s in "(?s).{0,200}",
        storage in storage_like(),
    ) {
        let _ = content_page(&bytes);
        let _ = attachments(&bytes);
        let envelope = serde_json::json!({
            "results": [{
                "id": s, "title": s, "space": {"key": s},
                "version": {"number": 1, "when": s, "by": {"accountId": s, "displayName": s}},
                "ancestors": [{"id": s, "title": s}],
                "metadata": {"labels": {"results": [{"name": s}]}},
                "body": {"storage": {"value": storage}},
                "_links": {"webui": s}
            }],
            "_links": {"base": s, "next": s}
        });
        let scope = Scope::client("c");
        let chunking = ChunkingConfig { max_tokens: 8, min_tokens: 2 };
        let ctx = WikiContext { scope: &scope, source_id: "w", chunking: &chunking };
        if let Ok(list) = content_page(envelope.to_string().as_bytes()) {
            for page in &list.pages {
                let src = page_source(page, &ctx);
                prop_assert!(!src.chunks.is_empty());
                let n = src.chunks.len();
                for e in &src.edges {
                    if let EvidenceSpec::Chunks(ix) = &e.evidence {
                        prop_assert!(ix.iter().all(|i| *i < n));
                    }
                }
                // The mark never leaks (a title is kept as it is, mark or not).
                prop_assert!(
                    page.title.contains(HEADING_MARK)
                        || src.chunks.iter().all(|c| !c.text.contains(HEADING_MARK))
                );
            }
        }
        let raw = WikiPage { id: s.clone(), title: s.clone(), storage: s.clone(), ..WikiPage::default() };
        let _ = page_source(&raw, &ctx);
    }
}
