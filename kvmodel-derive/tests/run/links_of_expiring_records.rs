// Links may join records that expire, by an entity `ttl` or by their own
// expiry field, on either side: both directions are listed and counted.
use serde::{Deserialize, Serialize};
use std::future::Future;
use std::task::{Context, Poll, Waker};

#[derive(Debug, Clone, Serialize, Deserialize, kvmodel::KvEntity)]
#[kv(namespace = "blog", key = "post:{id}")]
#[kv(link(name = "seen_in", to = Session, inverse = "posts"))]
pub struct Post {
    pub id: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, kvmodel::KvEntity)]
#[kv(namespace = "blog", key = "session:{id}", ttl = "30m")]
pub struct Session {
    pub id: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, kvmodel::KvEntity)]
#[kv(namespace = "blog", key = "ad:{id}")]
#[kv(link(name = "posts", to = Post, inverse = "ads"))]
pub struct Ad {
    pub id: String,
    #[kv(expiry)]
    pub ends: kvmodel::Timestamp,
}

/// Runs a future that the in-memory store completes without waiting.
fn ready<F: Future>(f: F) -> F::Output {
    let mut f = std::pin::pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    for _ in 0..1000 {
        if let Poll::Ready(out) = f.as_mut().poll(&mut cx) {
            return out;
        }
    }
    panic!("the in-memory store did not complete");
}

fn main() {
    let store = kvmodel::MemoryStore::new();
    let (posts, sessions, ads) = (
        PostRepo::new(store.clone()),
        SessionRepo::new(store.clone()),
        AdRepo::new(store.clone()),
    );
    let now = ready(kvmodel::Store::now_ms(&store)).unwrap();
    let ends = kvmodel::Timestamp::from_unix_millis(i64::try_from(now).unwrap() + 3_600_000);
    ready(posts.create(&Post { id: "p".into() })).unwrap();
    ready(sessions.create(&Session { id: "s".into() })).unwrap();
    ready(ads.create(&Ad { id: "a".into(), ends: ends.unwrap() })).unwrap();
    assert!(ready(posts.link_seen_in("p", "s")).unwrap());
    assert!(ready(ads.link_posts("a", "p")).unwrap());
    let page = kvmodel::PageRequest::new(10);
    let seen: Vec<String> = ready(sessions.list_posts("s", page.clone())).unwrap().items.into_iter().map(|p| p.id).collect();
    assert_eq!(seen, ["p"]);
    let ads_of: Vec<String> = ready(posts.list_ads("p", page)).unwrap().items.into_iter().map(|a| a.id).collect();
    assert_eq!(ads_of, ["a"]);
    assert_eq!(ready(posts.count_seen_in("p")).unwrap(), 1);
    assert_eq!(ready(ads.count_posts("a")).unwrap(), 1);
}
