//! A trace split into sources by a field's value (`source = "FIELD"`,
//! docs/semantics.md §3): each distinct value is a source named by the
//! value, numbered in order of first appearance in the file; a request
//! whose value is empty belongs to the source named as the `[[traffic]]`
//! itself. Values are interned while the trace is validated, so a replay
//! looks a value up without allocating, and memory grows with distinct
//! values, never with requests.

use crate::keys::KeyIds;

/// The most sources one trace splits into.
pub const MAX_PARTS: usize = 1000;

/// The sources of one split trace.
#[derive(Debug, Clone, Default)]
pub struct Split {
    /// The field named by `source`, as the scenario wrote it.
    pub field: String,
    /// The `[[traffic]]`'s own name: the source of an empty value.
    own: String,
    ids: KeyIds,
    names: Vec<String>,
}

impl Split {
    /// A split by `field` of the `[[traffic]]` named `own`, before any
    /// value is seen.
    pub fn new(field: &str, own: &str) -> Split {
        Split {
            field: field.to_string(),
            own: own.to_string(),
            ids: KeyIds::default(),
            names: Vec::new(),
        }
    }

    /// The name of the source of `value`: the value, or the
    /// `[[traffic]]`'s own name when it is empty.
    fn name<'v>(&'v self, value: &'v [u8]) -> &'v [u8] {
        if value.is_empty() {
            self.own.as_bytes()
        } else {
            value
        }
    }

    /// The part number of `value`, a new one the first time it is seen;
    /// an error, without the line, past [`MAX_PARTS`].
    pub fn intern(&mut self, value: &str) -> Result<u32, String> {
        let name = if value.is_empty() { &*self.own } else { value };
        if let Some(&id) = self.ids.get(name.as_bytes()) {
            return Ok(id);
        }
        if self.names.len() == MAX_PARTS {
            return Err(format!(
                "{} {} would be source number {}; a trace splits into at most {MAX_PARTS} sources, one per distinct value of its `source` field — name a field with fewer values",
                self.field,
                crate::error::quoted(name),
                MAX_PARTS + 1
            ));
        }
        let id = self.names.len() as u32;
        self.ids.insert(name.as_bytes().into(), id);
        self.names.push(name.to_string());
        Ok(id)
    }

    /// The `[[traffic]]`'s own name: the source of an empty value.
    pub fn own(&self) -> &str {
        &self.own
    }

    /// The part number of `value` (its bytes), if it was interned.
    pub fn get(&self, value: &[u8]) -> Option<u32> {
        self.ids.get(self.name(value)).copied()
    }

    /// The sources' names, by part number.
    pub fn names(&self) -> &[String] {
        &self.names
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_numbered_by_first_appearance_and_empty_is_the_traffics_own() {
        let mut s = Split::new("kind", "web");
        let ids: Vec<u32> = ["users", "scrapers", "users", "", "web", "bots"]
            .iter()
            .map(|v| s.intern(v).unwrap())
            .collect();
        // An empty value and the value "web" are one source, named "web".
        assert_eq!(ids, [0, 1, 0, 2, 2, 3]);
        assert_eq!(s.names(), ["users", "scrapers", "web", "bots"]);
        assert_eq!(
            (s.get(b"scrapers"), s.get(b""), s.get(b"nope")),
            (Some(1), Some(2), None)
        );
    }

    #[test]
    fn a_value_past_the_cap_is_refused_naming_field_value_and_cap() {
        let mut s = Split::new("kind", "web");
        for i in 0..MAX_PARTS {
            s.intern(&format!("v{i}")).unwrap();
        }
        // Values already seen still intern.
        assert_eq!(s.intern("v7"), Ok(7));
        let e = s.intern("one-more").unwrap_err();
        assert!(
            e.starts_with("kind \"one-more\" would be source number 1001"),
            "{e}"
        );
        assert!(e.contains("at most 1000 sources"), "{e}");
        assert_eq!(s.names().len(), MAX_PARTS);
    }
}
