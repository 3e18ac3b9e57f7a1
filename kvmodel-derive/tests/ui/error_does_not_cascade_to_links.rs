use serde::{Deserialize, Serialize};

// One mistake (a relation by a field that does not exist) and code that
// uses the methods the stand-in once lacked: maintenance (`sweep_expired`,
// `purge`), `get_many`, `with_partial_reads`, and a link's methods on both
// repositories. The compiler reports the mistake and nothing else.
#[derive(Clone, Serialize, Deserialize, kvmodel::KvEntity)]
#[kv(namespace = "blog", key = "post:{id}")]
#[kv(relation(name = "author", belongs_to = Tag, by = autor_id))]
#[kv(link(name = "tags", to = Tag, inverse = "posts"))]
pub struct Post {
    pub id: String,
    pub author_id: String,
}

#[derive(Clone, Serialize, Deserialize, kvmodel::KvEntity)]
#[kv(namespace = "blog", key = "tag:{name}")]
pub struct Tag {
    pub name: String,
}

async fn uses(store: kvmodel::MemoryStore) -> kvmodel::Result<()> {
    let posts = PostRepo::new(store.clone()).with_partial_reads();
    let tags = TagRepo::new(store);
    let _swept: kvmodel::Sweep = posts.sweep_expired(100).await?;
    let _purged: bool = posts.purge("p1").await?;
    let _many: Vec<Option<Post>> = posts.get_many(&["p1", "p2"]).await?;
    let _linked: bool = posts.link_tags("p1", "rust").await?;
    let _unlinked: bool = posts.unlink_tags("p1", "rust").await?;
    let _tags: kvmodel::Page<Tag> = posts.list_tags("p1", kvmodel::PageRequest::new(10)).await?;
    let _n: i64 = posts.count_tags("p1").await?;
    let _posts: kvmodel::Page<Post> = tags.list_posts("rust", kvmodel::PageRequest::new(10)).await?;
    let _m: i64 = tags.count_posts("rust").await?;
    let _page = posts.list_by_author("t1", kvmodel::PageRequest::new(10)).await?;
    let _key: String = PostKeys::relation_author("t1");
    Ok(())
}

fn main() {
    let _ = uses;
}
