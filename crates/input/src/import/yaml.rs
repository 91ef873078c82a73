//! YAML (and JSON, a subset of it) into a small tree that remembers the
//! line of every node, so an imported limiter can name the line it came
//! from. Built on `yaml-rust2`'s event parser (see the README for why
//! that crate).

use std::collections::HashMap;

use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::Marker;

#[derive(Debug, Clone, PartialEq)]
pub enum YamlNode {
    Map(Vec<(String, YamlNode)>, usize),
    Seq(Vec<YamlNode>, usize),
    Scalar(String, usize),
}

impl YamlNode {
    pub fn line(&self) -> usize {
        match self {
            YamlNode::Map(_, l) | YamlNode::Seq(_, l) | YamlNode::Scalar(_, l) => *l,
        }
    }

    /// The value of `key` in a mapping.
    pub fn get(&self, key: &str) -> Option<&YamlNode> {
        match self {
            YamlNode::Map(entries, _) => entries.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    pub fn str(&self) -> Option<&str> {
        match self {
            YamlNode::Scalar(s, _) => Some(s),
            _ => None,
        }
    }

    pub fn entries(&self) -> &[(String, YamlNode)] {
        match self {
            YamlNode::Map(e, _) => e,
            _ => &[],
        }
    }

    pub fn items(&self) -> &[YamlNode] {
        match self {
            YamlNode::Seq(items, _) => items,
            _ => &[],
        }
    }
}

#[derive(Default)]
struct Builder {
    /// Open collections: the node so far and, for a mapping, a key
    /// waiting for its value.
    stack: Vec<(YamlNode, Option<String>, usize)>,
    docs: Vec<YamlNode>,
    anchors: HashMap<usize, YamlNode>,
}

impl Builder {
    fn add(&mut self, node: YamlNode, anchor: usize) {
        if anchor > 0 {
            self.anchors.insert(anchor, node.clone());
        }
        match self.stack.last_mut() {
            None => self.docs.push(node),
            Some((YamlNode::Seq(items, _), _, _)) => items.push(node),
            Some((YamlNode::Map(entries, _), key, _)) => match key.take() {
                None => *key = Some(scalar_text(&node)),
                Some(k) => entries.push((k, node)),
            },
            Some((YamlNode::Scalar(..), _, _)) => {}
        }
    }
}

fn scalar_text(n: &YamlNode) -> String {
    match n {
        YamlNode::Scalar(s, _) => s.clone(),
        _ => String::from("{…}"),
    }
}

impl MarkedEventReceiver for Builder {
    fn on_event(&mut self, ev: Event, mark: Marker) {
        let line = mark.line();
        match ev {
            Event::Scalar(s, _, anchor, _) => self.add(YamlNode::Scalar(s, line), anchor),
            Event::Alias(id) => {
                let n = self
                    .anchors
                    .get(&id)
                    .cloned()
                    .unwrap_or(YamlNode::Scalar(String::new(), line));
                self.add(n, 0);
            }
            Event::SequenceStart(anchor, _) => {
                self.stack
                    .push((YamlNode::Seq(Vec::new(), line), None, anchor))
            }
            Event::MappingStart(anchor, _) => {
                self.stack
                    .push((YamlNode::Map(Vec::new(), line), None, anchor))
            }
            Event::SequenceEnd | Event::MappingEnd => {
                if let Some((node, _, anchor)) = self.stack.pop() {
                    self.add(node, anchor);
                }
            }
            _ => {}
        }
    }
}

/// Parses every document of `text`.
pub fn parse(text: &str) -> Result<Vec<YamlNode>, String> {
    let mut b = Builder::default();
    Parser::new_from_str(text)
        .load(&mut b, true)
        .map_err(|e| format!("line {}: not valid YAML: {}", e.marker().line(), e.info()))?;
    Ok(b.docs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_know_their_lines() {
        let docs = parse("a:\n  b: 1\n  c:\n    - x\n    - y: 2\n").unwrap();
        let root = &docs[0];
        assert_eq!(root.get("a").unwrap().get("b").unwrap().line(), 2);
        let c = root.get("a").unwrap().get("c").unwrap();
        assert_eq!(
            c.items()[1].get("y").unwrap(),
            &YamlNode::Scalar("2".into(), 5)
        );
        assert!(parse("a: [1, 2").is_err());
    }
}
