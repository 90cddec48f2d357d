//! Where a problem sits in a file's value tree (`$.arm6[0].states[12].cube_red.rot`), for the
//! errors of reading typed demos (`de.rs`), of encoding JSON (`format.rs`) and of recovering a
//! recording journal (`record.rs`).

use std::fmt::Write as _;

/// A position in the value tree, kept as a chain of borrowed segments so that building one costs
/// nothing; it is rendered only when an error needs it.
pub(super) struct Loc<'a> {
    parent: Option<&'a Loc<'a>>,
    seg: Seg<'a>,
}

#[derive(Clone, Copy)]
enum Seg<'a> {
    Root,
    Key(&'a str),
    Index(usize),
}

impl<'a> Loc<'a> {
    pub(super) fn root() -> Loc<'static> {
        Loc {
            parent: None,
            seg: Seg::Root,
        }
    }

    pub(super) fn key<'b>(&'b self, key: &'b str) -> Loc<'b> {
        Loc {
            parent: Some(self),
            seg: Seg::Key(key),
        }
    }

    pub(super) fn index(&self, i: usize) -> Loc<'_> {
        Loc {
            parent: Some(self),
            seg: Seg::Index(i),
        }
    }

    pub(super) fn render(&self) -> String {
        let mut segs = Vec::new();
        let mut at = Some(self);
        while let Some(loc) = at {
            segs.push(loc.seg);
            at = loc.parent;
        }
        let mut out = String::new();
        for seg in segs.into_iter().rev() {
            match seg {
                Seg::Root => out.push('$'),
                Seg::Index(i) => {
                    let _ = write!(out, "[{i}]");
                }
                Seg::Key(k) => push_key(&mut out, k),
            }
        }
        out
    }

    pub(super) fn is_root(&self) -> bool {
        self.parent.is_none()
    }
}

/// Appends `.key`, or `["key"]` where the key is not a plain name.
pub(super) fn push_key(out: &mut String, k: &str) {
    if !k.is_empty()
        && k.chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '-')
    {
        out.push('.');
        out.push_str(k);
    } else {
        let _ = write!(out, "[{k:?}]");
    }
}
