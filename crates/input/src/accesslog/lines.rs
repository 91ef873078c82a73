//! A log's lines, read into one buffer and handed out in place: no copy
//! and no allocation per line. A gzip log (known by its magic bytes) is
//! inflated as it is read, on a thread of its own when rayon has two
//! threads or more (see [`super::blocks`]).

use std::io::{self, Read};

use super::blocks::{fill, Blocks};
use super::MAX_LINE_BYTES;

/// The buffer: room for several lines of the longest length, so that
/// a line is moved at most once, when the buffer's end is reached.
pub(super) const BUFFER: usize = 4 * MAX_LINE_BYTES;

/// How many lines may be looked at ahead of the one handed out.
pub(super) const AHEAD_MAX: usize = 32;

/// Lines of a (possibly gzip-compressed) log, each at most
/// [`MAX_LINE_BYTES`].
pub(super) struct Lines {
    r: Box<dyn Read + Send>,
    buf: Vec<u8>,
    /// The unread bytes are `buf[start..end]`.
    start: usize,
    end: usize,
    eof: bool,
    /// The number of the line last handed out (1-based).
    line: u64,
    /// Where the next line to look at ahead starts (at least `start`).
    ahead: usize,
    /// The newlines of the lines looked at ahead and not yet handed out,
    /// in order (a ring: `len` of them from `first`), which
    /// [`Lines::next`] takes instead of searching again.
    ends: [usize; AHEAD_MAX],
    first: usize,
    len: usize,
}

impl Lines {
    pub(super) fn new(r: Box<dyn Read + Send>) -> io::Result<Lines> {
        let mut buf = vec![0u8; BUFFER];
        let (r, end, _) = unzipped(r, &mut buf)?;
        Ok(Lines::resume(r, buf, end))
    }

    /// The lines of a log whose first `end` bytes `r` gave already are
    /// in `head` (the bytes [`unzipped`] hands out, at most [`BUFFER`]).
    pub(super) fn resume(r: Box<dyn Read + Send>, mut head: Vec<u8>, end: usize) -> Lines {
        debug_assert!(end <= BUFFER);
        head.resize(BUFFER, 0);
        Lines::filled(r, head, end, false)
    }

    /// The lines of `block`, the whole of a piece of a log: line 1 is
    /// its first.
    pub(super) fn over(block: Vec<u8>) -> Lines {
        let end = block.len();
        Lines::filled(Box::new(io::empty()), block, end, true)
    }

    /// Lines from `buf`, whose first `end` bytes are read, then from `r`
    /// unless it is at its end (`eof`).
    fn filled(r: Box<dyn Read + Send>, buf: Vec<u8>, end: usize, eof: bool) -> Lines {
        Lines {
            r,
            buf,
            start: 0,
            end,
            eof,
            line: 0,
            ahead: 0,
            ends: [0; AHEAD_MAX],
            first: 0,
            len: 0,
        }
    }

    /// How many lines were handed out (all of them at the end)…
    pub(super) fn read(&self) -> u64 {
        self.line
    }

    /// …and the buffer, to be filled again.
    pub(super) fn into_buffer(self) -> Vec<u8> {
        self.buf
    }

    /// The next line's number and bytes without its ending (`\n` or
    /// `\r\n`); `Err` for a read error or a line over the cap.
    pub(super) fn next(&mut self) -> Result<Option<(u64, &[u8])>, String> {
        self.line += 1;
        let too_long = |line| {
            format!(
                "line {line}: longer than {MAX_LINE_BYTES} bytes, the longest line a log may have"
            )
        };
        if self.len > 0 {
            // A line looked at ahead: its newline is known, and the
            // buffer has not moved since (it moves only when no newline
            // is left in it).
            let (start, nl) = (self.start, self.ends[self.first]);
            (self.first, self.len) = ((self.first + 1) % AHEAD_MAX, self.len - 1);
            if nl - start > MAX_LINE_BYTES {
                return Err(too_long(self.line));
            }
            self.start = nl + 1;
            return Ok(Some((self.line, without_cr(&self.buf[start..nl]))));
        }
        let mut searched = self.start;
        loop {
            if let Some(i) = super::word::find(b'\n', &self.buf[searched..self.end]) {
                let (start, nl) = (self.start, searched + i);
                if nl - start > MAX_LINE_BYTES {
                    return Err(too_long(self.line));
                }
                self.start = nl + 1;
                self.ahead = self.ahead.max(self.start);
                return Ok(Some((self.line, without_cr(&self.buf[start..nl]))));
            }
            searched = self.end;
            // Without its newline, a line may be one byte longer (the cap
            // counts the newline as the `\r` of a last line).
            if self.end - self.start > MAX_LINE_BYTES + 1 {
                return Err(too_long(self.line));
            }
            if self.eof {
                if self.start == self.end {
                    // (No line: none counted.)
                    self.line -= 1;
                    return Ok(None);
                }
                let start = std::mem::replace(&mut self.start, self.end);
                self.ahead = self.end;
                return Ok(Some((self.line, without_cr(&self.buf[start..self.end]))));
            }
            if self.end == self.buf.len() {
                self.buf.copy_within(self.start..self.end, 0);
                (searched, self.end) = (searched - self.start, self.end - self.start);
                self.ahead -= self.start;
                self.start = 0;
            }
            match self.r.read(&mut self.buf[self.end..]) {
                Ok(0) => self.eof = true,
                Ok(n) => self.end += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(format!("line {}: cannot be read: {e}", self.line)),
            }
        }
    }
}

impl Lines {
    /// The next line not yet looked at, if it is in the buffer already
    /// and fewer than [`AHEAD_MAX`] are looked at: a look at what comes,
    /// which reads nothing and moves nothing ([`Lines::next`] still hands
    /// out every line, the lines looked at first, in order).
    pub(super) fn look_ahead(&mut self) -> Option<&[u8]> {
        if self.len == AHEAD_MAX {
            return None;
        }
        let i = super::word::find(b'\n', &self.buf[self.ahead..self.end])?;
        let (start, nl) = (self.ahead, self.ahead + i);
        self.ahead = nl + 1;
        self.ends[(self.first + self.len) % AHEAD_MAX] = nl;
        self.len += 1;
        Some(without_cr(&self.buf[start..nl]))
    }
}

/// `r`'s bytes, inflated if they are a gzip stream (known by its magic
/// bytes): a reader, how many bytes of `head` (at least 2 long) hold
/// bytes that come before the reader's, and whether it inflates.
pub(super) fn unzipped(
    mut r: Box<dyn Read + Send>,
    head: &mut [u8],
) -> io::Result<(Box<dyn Read + Send>, usize, bool)> {
    let mut end = 0;
    fill(&mut *r, head, &mut end, 2)?;
    if !head[..end].starts_with(&[0x1f, 0x8b]) {
        return Ok((r, end, false));
    }
    let read = io::Cursor::new(head[..end].to_vec());
    let inflated = flate2::read::MultiGzDecoder::new(read.chain(r));
    // With a second thread, the log is inflated on it while its lines
    // are parsed on this one. (A plain file's reading is too little to
    // gain from it: measured, none.)
    let thread = rayon::current_num_threads() > 1;
    Ok((Box::new(Blocks::new(Box::new(inflated), thread)?), 0, true))
}

/// A line without the `\r` of a `\r\n` ending.
fn without_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(bytes: Vec<u8>) -> Result<Vec<Vec<u8>>, String> {
        let mut lines = Lines::new(Box::new(io::Cursor::new(bytes))).unwrap();
        let mut out = Vec::new();
        while let Some((_, l)) = lines.next()? {
            out.push(l.to_vec());
        }
        Ok(out)
    }

    #[test]
    fn lines_end_at_newlines_with_or_without_a_carriage_return() {
        let got = all(b"a\r\nbb\n\nccc".to_vec()).unwrap();
        assert_eq!(got, [&b"a"[..], b"bb", b"", b"ccc"]);
        assert_eq!(all(Vec::new()).unwrap(), Vec::<Vec<u8>>::new());
    }

    #[test]
    fn lines_across_the_buffers_end_come_whole_and_the_cap_is_kept() {
        let line = vec![b'x'; MAX_LINE_BYTES];
        let mut text = Vec::new();
        for _ in 0..9 {
            text.extend_from_slice(&line);
            text.push(b'\n');
        }
        let got = all(text.clone()).unwrap();
        assert_eq!(got.len(), 9);
        assert!(got.iter().all(|l| *l == line));
        text.extend_from_slice(&line);
        text.extend_from_slice(b"y\n");
        let e = all(text).unwrap_err();
        assert!(e.starts_with("line 10: longer than 65536 bytes"), "{e}");
    }

    #[test]
    fn lines_looked_at_ahead_are_the_lines_to_come() {
        let mut text = Vec::new();
        for i in 0..20_000 {
            text.extend_from_slice(format!("line {i} {}\r\n", "x".repeat(i % 97)).as_bytes());
        }
        let mut lines = Lines::new(Box::new(io::Cursor::new(text.clone()))).unwrap();
        let (mut seen, mut ahead) = (Vec::new(), std::collections::VecDeque::new());
        while let Some((_, l)) = lines.next().unwrap() {
            let l = l.to_vec();
            if let Some(first) = ahead.pop_front() {
                assert_eq!(first, l, "a line looked at ahead comes next");
            }
            seen.push(l);
            while ahead.len() < 1 + seen.len() % (AHEAD_MAX + 3) {
                let Some(a) = lines.look_ahead() else { break };
                ahead.push_back(a.to_vec());
            }
        }
        assert!(ahead.is_empty());
        assert_eq!(seen, all(text).unwrap());
        // A line over the cap is refused when looked at ahead too.
        let mut text = b"a\n".to_vec();
        text.extend(vec![b'x'; MAX_LINE_BYTES + 1]);
        text.extend_from_slice(b"\nb\n");
        let mut lines = Lines::new(Box::new(io::Cursor::new(text))).unwrap();
        assert_eq!(lines.next().unwrap(), Some((1, &b"a"[..])));
        assert!(lines.look_ahead().is_some());
        let e = lines.next().unwrap_err();
        assert!(e.starts_with("line 2: longer than"), "{e}");
    }

    #[test]
    fn a_piece_gives_its_lines_counted_and_a_log_begun_reads_on() {
        let lines_of = |mut l: Lines| {
            let mut got = Vec::new();
            while let Some((n, line)) = l.next().unwrap() {
                got.push((n, String::from_utf8(line.to_vec()).unwrap()));
            }
            // Asked again at the end: still none, and none counted.
            assert_eq!(l.next().unwrap(), None);
            (got, l.read())
        };
        let (got, read) = lines_of(Lines::over(b"a\n\nb\r\nc".to_vec()));
        let want = [(1, "a"), (2, ""), (3, "b"), (4, "c")].map(|(n, l)| (n, l.to_string()));
        assert_eq!((got, read), (want.to_vec(), 4));
        assert_eq!(lines_of(Lines::over(b"a\nb\n".to_vec())).1, 2);
        assert_eq!(lines_of(Lines::over(Vec::new())).1, 0);
        // A log whose first bytes were read already reads on from them.
        let text: Vec<u8> = (0..5_000)
            .flat_map(|i| format!("line {i}\n").into_bytes())
            .collect();
        let (head, rest) = text.split_at(1_000);
        let begun = Lines::resume(
            Box::new(io::Cursor::new(rest.to_vec())),
            head.to_vec(),
            1_000,
        );
        let (got, read) = lines_of(begun);
        assert_eq!(read, 5_000);
        let whole: Vec<Vec<u8>> = got.into_iter().map(|(_, l)| l.into_bytes()).collect();
        assert_eq!(whole, all(text).unwrap());
    }

    #[test]
    fn a_gzip_log_is_read_as_it_is() {
        use std::io::Write;
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(b"one\ntwo\n").unwrap();
        let got = all(gz.finish().unwrap()).unwrap();
        assert_eq!(got, [&b"one"[..], b"two"]);
    }
}
