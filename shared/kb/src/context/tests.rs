//! Golden snapshots of a small fixture store (sections, routing, ordering, citations), the
//! same answer after a shuffled ingest, budgets honoured to the token, and the loader.
//!
//! Snapshots live in `golden/`; `UPDATE_GOLDEN=1` rewrites them (review the diff).

use std::collections::BTreeMap;

use evident_ai::Priority;
use evident_core::{KnowledgeType, Scope};
use serde_json::{Map, Value, json};

use super::*;
use crate::profile::ProfileWrite;
use crate::structured::KnowledgeFile;
use crate::{Document, Kb};

const NOW: i64 = 1_790_000_000_000;

fn piece(
    urn: &str,
    content: &str,
    kt: KnowledgeType,
    it: &str,
    tags: &[&str],
    entity: Option<&str>,
) -> Document {
    Document {
        client_id: Some("acme".into()),
        source_urn: urn.into(),
        kind: "piece".into(),
        content: content.into(),
        knowledge_type: Some(kt),
        info_type: Some(it.into()),
        tags: tags.iter().map(|t| t.to_string()).collect(),
        entity: entity.map(str::to_string),
        ..Default::default()
    }
}

/// The fixture's writes, in an order that can be shuffled.
fn fixture() -> Vec<Document> {
    let mut rel = piece(
        "piece:les-expert",
        "Alice specialises in LES simulation of jet noise.",
        KnowledgeType::Fact,
        "context",
        &["les"],
        Some("user:alice"),
    );
    rel.relationships = Some(vec!["user:alice|SPECIALIZES_IN|technique:les".into()]);
    let mut rans = piece(
        "piece:les-rans-init",
        "Initialize transient LES from converged RANS -- cuts spin-up by ~40%.",
        KnowledgeType::Procedure,
        "instructions",
        &["les", "initialization", "rans"],
        Some("technique:les"),
    );
    rans.embedding_text = Some("LES RANS initialization spin-up transient warm start".into());
    vec![
        rel,
        rans,
        piece(
            "piece:smagorinsky",
            "A Smagorinsky constant of 0.1 works better than the default 0.17.",
            KnowledgeType::Fact,
            "context",
            &["les", "smagorinsky"],
            Some("technique:les"),
        ),
        piece(
            "piece:mesh-check",
            "Always check mesh quality before conjugate heat transfer runs.",
            KnowledgeType::Instruction,
            "instructions",
            &["mesh"],
            Some("user:alice"),
        ),
        piece(
            "piece:cfl-ramp",
            "Ramp the CFL number from 0.3 to 0.8 over the first 1000 steps.",
            KnowledgeType::Procedure,
            "skills",
            &["cfl"],
            None,
        ),
        Document {
            client_id: Some("acme".into()),
            source_urn: "doc:handbook".into(),
            kind: "doc".into(),
            content: "The solver handbook: residual monitoring and LES averaging windows.".into(),
            ..Default::default()
        },
    ]
}

async fn load(kb: &Kb, docs: Vec<Document>) {
    for d in docs {
        kb.ingest(d, Priority::DEFAULT).await.expect("ingest");
    }
    let mut props = Map::new();
    props.insert("specialization".into(), json!("turbomachinery"));
    props.insert("team".into(), json!("aero"));
    kb.put_profile(
        Scope::client("acme"),
        ProfileWrite {
            key: "user:alice".into(),
            label: Some("Alice".into()),
            properties: props,
            ..Default::default()
        },
        Priority::DEFAULT,
    )
    .await
    .expect("profile");
    let mut global = Map::new();
    global.insert("organization".into(), json!("NASA"));
    kb.put_profile(
        Scope::global(),
        ProfileWrite {
            key: "global".into(),
            properties: global,
            ..Default::default()
        },
        Priority::DEFAULT,
    )
    .await
    .expect("global profile");
}

/// [`request`] asking for the one section `name` (every info type) at `budget` tokens.
fn one_section(name: &str, budget: usize, query: Option<&str>) -> ContextQuery {
    ContextQuery {
        sections: Some(BTreeMap::from([(
            name.to_string(),
            SectionSpec {
                info_types: None,
                budget_tokens: budget,
            },
        )])),
        ..request(query)
    }
}

fn request(query: Option<&str>) -> ContextQuery {
    ContextQuery {
        query: query.map(str::to_string),
        active_entity: Some("User:Alice".into()),
        client_id: Some("acme".into()),
        now_ms: NOW,
        ..Default::default()
    }
}

fn golden(name: &str, answer: &ContextAnswer) {
    let text = serde_json::to_string_pretty(answer).expect("json") + "\n";
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("src/context/golden")
        .join(format!("{name}.json"));
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::create_dir_all(path.parent().expect("dir")).expect("mkdir");
        std::fs::write(&path, &text).expect("write golden");
    }
    let want = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (run with UPDATE_GOLDEN=1 to create)",
            path.display()
        )
    });
    assert_eq!(text, want, "{name}: answer differs from its snapshot");
}

#[tokio::test]
async fn golden_sections_routing_order_and_citations_shuffle_proof() {
    let (a, b) = (
        tempfile::tempdir().expect("tmp"),
        tempfile::tempdir().expect("tmp"),
    );
    let (kb, shuffled) = (
        crate::test_kb(a.path()).await,
        crate::test_kb(b.path()).await,
    );
    load(&kb, fixture()).await;
    let mut docs = fixture();
    docs.reverse();
    docs.swap(0, 3);
    load(&shuffled, docs).await;

    let cases = [
        ("with_query", request(Some("LES initialization from RANS"))),
        ("entity_only", request(None)),
        (
            "custom_sections",
            ContextQuery {
                sections: Some(BTreeMap::from([
                    (
                        "rules".to_string(),
                        SectionSpec {
                            info_types: Some(vec!["instructions".into(), "skills".into()]),
                            budget_tokens: 200,
                        },
                    ),
                    (
                        "user_profile".to_string(),
                        SectionSpec {
                            info_types: None,
                            budget_tokens: 200,
                        },
                    ),
                ])),
                include: Some(vec![
                    Layer::Pieces,
                    Layer::Metadata,
                    Layer::Graph,
                    Layer::Claims,
                ]),
                max_depth: Some(1),
                ..request(Some("mesh quality"))
            },
        ),
    ];
    for (name, q) in cases {
        let first = kb.context(&q).await.expect("context");
        golden(name, &first);
        let again = kb.context(&q).await.expect("context again");
        assert_eq!(
            serde_json::to_string(&again).expect("json"),
            serde_json::to_string(&first).expect("json"),
            "{name}: re-running is byte-identical"
        );
        let other = shuffled.context(&q).await.expect("shuffled");
        assert_eq!(
            serde_json::to_string(&other).expect("json"),
            serde_json::to_string(&first).expect("json"),
            "{name}: ingest order does not change the answer"
        );
        for (section, text) in &first.sections {
            let items = &first.items[section];
            assert_eq!(
                text.lines().count(),
                items.len(),
                "{name}/{section}: a marker per line"
            );
            for (line, item) in text.lines().zip(items) {
                assert!(
                    line.ends_with(&item.marker),
                    "{line} ends in {}",
                    item.marker
                );
            }
        }
    }
}

#[tokio::test]
async fn routing_follows_the_seed_table() {
    let dir = tempfile::tempdir().expect("tmp");
    let kb = crate::test_kb(dir.path()).await;
    load(&kb, fixture()).await;
    let a = kb.context(&request(None)).await.expect("context");
    let profile = &a.sections["user_profile"];
    // Entity metadata → user_profile, the active entity's before the global profile.
    assert!(
        profile.starts_with(
            "specialization: turbomachinery [1]\nteam: aero [2]\norganization: NASA [3]"
        ),
        "{profile}"
    );
    // A graph edge with a linked piece goes where the piece goes (`context`).
    assert!(
        a.sections["context"].contains("user:alice -[specializes_in]-> technique:les"),
        "{}",
        a.sections["context"]
    );
    // Pieces by their own info type.
    assert!(a.sections["instructions"].contains("[instruction] Always check mesh quality"));
    assert!(
        a.sections["instructions"].contains("[procedure] Initialize transient LES"),
        "a piece one hop out"
    );
    assert!(
        !a.sections["skills"].contains("CFL"),
        "no query and no link: not found"
    );
    let q = kb
        .context(&request(Some("CFL ramp first steps")))
        .await
        .expect("query");
    assert!(
        q.sections["skills"].contains("[procedure] Ramp the CFL number"),
        "{:?}",
        q.sections
    );
    // Only claims asked for, and none learned: nothing at all.
    let c = kb
        .context(&ContextQuery {
            include: Some(vec![Layer::Claims]),
            ..request(None)
        })
        .await
        .expect("claims");
    assert!(c.sections.values().all(String::is_empty));
}

/// Learns an observed claim about `technique:les` citing the Smagorinsky piece's chunk.
async fn learn_les_claim(kb: &Kb) -> (evident_core::claims::Claim, evident_core::Chunk) {
    use evident_core::claims::{Actor, ActorType, ClaimStatus, EvidenceKind, EvidenceRef};
    let scope = Scope::client("acme");
    let ids: Vec<String> = kb
        .stores
        .chunks
        .source_chunks(scope.partition(), "piece:smagorinsky")
        .await
        .expect("chunks")
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    let chunk = kb
        .stores
        .chunks
        .get(&evident_core::Visibility::of(scope.clone()), &ids)
        .await
        .expect("chunk")
        .remove(0);
    let claim = kb
        .learn(
            scope,
            crate::claims::NewClaim {
                text: "Jet noise LES runs use a Smagorinsky constant of 0.1.".into(),
                evidence: vec![EvidenceRef::new(EvidenceKind::Chunk, chunk.id.clone())],
                status: ClaimStatus::Observed,
                confidence: 0.8,
                subject: None,
                actor: Actor {
                    actor_type: ActorType::Agent,
                    id: "tuner".into(),
                },
                session_id: None,
                domain: None,
                tags: Vec::new(),
                about: vec!["technique:les".into()],
                supersedes: None,
            },
            None,
            NOW,
            Priority::DEFAULT,
        )
        .await
        .expect("learn");
    (claim, chunk)
}

#[tokio::test]
async fn claims_about_the_entity_and_recalled_by_the_query_cite_their_evidence() {
    let dir = tempfile::tempdir().expect("tmp");
    let kb = crate::test_kb(dir.path()).await;
    load(&kb, fixture()).await;
    let (claim, chunk) = learn_les_claim(&kb).await;
    let line = "[claim observed 0.80] Jet noise LES runs use a Smagorinsky constant of 0.1.";
    let cited = |a: &ContextAnswer| {
        let text = &a.sections["context"];
        let at = text
            .lines()
            .position(|l| l.starts_with(line))
            .unwrap_or_else(|| panic!("claim line missing from:\n{text}"));
        let item = &a.items["context"][at];
        assert_eq!(item.layer, "claims");
        assert_eq!(item.node_key.as_deref(), Some(claim.urn().as_str()));
        assert_eq!(item.chunk_id.as_deref(), Some(chunk.id.as_str()));
        assert_eq!(item.citation, chunk.locator.citation());
    };
    // About the active entity, through the claim's `about` edge.
    let about = ContextQuery {
        active_entity: Some("technique:les".into()),
        ..request(None)
    };
    cited(&kb.context(&about).await.expect("about"));
    // Recalled by a query, with no active entity.
    let recalled = ContextQuery {
        active_entity: None,
        ..request(Some("which Smagorinsky constant for jet noise"))
    };
    cited(&kb.context(&recalled).await.expect("recalled"));
    // Left out when the layer is not asked for.
    let pieces_only = ContextQuery {
        include: Some(vec![Layer::Pieces]),
        ..about
    };
    let a = kb.context(&pieces_only).await.expect("pieces");
    assert!(a.sections.values().all(|t| !t.contains("[claim ")), "{a:?}");
}

#[tokio::test]
async fn budgets_hold_to_the_token_and_keep_the_best_ranked() {
    let dir = tempfile::tempdir().expect("tmp");
    let kb = crate::test_kb(dir.path()).await;
    load(&kb, fixture()).await;
    let wide = kb.context(&request(Some("LES"))).await.expect("wide");
    for (section, text) in &wide.sections {
        let lines: Vec<&str> = text.lines().collect();
        if lines.len() < 2 {
            continue;
        }
        let two = tokens::count(&lines[..2].join("\n"));
        for (budget, keep) in [(two, 2), (two - 1, 1), (two + 1, 2)] {
            let q = one_section(section, budget, Some("LES"));
            let cut = kb.context(&q).await.expect("cut");
            assert!(
                cut.tokens[section] <= budget,
                "{section}: {} > {budget}",
                cut.tokens[section]
            );
            assert_eq!(cut.tokens[section], tokens::count(&cut.sections[section]));
            let got: Vec<&str> = cut.sections[section].lines().collect();
            assert_eq!(
                got,
                lines[..keep].to_vec(),
                "{section} at {budget}: the best-ranked survive"
            );
            assert_eq!(cut.truncated[section], keep < lines.len());
        }
    }
    // A budget below the best line: that line, cut at a word, keeps its citation marker.
    for (section, text) in &wide.sections {
        let Some(first) = text.lines().next() else {
            continue;
        };
        let budget = tokens::count(first) - 1;
        let q = one_section(section, budget, Some("LES"));
        let cut = kb.context(&q).await.expect("cut");
        let got = &cut.sections[section];
        assert!(cut.tokens[section] <= budget, "{section}: {got}");
        assert!(got.ends_with(" … [1]"), "{section}: {got}");
        let kept = got.trim_end_matches(" … [1]");
        assert!(first.starts_with(kept), "{section}: {got} from {first}");
        assert_eq!(cut.items[section].len(), 1);
        assert!(cut.truncated[section]);
    }
    let bad = one_section("x", 0, None);
    assert_eq!(
        kb.context(&bad).await.expect_err("refused").code(),
        "invalid_request"
    );
}

fn secret() -> String {
    format!("AKIA{}", "Z3MHQ7RT2LQKXW5P")
}

/// A file with valid and invalid items of every section.
fn loader_file() -> KnowledgeFile {
    serde_json::from_value(json!({
        "metadata": {
            "entities": [
                {"entity_id": "user:alice", "entity_type": "user", "properties": {"team": "aero"}},
                {"entity_id": "user:mallory", "entity_type": "user", "properties": {"key": secret()}},
                {"entity_type": "user"}
            ],
            "global": {"properties": {"organization": "NASA"}}
        },
        "pieces": [
            {"piece_id": "les-rans-init", "content": "Initialize LES from converged RANS.",
             "knowledge_type": "procedure", "info_type": "instructions", "tags": ["les"],
             "entity_id": "user:alice", "embedding_text": "LES RANS warm start"},
            {"piece_id": "bad-type", "content": "x", "knowledge_type": "rumour"},
            {"piece_id": "empty", "content": "  "},
            {"piece_id": "leak", "content": format!("the key is {}", secret())},
            {"piece_id": "les-rans-init", "content": "duplicate id"}
        ],
        "graph": {
            "nodes": [
                {"node_id": "user:alice", "node_type": "user", "label": "Alice"},
                {"node_id": "technique:les", "node_type": "technique", "label": "LES"},
                {"node_id": "technique:orphan", "node_type": "technique"}
            ],
            "edges": [
                {"source_id": "user:alice", "target_id": "technique:les", "edge_type": "SPECIALIZES_IN",
                 "properties": {"piece_id": "les-rans-init"}},
                {"source_id": "user:alice", "target_id": "technique:les", "edge_type": "USES"},
                {"source_id": "user:alice", "target_id": "technique:nowhere", "edge_type": "USES",
                 "properties": {"piece_id": "les-rans-init"}}
            ]
        }
    }))
    .expect("file")
}

#[tokio::test]
async fn the_loader_writes_valid_items_and_reports_each_invalid_one() {
    let dir = tempfile::tempdir().expect("tmp");
    let kb = crate::test_kb(dir.path()).await;
    let file = loader_file();
    let report = kb
        .load_structured(
            Scope::client("acme"),
            "file:knowledge.json",
            file,
            Priority::DEFAULT,
        )
        .await
        .expect("load");
    let skipped: Vec<(String, usize)> = report
        .skipped
        .iter()
        .map(|s| (s.section.clone(), s.index))
        .collect();
    assert_eq!(
        skipped,
        vec![
            ("pieces".into(), 1),
            ("pieces".into(), 2),
            ("pieces".into(), 3),
            ("pieces".into(), 4),
            ("metadata.entities".into(), 1),
            ("metadata.entities".into(), 2),
            ("graph.edges".into(), 1),
            ("graph.edges".into(), 2),
            ("graph.nodes".into(), 2),
        ],
        "{:#?}",
        report.skipped
    );
    let reason = |section: &str, index: usize| {
        report
            .skipped
            .iter()
            .find(|s| s.section == section && s.index == index)
            .map(|s| s.reason.clone())
            .unwrap_or_default()
    };
    assert!(
        reason("pieces", 1).contains("rumour"),
        "{}",
        reason("pieces", 1)
    );
    assert!(
        reason("pieces", 3).contains("credential"),
        "{}",
        reason("pieces", 3)
    );
    assert!(
        reason("metadata.entities", 1).contains("credential"),
        "{}",
        reason("metadata.entities", 1)
    );
    assert!(reason("graph.edges", 1).contains("no evidence"));
    assert!(reason("graph.edges", 2).contains("technique:nowhere"));
    assert!(reason("graph.nodes", 2).contains("no evidence"));
    assert_eq!(report.written.pieces, 1);
    assert_eq!(report.written.entities, 2, "alice and the global profile");
    assert_eq!(report.written.edges, 1);
    assert_eq!(report.written.nodes, 2);
    let outcome = report.outcome.expect("written");
    assert_eq!(
        outcome.chunks.total, 3,
        "one piece, two profiles: one source write"
    );
    assert_eq!(outcome.edges, 1);

    // Nothing of the refused items was stored; the piece routes into its section.
    let a = kb
        .context(&request(Some("LES RANS")))
        .await
        .expect("context");
    assert!(
        a.sections["instructions"].contains("[procedure] Initialize LES from converged RANS."),
        "{:?}",
        a.sections
    );
    assert!(
        a.sections["user_profile"].starts_with("team: aero [1]"),
        "{:?}",
        a.sections
    );
    let all = serde_json::to_string(&a).expect("json");
    assert!(!all.contains("AKIA") && !all.contains("duplicate id"));
}

#[tokio::test]
async fn profile_values_with_secrets_are_refused() {
    let dir = tempfile::tempdir().expect("tmp");
    let kb = crate::test_kb(dir.path()).await;
    let mut props = Map::new();
    props.insert("token".into(), Value::String(secret()));
    let e = kb
        .put_profile(
            Scope::client("acme"),
            ProfileWrite {
                key: "user:alice".into(),
                properties: props,
                ..Default::default()
            },
            Priority::DEFAULT,
        )
        .await
        .expect_err("refused");
    assert_eq!(e.code(), "credential_detected", "{e}");
}

/// Memories route to their documented defaults: user knowledge → `user_profile`, the session
/// log → `context` (newest first, cited `session:{client}@{ms}`), outcomes found by the query
/// → `context`; entries expired at the request's `now` are gone; `include` leaves layers out.
#[tokio::test]
async fn memories_route_to_their_defaults() {
    let dir = tempfile::tempdir().expect("tmp");
    let kb = crate::test_kb(dir.path()).await;
    kb.store_user_knowledge(
        Scope::client("acme"),
        crate::KnowledgeItem {
            subject: "code style".into(),
            content: "prefers small commits".into(),
            category: crate::KnowledgeCategory::Preference,
        },
        Priority::DEFAULT,
    )
    .await
    .expect("user knowledge");
    for (at, summary) in [
        (NOW - 2_000, "asked about LES"),
        (NOW - 1_000, "chose RANS init"),
    ] {
        kb.session_append(
            "acme",
            None,
            crate::session_log::NewSessionEntry {
                source: "chat".into(),
                summary: summary.into(),
                details: None,
                task_id: None,
                timestamp: Some(at),
            },
            at,
        )
        .await
        .expect("append");
    }
    let q = ContextQuery {
        active_entity: None,
        ..request(None)
    };
    let a = kb.context(&q).await.expect("context");
    assert_eq!(
        a.sections["user_profile"],
        "[user_knowledge_preference] prefers small commits [1]"
    );
    assert_eq!(
        a.sections["context"],
        "[chat] chose RANS init [1]\n[chat] asked about LES [2]"
    );
    assert_eq!(
        a.items["context"][0].citation,
        format!("session:acme@{}", NOW - 1_000)
    );
    assert_eq!(a.items["context"][0].layer, "memory");

    let later = ContextQuery {
        now_ms: NOW + 8 * 24 * 3600 * 1000,
        ..q.clone()
    };
    assert_eq!(
        kb.context(&later).await.expect("later").sections["context"],
        ""
    );
    let only = ContextQuery {
        include: Some(vec![Layer::Memory]),
        ..q
    };
    let m = kb.context(&only).await.expect("memory only");
    assert_eq!(m.sections["user_profile"], "");
    assert_eq!(m.sections["context"].lines().count(), 2);
}

#[tokio::test]
async fn loader_edges_may_cite_existing_chunks_the_writer_sees() {
    let dir = tempfile::tempdir().expect("tmp");
    let kb = crate::test_kb(dir.path()).await;
    load(&kb, fixture()).await;
    let chunk_of = |client: &'static str, urn: &'static str| {
        let kb = &kb;
        async move {
            let scope = Scope::client(client);
            kb.stores
                .chunks
                .source_chunks(scope.partition(), urn)
                .await
                .expect("chunks")
                .remove(0)
                .0
        }
    };
    let handbook = chunk_of("acme", "doc:handbook").await;
    kb.ingest(
        Document {
            client_id: Some("other".into()),
            source_urn: "doc:secret-plan".into(),
            kind: "doc".into(),
            content: "Another client's plan.".into(),
            ..Default::default()
        },
        Priority::DEFAULT,
    )
    .await
    .expect("other client");
    let foreign = chunk_of("other", "doc:secret-plan").await;
    // A file of edges only, between nodes of the graph: one citing a chunk the writer sees,
    // one another client's.
    let file: KnowledgeFile = serde_json::from_value(json!({"graph": {"edges": [
        {"source_id": "user:alice", "target_id": "technique:les", "edge_type": "documents",
         "chunk_ids": [handbook]},
        {"source_id": "user:alice", "target_id": "technique:les", "edge_type": "relates_to",
         "chunk_ids": [foreign]},
    ]}}))
    .expect("file");
    let report = kb
        .load_structured(
            Scope::client("acme"),
            "file:edges.json",
            file,
            Priority::DEFAULT,
        )
        .await
        .expect("load");
    assert_eq!(report.written.edges, 1, "{report:?}");
    assert_eq!(report.skipped.len(), 1, "{report:?}");
    assert_eq!(
        (report.skipped[0].section.as_str(), report.skipped[0].index),
        ("graph.edges", 1)
    );
    assert!(
        report.skipped[0].reason.contains("not visible"),
        "{report:?}"
    );
    // The written edge is evidenced by the cited chunk, and so are its endpoints.
    let vis = evident_core::Visibility::of(Scope::client("acme"));
    let keys = ["user:alice", "technique:les"].map(evident_core::NodeKey::from_canonical);
    for node in kb.stores.graph.get_nodes(&vis, &keys).await.expect("nodes") {
        assert!(node.evidence_chunk_ids.contains(&handbook), "{node:?}");
    }
    let a = kb.context(&request(None)).await.expect("context");
    assert!(
        a.sections
            .values()
            .any(|t| t.contains("-[documents]-> technique:les")),
        "{:?}",
        a.sections
    );
}
