//! The bytes of a partition's state and journal (docs/semantics.md §12):
//! unsigned LEB128 varints, zigzag for signed values, a length before
//! every text. Written and read only by ratesim, version by version.

use crate::error::InputError;

/// Appends values to a byte buffer.
#[derive(Debug, Default, Clone)]
pub struct Put(pub Vec<u8>);

impl Put {
    pub fn u64(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.0.push(v as u8 | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }

    pub fn u128(&mut self, v: u128) {
        self.u64(v as u64);
        self.u64((v >> 64) as u64);
    }

    pub fn i64(&mut self, v: i64) {
        self.u64(((v << 1) ^ (v >> 63)) as u64);
    }

    pub fn bool(&mut self, v: bool) {
        self.0.push(v as u8);
    }

    pub fn str(&mut self, s: &str) {
        self.u64(s.len() as u64);
        self.0.extend_from_slice(s.as_bytes());
    }

    pub fn opt(&mut self, v: Option<u64>) {
        match v {
            Some(v) => {
                self.bool(true);
                self.u64(v);
            }
            None => self.bool(false),
        }
    }
}

/// Reads values back from bytes written by [`Put`]; a short or malformed
/// input is an error naming `what` was read.
#[derive(Debug, Clone)]
pub struct Take<'a> {
    bytes: &'a [u8],
    at: usize,
    what: &'a str,
}

impl<'a> Take<'a> {
    pub fn new(bytes: &'a [u8], what: &'a str) -> Take<'a> {
        Take { bytes, at: 0, what }
    }

    pub fn is_empty(&self) -> bool {
        self.at >= self.bytes.len()
    }

    fn damaged(&self) -> InputError {
        InputError::new(format!(
            "{}: damaged or cut short at byte {} (written by another version of ratesim, or not by ratesim); run the partition again",
            self.what, self.at
        ))
    }

    pub fn u64(&mut self) -> Result<u64, InputError> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = *self.bytes.get(self.at).ok_or_else(|| self.damaged())?;
            self.at += 1;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(self.damaged())
    }

    pub fn u128(&mut self) -> Result<u128, InputError> {
        let lo = self.u64()?;
        let hi = self.u64()?;
        Ok(u128::from(hi) << 64 | u128::from(lo))
    }

    pub fn i64(&mut self) -> Result<i64, InputError> {
        let v = self.u64()?;
        Ok((v >> 1) as i64 ^ -((v & 1) as i64))
    }

    pub fn u32(&mut self) -> Result<u32, InputError> {
        let v = self.u64()?;
        u32::try_from(v).map_err(|_| self.damaged())
    }

    pub fn usize(&mut self) -> Result<usize, InputError> {
        let v = self.u64()?;
        usize::try_from(v).map_err(|_| self.damaged())
    }

    pub fn bool(&mut self) -> Result<bool, InputError> {
        match self.bytes.get(self.at) {
            Some(&b @ (0 | 1)) => {
                self.at += 1;
                Ok(b == 1)
            }
            _ => Err(self.damaged()),
        }
    }

    pub fn byte(&mut self) -> Result<u8, InputError> {
        let b = *self.bytes.get(self.at).ok_or_else(|| self.damaged())?;
        self.at += 1;
        Ok(b)
    }

    pub fn str(&mut self) -> Result<String, InputError> {
        let n = self.usize()?;
        let end = self.at.checked_add(n).ok_or_else(|| self.damaged())?;
        let s = self.bytes.get(self.at..end).ok_or_else(|| self.damaged())?;
        let s = std::str::from_utf8(s).map_err(|_| self.damaged())?;
        self.at = end;
        Ok(s.to_string())
    }

    pub fn opt(&mut self) -> Result<Option<u64>, InputError> {
        Ok(match self.bool()? {
            true => Some(self.u64()?),
            false => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #[test]
        fn what_is_put_is_taken(
            a in proptest::prelude::any::<u64>(),
            b in proptest::prelude::any::<i64>(),
            c in proptest::prelude::any::<u128>(),
            s in ".{0,20}",
            o in proptest::option::of(proptest::prelude::any::<u64>()),
        ) {
            let mut p = Put::default();
            p.u64(a);
            p.i64(b);
            p.u128(c);
            p.str(&s);
            p.opt(o);
            p.bool(true);
            let mut t = Take::new(&p.0, "test");
            proptest::prop_assert_eq!(t.u64().unwrap(), a);
            proptest::prop_assert_eq!(t.i64().unwrap(), b);
            proptest::prop_assert_eq!(t.u128().unwrap(), c);
            proptest::prop_assert_eq!(t.str().unwrap(), s);
            proptest::prop_assert_eq!(t.opt().unwrap(), o);
            proptest::prop_assert!(t.bool().unwrap());
            proptest::prop_assert!(t.is_empty());
        }
    }

    #[test]
    fn a_cut_input_is_an_error_not_a_panic() {
        let mut p = Put::default();
        p.u64(u64::MAX);
        p.str("abc");
        for n in 0..p.0.len() {
            let mut t = Take::new(&p.0[..n], "state.bin");
            let r = t.u64().and_then(|_| t.str());
            let e = r.expect_err("cut short");
            assert!(e.to_string().contains("state.bin: damaged"), "{e}");
        }
    }
}
