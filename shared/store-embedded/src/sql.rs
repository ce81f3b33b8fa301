//! Small SQL builders: the visibility rule as a WHERE fragment, `IN` lists, FTS5 queries.

use evident_core::Visibility;
use rusqlite::types::Value;

/// Appends the visibility rule (from [`Visibility::clauses`], the single rule in core) as a
/// parenthesised condition over `{prefix}client_id/project_id/group_id`, pushing its
/// parameters in order.
pub fn visibility(vis: &Visibility, prefix: &str, sql: &mut String, params: &mut Vec<Value>) {
    sql.push('(');
    for (i, clause) in vis.clauses().iter().enumerate() {
        if i > 0 {
            sql.push_str(" OR ");
        }
        sql.push('(');
        eq_or_null(
            &mut *sql,
            params,
            prefix,
            "client_id",
            clause.client_id.as_deref(),
        );
        sql.push_str(" AND ");
        eq_or_null(
            &mut *sql,
            params,
            prefix,
            "project_id",
            clause.project_id.as_deref(),
        );
        if let Some(group) = &clause.group_id {
            sql.push_str(" AND ");
            eq_or_null(&mut *sql, params, prefix, "group_id", group.as_deref());
        }
        sql.push(')');
    }
    sql.push(')');
}

fn eq_or_null(sql: &mut String, params: &mut Vec<Value>, prefix: &str, col: &str, v: Option<&str>) {
    match v {
        None => sql.push_str(&format!("{prefix}{col} IS NULL")),
        Some(v) => {
            sql.push_str(&format!("{prefix}{col} = ?"));
            params.push(Value::Text(v.to_string()));
        }
    }
}

/// `(?, ?, …)` for `n` items (n ≥ 1).
pub fn placeholders(n: usize) -> String {
    let mut s = String::with_capacity(n * 3 + 2);
    s.push('(');
    for i in 0..n {
        if i > 0 {
            s.push_str(", ");
        }
        s.push('?');
    }
    s.push(')');
    s
}

pub fn texts<'a>(items: impl IntoIterator<Item = &'a str>) -> Vec<Value> {
    items
        .into_iter()
        .map(|s| Value::Text(s.to_string()))
        .collect()
}

/// Escapes `%`, `_` and `\` for a `LIKE … ESCAPE '\'` pattern.
pub fn like_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    for c in s.chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// English function words that match most documents: dropping them keeps OR queries
/// selective (FTS5 scores every match) without changing what a query is about.
const STOPWORDS: &[&str] = &[
    "a", "about", "above", "after", "again", "against", "all", "am", "an", "and", "any", "are",
    "as", "at", "be", "because", "been", "before", "being", "below", "between", "both", "but",
    "by", "can", "could", "did", "do", "does", "doing", "down", "during", "each", "few", "for",
    "from", "further", "had", "has", "have", "having", "he", "her", "here", "hers", "him", "his",
    "how", "i", "if", "in", "into", "is", "it", "its", "itself", "just", "me", "more", "most",
    "my", "no", "nor", "not", "now", "of", "off", "on", "once", "only", "or", "other", "our",
    "ours", "out", "over", "own", "same", "she", "should", "so", "some", "such", "than", "that",
    "the", "their", "theirs", "them", "then", "there", "these", "they", "this", "those", "through",
    "to", "too", "under", "until", "up", "very", "was", "we", "were", "what", "when", "where",
    "which", "while", "who", "whom", "why", "will", "with", "would", "you", "your", "yours",
];

/// Query terms as FTS5 sees them (the `unicode61` tokenizer splits on anything that is not a
/// letter or digit), lower-cased, stop words removed, de-duplicated, at most 24.
pub fn fts_terms(query: &str) -> Vec<String> {
    let mut terms: Vec<String> = Vec::new();
    for word in query.split(|c: char| !c.is_alphanumeric()) {
        if word.is_empty() {
            continue;
        }
        let w = word.to_lowercase();
        if STOPWORDS.contains(&w.as_str()) || terms.contains(&w) {
            continue;
        }
        terms.push(w);
        if terms.len() == 24 {
            break;
        }
    }
    terms
}

/// An FTS5 MATCH expression over quoted terms joined by `op` ("AND" / "OR").
pub fn fts_match(terms: &[String], op: &str) -> String {
    terms
        .iter()
        .map(|t| format!("\"{}\"", t.replace('"', "\"\"")))
        .collect::<Vec<_>>()
        .join(&format!(" {op} "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use evident_core::Scope;

    #[test]
    fn terms_split_like_fts_and_drop_stopwords() {
        assert_eq!(
            fts_terms("How is parse_config() used in Příliš?"),
            vec!["parse", "config", "used", "příliš"]
        );
        assert_eq!(fts_match(&fts_terms("a b\"c"), "OR"), "\"b\" OR \"c\"");
    }

    #[test]
    fn visibility_fragment_has_one_param_per_value() {
        let vis = Visibility::of(Scope::client("c").with_project("p").with_group("g"));
        let (mut sql, mut params) = (String::new(), Vec::new());
        visibility(&vis, "c.", &mut sql, &mut params);
        assert_eq!(sql.matches('?').count(), params.len());
        assert!(
            sql.starts_with(
                "((c.client_id IS NULL AND c.project_id IS NULL AND c.group_id IS NULL)"
            )
        );
    }
}
