//! One draw of a client's ChaCha8 stream, computed from its position: the
//! 64 bits `ChaCha8Rng::next_u64` gives at word `w` of the stream of
//! [`client_rng`](super::client_rng), without building the generator.
//!
//! A Poisson client keeps only its position in its stream (see
//! [`CompactClock`](super::poisson::CompactClock)). Rebuilding a
//! `ChaCha8Rng` there for each arrival costs a key set-up and a refill of
//! four blocks (64 words) to use two; ChaCha is a function of (key,
//! counter), so the one 16-word block holding the two words is computed
//! here instead. The tests check it against `rand_chacha` word for word.

/// `client_rng(seed, source, client)`'s key as eight little-endian words.
pub fn client_key(seed: u64, source: usize, client: u64) -> [u32; 8] {
    let mut key = [0u32; 8];
    for (i, v) in [
        seed,
        source as u64,
        client,
        u64::from_le_bytes(*b"ratesim\0"),
    ]
    .into_iter()
    .enumerate()
    {
        key[2 * i] = v as u32;
        key[2 * i + 1] = (v >> 32) as u32;
    }
    key
}

/// Words `w` and `w + 1` of the ChaCha8 keystream of `key` (stream 0),
/// the first as the low half: `next_u64` of `ChaCha8Rng::from_seed(key)`
/// after `set_word_pos(w)`.
pub(crate) fn u64_at(key: &[u32; 8], w: u64) -> u64 {
    let (block, j) = (w / 16, (w % 16) as usize);
    let words = chacha8_block(key, block);
    let lo = words[j];
    let hi = if j < 15 {
        words[j + 1]
    } else {
        chacha8_block(key, block.wrapping_add(1))[0]
    };
    (u64::from(hi) << 32) | u64::from(lo)
}

/// Block `counter` of ChaCha with 8 rounds: the original layout, a 64-bit
/// block counter in words 12–13 and a 64-bit stream (0) in 14–15.
fn chacha8_block(key: &[u32; 8], counter: u64) -> [u32; 16] {
    let mut input = [0u32; 16];
    input[..4].copy_from_slice(&[0x6170_7865, 0x3320_646e, 0x7962_2d32, 0x6b20_6574]);
    input[4..12].copy_from_slice(key);
    input[12] = counter as u32;
    input[13] = (counter >> 32) as u32;
    let mut x = input;
    for _ in 0..4 {
        quarter(&mut x, 0, 4, 8, 12);
        quarter(&mut x, 1, 5, 9, 13);
        quarter(&mut x, 2, 6, 10, 14);
        quarter(&mut x, 3, 7, 11, 15);
        quarter(&mut x, 0, 5, 10, 15);
        quarter(&mut x, 1, 6, 11, 12);
        quarter(&mut x, 2, 7, 8, 13);
        quarter(&mut x, 3, 4, 9, 14);
    }
    for (x, i) in x.iter_mut().zip(input) {
        *x = x.wrapping_add(i);
    }
    x
}

#[inline(always)]
fn quarter(x: &mut [u32; 16], a: usize, b: usize, c: usize, d: usize) {
    x[a] = x[a].wrapping_add(x[b]);
    x[d] = (x[d] ^ x[a]).rotate_left(16);
    x[c] = x[c].wrapping_add(x[d]);
    x[b] = (x[b] ^ x[c]).rotate_left(12);
    x[a] = x[a].wrapping_add(x[b]);
    x[d] = (x[d] ^ x[a]).rotate_left(8);
    x[c] = x[c].wrapping_add(x[d]);
    x[b] = (x[b] ^ x[c]).rotate_left(7);
}

#[cfg(test)]
mod tests {
    use super::super::client_rng;
    use super::*;
    use proptest::prelude::*;
    use rand::RngCore;

    fn from_rand_chacha(seed: u64, source: usize, client: u64, w: u64) -> u64 {
        let mut rng = client_rng(seed, source, client);
        rng.set_word_pos(w as u128);
        rng.next_u64()
    }

    #[test]
    fn every_word_of_the_first_blocks_is_rand_chachas() {
        // Every position of the first five blocks (one straddling each
        // block end), from a fresh generator and in one long run.
        let key = client_key(7, 2, 12_345);
        let mut rng = client_rng(7, 2, 12_345);
        for w in 0..80u64 {
            assert_eq!(
                u64_at(&key, w),
                from_rand_chacha(7, 2, 12_345, w),
                "word {w}"
            );
        }
        for w in (0..400u64).step_by(2) {
            assert_eq!(u64_at(&key, w), rng.next_u64(), "word {w} in sequence");
        }
    }

    proptest! {
        #[test]
        fn any_key_and_position_gives_rand_chachas_draw(
            seed in any::<u64>(),
            source in 0..1000usize,
            client in any::<u64>(),
            w in prop_oneof![0..1000u64, any::<u64>().prop_map(|w| w >> 1)],
        ) {
            let key = client_key(seed, source, client);
            prop_assert_eq!(u64_at(&key, w), from_rand_chacha(seed, source, client, w));
        }
    }
}
