//! Repository operations are `tracing` spans, commits and retries events
//! inside them, seen by whatever subscriber the application installs.

use std::sync::{Arc, Mutex};

use kvmodel::{KvEntity, MemoryStore};
use serde::{Deserialize, Serialize};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "t", key = "user:{id}")]
#[kv(counter(name = "total"))]
struct User {
    id: String,
    #[kv(unique)]
    email: String,
}

/// A subscriber that writes down every span and event as a line of text;
/// it listens to every target but those in `off`.
#[derive(Clone, Default)]
struct Recorder {
    lines: Arc<Mutex<Vec<String>>>,
    next: Arc<Mutex<u64>>,
    off: &'static [&'static str],
}

struct Fields(String);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.push_str(&format!(" {}={:?}", field.name(), value));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.push_str(&format!(" {}={}", field.name(), value));
    }
}

impl Subscriber for Recorder {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        !self.off.contains(&metadata.target())
    }
    fn new_span(&self, span: &Attributes<'_>) -> Id {
        let mut f = Fields(format!("span {}", span.metadata().name()));
        span.record(&mut f);
        self.lines.lock().unwrap().push(f.0);
        let mut next = self.next.lock().unwrap();
        *next += 1;
        Id::from_u64(*next)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut f = Fields("event".to_owned());
        event.record(&mut f);
        self.lines.lock().unwrap().push(f.0);
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

#[test]
fn operations_are_spans_and_commits_are_events() {
    let recorder = Recorder::default();
    tracing::subscriber::with_default(recorder.clone(), || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(async {
            let users = UserRepo::new(MemoryStore::new());
            let ada = User {
                id: "1".into(),
                email: "ada@x.io".into(),
            };
            users.create(&ada).await.unwrap();
            users.get("1").await.unwrap();
            users.create(&ada).await.unwrap_err();
        });
    });
    let lines = recorder.lines.lock().unwrap().clone();
    let text = lines.join("\n");
    let at = |needle: &str| {
        lines
            .iter()
            .position(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("no `{needle}` in:\n{text}"))
    };
    let create = at("span create entity=User backend=memory key=t:user:1");
    // The record, its claim and its counter: memory keeps no discovery set.
    let commit = at("event message=commit backend=memory conditions=2 ops=3 keys=3");
    assert!(create < commit, "{text}");
    assert!(lines[commit].contains("outcome=applied"), "{text}");
    at("span get entity=User backend=memory key=t:user:1");
    assert!(text.contains("outcome=condition failed"), "{text}");
}

#[test]
fn keys_stay_out_of_spans_when_their_target_is_off() {
    let recorder = Recorder {
        off: &["kvmodel::keys"],
        ..Recorder::default()
    };
    tracing::subscriber::with_default(recorder.clone(), || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(async {
            let users = UserRepo::new(MemoryStore::new());
            let ada = User {
                id: "1".into(),
                email: "ada@x.io".into(),
            };
            users.create(&ada).await.unwrap();
            users
                .modify("1", |u| u.email = "ada@y.io".into())
                .await
                .unwrap();
            users.get("1").await.unwrap();
            users.delete("1").await.unwrap();
        });
    });
    let lines = recorder.lines.lock().unwrap().clone();
    let text = lines.join("\n");
    for op in ["create", "modify", "get", "delete"] {
        assert!(
            lines
                .iter()
                .any(|l| l == &format!("span {op} entity=User backend=memory")),
            "{text}"
        );
    }
    assert!(!text.contains("t:user:1"), "{text}");
    assert!(!text.contains("ada@"), "{text}");
}

#[test]
fn nothing_is_recorded_without_a_subscriber_listening() {
    // A subscriber that listens to nothing: no span or event reaches it.
    #[derive(Clone, Default)]
    struct Deaf(Recorder);
    impl Subscriber for Deaf {
        fn enabled(&self, _: &Metadata<'_>) -> bool {
            false
        }
        fn new_span(&self, span: &Attributes<'_>) -> Id {
            self.0.new_span(span)
        }
        fn record(&self, _: &Id, _: &Record<'_>) {}
        fn record_follows_from(&self, _: &Id, _: &Id) {}
        fn event(&self, event: &Event<'_>) {
            self.0.event(event)
        }
        fn enter(&self, _: &Id) {}
        fn exit(&self, _: &Id) {}
    }
    let deaf = Deaf::default();
    tracing::subscriber::with_default(deaf.clone(), || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(async {
            let users = UserRepo::new(MemoryStore::new());
            users
                .create(&User {
                    id: "1".into(),
                    email: "a".into(),
                })
                .await
                .unwrap();
        });
    });
    assert!(deaf.0.lines.lock().unwrap().is_empty());
}
