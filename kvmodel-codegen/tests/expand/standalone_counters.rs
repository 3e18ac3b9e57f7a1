/// Page views per page and day.
#[derive(Debug, Clone, PartialEq, Eq, KvCounter)]
#[kv(namespace = "site", key = "views:{page}:{day}", ttl = "2d", shards = 4)]
pub struct PageViews {
    pub page: String,
    pub day: Date,
}

#[derive(Debug, Clone, PartialEq, Eq, KvCounter)]
#[kv(namespace = "site", key = "total")]
pub struct Total {}

#[derive(Debug, Clone, PartialEq, Eq, KvCounter)]
#[kv(namespace = "site", key = "hits:{n}", crate = "my_crate::kvmodel")]
pub struct Hits {
    pub n: u64,
}
