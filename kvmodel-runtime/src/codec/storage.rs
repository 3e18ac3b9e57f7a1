//! How an entity's records are stored, beyond their envelope: the largest
//! encoded record it accepts (`max_size`), and whether large ones are
//! compressed (`compress`).

use crate::codec::compress::{self, Codec, Compress};
use crate::codec::record::MAX_RECORD_BYTES;
use crate::error::{Error, Result};

/// The storage settings of an entity, applied to every record it writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Storage {
    /// The largest encoded record accepted, in bytes, measured before any
    /// compression (`max_size`); `None` leaves only the store-wide limit
    /// [`MAX_RECORD_BYTES`].
    pub max_size: Option<usize>,
    /// Records at or above a threshold are compressed (`compress`).
    pub compress: Option<Compress>,
}

impl Storage {
    /// No limit of the entity's own.
    pub const PLAIN: Storage = Storage {
        max_size: None,
        compress: None,
    };

    /// These settings with a limit of `bytes`.
    pub const fn max_size(self, bytes: usize) -> Storage {
        let mut s = self;
        s.max_size = Some(bytes);
        s
    }

    /// These settings, compressing with `codec` every record whose encoded
    /// envelope is `above` bytes or more.
    pub const fn compress(self, codec: Codec, above: usize) -> Storage {
        let mut s = self;
        s.compress = Some(Compress { codec, above });
        s
    }

    /// The limit in force: the entity's `max_size`, never more than
    /// [`MAX_RECORD_BYTES`].
    pub fn limit(&self) -> usize {
        self.max_size
            .map_or(MAX_RECORD_BYTES, |m| m.min(MAX_RECORD_BYTES))
    }

    /// The bytes to store for the encoded record `encoded` of `entity` at
    /// `key`, or [`Error::ValueTooLarge`] when it is larger than the limit
    /// (measured before compression). A record at or above the `compress`
    /// threshold is stored compressed; a smaller one as it is.
    pub fn seal(&self, entity: &'static str, key: &str, encoded: Vec<u8>) -> Result<Vec<u8>> {
        let limit = self.limit();
        if encoded.len() > limit {
            return Err(Error::ValueTooLarge {
                entity,
                key: key.to_owned(),
                size: encoded.len(),
                limit,
            });
        }
        match self.compress {
            Some(c) if encoded.len() >= c.above => compress::pack(key, c.codec, &encoded),
            _ => Ok(encoded),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Storage;

    #[test]
    fn a_record_above_the_limit_is_refused() {
        let limited = Storage::PLAIN.max_size(1024);
        assert!(
            limited
                .seal("Post", "blog:post:1", vec![b'x'; 1024])
                .is_ok()
        );
        assert!(
            limited
                .seal("Post", "blog:post:1", vec![b'x'; 1025])
                .is_err()
        );
    }
}
