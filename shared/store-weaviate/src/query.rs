//! `where` filters and GraphQL `Get` queries, built without splicing raw text.
//!
//! Weaviate's `where` arguments are class-specific GraphQL input types, so values are written
//! as literals rather than variables. Every string value goes through [`gql_string`], which
//! escapes it the way JSON does (`"` `\` and control characters); JSON string escapes are a
//! subset of GraphQL's, and non-ASCII text passes through as UTF-8. Numbers are written by
//! `serde_json` (finite values only); enum values (`And`, `asc`, `QUORUM`) and property names
//! are constants of this crate; class names are validated at connect time.
//!
//! The same [`Filter`] renders as GraphQL (`Get` queries) and as REST JSON (batch delete).

use evident_core::Visibility;
use evident_core::scope::VisibilityClause;
use evident_store::{Result, StoreError};
use serde_json::{Value, json};

use crate::config::ConsistencyLevel;

/// A `where` filter over chunk properties.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Filter {
    And(Vec<Filter>),
    Or(Vec<Filter>),
    EqualText(&'static str, String),
    GreaterThanEqualInt(&'static str, i64),
    /// The property has no value (needs `indexNullState`).
    IsNull(&'static str),
    /// The property equals one of the values (a `field`-tokenised text is one token).
    ContainsAny(&'static str, Vec<String>),
}

impl Filter {
    /// All of `parts` (a single part stands alone).
    pub fn all(mut parts: Vec<Filter>) -> Filter {
        if parts.len() == 1 {
            parts.remove(0)
        } else {
            Filter::And(parts)
        }
    }

    /// Any of `parts` (a single part stands alone).
    pub fn any(mut parts: Vec<Filter>) -> Filter {
        if parts.len() == 1 {
            parts.remove(0)
        } else {
            Filter::Or(parts)
        }
    }

    /// The filter as a GraphQL input literal.
    pub fn to_graphql(&self) -> String {
        match self {
            Filter::And(ops) | Filter::Or(ops) => {
                let op = if matches!(self, Filter::And(_)) {
                    "And"
                } else {
                    "Or"
                };
                let inner: Vec<String> = ops.iter().map(Filter::to_graphql).collect();
                format!("{{operator:{op},operands:[{}]}}", inner.join(","))
            }
            Filter::EqualText(path, v) => format!(
                "{{operator:Equal,path:[{}],valueText:{}}}",
                gql_string(path),
                gql_string(v)
            ),
            Filter::GreaterThanEqualInt(path, n) => format!(
                "{{operator:GreaterThanEqual,path:[{}],valueInt:{n}}}",
                gql_string(path)
            ),
            Filter::IsNull(path) => format!(
                "{{operator:IsNull,path:[{}],valueBoolean:true}}",
                gql_string(path)
            ),
            Filter::ContainsAny(path, values) => {
                let values: Vec<String> = values.iter().map(|v| gql_string(v)).collect();
                format!(
                    "{{operator:ContainsAny,path:[{}],valueText:[{}]}}",
                    gql_string(path),
                    values.join(",")
                )
            }
        }
    }

    /// The filter as REST JSON (`WhereFilter` of the batch delete body).
    pub fn to_rest(&self) -> Value {
        match self {
            Filter::And(ops) => {
                json!({"operator": "And", "operands": ops.iter().map(Filter::to_rest).collect::<Vec<_>>()})
            }
            Filter::Or(ops) => {
                json!({"operator": "Or", "operands": ops.iter().map(Filter::to_rest).collect::<Vec<_>>()})
            }
            Filter::EqualText(path, v) => {
                json!({"operator": "Equal", "path": [path], "valueText": v})
            }
            Filter::GreaterThanEqualInt(path, n) => {
                json!({"operator": "GreaterThanEqual", "path": [path], "valueInt": n})
            }
            Filter::IsNull(path) => {
                json!({"operator": "IsNull", "path": [path], "valueBoolean": true})
            }
            Filter::ContainsAny(path, values) => {
                json!({"operator": "ContainsAny", "path": [path], "valueTextArray": values})
            }
        }
    }
}

/// One visibility clause: every scope field equals the clause's value, `IsNull` standing for
/// "absent"; an unconstrained group adds no condition.
pub(crate) fn clause_filter(clause: &VisibilityClause) -> Filter {
    let mut parts = vec![
        text_or_null("clientId", clause.client_id.as_deref()),
        text_or_null("projectId", clause.project_id.as_deref()),
    ];
    if let Some(group) = &clause.group_id {
        parts.push(text_or_null("groupId", group.as_deref()));
    }
    Filter::all(parts)
}

/// The visibility rule over the given clauses (`None` when no clause is left: nothing visible).
pub(crate) fn clauses_filter(clauses: &[VisibilityClause]) -> Option<Filter> {
    if clauses.is_empty() {
        None
    } else {
        Some(Filter::any(clauses.iter().map(clause_filter).collect()))
    }
}

/// The reader's whole visibility rule.
pub(crate) fn visibility_filter(vis: &Visibility) -> Option<Filter> {
    clauses_filter(&vis.clauses())
}

/// Objects of one partition: `clientId` equal to it, or absent for the global partition.
pub(crate) fn partition_filter(partition: &str) -> Filter {
    text_or_null("clientId", (!partition.is_empty()).then_some(partition))
}

fn text_or_null(path: &'static str, value: Option<&str>) -> Filter {
    match value {
        Some(v) => Filter::EqualText(path, v.to_string()),
        None => Filter::IsNull(path),
    }
}

/// A GraphQL string literal: `s` quoted and escaped exactly as JSON escapes it.
pub(crate) fn gql_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A vector as a GraphQL list literal; refuses empty and non-finite vectors.
pub(crate) fn vector_literal(vector: &[f32]) -> Result<String> {
    check_finite(vector)?;
    serde_json::to_string(vector)
        .map_err(|e| StoreError::invalid(format!("vector cannot be written: {e}")))
}

/// A float as a GraphQL literal.
pub(crate) fn float_literal(x: f32) -> Result<String> {
    if !x.is_finite() {
        return Err(StoreError::invalid(format!("{x} is not a finite number")));
    }
    serde_json::to_string(&x).map_err(|e| StoreError::invalid(format!("number: {e}")))
}

/// Refuses vectors Weaviate cannot index: empty, or holding NaN or infinities.
pub(crate) fn check_finite(vector: &[f32]) -> Result<()> {
    if vector.is_empty() {
        return Err(StoreError::invalid("empty vector"));
    }
    if let Some(i) = vector.iter().position(|x| !x.is_finite()) {
        return Err(StoreError::invalid(format!(
            "vector component {i} is not a finite number"
        )));
    }
    Ok(())
}

/// Sort orders used by this crate.
pub(crate) const SORT_BY_ORDINAL: &str =
    r#"[{path:["ordinal"],order:asc},{path:["chunkId"],order:asc}]"#;
pub(crate) const SORT_NEWEST_FIRST: &str = r#"[{path:["seq"],order:desc}]"#;

/// Properties BM25 scores (the title counts twice, as in the embedded store).
pub(crate) const BM25_PROPERTIES: &str = r#"["content","title^2"]"#;

/// One `Get` query on one class (and tenant).
pub(crate) struct GetQuery<'a> {
    pub class: &'a str,
    pub tenant: Option<&'a str>,
    pub filter: Option<&'a Filter>,
    /// A search argument, already rendered: `bm25:{…}`, `nearVector:{…}` or `hybrid:{…}`.
    pub search: Option<&'a str>,
    pub sort: Option<&'static str>,
    pub limit: usize,
    pub offset: usize,
    pub consistency: ConsistencyLevel,
    /// The selection set, e.g. `chunkId _additional{score}`.
    pub fields: &'a str,
}

impl GetQuery<'_> {
    /// `{Get{Class(tenant:…,where:…,<search>,sort:…,limit:…,offset:…,consistencyLevel:…){fields}}}`
    /// (absent arguments left out, offset only when non-zero).
    pub fn render(&self) -> String {
        let mut args: Vec<String> = Vec::new();
        if let Some(t) = self.tenant {
            args.push(format!("tenant:{}", gql_string(t)));
        }
        if let Some(f) = self.filter {
            args.push(format!("where:{}", f.to_graphql()));
        }
        if let Some(s) = self.search {
            args.push(s.to_string());
        }
        if let Some(s) = self.sort {
            args.push(format!("sort:{s}"));
        }
        args.push(format!("limit:{}", self.limit));
        if self.offset > 0 {
            args.push(format!("offset:{}", self.offset));
        }
        args.push(format!("consistencyLevel:{}", self.consistency.as_str()));
        format!(
            "{{Get{{{}({}){{{}}}}}}}",
            self.class,
            args.join(","),
            self.fields
        )
    }
}

/// `bm25:{query:…,properties:[…]}`
pub(crate) fn bm25_arg(query: &str) -> String {
    format!(
        "bm25:{{query:{},properties:{BM25_PROPERTIES}}}",
        gql_string(query)
    )
}

/// `nearVector:{vector:[…]}`
pub(crate) fn near_vector_arg(vector: &[f32]) -> Result<String> {
    Ok(format!("nearVector:{{vector:{}}}", vector_literal(vector)?))
}

/// `hybrid:{query:…,vector:[…],alpha:…,fusionType:relativeScoreFusion,properties:[…]}`
///
/// The fusion is named rather than left to the server's default (ranked fusion before 1.24),
/// so scores mean the same on every supported version.
pub(crate) fn hybrid_arg(query: &str, vector: &[f32], alpha: f32) -> Result<String> {
    if !(0.0..=1.0).contains(&alpha) {
        return Err(StoreError::invalid(format!(
            "hybrid alpha must be within 0..=1, got {alpha}"
        )));
    }
    Ok(format!(
        "hybrid:{{query:{},vector:{},alpha:{},fusionType:relativeScoreFusion,properties:{BM25_PROPERTIES}}}",
        gql_string(query),
        vector_literal(vector)?,
        float_literal(alpha)?
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use evident_core::Scope;
    use proptest::prelude::*;

    fn clause(c: Option<&str>, p: Option<&str>, g: Option<Option<&str>>) -> VisibilityClause {
        VisibilityClause {
            client_id: c.map(str::to_string),
            project_id: p.map(str::to_string),
            group_id: g.map(|g| g.map(str::to_string)),
        }
    }

    #[test]
    fn global_clause_requires_every_scope_field_absent() {
        let f = clause_filter(&clause(None, None, Some(None)));
        assert_eq!(
            f.to_graphql(),
            r#"{operator:And,operands:[{operator:IsNull,path:["clientId"],valueBoolean:true},{operator:IsNull,path:["projectId"],valueBoolean:true},{operator:IsNull,path:["groupId"],valueBoolean:true}]}"#
        );
        assert_eq!(
            f.to_rest(),
            json!({"operator": "And", "operands": [
                {"operator": "IsNull", "path": ["clientId"], "valueBoolean": true},
                {"operator": "IsNull", "path": ["projectId"], "valueBoolean": true},
                {"operator": "IsNull", "path": ["groupId"], "valueBoolean": true},
            ]})
        );
    }

    #[test]
    fn client_clause_matches_the_client_without_project_or_group() {
        let f = clause_filter(&clause(Some("c1"), None, Some(None)));
        assert_eq!(
            f.to_graphql(),
            r#"{operator:And,operands:[{operator:Equal,path:["clientId"],valueText:"c1"},{operator:IsNull,path:["projectId"],valueBoolean:true},{operator:IsNull,path:["groupId"],valueBoolean:true}]}"#
        );
    }

    #[test]
    fn group_clause_matches_the_group_without_project() {
        let f = clause_filter(&clause(Some("c1"), None, Some(Some("g1"))));
        assert_eq!(
            f.to_graphql(),
            r#"{operator:And,operands:[{operator:Equal,path:["clientId"],valueText:"c1"},{operator:IsNull,path:["projectId"],valueBoolean:true},{operator:Equal,path:["groupId"],valueText:"g1"}]}"#
        );
    }

    #[test]
    fn project_clause_leaves_the_group_free() {
        let f = clause_filter(&clause(Some("c1"), Some("p1"), None));
        assert_eq!(
            f.to_graphql(),
            r#"{operator:And,operands:[{operator:Equal,path:["clientId"],valueText:"c1"},{operator:Equal,path:["projectId"],valueText:"p1"}]}"#
        );
        assert_eq!(
            f.to_rest(),
            json!({"operator": "And", "operands": [
                {"operator": "Equal", "path": ["clientId"], "valueText": "c1"},
                {"operator": "Equal", "path": ["projectId"], "valueText": "p1"},
            ]})
        );
    }

    #[test]
    fn the_reader_rule_is_an_or_over_its_clauses() {
        let vis = Visibility::of(Scope::client("c1").with_project("p1").with_group("g1"));
        let Some(Filter::Or(parts)) = visibility_filter(&vis) else {
            panic!("an Or of clauses");
        };
        assert_eq!(parts.len(), 4, "global, client, group, project");
        let global = Visibility::of(Scope::global());
        assert_eq!(
            visibility_filter(&global),
            Some(clause_filter(&clause(None, None, Some(None)))),
            "a single clause stands alone"
        );
        assert_eq!(partition_filter(""), Filter::IsNull("clientId"));
        assert_eq!(
            partition_filter("c1"),
            Filter::EqualText("clientId", "c1".into())
        );
    }

    #[test]
    fn contains_any_renders_a_list() {
        let f = Filter::ContainsAny("kind", vec!["email".into(), "doc".into()]);
        assert_eq!(
            f.to_graphql(),
            r#"{operator:ContainsAny,path:["kind"],valueText:["email","doc"]}"#
        );
        assert_eq!(
            f.to_rest(),
            json!({"operator": "ContainsAny", "path": ["kind"], "valueTextArray": ["email", "doc"]})
        );
    }

    #[test]
    fn strings_are_escaped_never_spliced() {
        assert_eq!(
            gql_string(r#"say "quote" \ back\slash"#),
            r#""say \"quote\" \\ back\\slash""#
        );
        assert_eq!(gql_string("a\nb\tc\u{1}"), r#""a\nb\tc\u0001""#);
        assert_eq!(gql_string("Příliš žluťoučký 🐴"), "\"Příliš žluťoučký 🐴\"");
        let injected = Filter::EqualText("sourceUrn", r#"x"},operator:Or,{"#.into());
        assert_eq!(
            injected.to_graphql(),
            r#"{operator:Equal,path:["sourceUrn"],valueText:"x\"},operator:Or,{"}"#
        );
    }

    #[test]
    fn queries_render_their_arguments_in_a_fixed_order() {
        let f = Filter::EqualText("kind", "doc".into());
        let search = bm25_arg("alpha");
        let q = GetQuery {
            class: "EvidentChunk",
            tenant: Some("c-c1"),
            filter: Some(&f),
            search: Some(&search),
            sort: None,
            limit: 5,
            offset: 0,
            consistency: ConsistencyLevel::Quorum,
            fields: "chunkId _additional{score}",
        };
        assert_eq!(
            q.render(),
            r#"{Get{EvidentChunk(tenant:"c-c1",where:{operator:Equal,path:["kind"],valueText:"doc"},bm25:{query:"alpha",properties:["content","title^2"]},limit:5,consistencyLevel:QUORUM){chunkId _additional{score}}}}"#
        );
    }

    #[test]
    fn vectors_must_be_finite() {
        assert_eq!(
            vector_literal(&[1.0, 0.0, -0.5]).expect("finite"),
            "[1.0,0.0,-0.5]"
        );
        assert!(vector_literal(&[f32::NAN]).is_err());
        assert!(vector_literal(&[]).is_err());
        assert!(hybrid_arg("q", &[1.0], 1.5).is_err());
        assert_eq!(
            hybrid_arg("q", &[1.0], 0.5).expect("valid"),
            r#"hybrid:{query:"q",vector:[1.0],alpha:0.5,fusionType:relativeScoreFusion,properties:["content","title^2"]}"#
        );
    }

    proptest! {
        /// Whatever the text, the literal reads back (as JSON, whose string escapes GraphQL
        /// shares) to exactly that text, and no quote or control character is left raw.
        #[test]
        fn escaped_strings_round_trip(s in any::<String>()) {
            let lit = gql_string(&s);
            let back: String = serde_json::from_str(&lit).expect("a valid string literal");
            prop_assert_eq!(&back, &s);
            let inner = &lit[1..lit.len() - 1];
            let mut escaped = false;
            for c in inner.chars() {
                prop_assert!((c as u32) >= 0x20, "raw control character");
                if escaped {
                    escaped = false;
                } else if c == '\\' {
                    escaped = true;
                } else {
                    prop_assert!(c != '"', "raw quote");
                }
            }
            prop_assert!(!escaped, "dangling backslash");
            prop_assert_eq!(lit.clone(), serde_json::to_string(&s).expect("json"));
        }
    }
}
