//! The HPACK decoder (RFC 7541 §3, §6).
//!
//! [`Decoder::decode`] walks one whole header block and hands each field
//! to a callback as `(name, value, never_indexed)` slices that borrow from
//! the block, the static or dynamic table, or a caller-provided scratch
//! vector (Huffman-coded strings): nothing is allocated per field. Every
//! failure is a COMPRESSION_ERROR, a connection error: the decoder's table
//! can no longer be trusted.

use super::huffman;
use super::table::{Dynamic, STATIC};

/// Why a header block does not decode (always a connection error of type
/// COMPRESSION_ERROR).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HpackError {
    /// The block ends inside a representation.
    Truncated,
    /// An integer does not fit 32 bits.
    IntegerOverflow,
    /// Index 0 or past the tables.
    BadIndex,
    /// A Huffman string does not decode.
    Huffman,
    /// A table size update above the allowed maximum, or after a field.
    BadSizeUpdate,
}

impl std::fmt::Display for HpackError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            HpackError::Truncated => "truncated header block",
            HpackError::IntegerOverflow => "HPACK integer overflow",
            HpackError::BadIndex => "HPACK index out of range",
            HpackError::Huffman => "invalid Huffman string",
            HpackError::BadSizeUpdate => "invalid dynamic table size update",
        })
    }
}

impl std::error::Error for HpackError {}

/// Decodes an integer with an `n`-bit prefix from `b[*pos..]` (RFC 7541
/// §5.1); values past `u32::MAX` are refused.
pub fn decode_int(b: &[u8], pos: &mut usize, n: u8) -> Result<u32, HpackError> {
    let first = *b.get(*pos).ok_or(HpackError::Truncated)?;
    *pos += 1;
    let mask = ((1u16 << n) - 1) as u8;
    let mut v = u64::from(first & mask);
    if v < u64::from(mask) {
        return Ok(v as u32);
    }
    let mut shift = 0u32;
    loop {
        let c = *b.get(*pos).ok_or(HpackError::Truncated)?;
        *pos += 1;
        v += u64::from(c & 0x7f) << shift;
        if v > u64::from(u32::MAX) {
            return Err(HpackError::IntegerOverflow);
        }
        if c & 0x80 == 0 {
            return Ok(v as u32);
        }
        shift += 7;
        if shift > 28 {
            return Err(HpackError::IntegerOverflow);
        }
    }
}

/// A string literal: a range of the block (raw) or of the scratch
/// (Huffman-decoded).
#[derive(Clone, Copy)]
enum Str {
    Block(usize, usize),
    Scratch(usize, usize),
}

/// Where a field's name comes from.
#[derive(Clone, Copy)]
enum Name {
    Index(usize),
    Lit(Str),
}

/// An HPACK decoder: its dynamic table and the largest size the peer may
/// give it (this side's SETTINGS_HEADER_TABLE_SIZE).
#[derive(Debug)]
pub struct Decoder {
    table: Dynamic,
    max_allowed: usize,
}

impl Decoder {
    /// A decoder whose table may grow to `max` bytes (4096 by default in
    /// HTTP/2).
    pub fn new(max: usize) -> Decoder {
        Decoder {
            table: Dynamic::new(max),
            max_allowed: max,
        }
    }

    /// The dynamic table.
    pub fn table(&self) -> &Dynamic {
        &self.table
    }

    /// Changes the largest size a table size update may ask for (after
    /// this side's SETTINGS_HEADER_TABLE_SIZE is acknowledged). A smaller
    /// limit shrinks the table at once.
    pub fn set_max_allowed(&mut self, max: usize) {
        self.max_allowed = max;
        if self.table.max_size() > max {
            self.table.set_max_size(max);
        }
    }

    /// Decodes `block`, calling `emit(name, value, never_indexed)` for
    /// each field in order. `scratch` receives Huffman-decoded strings (it
    /// is cleared first; its capacity is reused).
    pub fn decode<F>(
        &mut self,
        block: &[u8],
        scratch: &mut Vec<u8>,
        mut emit: F,
    ) -> Result<(), HpackError>
    where
        F: FnMut(&[u8], &[u8], bool),
    {
        let mut pos = 0;
        let mut fields = false;
        while let Some(&b) = block.get(pos) {
            scratch.clear();
            if b & 0x80 != 0 {
                let i = decode_int(block, &mut pos, 7)? as usize;
                let (n, v) = self.entry(i)?;
                emit(n, v, false);
                fields = true;
            } else if b & 0xe0 == 0x20 {
                if fields {
                    return Err(HpackError::BadSizeUpdate);
                }
                let size = decode_int(block, &mut pos, 5)? as usize;
                if size > self.max_allowed {
                    return Err(HpackError::BadSizeUpdate);
                }
                self.table.set_max_size(size);
            } else {
                let (prefix, index, never) = match b & 0xf0 {
                    0x00 => (4, false, false),
                    0x10 => (4, false, true),
                    _ => (6, true, false),
                };
                let i = decode_int(block, &mut pos, prefix)? as usize;
                let name = if i == 0 {
                    Name::Lit(read_str(block, &mut pos, scratch)?)
                } else {
                    self.entry(i)?;
                    Name::Index(i)
                };
                let value = read_str(block, &mut pos, scratch)?;
                fields = true;
                self.literal(block, scratch, name, value, index, never, &mut emit)?;
            }
        }
        Ok(())
    }

    /// Emits a literal field and, with incremental indexing, adds it to
    /// the table.
    #[allow(clippy::too_many_arguments)]
    fn literal<F>(
        &mut self,
        block: &[u8],
        scratch: &mut Vec<u8>,
        name: Name,
        value: Str,
        index: bool,
        never: bool,
        emit: &mut F,
    ) -> Result<(), HpackError>
    where
        F: FnMut(&[u8], &[u8], bool),
    {
        // The name from a table may be dropped by the insertion: copy it
        // to the scratch first when indexing.
        let name = match name {
            Name::Index(i) if index && i > STATIC.len() => {
                let (n, _) = entry_of(&self.table, i)?;
                let a = scratch.len();
                scratch.extend_from_slice(n);
                Name::Lit(Str::Scratch(a, scratch.len()))
            }
            other => other,
        };
        {
            let v = str_bytes(block, scratch, value);
            match name {
                Name::Index(i) => {
                    let (n, _) = self.entry(i)?;
                    emit(n, v, never);
                }
                Name::Lit(s) => emit(str_bytes(block, scratch, s), v, never),
            }
        }
        if index {
            let v = str_bytes(block, scratch, value);
            match name {
                Name::Index(i) => {
                    // Static names only here (dynamic ones were copied).
                    let (n, _) = STATIC.get(i.wrapping_sub(1)).ok_or(HpackError::BadIndex)?;
                    self.table.insert(n, v);
                }
                Name::Lit(s) => self.table.insert(str_bytes(block, scratch, s), v),
            }
        }
        Ok(())
    }

    /// Entry `i` (1-based) of the static then dynamic table.
    fn entry(&self, i: usize) -> Result<(&[u8], &[u8]), HpackError> {
        entry_of(&self.table, i)
    }
}

fn entry_of(table: &Dynamic, i: usize) -> Result<(&[u8], &[u8]), HpackError> {
    if i == 0 {
        return Err(HpackError::BadIndex);
    }
    if let Some(&(n, v)) = STATIC.get(i - 1) {
        return Ok((n, v));
    }
    table.get(i - 1 - STATIC.len()).ok_or(HpackError::BadIndex)
}

fn str_bytes<'a>(block: &'a [u8], scratch: &'a [u8], s: Str) -> &'a [u8] {
    match s {
        Str::Block(a, b) => block.get(a..b).unwrap_or_default(),
        Str::Scratch(a, b) => scratch.get(a..b).unwrap_or_default(),
    }
}

/// Reads a string literal (RFC 7541 §5.2) at `b[*pos..]`.
fn read_str(b: &[u8], pos: &mut usize, scratch: &mut Vec<u8>) -> Result<Str, HpackError> {
    let huff = b.get(*pos).ok_or(HpackError::Truncated)? & 0x80 != 0;
    let len = decode_int(b, pos, 7)? as usize;
    let end = pos.checked_add(len).ok_or(HpackError::Truncated)?;
    let raw = b.get(*pos..end).ok_or(HpackError::Truncated)?;
    let start = *pos;
    *pos = end;
    if !huff {
        return Ok(Str::Block(start, end));
    }
    let a = scratch.len();
    huffman::decode(raw, scratch).map_err(|_| HpackError::Huffman)?;
    Ok(Str::Scratch(a, scratch.len()))
}

#[cfg(test)]
#[path = "decoder_tests.rs"]
pub(crate) mod tests;
