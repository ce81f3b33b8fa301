//! Source registration and every kind's settings live in `evident-sources` (the API and the
//! CLI register sources without depending on the pollers); re-exported here for the pollers.

pub use evident_sources::registration::*;
