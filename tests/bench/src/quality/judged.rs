//! Judged test collections: documents ingested one source each, queries asked in every
//! mode, nDCG@10 / recall@100 / MAP against the judgements, beside a stemmed and an
//! unstemmed Okapi BM25 computed in the same run. Choices (fusion weights) are made on the
//! queries of even id and reported on those of odd id and on all.
//!
//! Layouts read: BEIR (`corpus.jsonl` with `_id`, `title`, `text`; `queries.jsonl` with
//! `_id`, `text`; `qrels/test.tsv`, header then `query-id corpus-id score`) and the Glasgow
//! collections (`*.ALL` documents and `*.QRY` queries as `.I n` records with `.T`/`.W`/…
//! fields; `*.REL` as `query doc [0 0.0]` lines, relevance 1).

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use evident_ai::{Embedder, Priority};
use evident_kb::Document;
use evident_kb::retrieve::{FeedbackParams, FusionParams, Tuning};
use serde_json::{Value, json};

use super::okapi::{Flavour, Okapi, average_precision, ndcg, recall};
use super::{Asker, MODES, Mode, fusion_grid};

pub struct Collection {
    pub docs: Vec<(String, String, String)>,
    pub queries: Vec<(String, String)>,
    pub qrels: HashMap<String, HashMap<String, u32>>,
}

fn files_ending(dir: &Path, suffix: &str) -> Option<std::path::PathBuf> {
    std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.to_ascii_uppercase().ends_with(suffix))
        })
}

fn beir(dir: &Path) -> Option<Collection> {
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).ok();
    let jsonl = |text: String| -> Vec<Value> {
        text.lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    };
    let field = |v: &Value, k: &str| v[k].as_str().unwrap_or("").to_string();
    let docs = jsonl(read("corpus.jsonl")?)
        .iter()
        .map(|v| (field(v, "_id"), field(v, "title"), field(v, "text")))
        .collect();
    let queries = jsonl(read("queries.jsonl")?)
        .iter()
        .map(|v| (field(v, "_id"), field(v, "text")))
        .collect();
    let mut qrels: HashMap<String, HashMap<String, u32>> = HashMap::new();
    for line in read("qrels/test.tsv")?.lines().skip(1) {
        let f: Vec<&str> = line.split('\t').collect();
        if let [q, d, s] = f[..] {
            let s: u32 = s.trim().parse().unwrap_or(0);
            qrels.entry(q.into()).or_default().insert(d.into(), s);
        }
    }
    Some(Collection {
        docs,
        queries,
        qrels,
    })
}

/// `.I n` records: (n, title, text). Authors (`.A`), sources (`.B`) and cross references
/// (`.X`) are left out: the collection's baselines index title and text.
pub(crate) fn records(text: &str) -> Vec<(String, String, String)> {
    let mut out: Vec<(String, String, String)> = Vec::new();
    let mut field = ' ';
    for line in text.lines() {
        if let Some(id) = line.strip_prefix(".I") {
            out.push((id.trim().to_string(), String::new(), String::new()));
            field = ' ';
        } else if line.len() >= 2
            && line.starts_with('.')
            && line.as_bytes()[1].is_ascii_uppercase()
            && line.trim().len() == 2
        {
            field = line.as_bytes()[1] as char;
        } else if let Some(last) = out.last_mut() {
            let into = if field == 'T' {
                &mut last.1
            } else if field == 'W' {
                &mut last.2
            } else {
                continue;
            };
            // Old collections hold stray control characters, which ingest refuses in a title.
            let clean: String = line
                .trim()
                .chars()
                .map(|c| if c.is_control() { ' ' } else { c })
                .collect();
            into.push_str(&clean);
            into.push(' ');
        }
    }
    out
}

fn glasgow(dir: &Path) -> Option<Collection> {
    let read =
        |suffix: &str| files_ending(dir, suffix).and_then(|p| std::fs::read_to_string(p).ok());
    let docs = records(&read(".ALL")?);
    let queries = records(&read(".QRY")?)
        .into_iter()
        .enumerate()
        // Query files number their records; judgements count them in order from 1.
        .map(|(i, (_, t, w))| ((i + 1).to_string(), format!("{t}{w}")))
        .collect();
    let mut qrels: HashMap<String, HashMap<String, u32>> = HashMap::new();
    for line in read(".REL")?.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() >= 2 {
            qrels.entry(f[0].into()).or_default().insert(f[1].into(), 1);
        }
    }
    Some(Collection {
        docs,
        queries,
        qrels,
    })
}

async fn ingest(kb: &evident_kb::Kb, c: &Collection) {
    for (id, title, text) in &c.docs {
        let doc = Document {
            client_id: Some("bench".into()),
            source_urn: format!("judged:{id}"),
            kind: "document".into(),
            title: (!title.trim().is_empty()).then(|| title.trim().to_string()),
            content: format!("{title}\n\n{text}"),
            ..Default::default()
        };
        kb.ingest(doc, Priority::DEFAULT).await.expect("ingest");
    }
}

/// Depth of the rankings measured (recall@100, MAP over the top 100).
const DEPTH: usize = 100;

/// nDCG@10, recall@100 and average precision of one ranking.
fn scores(ranked: &[String], judged: &HashMap<String, u32>) -> [f64; 3] {
    [
        ndcg(ranked, judged, 10),
        recall(ranked, judged, DEPTH),
        average_precision(&ranked[..ranked.len().min(DEPTH)], judged),
    ]
}

fn mean(all: &[[f64; 3]]) -> [f64; 3] {
    let mut sum = [0.0; 3];
    for m in all {
        (0..3).for_each(|i| sum[i] += m[i]);
    }
    sum.map(|s| s / all.len().max(1) as f64)
}

/// Mean nDCG@10, recall@100, MAP of `mode` over `queries` (documents deduplicated from their
/// chunks, best chunk first).
async fn evaluate(
    asker: &Asker<'_>,
    c: &Collection,
    mode: Mode,
    tuning: Tuning,
    queries: &[&(String, String)],
) -> [f64; 3] {
    let mut all = Vec::with_capacity(queries.len());
    for (qid, text) in queries {
        let (hits, _) = asker.ask(mode, text, DEPTH, tuning).await;
        let mut ranked: Vec<String> = Vec::new();
        for h in hits {
            let id = h.source_urn.trim_start_matches("judged:").to_string();
            if !ranked.contains(&id) {
                ranked.push(id);
            }
        }
        all.push(scores(&ranked, &c.qrels[qid]));
    }
    mean(&all)
}

/// A query id's half: even ids choose, odd ids are held out (ids that are not numbers by
/// their position).
fn is_odd(pos: usize, id: &str) -> bool {
    id.trim()
        .parse::<u64>()
        .map_or(pos % 2 == 1, |n| n % 2 == 1)
}

pub async fn run(name: &str, data: &Path, dir: &Path) -> Value {
    let Some(c) = beir(data).or_else(|| glasgow(data)) else {
        println!(
            "{name}: no BEIR or Glasgow collection in {}",
            data.display()
        );
        return json!({"error": "unreadable"});
    };
    let (_store, kb) = crate::git::open_kb(dir).await;
    ingest(&kb, &c).await;
    let embedder: Arc<dyn Embedder> = Arc::new(evident_ai::StaticEmbedder::builtin());
    let asker = Asker {
        kb: &kb,
        embedder: &embedder,
        client: "bench",
    };
    let judged: Vec<&(String, String)> = c
        .queries
        .iter()
        .filter(|(q, _)| c.qrels.contains_key(q))
        .collect();
    let half = |odd: bool| -> Vec<&(String, String)> {
        judged
            .iter()
            .copied()
            .enumerate()
            .filter(|(i, (id, _))| is_odd(*i, id) == odd)
            .map(|(_, q)| q)
            .collect()
    };
    let (dev, test) = (half(false), half(true));
    println!(
        "{name}: {} documents, {} judged queries ({} even, {} odd); nDCG@10 / recall@100 / MAP",
        c.docs.len(),
        judged.len(),
        dev.len(),
        test.len()
    );
    let texts: Vec<(String, String)> = c
        .docs
        .iter()
        .map(|(id, t, w)| (id.clone(), format!("{t} {w}")))
        .collect();
    let mut out = serde_json::Map::new();
    let mut stemmed_base = [[0.0; 3]; 2];
    for (label, stem) in [("okapi", false), ("okapi-stemmed", true)] {
        let okapi = Okapi::with(
            Flavour::judged(stem),
            texts.iter().map(|(i, t)| (i.as_str(), t.as_str())),
        );
        let base = |qs: &[&(String, String)]| -> [f64; 3] {
            let all: Vec<[f64; 3]> = qs
                .iter()
                .map(|(qid, text)| scores(&okapi.search(text, DEPTH), &c.qrels[qid]))
                .collect();
            mean(&all)
        };
        let (odd, all) = (base(&test), base(&judged));
        println!("{name} {label:<28} odd {odd:.3?}  all {all:.3?}");
        out.insert(format!("{label}/odd"), json!(odd));
        out.insert(format!("{label}/all"), json!(all));
        if stem {
            stemmed_base = [odd, all];
        }
    }
    let best = choose(&asker, &c, &dev).await;
    let chosen = Tuning {
        fusion: best,
        ..Default::default()
    };
    let rm3 = |t: Tuning| Tuning {
        feedback: Some(FeedbackParams::default()),
        ..t
    };
    let tunings = [
        ("default", Tuning::default()),
        ("default+rm3", rm3(Tuning::default())),
        ("chosen", chosen),
        ("chosen+rm3", rm3(chosen)),
    ];
    for (label, tuning) in tunings {
        for mode in MODES {
            if matches!(mode, Mode::Bm25 | Mode::Vector) && label != "default" {
                continue; // the channels alone: no fusion, no feedback
            }
            let even = evaluate(&asker, &c, mode, tuning, &dev).await;
            let odd = evaluate(&asker, &c, mode, tuning, &test).await;
            let all = evaluate(&asker, &c, mode, tuning, &judged).await;
            println!(
                "{name} {label:>11} {:<20} even {even:.3?} odd {odd:.3?} all {all:.3?}  nDCG@10 ×{:.3} odd / ×{:.3} all of stemmed Okapi",
                mode.name(),
                odd[0] / stemmed_base[0][0].max(1e-9),
                all[0] / stemmed_base[1][0].max(1e-9),
            );
            out.insert(format!("{label}/{}/even", mode.name()), json!(even));
            out.insert(format!("{label}/{}/odd", mode.name()), json!(odd));
            out.insert(format!("{label}/{}/all", mode.name()), json!(all));
        }
    }
    out.insert("chosen".into(), serde_json::to_value(best).expect("json"));
    Value::Object(out)
}

/// The fusion parameters of the grid with the best nDCG@10 on `dev` (hybrid + graph).
async fn choose(asker: &Asker<'_>, c: &Collection, dev: &[&(String, String)]) -> FusionParams {
    let mut best = (f64::MIN, FusionParams::default());
    for p in fusion_grid() {
        let t = Tuning {
            fusion: p,
            ..Default::default()
        };
        let ndcg = evaluate(asker, c, Mode::HybridGraph, t, dev).await[0];
        if ndcg > best.0 + 1e-9 {
            best = (ndcg, p);
        }
    }
    best.1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) {
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }

    #[test]
    fn a_beir_directory_is_read_with_graded_judgements() {
        let dir = tempfile::tempdir().expect("tmp");
        write(
            dir.path(),
            "corpus.jsonl",
            "{\"_id\": \"d1\", \"title\": \"Fusion\", \"text\": \"rank fusion of lists\"}\n\
             {\"_id\": \"d2\", \"title\": \"\", \"text\": \"vector search\"}\n",
        );
        write(
            dir.path(),
            "queries.jsonl",
            "{\"_id\": \"q1\", \"text\": \"how are lists fused\"}\n",
        );
        write(
            dir.path(),
            "qrels/test.tsv",
            "query-id\tcorpus-id\tscore\nq1\td1\t2\nq1\td2\t0\n",
        );
        let c = beir(dir.path()).expect("a BEIR collection");
        assert_eq!(
            c.docs,
            [
                ("d1".into(), "Fusion".into(), "rank fusion of lists".into()),
                ("d2".into(), String::new(), "vector search".into()),
            ]
        );
        assert_eq!(c.queries, [("q1".into(), "how are lists fused".into())]);
        assert_eq!(c.qrels["q1"]["d1"], 2);
        assert_eq!(c.qrels["q1"]["d2"], 0);
        assert!(glasgow(dir.path()).is_none(), "no .ALL/.QRY/.REL files");
    }

    #[test]
    fn a_glasgow_directory_numbers_queries_in_order() {
        let dir = tempfile::tempdir().expect("tmp");
        write(
            dir.path(),
            "MED.ALL",
            ".I 1\n.T\nA title\n.W\nfirst abstract\nsecond line\n.X\n9 9 9\n.I 2\n.W\nother\n",
        );
        // Query records are numbered sparsely; judgements count them from 1.
        write(
            dir.path(),
            "MED.QRY",
            ".I 001\n.W\nfirst query\n.I 007\n.W\nsecond\n",
        );
        write(dir.path(), "MED.REL", "1 2 0 0.0\n2 1 0 0.0\n2 2 0 0.0\n");
        let c = glasgow(dir.path()).expect("a Glasgow collection");
        assert_eq!(
            c.docs,
            [
                (
                    "1".into(),
                    "A title ".into(),
                    "first abstract second line ".into()
                ),
                ("2".into(), String::new(), "other ".into()),
            ]
        );
        assert_eq!(
            c.queries,
            [
                ("1".into(), "first query ".into()),
                ("2".into(), "second ".into())
            ]
        );
        assert_eq!(c.qrels["1"].len(), 1);
        assert_eq!(c.qrels["2"]["1"], 1);
    }
}
