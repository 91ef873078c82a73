//! A log line template: literal text between named fields, as nginx's
//! `log_format` (`$remote_addr - [$time_local]`) and Envoy's format strings
//! (`[%START_TIME%] "%REQ(:METHOD)%"`) both are.
//!
//! A line is matched left to right: each literal must appear where the
//! template puts it, and a field's value runs up to the next occurrence of
//! the literal that follows it (to the end of the line for a last field).
//! Two fields with nothing between them cannot be told apart and are
//! refused when the template is compiled.

/// One piece of a template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seg {
    Lit(String),
    /// The index of a field in [`Template::names`].
    Field(usize),
}

#[derive(Debug, Clone)]
pub struct Template {
    pub segs: Vec<Seg>,
    /// Distinct field names, in order of first appearance.
    pub names: Vec<String>,
}

impl Template {
    /// Builds a template from pieces, naming each field by its text.
    pub fn new(pieces: Vec<Result<String, String>>) -> Result<Template, String> {
        let mut segs: Vec<Seg> = Vec::new();
        let mut names: Vec<String> = Vec::new();
        for p in pieces {
            match p {
                Ok(lit) if lit.is_empty() => {}
                Ok(lit) => match segs.last_mut() {
                    Some(Seg::Lit(prev)) => prev.push_str(&lit),
                    _ => segs.push(Seg::Lit(lit)),
                },
                Err(name) => {
                    if let Some(Seg::Field(prev)) = segs.last() {
                        return Err(format!(
                            "{} and {name} follow each other with nothing between: their values cannot be told apart",
                            names[*prev]
                        ));
                    }
                    let i = match names.iter().position(|n| *n == name) {
                        Some(i) => i,
                        None => {
                            names.push(name);
                            names.len() - 1
                        }
                    };
                    segs.push(Seg::Field(i));
                }
            }
        }
        if names.is_empty() {
            return Err("has no fields".into());
        }
        Ok(Template { segs, names })
    }

    /// The index of field `name`.
    pub fn field(&self, name: &str) -> Option<usize> {
        self.names.iter().position(|n| n == name)
    }

    /// The value of each field in `line` (the first occurrence of a field
    /// named twice), or what did not match.
    pub fn matches<'l>(&self, line: &'l str) -> Result<Vec<&'l str>, String> {
        let mut values = vec![""; self.names.len()];
        let mut seen = vec![false; self.names.len()];
        let mut pos = 0usize;
        for (i, seg) in self.segs.iter().enumerate() {
            let rest = &line[pos..];
            match seg {
                Seg::Lit(lit) => {
                    if !rest.starts_with(lit.as_str()) {
                        return Err(format!(
                            "expected {:?} at column {}",
                            crate::error::quote(lit),
                            pos + 1
                        ));
                    }
                    pos += lit.len();
                }
                Seg::Field(f) => {
                    let len = match self.segs.get(i + 1) {
                        Some(Seg::Lit(next)) => rest.find(next.as_str()).ok_or_else(|| {
                            format!(
                                "ends inside {} (no {:?} after column {})",
                                self.names[*f],
                                crate::error::quote(next),
                                pos + 1
                            )
                        })?,
                        _ => rest.len(),
                    };
                    if !seen[*f] {
                        values[*f] = &rest[..len];
                        seen[*f] = true;
                    }
                    pos += len;
                }
            }
        }
        if pos != line.len() {
            return Err(format!(
                "has {} more characters after the format ends",
                line.len() - pos
            ));
        }
        Ok(values)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(pieces: &[&str]) -> Template {
        Template::new(
            pieces
                .iter()
                .map(|p| match p.strip_prefix('$') {
                    Some(n) => Err(n.to_string()),
                    None => Ok(p.to_string()),
                })
                .collect(),
        )
        .unwrap()
    }

    #[test]
    fn fields_run_to_the_next_literal() {
        let tpl = t(&["$a", " - [", "$b", "] \"", "$c", "\" ", "$a"]);
        let v = tpl.matches("x y - [01/Dec] \"GET / HTTP/1.1\" z").unwrap();
        assert_eq!(v, vec!["x y", "01/Dec", "GET / HTTP/1.1"]);
        assert!(tpl.matches("x y - 01/Dec").is_err());
    }

    #[test]
    fn adjacent_fields_are_refused() {
        let r = Template::new(vec![Err("a".into()), Err("b".into())]);
        assert!(r.unwrap_err().contains("nothing between"));
    }
}
