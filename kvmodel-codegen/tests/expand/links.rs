// Links, referential actions and optional fields: a blog.

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "blog", key = "author:{id}")]
#[kv(dependent(entity = Post, relation = author))]
pub struct Author {
    pub id: String,
    #[kv(unique)]
    pub handle: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "blog", key = "post:{id}")]
#[kv(relation(name = "author", belongs_to = Author, by = author_id, on_delete = "cascade"))]
#[kv(link(name = "tags", to = Tag, inverse = "posts"))]
#[kv(index(name = "by_slug_lang", fields(slug, lang), unique))]
pub struct Post {
    pub id: String,
    pub author_id: String,
    pub slug: Option<String>,
    pub lang: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "blog", key = "tag:{name}")]
pub struct Tag {
    pub name: String,
}
