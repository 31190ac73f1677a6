//! Incremental chunked-body validator ([`ChunkedState`]).
//!
//! A byte-level state machine (RFC 9112 §7.1) that works with any split of
//! the body across calls. Chunk data is skipped by counting and never
//! inspected; framing lines are strict: CRLF only (bare LF or CR followed by
//! anything but LF is rejected), at most 16 hex digits per size, chunk-size
//! line (extensions included) at most [`MAX_CHUNK_LINE`] bytes, trailer
//! section at most [`MAX_TRAILERS`] bytes. Errors carry status 400 and the
//! offset counted from the first byte of the body (all feeds together).

use crate::framing::is_tchar;
use crate::{ChunkProgress, ChunkedState, HttpError};

/// Longest accepted chunk-size line (size + extensions, without CRLF).
pub const MAX_CHUNK_LINE: usize = 4096;
/// Largest accepted trailer section (all trailer lines with their CRLFs).
pub const MAX_TRAILERS: usize = 16 * 1024;
/// Most hex digits in a chunk size (16 fit a `u64` exactly).
const MAX_SIZE_DIGITS: u32 = 16;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum St {
    /// Expecting the first hex digit of a chunk size.
    #[default]
    SizeStart,
    /// Inside the hex digits.
    Size,
    /// Whitespace after the size: only `;` (an extension) may follow.
    SizeWs,
    /// Inside chunk extensions, up to CR.
    Ext,
    /// CR of the size line seen, LF required.
    SizeLf,
    /// Counting chunk data.
    Data,
    /// CR required after the data.
    DataCr,
    /// LF required after the data's CR.
    DataLf,
    /// Start of a trailer line, or CR of the final empty line.
    TrailerStart,
    /// Inside a trailer field name.
    TrailerName,
    /// Inside a trailer field value, up to CR.
    TrailerValue,
    /// LF required after a trailer line's CR.
    TrailerLf,
    /// LF of the final empty line required.
    FinalLf,
    /// Body complete.
    Done,
    /// An error was reported; it is reported again on every feed.
    Failed,
}

fn hex_val(b: u8) -> Option<u64> {
    match b {
        b'0'..=b'9' => Some(u64::from(b - b'0')),
        b'a'..=b'f' => Some(u64::from(b - b'a' + 10)),
        b'A'..=b'F' => Some(u64::from(b - b'A' + 10)),
        _ => None,
    }
}

/// Bytes allowed in extensions and trailer values: HTAB, visible ASCII,
/// space, obs-text. Not CR, LF, other controls or DEL.
fn is_text(b: u8) -> bool {
    b == b'\t' || (0x20..0x7f).contains(&b) || b >= 0x80
}

impl ChunkedState {
    pub fn new() -> Self {
        Self::default()
    }

    /// True once the whole body (final CRLF included) has been seen.
    pub fn is_done(&self) -> bool {
        self.st == St::Done
    }

    /// Total body bytes consumed so far (up to the end when done).
    pub fn consumed(&self) -> u64 {
        self.pos
    }

    /// Feeds the next bytes of the body. Rejects invalid chunk sizes
    /// (non-hex, overflow, empty), a missing CRLF after chunk data, bare LF
    /// in framing lines, and oversized chunk-size/extension lines, with
    /// status 400.
    ///
    /// After `Done`, further feeds return `Done(0)`; after an error, they
    /// return the same error.
    pub fn feed(&mut self, data: &[u8]) -> Result<ChunkProgress, HttpError> {
        self.feed_with(data, |_| {})
    }

    /// [`ChunkedState::feed`] that also hands each run of chunk data (the
    /// decoded body, framing and trailers left out) to `on_data`, in order,
    /// without copying: what a client that needs the body itself uses
    /// (health checks matching the content).
    pub fn feed_with(
        &mut self,
        data: &[u8],
        mut on_data: impl FnMut(&[u8]),
    ) -> Result<ChunkProgress, HttpError> {
        if let Some(e) = self.err {
            return Err(e);
        }
        if self.st == St::Done {
            return Ok(ChunkProgress::Done(0));
        }
        let mut i = 0;
        while i < data.len() {
            if self.st == St::Data {
                let avail = (data.len() - i) as u64;
                let n = self.size.min(avail);
                on_data(&data[i..i + n as usize]);
                self.size -= n;
                i += n as usize;
                self.pos += n;
                if self.size == 0 {
                    self.st = St::DataCr;
                }
                continue;
            }
            let b = data[i];
            if let Err(reason) = self.step(b) {
                let e =
                    HttpError::new(400, reason, usize::try_from(self.pos).unwrap_or(usize::MAX));
                self.st = St::Failed;
                self.err = Some(e);
                return Err(e);
            }
            i += 1;
            self.pos += 1;
            if self.st == St::Done {
                return Ok(ChunkProgress::Done(i));
            }
        }
        Ok(ChunkProgress::NeedMore)
    }

    /// One framing byte (never called in `Data`).
    fn step(&mut self, b: u8) -> Result<(), &'static str> {
        match self.st {
            St::SizeStart => {
                let v = hex_val(b).ok_or("invalid chunk size")?;
                self.size = v;
                self.digits = 1;
                self.line_len = 1;
                self.st = St::Size;
            }
            St::Size => {
                self.line_byte()?;
                if let Some(v) = hex_val(b) {
                    self.digits += 1;
                    if self.digits > MAX_SIZE_DIGITS {
                        return Err("chunk size too large");
                    }
                    self.size = self
                        .size
                        .checked_mul(16)
                        .and_then(|s| s.checked_add(v))
                        .ok_or("chunk size too large")?;
                } else {
                    self.after_size(b)?;
                }
            }
            St::SizeWs => {
                self.line_byte()?;
                match b {
                    b' ' | b'\t' => {}
                    b';' => self.st = St::Ext,
                    b'\n' => return Err("bare LF in chunk size line"),
                    _ => return Err("invalid chunk size"),
                }
            }
            St::Ext => {
                self.line_byte()?;
                match b {
                    b'\r' => self.st = St::SizeLf,
                    b'\n' => return Err("bare LF in chunk size line"),
                    _ if is_text(b) => {}
                    _ => return Err("invalid byte in chunk extension"),
                }
            }
            St::SizeLf => {
                if b != b'\n' {
                    return Err("CR not followed by LF in chunk size line");
                }
                if self.size == 0 {
                    self.trailer_len = 0;
                    self.st = St::TrailerStart;
                } else {
                    self.st = St::Data;
                }
            }
            St::DataCr => {
                if b != b'\r' {
                    return Err("missing CRLF after chunk data");
                }
                self.st = St::DataLf;
            }
            St::DataLf => {
                if b != b'\n' {
                    return Err("missing CRLF after chunk data");
                }
                self.st = St::SizeStart;
            }
            St::TrailerStart => {
                if b == b'\r' {
                    self.st = St::FinalLf;
                    return Ok(());
                }
                self.trailer_byte()?;
                match b {
                    b'\n' => return Err("bare LF in trailer section"),
                    _ if is_tchar(b) => self.st = St::TrailerName,
                    _ => return Err("invalid trailer field"),
                }
            }
            St::TrailerName => {
                self.trailer_byte()?;
                match b {
                    b':' => self.st = St::TrailerValue,
                    _ if is_tchar(b) => {}
                    _ => return Err("invalid trailer field name"),
                }
            }
            St::TrailerValue => {
                self.trailer_byte()?;
                match b {
                    b'\r' => self.st = St::TrailerLf,
                    b'\n' => return Err("bare LF in trailer section"),
                    _ if is_text(b) => {}
                    _ => return Err("invalid byte in trailer field"),
                }
            }
            St::TrailerLf => {
                self.trailer_byte()?;
                if b != b'\n' {
                    return Err("CR not followed by LF in trailer section");
                }
                self.st = St::TrailerStart;
            }
            St::FinalLf => {
                if b != b'\n' {
                    return Err("CR not followed by LF at end of chunked body");
                }
                self.st = St::Done;
            }
            St::Data | St::Done | St::Failed => unreachable!("handled by feed"),
        }
        Ok(())
    }

    /// What may follow the hex digits of a chunk size.
    fn after_size(&mut self, b: u8) -> Result<(), &'static str> {
        match b {
            b';' => self.st = St::Ext,
            b' ' | b'\t' => self.st = St::SizeWs,
            b'\r' => self.st = St::SizeLf,
            b'\n' => return Err("bare LF in chunk size line"),
            _ => return Err("invalid chunk size"),
        }
        Ok(())
    }

    fn line_byte(&mut self) -> Result<(), &'static str> {
        self.line_len += 1;
        if self.line_len as usize > MAX_CHUNK_LINE {
            return Err("chunk size line too long");
        }
        Ok(())
    }

    fn trailer_byte(&mut self) -> Result<(), &'static str> {
        self.trailer_len += 1;
        if self.trailer_len as usize > MAX_TRAILERS {
            return Err("trailer section too large");
        }
        Ok(())
    }
}
