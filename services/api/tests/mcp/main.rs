//! MCP over the real router, in process: JSON-RPC bodies POSTed to `/mcp` behind the same
//! bearer tokens and grants as REST — what a client through the binary cannot set up:
//! narrowed grants, the audit log, a store whose embedder is held mid-call (cancellation),
//! progress of a large store. Schemas, every tool and resources are driven by the Rust SDK's
//! client through the real binary (`services/evident/tests/mcp/`).

mod access;
mod app;
mod graph_links;
mod knowledge;
mod progress;
mod ranking;
mod steering;
