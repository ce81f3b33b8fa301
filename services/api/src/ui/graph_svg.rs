//! A graph neighbourhood drawn server-side as SVG: the centre (if any) in the middle, the
//! other nodes on rings by depth (or on one ring), edges as lines titled with their type.
//! Every node links to its own page, where its neighbourhood is drawn in turn (the
//! "expand"); no script needed.

use std::collections::HashMap;
use std::f64::consts::PI;
use std::fmt::Write;

use evident_core::{Edge, Node};

use super::layout::{esc, url_enc};

/// Most nodes drawn (the rest are listed by the page, not drawn).
pub const MAX_DRAWN: usize = 40;
const W: f64 = 720.0;
const H: f64 = 440.0;

/// A node to draw and its ring (0: the centre).
pub struct Placed<'a> {
    pub node: &'a Node,
    pub ring: usize,
}

fn positions(nodes: &[Placed<'_>]) -> HashMap<String, (f64, f64)> {
    let (cx, cy) = (W / 2.0, H / 2.0);
    let rings = nodes.iter().map(|p| p.ring).max().unwrap_or(0).max(1);
    let mut by_ring: HashMap<usize, Vec<&Placed<'_>>> = HashMap::new();
    for p in nodes {
        by_ring.entry(p.ring).or_default().push(p);
    }
    let mut out = HashMap::new();
    for (ring, members) in by_ring {
        let n = members.len();
        for (i, p) in members.iter().enumerate() {
            if ring == 0 && n == 1 {
                out.insert(p.node.key.as_str().to_string(), (cx, cy));
                continue;
            }
            let r = (ring.max(1) as f64) / (rings as f64);
            // Offset alternate rings so labels on neighbouring rings do not line up.
            let a = 2.0 * PI * (i as f64) / (n as f64) + (ring as f64) * 0.35;
            let (rx, ry) = (r * (W / 2.0 - 90.0), r * (H / 2.0 - 40.0));
            out.insert(
                p.node.key.as_str().to_string(),
                (cx + rx * a.cos(), cy + ry * a.sin()),
            );
        }
    }
    out
}

/// The SVG of `nodes` (at most [`MAX_DRAWN`]) and the `edges` between drawn nodes; `link`
/// makes a node's page address from its key.
pub fn render(nodes: &[Placed<'_>], edges: &[Edge], link: &dyn Fn(&str) -> String) -> String {
    let nodes = &nodes[..nodes.len().min(MAX_DRAWN)];
    let pos = positions(nodes);
    let mut out = format!(
        "<svg class=\"graph\" viewBox=\"0 0 {W} {H}\" role=\"img\" aria-label=\"graph neighbourhood\" xmlns=\"http://www.w3.org/2000/svg\">"
    );
    for e in edges {
        let (Some(a), Some(b)) = (pos.get(e.from.as_str()), pos.get(e.to.as_str())) else {
            continue;
        };
        let _ = write!(
            out,
            "<g class=\"edge\"><title>{} —{}→ {}</title><line x1=\"{:.0}\" y1=\"{:.0}\" x2=\"{:.0}\" y2=\"{:.0}\"/>\
             <text x=\"{:.0}\" y=\"{:.0}\">{}</text></g>",
            esc(e.from.as_str()),
            esc(&e.edge_type),
            esc(e.to.as_str()),
            a.0,
            a.1,
            b.0,
            b.1,
            (a.0 + b.0) / 2.0,
            (a.1 + b.1) / 2.0 - 3.0,
            esc(&e.edge_type)
        );
    }
    for p in nodes {
        let key = p.node.key.as_str();
        let Some((x, y)) = pos.get(key) else { continue };
        let label: String = if p.node.label.is_empty() {
            key
        } else {
            &p.node.label
        }
        .chars()
        .take(28)
        .collect();
        let _ = write!(
            out,
            "<a href=\"{}\"><g class=\"node t-{} r{}\"><title>{}</title><circle cx=\"{x:.0}\" cy=\"{y:.0}\" r=\"{}\"/>\
             <text x=\"{x:.0}\" y=\"{:.0}\">{}</text></g></a>",
            esc(&link(key)),
            esc(&url_enc(&p.node.node_type)),
            p.ring.min(3),
            esc(key),
            if p.ring == 0 { 11 } else { 7 },
            y + 20.0,
            esc(&label)
        );
    }
    out.push_str("</svg>");
    out
}

#[cfg(test)]
mod tests {
    use evident_core::refs::NodeKey;

    use super::*;

    fn node(key: &str, label: &str) -> Node {
        Node {
            key: NodeKey::from_canonical(key),
            node_type: "person".into(),
            label: label.into(),
            props: Default::default(),
            evidence_chunk_ids: vec![],
        }
    }

    #[test]
    fn nodes_link_to_their_pages_and_labels_are_escaped() {
        let (a, b) = (node("user:a", "<b>A</b>"), node("user:b", "B"));
        let placed = [Placed { node: &a, ring: 0 }, Placed { node: &b, ring: 1 }];
        let edge = Edge {
            from: a.key.clone(),
            to: b.key.clone(),
            edge_type: "knows".into(),
            props: Default::default(),
            evidence_chunk_ids: vec!["c1".into()],
        };
        let svg = render(&placed, &[edge], &|k| format!("/ui/node/{}", url_enc(k)));
        assert!(svg.contains("href=\"/ui/node/user%3Ab\""), "{svg}");
        assert!(
            svg.contains("&lt;b&gt;A&lt;/b&gt;") && !svg.contains("<b>A"),
            "{svg}"
        );
        assert_eq!(svg.matches("<line").count(), 1);
        assert!(svg.contains(&format!("cx=\"{:.0}\" cy=\"{:.0}\"", W / 2.0, H / 2.0)));
    }
}
