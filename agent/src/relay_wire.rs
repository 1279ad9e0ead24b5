//! Frames of the relay (`pocketdock-agent relay`): many helper connections
//! over one byte stream, the stdin and stdout of one exec.
//!
//! After [`GREETING`], each frame is an ordinary [`crate::wire`] frame
//! whose tag is [`OPEN`], [`DATA`] or [`CLOSE`] and whose payload starts
//! with the channel number (`u32 LE`). A channel carries the bytes one
//! socket connection would carry, greeting included.

use crate::wire::Malformed;

/// Written by the relay when it starts: magic + protocol version.
pub const GREETING: &[u8; 8] = b"PDRELAY1";

/// Host → relay: a new connection on this channel.
pub const OPEN: u8 = b'o';
/// Either way: bytes of the channel's connection.
pub const DATA: u8 = b'd';
/// Either way: the sender will write no more on this channel.
pub const CLOSE: u8 = b'c';

/// One frame's bytes.
#[must_use]
pub fn frame(kind: u8, chan: u32, data: &[u8]) -> Vec<u8> {
    let mut payload = Vec::with_capacity(4 + data.len());
    payload.extend_from_slice(&chan.to_le_bytes());
    payload.extend_from_slice(data);
    crate::wire::frame(kind, &payload)
}

/// A frame's payload as (channel, data).
pub fn split(payload: &[u8]) -> Result<(u32, &[u8]), Malformed> {
    match payload {
        [a, b, c, d, data @ ..] => Ok((u32::from_le_bytes([*a, *b, *c, *d]), data)),
        _ => Err(Malformed("relay frame without a channel")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_carries_its_channel_and_data() {
        let f = frame(DATA, 7, b"hello");
        let (tag, range) = crate::wire::split_frame(&f).unwrap().unwrap();
        assert_eq!(tag, DATA);
        assert_eq!(split(&f[range]).unwrap(), (7, &b"hello"[..]));
        assert!(split(b"abc").is_err());
    }
}
