//! The arguments of every tool, as the model sees them: the JSON schemas (with these doc
//! comments as descriptions) come from these types. Names are camelCase, as in the REST API.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value};

/// Where to read or write. With a token of one client every field may be omitted: that
/// client is used. Narrowed tokens name the project or group they write into.
#[derive(Debug, Default, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScopeArgs {
    /// The client (tenant). Omit it when the token covers one client.
    #[serde(default)]
    pub client_id: Option<String>,
    /// A project of the client: reads see its data besides the client's; writes go into it.
    #[serde(default)]
    pub project_id: Option<String>,
    /// A group of the client: reads see its data besides the client's; writes go into it.
    #[serde(default)]
    pub group_id: Option<String>,
}

impl ScopeArgs {
    /// A client-only scope (session memory, the queue).
    pub fn client(client_id: &Option<String>) -> ScopeArgs {
        ScopeArgs::client_project(client_id, &None)
    }

    /// A client's scope, or a project's of it (the session log, procedures).
    pub fn client_project(client_id: &Option<String>, project_id: &Option<String>) -> ScopeArgs {
        ScopeArgs {
            client_id: client_id.clone(),
            project_id: project_id.clone(),
            group_id: None,
        }
    }
}

/// The client of a per-client call (session memory, the queue).
#[derive(Debug, Default, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClientArg {
    /// The client (tenant). Omit it when the token covers one client.
    #[serde(default)]
    pub client_id: Option<String>,
}

/// Whose session log: a client's own, or a project's of it.
#[derive(Debug, Default, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionScopeArgs {
    /// The client (tenant). Omit it when the token covers one client.
    #[serde(default)]
    pub client_id: Option<String>,
    /// The project's log; omitted: the client's own log.
    #[serde(default)]
    pub project_id: Option<String>,
}

impl SessionScopeArgs {
    pub fn scope_args(&self) -> ScopeArgs {
        ScopeArgs::client_project(&self.client_id, &self.project_id)
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SearchArgs {
    /// What to find, in natural language or with identifiers (`jira:PAY-12`, a file name,
    /// an e-mail address, a CamelCase symbol). Entities named here seed the graph expansion.
    pub query: String,
    /// Only these source kinds (e.g. `document`, `email`, `issue`, `code`, `note`).
    #[serde(default)]
    pub kinds: Vec<String>,
    /// How many passages to return (1..=50, default 10).
    #[serde(default)]
    pub max_results: Option<usize>,
    /// Also follow the knowledge graph from the best hits (default true).
    #[serde(default)]
    pub expand_graph: Option<bool>,
    /// Hops of graph expansion (1..=5, default 2).
    #[serde(default)]
    pub max_depth: Option<usize>,
    /// Drop passages scoring below this fused score.
    #[serde(default)]
    pub min_score: Option<f32>,
    /// Rerank the candidates by title, path, symbol and heading matches, coverage and
    /// adjacent query terms (default false).
    #[serde(default)]
    pub rerank: Option<bool>,
    /// Only typed knowledge of these knowledge types (`fact`, `instruction`, `preference`,
    /// `procedure`, `note`, `episodic`).
    #[serde(default)]
    pub knowledge_types: Vec<String>,
    /// Only typed knowledge of these info types (`user_profile`, `instructions`, …).
    #[serde(default)]
    pub info_types: Vec<String>,
    /// Only typed knowledge carrying any of these tags.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Only typed knowledge about this entity (a node key).
    #[serde(default)]
    pub entity: Option<String>,
    #[serde(flatten)]
    pub scope: ScopeArgs,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TraverseArgs {
    /// The node to start from: a key such as `jira:PAY-12`, `person:jan_novak`,
    /// `file:shop/src/Cart.java`, or free text that names one (resolved through aliases).
    pub start_key: String,
    /// Hops to follow (1..=5, default 2).
    #[serde(default)]
    pub max_depth: Option<usize>,
    /// Edge direction to follow: `out`, `in` or `any` (default `any`).
    #[serde(default)]
    pub direction: Option<Direction>,
    /// Only these edge types (e.g. `blocks`, `mentions`, `authored`, `calls`).
    #[serde(default)]
    pub edge_types: Vec<String>,
    /// At most this many nodes (1..=1000, default 200).
    #[serde(default)]
    pub max_nodes: Option<usize>,
    #[serde(flatten)]
    pub scope: ScopeArgs,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CodeArgs {
    /// The symbol: a node key (`symbol:shop/shop.Cart.price()`) or a name (`price`,
    /// `Cart.price`, `shop.Cart.price`, `crate::cart::Cart`, an overload `add(Item,int)`).
    pub symbol: String,
    /// Hops to follow (1..=5, default 1: direct answers only).
    #[serde(default)]
    pub depth: Option<usize>,
    /// At most this many nodes per matched symbol (1..=1000, default 200).
    #[serde(default)]
    pub max_nodes: Option<usize>,
    #[serde(flatten)]
    pub scope: ScopeArgs,
}

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    Out,
    In,
    Any,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GetNodeArgs {
    /// The node's key (`jira:PAY-12`, `person:jan_novak`, `file:shop/src/Cart.java`) or
    /// free text naming it.
    pub key: String,
    /// How many evidence passages to return with it (0..=100, default 10).
    #[serde(default)]
    pub evidence_limit: Option<usize>,
    #[serde(flatten)]
    pub scope: ScopeArgs,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListNodesArgs {
    /// Text to match in node keys and labels. Without it, every node of `type` is listed
    /// in key order, one page at a time.
    #[serde(default)]
    pub q: Option<String>,
    /// Only nodes of this type (e.g. `person`, `issue`, `thread`, `meeting`, `repository`,
    /// `file`, `service`).
    #[serde(default, rename = "type")]
    pub node_type: Option<String>,
    /// Listing only (no `q`): continue after this key, the `nextAfter` of the previous page.
    #[serde(default)]
    pub after: Option<String>,
    /// At most this many nodes (1..=500; default 20 when searching, 100 when listing).
    #[serde(default)]
    pub limit: Option<usize>,
    #[serde(flatten)]
    pub scope: ScopeArgs,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StoreKnowledgeArgs {
    /// The knowledge itself: plain text or Markdown. `namespace:value` refs in it
    /// (`service:payments`, `jira:PAY-12`) become graph nodes.
    pub content: String,
    /// What this knowledge is about. Each subject is its own source: storing again under the
    /// same subject replaces that knowledge; other subjects are never touched. Defaults to
    /// the title.
    #[serde(default)]
    pub subject: Option<String>,
    /// A short title shown with citations.
    #[serde(default)]
    pub title: Option<String>,
    /// The source kind (default `note`), e.g. `decision`, `fact`, `procedure`.
    #[serde(default)]
    pub kind: Option<String>,
    /// Typed relationships, e.g. `service:payments|DEPENDS_ON|service:ledger` or
    /// `jira:PAY-12 -> BLOCKED_BY -> jira:PAY-9`.
    #[serde(default)]
    pub relationships: Vec<String>,
    /// The node this knowledge is mainly about (e.g. `service:payments`).
    #[serde(default)]
    pub main_node_key: Option<String>,
    /// An explicit source URN instead of the one derived from the subject
    /// (`knowledge:{normalised subject}`).
    #[serde(default)]
    pub source_urn: Option<String>,
    /// Small JSON metadata kept with the source.
    #[serde(default)]
    pub metadata: Option<Map<String, Value>>,
    /// Write priority, 0 (most urgent) ..= 2 (default 1): interactive writes never wait
    /// behind bulk indexing.
    #[serde(default)]
    pub priority: Option<u8>,
    /// Knowledge about the user, by category: `preference`, `domain`, `team`, `tech_stack`,
    /// `personal` or `general`. Needs `subject`; the item is then listed by
    /// `get_user_context` (kind `user_knowledge_{category}`, one item per category and
    /// subject). Leave `kind`, `sourceUrn`, `relationships` and `mainNodeKey` out with it.
    #[serde(default)]
    pub category: Option<String>,
    /// What the knowledge is: `fact`, `instruction`, `preference`, `procedure`, `note` or
    /// `episodic`.
    #[serde(default)]
    pub knowledge_type: Option<String>,
    /// The prompt section `get_context` routes it to: `user_profile`, `instructions`,
    /// `context`, `skills` or any other string.
    #[serde(default)]
    pub info_type: Option<String>,
    /// Tags to filter by.
    #[serde(default)]
    pub tags: Vec<String>,
    /// The entity (node key) the knowledge is about, e.g. `user:alice`.
    #[serde(default)]
    pub entity: Option<String>,
    /// Text embedded instead of the content (keywords that should find it).
    #[serde(default)]
    pub embedding_text: Option<String>,
    #[serde(flatten)]
    pub scope: ScopeArgs,
}

/// Session memory is per client: a token of one client may omit `clientId`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemoryGetArgs {
    /// The conversation or task the memory belongs to.
    pub session_id: String,
    /// The entry's key.
    pub key: String,
    #[serde(flatten)]
    pub client: ClientArg,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemoryPutArgs {
    /// The conversation or task the memory belongs to.
    pub session_id: String,
    /// The entry's key; writing it again replaces the value.
    pub key: String,
    /// Any JSON value (at most 64 KiB serialised).
    pub value: Value,
    /// Seconds until the entry expires (default a day, at most 30 days).
    #[serde(default)]
    pub ttl_secs: Option<u64>,
    #[serde(flatten)]
    pub client: ClientArg,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemoryListArgs {
    /// The conversation or task whose entries to list.
    pub session_id: String,
    #[serde(flatten)]
    pub client: ClientArg,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SteerTaskArgs {
    /// The task (its `taskId`, as `queue_status` lists it).
    pub task_id: String,
    /// `retry` (a task in `error`, back to the queue) or `reorder` (a waiting task to
    /// `position`).
    pub action: String,
    /// With `reorder`: the place among the waiting tasks of its priority, 1 = next.
    #[serde(default)]
    pub position: Option<i64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct QueueStatusArgs {
    /// Only tasks in this state: `queued`, `processing`, `retry_wait`, `done` or `error`.
    #[serde(default)]
    pub state: Option<String>,
    /// Only tasks of this source.
    #[serde(default)]
    pub source_urn: Option<String>,
    /// At most this many tasks (1..=1000, default 20).
    #[serde(default)]
    pub limit: Option<usize>,
    #[serde(flatten)]
    pub client: ClientArg,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SourceStatusArgs {
    /// Only polled sources of this kind (`git`, `mbox`, `imap`, `github`, `jira`, …).
    #[serde(default)]
    pub kind: Option<String>,
    /// At most this many ingested sources (1..=1000, default 100).
    #[serde(default)]
    pub limit: Option<usize>,
    #[serde(flatten)]
    pub scope: ScopeArgs,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UserContextArgs {
    /// Size limit of the Markdown in bytes, 256..=65536 (default 8192).
    #[serde(default)]
    pub max_bytes: Option<usize>,
    #[serde(flatten)]
    pub scope: ScopeArgs,
}

/// A finished task and what was learned from it (the seed's extraction schema).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RecordOutcomeArgs {
    /// The task; a re-run of the same task replaces its outcome.
    pub task_id: String,
    /// `single_task`, `epic`, `generative` or `advice`.
    pub category: String,
    /// `code`, `tracker_ops`, `mixed`, `respond`…
    #[serde(default)]
    pub action: String,
    /// The task's step results, as `POST /api/v1/outcomes` takes them (only their number
    /// is used).
    #[serde(default)]
    pub step_results: Vec<Value>,
    /// How many step results the task had, when `stepResults` is not given (older callers).
    #[serde(default)]
    pub step_count: usize,
    /// The task's error, if it failed (then nothing is stored).
    #[serde(default)]
    pub error: Option<String>,
    /// What the task answered or produced (empty: nothing is stored).
    #[serde(default)]
    pub final_result: String,
    /// 2-3 sentences describing what was done.
    #[serde(default)]
    pub summary: String,
    /// Why solution X over Y.
    #[serde(default)]
    pub key_decisions: Vec<String>,
    /// e.g. `exponential backoff`, `circuit breaker`.
    #[serde(default)]
    pub patterns_used: Vec<String>,
    /// Files, symbols, issues touched (`shop/src/Cart.java`, `PAY-12`).
    #[serde(default)]
    pub artifacts: Vec<String>,
    /// e.g. `non-retryable errors should not have backoff`.
    #[serde(default)]
    pub lessons_learned: Vec<String>,
    /// e.g. `retry`, `resilience`.
    #[serde(default)]
    pub topics: Vec<String>,
    #[serde(flatten)]
    pub scope: ScopeArgs,
}

/// One entry of the session log of a client and project.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionAppendArgs {
    /// `chat`, `background` or `orchestrator_decision`.
    pub source: String,
    /// What happened, at most 200 characters.
    pub summary: String,
    /// Optional JSON object with details.
    #[serde(default)]
    pub details: Option<Value>,
    /// The task it refers to.
    #[serde(default)]
    pub task_id: Option<String>,
    #[serde(flatten)]
    pub scope: SessionScopeArgs,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionRecentArgs {
    /// How many entries, 1..=50 (default 50).
    #[serde(default)]
    pub recent: Option<usize>,
    #[serde(flatten)]
    pub scope: SessionScopeArgs,
}
