//! A log line template: literal text between named fields, as nginx's
//! `log_format` (`$remote_addr - [$time_local]`) and Envoy's format strings
//! (`[%START_TIME%] "%REQ(:METHOD)%"`) both are.
//!
//! A line is matched left to right: each literal must appear where the
//! template puts it, and a field's value runs up to the next occurrence of
//! the literal that follows it (to the end of the line for a last field).
//! When that match leaves the line unmatched or a field unreadable, later
//! occurrences are tried ([`Template::only_reading`]).
//! Two fields with nothing between them cannot be told apart and are
//! refused when the template is compiled.

use memchr::memmem::Finder;

use super::word::{places, PLACED};

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
    /// How a line's bytes are matched against the pieces: the leading
    /// literal, then the fields.
    lead: Box<[u8]>,
    plan: Vec<Planned>,
    /// The byte that ends each field but a last, if each literal after a
    /// field is that one byte (see [`Template::match_placed`]).
    end: Option<u8>,
}

// Two templates of the same pieces match alike (their plans are made of
// the pieces).
impl PartialEq for Template {
    fn eq(&self, other: &Template) -> bool {
        (&self.segs, &self.names) == (&other.segs, &other.names)
    }
}

impl Eq for Template {}

/// A field, compiled (once, not per line): a literal after a field is
/// where the field's search found it, so a match is a run of searches,
/// each followed by a skip over the literal found.
#[derive(Debug, Clone)]
struct Planned {
    field: usize,
    /// Where its value goes: `field` at its first occurrence in the
    /// template (the one whose value counts), none ([`usize::MAX`]) at a
    /// later one.
    slot: usize,
    /// Its piece.
    seg: usize,
    /// The searcher of the literal after it (none for a last field: it
    /// runs to the end).
    until: Option<Until>,
    /// The length of the literal after it.
    skip: usize,
}

/// How the literal after a field is found.
#[derive(Debug, Clone)]
enum Until {
    /// One byte (a space, a quote): looked for sixteen bytes at a time in
    /// the first 64 bytes, as most fields are short, then with memchr
    /// ([`super::word::find`]); in a line of 64 bytes or fewer whose
    /// fields all end at the same byte, found with its other places in
    /// the line at once ([`Template::match_placed`]).
    Byte(u8),
    Bytes(Box<Finder<'static>>),
}

impl Until {
    fn find(&self, hay: &[u8]) -> Option<usize> {
        match self {
            Until::Byte(b) => super::word::find(*b, hay),
            Until::Bytes(finder) => finder.find(hay),
        }
    }
}

/// How many literals [`Template::only_reading`] looks for in a line at
/// most (a line of a few hundred bytes has a few dozen of a template's
/// literals; a match that needs more is not found, and the line is bad).
pub const ALTERNATIVES: usize = 1024;

/// A line that matches its template more than one way, and reads
/// differently in two of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ambiguous;

/// Where a line stops matching its template: [`Mismatch::message`] says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mismatch {
    /// Piece `seg`, a literal, is not at byte `pos`.
    Expected { seg: usize, pos: usize },
    /// Field `field` starts at byte `pos` and the literal after it, piece
    /// `seg`, never comes.
    EndsInside {
        field: usize,
        seg: usize,
        pos: usize,
    },
    /// `extra` bytes follow the template's last literal.
    Trailing { extra: usize },
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
        let lead = match segs.first() {
            Some(Seg::Lit(lit)) => lit.as_bytes().into(),
            _ => Box::default(),
        };
        let mut seen = vec![false; names.len()];
        let plan: Vec<Planned> = segs
            .iter()
            .enumerate()
            .filter_map(|(seg, piece)| {
                let Seg::Field(f) = piece else {
                    return None;
                };
                let next = match segs.get(seg + 1) {
                    Some(Seg::Lit(next)) => Some(next.as_bytes()),
                    _ => None,
                };
                Some(Planned {
                    field: *f,
                    slot: match std::mem::replace(&mut seen[*f], true) {
                        false => *f,
                        true => usize::MAX,
                    },
                    seg,
                    until: next.map(|bytes| match bytes {
                        [b] => Until::Byte(*b),
                        bytes => Until::Bytes(Box::new(Finder::new(bytes).into_owned())),
                    }),
                    skip: next.map_or(0, <[u8]>::len),
                })
            })
            .collect();
        let mut ends = plan.iter().filter_map(|p| p.until.as_ref());
        let end = match ends.next() {
            Some(Until::Byte(b)) if ends.all(|u| matches!(u, Until::Byte(c) if c == b)) => Some(*b),
            _ => None,
        };
        Ok(Template {
            segs,
            names,
            lead,
            plan,
            end,
        })
    }

    /// The index of field `name`.
    pub fn field(&self, name: &str) -> Option<usize> {
        self.names.iter().position(|n| n == name)
    }

    /// Matches `line` left to right, setting `values[f]` to the byte range
    /// of field `f`'s value (its first occurrence in the template);
    /// `values` has one range per name. Allocates nothing.
    #[inline(always)]
    pub fn match_into(
        &self,
        line: &[u8],
        values: &mut [std::ops::Range<usize>],
    ) -> Result<(), Mismatch> {
        match (self.end, line.len() <= PLACED) {
            (Some(end), true) => self.match_placed(line, values, end),
            _ => self.match_searched(line, values),
        }
    }

    /// [`Template::match_into`] by a search for each literal after a
    /// field (out of line, so that the short path, inlined, stays short).
    #[inline(never)]
    fn match_searched(
        &self,
        line: &[u8],
        values: &mut [std::ops::Range<usize>],
    ) -> Result<(), Mismatch> {
        if !self.leads(line) {
            return Err(Mismatch::Expected { seg: 0, pos: 0 });
        }
        let mut pos = self.lead.len();
        for p in &self.plan {
            let rest = &line[pos..];
            let len = match &p.until {
                Some(until) => until.find(rest).ok_or(Mismatch::EndsInside {
                    field: p.field,
                    seg: p.seg + 1,
                    pos,
                })?,
                None => rest.len(),
            };
            if let Some(value) = values.get_mut(p.slot) {
                *value = pos..pos + len;
            }
            pos += len + p.skip;
        }
        if pos != line.len() {
            return Err(Mismatch::Trailing {
                extra: line.len() - pos,
            });
        }
        Ok(())
    }

    /// [`Template::match_into`] of a short line whose fields each end at
    /// byte `end` (but a last that runs to the line's end): where `end`
    /// is in the line is found at once ([`places`]), and the fields end
    /// at those places in turn from the first field's start on, as the
    /// search for each field's literal from its start finds them.
    #[inline(always)]
    fn match_placed(
        &self,
        line: &[u8],
        values: &mut [std::ops::Range<usize>],
        end: u8,
    ) -> Result<(), Mismatch> {
        if !self.leads(line) {
            return Err(Mismatch::Expected { seg: 0, pos: 0 });
        }
        let mut pos = self.lead.len();
        // The places of `end` from the first field on: each field but a
        // last that runs to the line's end ends at the next of them.
        let mut ends = places(line, end) & u64::MAX.checked_shl(pos as u32).unwrap_or(0);
        let (last, to_end) = match self.plan.last() {
            Some(p) if p.until.is_none() => (self.plan.len() - 1, true),
            _ => (self.plan.len(), false),
        };
        for p in &self.plan[..last] {
            if ends == 0 {
                return Err(Mismatch::EndsInside {
                    field: p.field,
                    seg: p.seg + 1,
                    pos,
                });
            }
            let at = ends.trailing_zeros() as usize;
            if let Some(value) = values.get_mut(p.slot) {
                *value = pos..at;
            }
            pos = at + 1;
            ends &= ends - 1;
        }
        if to_end {
            if let Some(value) = values.get_mut(self.plan[last].slot) {
                *value = pos..line.len();
            }
            pos = line.len();
        }
        if pos != line.len() {
            return Err(Mismatch::Trailing {
                extra: line.len() - pos,
            });
        }
        Ok(())
    }

    /// What `read` makes of `line` when [`Template::match_into`]'s match
    /// does not read: every way the line matches is tried (each field's
    /// value run to any later occurrence of the literal after it), and
    /// the ways that `read` makes something of must all make the same.
    /// A free-text field (nginx's `$remote_user` is whatever a client
    /// sends) can hold the literal that ends it; then only the match that
    /// leaves every field readable is the line as logged
    /// (docs/semantics.md §8). `Ok(None)`: no way reads; `Err`: two
    /// ways read differently, and the line cannot be told. At most
    /// [`ALTERNATIVES`] literals are looked for, so a line cannot make
    /// the search take long: a line whose ways are not all tried is not
    /// read (`Ok(None)`).
    pub fn only_reading<T: PartialEq>(
        &self,
        line: &[u8],
        values: &mut Vec<std::ops::Range<usize>>,
        read: &mut dyn FnMut(&[std::ops::Range<usize>]) -> Option<T>,
    ) -> Result<Option<T>, Ambiguous> {
        values.clear();
        values.resize(self.names.len(), 0..0);
        if !self.leads(line) {
            return Ok(None);
        }
        let mut budget = ALTERNATIVES;
        let mut found: Option<T> = None;
        let mut ambiguous = false;
        self.match_from(
            0,
            self.lead.len(),
            line,
            values,
            &mut budget,
            &mut |v| match (read(v), &found) {
                (None, _) => false,
                (Some(t), None) => {
                    found = Some(t);
                    false
                }
                (Some(t), Some(f)) => {
                    ambiguous = t != *f;
                    ambiguous
                }
            },
        );
        if ambiguous {
            return Err(Ambiguous);
        }
        // A search cut short may have left a way that reads otherwise.
        Ok(found.filter(|_| budget > 0))
    }

    /// Whether `line` starts with the leading literal — compared byte by
    /// byte, as it is short (a call to memcmp, even for none, costs more
    /// than its bytes). A literal after a field is where the field's
    /// search found it: only a leading one needs a look.
    fn leads(&self, line: &[u8]) -> bool {
        line.len() >= self.lead.len() && self.lead.iter().zip(line).all(|(a, b)| a == b)
    }

    /// Calls `visit` with each way `line` matches from planned field `k`
    /// at byte `pos` on, depth first, until it says to stop (true).
    fn match_from(
        &self,
        k: usize,
        pos: usize,
        line: &[u8],
        values: &mut [std::ops::Range<usize>],
        budget: &mut usize,
        visit: &mut dyn FnMut(&[std::ops::Range<usize>]) -> bool,
    ) -> bool {
        let Some(p) = self.plan.get(k) else {
            return pos == line.len() && visit(values);
        };
        let Some(until) = &p.until else {
            if let Some(value) = values.get_mut(p.slot) {
                *value = pos..line.len();
            }
            return self.match_from(k + 1, line.len(), line, values, budget, visit);
        };
        let mut from = pos;
        while *budget > 0 {
            *budget -= 1;
            let Some(at) = until.find(&line[from..]) else {
                return false;
            };
            let end = from + at;
            if let Some(value) = values.get_mut(p.slot) {
                *value = pos..end;
            }
            if self.match_from(k + 1, end + p.skip, line, values, budget, visit) {
                return true;
            }
            from = end + 1;
        }
        false
    }

    /// What did not match, as a bad line's message says it.
    pub fn message(&self, m: Mismatch) -> String {
        let lit = |seg: usize| match &self.segs[seg] {
            Seg::Lit(l) => crate::error::quote(l),
            Seg::Field(_) => String::new(),
        };
        match m {
            Mismatch::Expected { seg, pos } => {
                format!("expected {:?} at column {}", lit(seg), pos + 1)
            }
            Mismatch::EndsInside { field, seg, pos } => format!(
                "ends inside {} (no {:?} after column {})",
                self.names[field],
                lit(seg),
                pos + 1
            ),
            Mismatch::Trailing { extra } => {
                format!("has {extra} more characters after the format ends")
            }
        }
    }

    /// Sets `values` (its allocation reused) to the byte range of each
    /// field in `line`, or says what did not match.
    /// [`Template::read_into`] without the message of a line that does
    /// not match. (`values` is cleared only if it has not one range per
    /// name: a match sets every range, and a line that does not match
    /// has none to read. Clearing it for every line cost the thread that
    /// parses a call to memset a line.)
    #[inline(always)]
    pub fn match_fields(
        &self,
        line: &[u8],
        values: &mut Vec<std::ops::Range<usize>>,
    ) -> Option<()> {
        if values.len() != self.names.len() {
            values.clear();
            values.resize(self.names.len(), 0..0);
        }
        self.match_into(line, values).ok()
    }

    pub fn read_into(
        &self,
        line: &[u8],
        values: &mut Vec<std::ops::Range<usize>>,
    ) -> Result<(), String> {
        values.clear();
        values.resize(self.names.len(), 0..0);
        self.match_into(line, values).map_err(|m| self.message(m))
    }

    /// The value of each field in `line` (the first occurrence of a field
    /// named twice), or what did not match.
    pub fn matches<'l>(&self, line: &'l str) -> Result<Vec<&'l str>, String> {
        let mut values = Vec::new();
        self.read_into(line.as_bytes(), &mut values)?;
        // A literal is whole characters, and so is what lies between two.
        Ok(values.into_iter().map(|r| &line[r]).collect())
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

    /// The ways of `line` that `digits` reads: those whose field `b` is
    /// all digits (and spaces, with `spaces`).
    fn reading(tpl: &Template, line: &str, spaces: bool) -> Result<Option<String>, Ambiguous> {
        tpl.only_reading(line.as_bytes(), &mut Vec::new(), &mut |v| {
            let b = &line[v[1].clone()];
            let ok = !b.is_empty()
                && b.bytes()
                    .all(|c| c.is_ascii_digit() || (spaces && c == b' '));
            ok.then(|| format!("{}|{b}", &line[v[0].clone()]))
        })
    }

    #[test]
    fn a_field_holding_the_literal_that_ends_it_is_read_the_one_way_that_reads() {
        let tpl = t(&["$a", " [", "$b", "]"]);
        // The first match ("x" and "y [12") does not read; "x [y" and "12" do.
        assert!(tpl.matches("x [y [12]").is_ok());
        assert_eq!(
            reading(&tpl, "x [y [12]", false),
            Ok(Some("x [y|12".into()))
        );
        // Nor does any way here; and a line that does not match has none.
        assert_eq!(reading(&tpl, "x [y [1a]", false), Ok(None));
        assert_eq!(reading(&tpl, "x [12] z", false), Ok(None));
        // Two ways read, and differently: the line cannot be told.
        let tpl = t(&["$a", " ", "$b"]);
        assert_eq!(reading(&tpl, "1 2 3", true), Err(Ambiguous));
        assert_eq!(reading(&tpl, "1 2 3", false), Ok(Some("1 2|3".into())));
    }

    #[test]
    fn a_line_of_too_many_ways_is_not_searched_through() {
        // Three fields over 300 spaces: some 45 000 ways, of which the
        // 300 that end in the field "7" read (alike). Not all tried at
        // ALTERNATIVES literals, the line is not read.
        let tpl = t(&["$a", " ", "$c", " ", "$b"]);
        let line = format!("{}7", "x ".repeat(300));
        let mut tried = 0;
        let found = tpl.only_reading(line.as_bytes(), &mut Vec::new(), &mut |v| {
            tried += 1;
            (&line[v[2].clone()] == "7").then_some(())
        });
        assert_eq!(found, Ok(None));
        assert!((1..=ALTERNATIVES).contains(&tried), "{tried}");
        // Short of the limit, the same search finds it.
        let line = format!("{}7", "x ".repeat(20));
        assert_eq!(
            tpl.only_reading(line.as_bytes(), &mut Vec::new(), &mut |v| {
                (&line[v[2].clone()] == "7").then_some(())
            }),
            Ok(Some(()))
        );
    }

    #[test]
    fn adjacent_fields_are_refused() {
        let r = Template::new(vec![Err("a".into()), Err("b".into())]);
        assert!(r.unwrap_err().contains("nothing between"));
    }

    /// A match piece by piece, as the template's pieces say it: the
    /// reading `match_into`'s run of searches must give.
    fn match_by_pieces(
        tpl: &Template,
        line: &[u8],
    ) -> Result<Vec<std::ops::Range<usize>>, Mismatch> {
        let mut values = vec![0..0; tpl.names.len()];
        let mut seen = vec![false; tpl.names.len()];
        let mut pos = 0usize;
        for (seg, piece) in tpl.segs.iter().enumerate() {
            match piece {
                Seg::Lit(lit) => {
                    if seg == 0 && !line.starts_with(lit.as_bytes()) {
                        return Err(Mismatch::Expected { seg, pos });
                    }
                    pos += lit.len();
                }
                Seg::Field(f) => {
                    let rest = &line[pos..];
                    let len = match tpl.segs.get(seg + 1) {
                        Some(Seg::Lit(next)) => memchr::memmem::find(rest, next.as_bytes()).ok_or(
                            Mismatch::EndsInside {
                                field: *f,
                                seg: seg + 1,
                                pos,
                            },
                        )?,
                        _ => rest.len(),
                    };
                    if !std::mem::replace(&mut seen[*f], true) {
                        values[*f] = pos..pos + len;
                    }
                    pos += len;
                }
            }
        }
        match pos == line.len() {
            true => Ok(values),
            false => Err(Mismatch::Trailing {
                extra: line.len() - pos,
            }),
        }
    }

    /// The edges of the short path: leads up to the whole line, lines
    /// about 64 bytes long (it reads 64 at most), the byte first and
    /// last, a last field that runs to the end or ends at the byte.
    #[test]
    fn a_short_line_read_at_once_is_read_as_searched() {
        let mut x = 17u64;
        let mut tried = 0;
        for lead in [0, 1, 15, 16, 17, 63, 64] {
            for trailing in [false, true] {
                let mut pieces = vec!["x".repeat(lead), "$a".into(), " ".into(), "$b".into()];
                pieces.retain(|p| !p.is_empty());
                pieces.extend(trailing.then(|| " ".to_string()));
                let pieces: Vec<&str> = pieces.iter().map(String::as_str).collect();
                let tpl = t(&pieces);
                assert!(tpl.end.is_some());
                for len in [0, 1, 15, 16, 17, 31, 32, 47, 48, 62, 63, 64, 65, 66] {
                    for _ in 0..30 {
                        let mut line: Vec<u8> =
                            (0..len).map(|_| b"x y"[crate::pick(&mut x, 3)]).collect();
                        // Mostly the lead where it goes, and the byte first
                        // or last now and then.
                        if crate::pick(&mut x, 4) > 0 {
                            line.iter_mut().take(lead).for_each(|c| *c = b'x');
                        }
                        match (crate::pick(&mut x, 4), len) {
                            (_, 0) => {}
                            (0, _) => line[0] = b' ',
                            (1, _) => line[len - 1] = b' ',
                            _ => {}
                        }
                        let mut values = vec![0..0; tpl.names.len()];
                        let got = tpl.match_into(&line, &mut values).map(|()| values);
                        let want = match_by_pieces(&tpl, &line);
                        assert_eq!(got, want, "{pieces:?} {:?}", String::from_utf8_lossy(&line));
                        tried += usize::from(got.is_ok());
                    }
                }
            }
        }
        assert!(tried > 1_000, "{tried}");
    }

    /// Random templates (leading and trailing literals or not, literals
    /// of one byte or several, a field named twice) over random lines of
    /// their pieces' bytes: the run of searches reads what matching piece
    /// by piece reads, and fails where it fails.
    #[test]
    fn a_match_is_the_pieces_matched_in_turn() {
        let mut x = 11u64;
        let mut next = move |n: usize| crate::pick(&mut x, n);
        let lits = [" ", " - [", "] \"", "\"", "\" \"", ":", "|"];
        let (mut read, mut failed, mut placed) = (0, 0, 0);
        for _ in 0..3_000 {
            let mut pieces: Vec<String> = Vec::new();
            if next(2) == 0 {
                pieces.push(lits[next(lits.len())].into());
            }
            for k in 0..1 + next(4) {
                if k > 0 {
                    pieces.push(lits[next(lits.len())].into());
                }
                pieces.push(format!("${}", ["a", "b", "c"][next(3)]));
            }
            if next(2) == 0 {
                pieces.push(lits[next(lits.len())].into());
            }
            let pieces: Vec<&str> = pieces.iter().map(String::as_str).collect();
            let tpl = t(&pieces);
            for _ in 0..20 {
                let line: Vec<u8> = (0..next(24))
                    .flat_map(|_| match next(3) {
                        0 => lits[next(lits.len())].as_bytes().to_vec(),
                        _ => vec![b"xy0"[next(3)]],
                    })
                    .collect();
                let mut values = vec![0..0; tpl.names.len()];
                let got = tpl.match_into(&line, &mut values).map(|()| values);
                let want = match_by_pieces(&tpl, &line);
                assert_eq!(got, want, "{pieces:?} {:?}", String::from_utf8_lossy(&line));
                // The search of every way visits that match among them
                // (and none, when the leading literal is not there).
                let first = tpl.only_reading(&line, &mut Vec::new(), &mut |v| {
                    (Ok(v) == got.as_deref()).then_some(())
                });
                let visited = got.is_err() || first == Ok(Some(()));
                assert!(visited, "{pieces:?} {:?}", String::from_utf8_lossy(&line));
                if let Err(Mismatch::Expected { .. }) = got {
                    assert_eq!(first, Ok(None));
                }
                match got {
                    Ok(_) => read += 1,
                    Err(_) => failed += 1,
                }
                placed += usize::from(tpl.end.is_some() && line.len() <= PLACED);
            }
        }
        // Both ways were tried, many times, and many of the lines were
        // short lines of templates whose fields end at one byte.
        assert!(read > 1_000 && failed > 1_000, "{read} {failed}");
        assert!(placed > 5_000, "{placed}");
    }
}
