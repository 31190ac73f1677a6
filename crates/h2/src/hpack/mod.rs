//! HPACK (RFC 7541): integers and string literals, Huffman coding, the
//! static and dynamic tables, a [`Decoder`] and an [`Encoder`].

pub mod decoder;
pub mod encoder;
pub mod huffman;
pub mod table;

pub use decoder::{Decoder, HpackError};
pub use encoder::Encoder;
