//! Delete plans on a server ([`Store::delete_plans`]): what a write
//! stores beside a record so that its delete is one round trip, and how
//! the delete script's answer reads.
//!
//! A plan is the batch that deletes the record, its entries and the plan,
//! in `commit.lua`'s form ([`commit_args`]), after the first 16 hex digits
//! of the SHA1 of the record bytes it was written for, the 16 of the
//! entity's tag (the fingerprint of the code that derived the entries) and
//! the form of plan ([`FORM`]), as one MessagePack array (`lua/delete.lua`
//! reads it with `cmsgpack`, and checks it holds only removals). The
//! digest ties the plan to the record, the tag to the schema, the form to
//! this code: a writer that keeps no plan and rewrites the record, a schema
//! that derives other entries from the same bytes, or a runtime that writes
//! plans otherwise, leaves a plan that does not apply, and the delete goes
//! the usual way.
//!
//! [`Store::delete_plans`]: crate::Store::delete_plans

use redis::Value;

use crate::error::Result;
use crate::store::PlannedDelete;
use crate::store::batch::Batch;
use crate::store::counter::stamped;
use crate::store::redis::wire::{commit_args, unexpected};

/// The hex digits of the record's SHA1 a plan keeps: enough that bytes
/// written by another writer never match by chance.
const DIGEST: usize = 16;

/// The form of a plan this code writes and runs, after the tag in its
/// first field: a plan another form wrote is never used. Raise it whenever
/// what a plan holds changes (`commit.lua`'s form, key or entry spellings,
/// change stamps).
const FORM: &str = "01";

/// Lowercase hex digits, as `redis.sha1hex` writes them.
const HEX: &[u8; 16] = b"0123456789abcdef";

/// The plan stored beside the record whose stored bytes are `record`, for
/// the batch `delete` that deletes it (with the change stamps a commit of
/// it raises).
pub(crate) fn encode(record: &[u8], tag: u64, delete: Batch) -> Result<Vec<u8>> {
    let delete = stamped(delete);
    let (keys, argv) = commit_args(&delete)?;
    let sha = sha1_smol::Sha1::from(record).digest().bytes();
    let size = 4
        + DIGEST
        + keys.iter().map(|k| k.len() + 5).sum::<usize>()
        + argv.iter().map(|a| a.len() + 5).sum::<usize>()
        + 10;
    let mut out = Vec::with_capacity(size);
    out.push(0x93);
    // The digest, the tag, the form: 34 hex digits.
    out.extend_from_slice(&[0xd9, (DIGEST + 16 + FORM.len()) as u8]);
    for b in sha[..DIGEST / 2].iter().chain(&tag.to_be_bytes()) {
        out.push(HEX[usize::from(b >> 4)]);
        out.push(HEX[usize::from(b & 0xf)]);
    }
    out.extend_from_slice(FORM.as_bytes());
    array(&mut out, keys.len());
    for k in keys {
        text(&mut out, k.as_bytes());
    }
    array(&mut out, argv.len());
    for a in &argv {
        text(&mut out, a);
    }
    Ok(out)
}

/// A MessagePack array header of `n` items.
fn array(out: &mut Vec<u8>, n: usize) {
    match n {
        0..16 => out.push(0x90 | n as u8),
        16..=0xffff => {
            out.push(0xdc);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        }
        _ => {
            out.push(0xdd);
            out.extend_from_slice(&(n as u32).to_be_bytes());
        }
    }
}

/// A MessagePack string of `bytes` (any bytes: `cmsgpack` reads it as a
/// Lua string, which holds any).
fn text(out: &mut Vec<u8>, bytes: &[u8]) {
    let n = bytes.len();
    match n {
        0..32 => out.push(0xa0 | n as u8),
        32..=0xff => out.extend_from_slice(&[0xd9, n as u8]),
        0x100..=0xffff => {
            out.push(0xda);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        }
        _ => {
            out.push(0xdb);
            out.extend_from_slice(&(n as u32).to_be_bytes());
        }
    }
    out.extend_from_slice(bytes);
}

/// What the delete script compares with the start of a plan, after the
/// record's digest: the entity's tag and the form of plans this code runs.
pub(crate) fn tag_arg(tag: u64) -> Vec<u8> {
    format!("{tag:016x}{FORM}").into_bytes()
}

/// What the delete script answered.
pub(crate) fn answer(value: &Value, backend: &'static str) -> Result<PlannedDelete> {
    if let Value::Array(items) = value
        && let [Value::Int(n)] = items.as_slice()
    {
        match n {
            1 => return Ok(PlannedDelete::Deleted),
            2 => return Ok(PlannedDelete::Absent),
            -9 => return Ok(PlannedDelete::Unplanned),
            _ => {}
        }
    }
    Err(unexpected(backend, value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_is_a_messagepack_array_of_digest_keys_and_values() {
        let mut b = Batch::new();
        b.delete("ns:e:1")
            .delete_if_equals("ns:e#uniq:u:x", b"ns:e:1".to_vec())
            .incr("ns:e#count:total", -1)
            .delete("ns:e#drop:e:1");
        let plan = encode(b"{}", 0xfeed, b).unwrap();
        assert_eq!(plan[0], 0x93);
        // The digest, SHA1("{}") = bf21a9e8fbc5a384…, then the tag.
        assert_eq!(&plan[1..37], b"\xd9\x22bf21a9e8fbc5a384000000000000feed01");
        assert_eq!(&plan[19..37], &tag_arg(0xfeed)[..]);
        // Four keys and a stamp: five.
        assert_eq!(plan[37], 0x95);
        assert_eq!(&plan[38..45], b"\xa6ns:e:1");
        let long = vec![7u8; 300];
        let mut out = Vec::new();
        text(&mut out, &long);
        assert_eq!(&out[..3], &[0xda, 0x01, 0x2c]);
        assert_eq!(out.len(), 303);
        let mut out = Vec::new();
        array(&mut out, 20);
        assert_eq!(out, [0xdc, 0, 20]);
    }
}
