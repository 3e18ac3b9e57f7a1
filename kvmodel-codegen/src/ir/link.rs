//! `links:`: a many-to-many link between two entities, without a junction
//! record.

use crate::origin::{Origin, Sp};

/// A many-to-many link declared on one entity (`Post.links.tags: { to: Tag,
/// inverse: posts }`): `link_tags`/`unlink_tags` write both directions in
/// one commit, `list_tags`/`count_tags` read this side, and the far entity's
/// repository gets `list_posts`/`count_posts`.
#[derive(Clone, Debug, PartialEq)]
pub struct Link {
    /// The link's name on this side (`tags`).
    pub name: Sp<String>,
    /// The far entity: a type name in YAML, a path in the derive (`Tag`).
    pub to: Sp<String>,
    /// The link's name on the far side (`posts`).
    pub inverse: Sp<String>,
    /// What it is for, in the schema author's words.
    pub description: Option<String>,
    /// Where it was declared.
    pub origin: Origin,
}

impl Link {
    /// A link declared where its name is.
    pub fn new(name: Sp<String>, to: Sp<String>, inverse: Sp<String>) -> Self {
        Link {
            origin: name.origin.clone(),
            name,
            to,
            inverse,
            description: None,
        }
    }

    /// The far entity's type name: the last segment of `to`.
    pub fn to_name(&self) -> &str {
        self.to.rsplit("::").next().unwrap_or(&self.to).trim()
    }
}
