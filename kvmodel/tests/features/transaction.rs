//! Transactions across repositories, on every backend: writes of several
//! entities with their upkeep and the reads they depend on commit all or
//! nothing.

use std::sync::Arc;

use kvmodel::conformance::Harness;
use kvmodel::{Error, KvEntity, Store};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "tx", key = "product:{id}")]
#[kv(index(name = "by_shelf", fields(shelf), order_by = stock))]
#[kv(counter(name = "stock_total", sum = stock))]
#[kv(dependent(entity = Order, relation = product))]
pub struct Product {
    pub id: String,
    pub shelf: String,
    pub stock: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "tx", key = "order:{id}")]
#[kv(relation(name = "product", belongs_to = Product, by = product_id, order_by = buyer, on_delete = "restrict"))]
#[kv(counter(name = "per_product", group_by(product_id)))]
#[kv(counter(name = "total"))]
pub struct Order {
    pub id: String,
    pub product_id: String,
    pub buyer: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "tx", key = "account:{id}")]
#[kv(counter(name = "total"))]
pub struct Account {
    pub id: String,
    #[kv(unique)]
    pub email: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "tx", key = "session:{id}", ttl = "1s")]
#[kv(counter(name = "total"))]
pub struct Session {
    pub id: String,
    #[kv(unique)]
    pub token: String,
}

fn session(id: &str, token: &str) -> Session {
    Session {
        id: id.into(),
        token: token.into(),
    }
}

/// Places an order for `product` by `buyer` if it is in stock: one
/// transaction that reads the product, decrements its stock and creates
/// the order. `Ok(false)` when sold out.
async fn buy<S: Store>(
    store: &S,
    products: &ProductRepo<S>,
    orders: &OrderRepo<S>,
    product: &str,
    buyer: &str,
) -> kvmodel::Result<bool> {
    kvmodel::transaction(store, |tx| async move {
        let Some(p) = products
            .in_tx(&tx)
            .get(&ProductKeys::record(product))
            .await?
        else {
            return Ok(false);
        };
        if p.stock == 0 {
            return Ok(false);
        }
        products
            .in_tx(&tx)
            .update(&Product {
                stock: p.stock - 1,
                ..p
            })
            .await?;
        orders
            .in_tx(&tx)
            .create(&Order {
                id: format!("{product}-{buyer}"),
                product_id: product.to_owned(),
                buyer: buyer.to_owned(),
            })
            .await?;
        Ok(true)
    })
    .await
}

/// 16 buyers race for 5 items: exactly 5 orders, stock 0, every counter
/// and index in step.
async fn concurrent_buyers_never_oversell<H: Harness>(h: &H) {
    let store = h.store();
    let products = ProductRepo::new(store.clone());
    let orders = OrderRepo::new(store.clone());
    products
        .create(&Product {
            id: "p1".into(),
            shelf: "a".into(),
            stock: 5,
        })
        .await
        .unwrap();
    let shared = Arc::new((store, products.clone(), orders.clone()));
    let tasks: Vec<_> = (0..16)
        .map(|i| {
            let shared = Arc::clone(&shared);
            tokio::spawn(async move {
                let (store, products, orders) = &*shared;
                buy(store, products, orders, "p1", &format!("b{i:02}")).await
            })
        })
        .collect();
    let (mut bought, mut gave_up) = (0, 0);
    for t in tasks {
        match t.await.unwrap() {
            Ok(true) => bought += 1,
            Ok(false) => {}
            // Under heavy contention a buyer may give up; it wrote nothing.
            Err(Error::Conflict { .. }) => gave_up += 1,
            Err(e) => panic!("a buyer failed: {e}"),
        }
    }
    let p = products.get("p1").await.unwrap().unwrap();
    assert_eq!(p.stock, 5 - bought, "stock follows the orders");
    assert!(bought <= 5, "never oversold: {bought} orders");
    assert!(bought == 5 || gave_up > 0, "sold out unless buyers gave up");
    let stored = orders
        .list_all(kvmodel::PageRequest::new(100))
        .await
        .unwrap()
        .items;
    assert_eq!(stored.len() as i64, bought, "one order per sale");
    assert_eq!(orders.count_total().await.unwrap(), bought);
    assert_eq!(orders.count_per_product("p1").await.unwrap(), bought);
    assert_eq!(products.sum_stock_total().await.unwrap(), 5 - bought);
    assert!(products.verify(16).await.unwrap().is_clean());
    assert!(orders.verify(16).await.unwrap().is_clean());
}

/// A transaction whose last write is refused applies none of its writes.
async fn a_refused_write_applies_nothing<H: Harness>(h: &H) {
    let store = h.store();
    let products = ProductRepo::new(store.clone());
    let accounts = AccountRepo::new(store.clone());
    products
        .create(&Product {
            id: "p1".into(),
            shelf: "a".into(),
            stock: 3,
        })
        .await
        .unwrap();
    accounts
        .create(&Account {
            id: "a1".into(),
            email: "taken@x.io".into(),
        })
        .await
        .unwrap();
    let tx = kvmodel::Transaction::new(store.clone());
    products
        .in_tx(&tx)
        .modify(&ProductKeys::record("p1"), |p| p.stock = 0)
        .await
        .unwrap();
    accounts
        .in_tx(&tx)
        .create(&Account {
            id: "a2".into(),
            email: "taken@x.io".into(),
        })
        .await
        .unwrap();
    match tx.commit().await {
        Err(Error::UniqueViolation { .. }) => {}
        other => panic!("expected a unique violation, got {other:?}"),
    }
    assert_eq!(products.get("p1").await.unwrap().unwrap().stock, 3);
    assert_eq!(products.sum_stock_total().await.unwrap(), 3);
    assert_eq!(accounts.get("a2").await.unwrap(), None);
    assert_eq!(accounts.count_total().await.unwrap(), 1);

    // A read record changed before the commit: the explicit form fails
    // with a conflict, writing nothing.
    let tx = kvmodel::Transaction::new(store.clone());
    let p = products
        .in_tx(&tx)
        .get(&ProductKeys::record("p1"))
        .await
        .unwrap()
        .unwrap();
    accounts
        .in_tx(&tx)
        .create(&Account {
            id: "a3".into(),
            email: "a3@x.io".into(),
        })
        .await
        .unwrap();
    products
        .update(&Product {
            stock: p.stock + 10,
            ..p
        })
        .await
        .unwrap();
    match tx.commit().await {
        Err(Error::Conflict { .. }) => {}
        other => panic!("expected a conflict, got {other:?}"),
    }
    assert_eq!(accounts.get("a3").await.unwrap(), None);
    assert_eq!(accounts.count_total().await.unwrap(), 1);

    // An error of the closure ends the transaction with nothing written.
    let accounts = &accounts;
    let r: kvmodel::Result<()> = kvmodel::transaction(&store, |tx| async move {
        accounts
            .in_tx(&tx)
            .create(&Account {
                id: "a4".into(),
                email: "a4@x.io".into(),
            })
            .await?;
        Err(Error::NotFound {
            entity: "Product",
            key: "p9".into(),
        })
    })
    .await;
    assert!(matches!(r, Err(Error::NotFound { .. })));
    assert_eq!(accounts.get("a4").await.unwrap(), None);
}

/// Two writes of one record, or two records claiming one unique value,
/// in one transaction are refused when staged.
async fn writes_that_do_not_compose_are_refused<H: Harness>(h: &H) {
    let store = h.store();
    let accounts = AccountRepo::new(store.clone());
    let tx = kvmodel::Transaction::new(store.clone());
    let a = |id: &str, email: &str| Account {
        id: id.into(),
        email: email.into(),
    };
    accounts.in_tx(&tx).create(&a("x", "x@x.io")).await.unwrap();
    assert!(matches!(
        accounts.in_tx(&tx).create(&a("y", "x@x.io")).await,
        Err(Error::UniqueViolation { .. })
    ));
    assert!(matches!(
        accounts.in_tx(&tx).upsert(&a("x", "z@x.io")).await,
        Err(Error::InvalidBatch { .. })
    ));
    tx.commit().await.unwrap();
    assert_eq!(accounts.count_total().await.unwrap(), 1);
    assert!(accounts.verify(16).await.unwrap().is_clean());

    // A unique value one record gives up and another takes: refused when
    // staged, with the reason (the commit would see it still held).
    accounts.create(&a("w", "w@x.io")).await.unwrap();
    let tx = kvmodel::Transaction::new(store.clone());
    accounts.in_tx(&tx).update(&a("x", "v@x.io")).await.unwrap();
    let taken = accounts.in_tx(&tx).update(&a("w", "x@x.io")).await;
    assert!(
        matches!(&taken, Err(Error::InvalidBatch { reason, .. }) if reason.contains("gives it up")),
        "{taken:?}"
    );
    tx.commit().await.unwrap();
    // The other order: taken first, then given up.
    let tx = kvmodel::Transaction::new(store.clone());
    accounts.in_tx(&tx).update(&a("w", "v@x.io")).await.unwrap();
    let given = accounts.in_tx(&tx).update(&a("x", "u@x.io")).await;
    assert!(
        matches!(&given, Err(Error::InvalidBatch { reason, .. }) if reason.contains("gives it up")),
        "{given:?}"
    );
    drop(tx);
    assert_eq!(
        accounts
            .find_by_email("v@x.io")
            .await
            .unwrap()
            .map(|a| a.id),
        Some("x".into())
    );
    accounts.delete("w").await.unwrap();
    assert!(accounts.verify(16).await.unwrap().is_clean());

    // A parent created earlier in the transaction is there for its child;
    // a delete in the same transaction takes its upkeep with it.
    let products = ProductRepo::new(store.clone());
    let orders = OrderRepo::new(store.clone());
    let (products, orders, accounts) = (&products, &orders, &accounts);
    kvmodel::transaction(&store, |tx| async move {
        products
            .in_tx(&tx)
            .create(&Product {
                id: "new".into(),
                shelf: "b".into(),
                stock: 1,
            })
            .await?;
        orders
            .in_tx(&tx)
            .create(&Order {
                id: "o-new".into(),
                product_id: "new".into(),
                buyer: "b".into(),
            })
            .await?;
        accounts
            .in_tx(&tx)
            .delete(&AccountKeys::record("x"))
            .await?;
        Ok(())
    })
    .await
    .unwrap();
    assert_eq!(orders.count_per_product("new").await.unwrap(), 1);
    assert_eq!(accounts.count_total().await.unwrap(), 0);
    assert!(accounts.verify(16).await.unwrap().is_clean());
    assert!(orders.verify(16).await.unwrap().is_clean());

    // A child of a missing parent is refused at commit, as `create` refuses it.
    let tx = kvmodel::Transaction::new(store.clone());
    orders
        .in_tx(&tx)
        .create(&Order {
            id: "orphan".into(),
            product_id: "none".into(),
            buyer: "b".into(),
        })
        .await
        .unwrap();
    assert!(matches!(
        tx.commit().await,
        Err(Error::MissingParent { .. })
    ));
    assert_eq!(orders.get("orphan").await.unwrap(), None);

    // A delete with an `on_delete` action is not for a transaction.
    let tx = kvmodel::Transaction::new(store.clone());
    assert!(matches!(
        products
            .in_tx(&tx)
            .delete(&ProductKeys::record("new"))
            .await,
        Err(Error::InvalidBatch { .. })
    ));
    tx.commit().await.unwrap();
    assert!(products.exists("new").await.unwrap());
}

/// 16 transactions each create an account with the same email plus a
/// product: exactly one wins, and only its product is stored.
async fn unique_claims_in_transactions_race<H: Harness>(h: &H) {
    let store = h.store();
    let accounts = AccountRepo::new(store.clone());
    let products = ProductRepo::new(store.clone());
    let shared = Arc::new((store, accounts.clone(), products.clone()));
    let tasks: Vec<_> = (0..16)
        .map(|i| {
            let shared = Arc::clone(&shared);
            tokio::spawn(async move {
                let (store, accounts, products) = &*shared;
                kvmodel::transaction(store, |tx| async move {
                    accounts
                        .in_tx(&tx)
                        .create(&Account {
                            id: format!("r{i}"),
                            email: "race@x.io".into(),
                        })
                        .await?;
                    products
                        .in_tx(&tx)
                        .create(&Product {
                            id: format!("r{i}"),
                            shelf: "race".into(),
                            stock: 1,
                        })
                        .await?;
                    Ok(())
                })
                .await
            })
        })
        .collect();
    let mut wins = 0;
    for t in tasks {
        match t.await.unwrap() {
            Ok(()) => wins += 1,
            Err(Error::UniqueViolation { .. }) => {}
            Err(e) => panic!("a racing transaction failed: {e}"),
        }
    }
    assert_eq!(wins, 1);
    assert_eq!(accounts.count_total().await.unwrap(), 1);
    assert_eq!(products.sum_stock_total().await.unwrap(), 1);
    assert!(accounts.verify(16).await.unwrap().is_clean());
    assert!(products.verify(16).await.unwrap().is_clean());
}

/// A transaction meeting an expired record not yet swept sweeps it first:
/// its claim and its count go, as a single write's would.
async fn expired_records_are_swept_in_a_transaction<H: Harness>(h: &H) {
    let store = h.store();
    let sessions = SessionRepo::new(store.clone());
    sessions.create(&session("s1", "t1")).await.unwrap();
    h.pass(std::time::Duration::from_millis(1500)).await;
    let s = &sessions;
    let created = kvmodel::transaction(&store, |tx| async move {
        s.in_tx(&tx).upsert(&session("s1", "t2")).await
    })
    .await
    .unwrap();
    assert!(
        created,
        "the expired session is gone, so the upsert creates"
    );
    sessions.create(&session("s2", "t1")).await.unwrap();
    assert_eq!(sessions.count_total().await.unwrap(), 2);
    assert!(sessions.verify(16).await.unwrap().is_clean());
}

kvmodel_runtime::on_every_backend!(
    expired_records_are_swept_in_a_transaction,
    concurrent_buyers_never_oversell,
    a_refused_write_applies_nothing,
    writes_that_do_not_compose_are_refused,
    unique_claims_in_transactions_race,
);

/// A transaction conditions each record it read once: an update of a
/// record read in the transaction commits with as many conditions as the
/// same update outside a transaction (the read's condition pins the value
/// the write's own would check again).
#[tokio::test]
async fn a_write_of_a_record_read_in_the_transaction_adds_no_second_condition() {
    use kvmodel::conformance::{CountingStore, Harness, MemoryHarness};
    let h = MemoryHarness::new();
    let store = CountingStore::new(h.store());
    let accounts = AccountRepo::new(store.clone());
    let account = |email: &str| Account {
        id: "a1".into(),
        email: email.into(),
    };
    accounts.create(&account("a@x")).await.unwrap();

    let before = store.conditions();
    accounts.update(&account("b@x")).await.unwrap();
    let plain = store.conditions() - before;

    let before = store.conditions();
    let a = &accounts;
    kvmodel::transaction(&store, |tx| async move {
        let view = a.in_tx(&tx);
        let read = view.get(&AccountKeys::record("a1")).await?;
        assert_eq!(read.map(|r| r.email), Some("b@x".to_owned()));
        view.update(&account("c@x")).await
    })
    .await
    .unwrap();
    let in_tx = store.conditions() - before;
    assert!(plain > 0);
    assert_eq!(
        in_tx, plain,
        "plain update: {plain}, in a transaction: {in_tx}"
    );
    assert_eq!(accounts.get("a1").await.unwrap().unwrap().email, "c@x");
}

/// A transaction meeting an expired record whose sweep another write keeps
/// from going through (on a cluster: a key held by an unfinished write)
/// tries the sweep again, as the single writes do: it never writes over
/// the receipt, which would leave the expired record counted for good.
#[tokio::test]
async fn a_transaction_never_takes_an_unswept_receipt_over() {
    use kvmodel::conformance::{FaultyStore, Harness, MemoryHarness};
    let h = MemoryHarness::new();
    let store = FaultyStore::new(h.store());
    let sessions = SessionRepo::new(store.clone());
    sessions.create(&session("s1", "t1")).await.unwrap();
    h.pass(std::time::Duration::from_millis(1500)).await;
    let receipt = <Session as kvmodel::__private::Entity>::receipt_key(&SessionKeys::record("s1"));
    store.contend_next(&receipt);
    let s = &sessions;
    let created = kvmodel::transaction(&store, |tx| async move {
        s.in_tx(&tx).upsert(&session("s1", "t2")).await
    })
    .await
    .unwrap();
    assert!(!store.contending(), "the sweep met the refusal");
    assert!(created);
    assert_eq!(sessions.count_total().await.unwrap(), 1);
    let drift = sessions.verify(16).await.unwrap();
    assert!(drift.is_clean(), "{drift:?}");
}

/// A record's time to live runs from when the transaction worked it out,
/// not from the commit: a transaction that takes a while does not make its
/// records outlive their expiry.
#[tokio::test]
async fn a_slow_transaction_does_not_lengthen_a_records_life() {
    use kvmodel::conformance::{Harness, MemoryHarness};
    let h = MemoryHarness::new();
    let store = h.store();
    let sessions = SessionRepo::new(store.clone());
    let (s, h) = (&sessions, &h);
    kvmodel::transaction(&store, |tx| async move {
        s.in_tx(&tx).create(&session("s1", "t1")).await?;
        // The rest of the transaction takes 600 ms of the 1 s; its second
        // write is staged at the end.
        h.pass(std::time::Duration::from_millis(600)).await;
        s.in_tx(&tx).create(&session("s2", "t2")).await?;
        Ok(())
    })
    .await
    .unwrap();
    assert!(sessions.get("s1").await.unwrap().is_some());
    h.pass(std::time::Duration::from_millis(500)).await;
    assert_eq!(
        sessions.get("s1").await.unwrap(),
        None,
        "1.1 s after the transaction worked its life out"
    );
    assert!(
        sessions.get("s2").await.unwrap().is_some(),
        "0.5 s after its own was worked out"
    );
    h.pass(std::time::Duration::from_millis(600)).await;
    assert_eq!(sessions.get("s2").await.unwrap(), None);
    let drift = sessions.verify(16).await.unwrap();
    assert!(drift.is_clean(), "{drift:?}");
}

/// A `reconcile` whose repair of a record's missing claim does not land (a
/// writer changed the record between the walk's read and the repair, which
/// conditions on it) reports the record unrepaired, not repaired; the next
/// `reconcile` repairs it.
#[tokio::test]
async fn a_repair_that_does_not_land_is_reported_unrepaired() {
    use kvmodel::conformance::{FaultyStore, Harness, MemoryHarness};
    let h = MemoryHarness::new();
    let store = FaultyStore::new(h.store());
    let accounts = AccountRepo::new(store.clone());
    accounts
        .create(&Account {
            id: "a1".into(),
            email: "a@x".into(),
        })
        .await
        .unwrap();
    let mut b = kvmodel::Batch::new();
    b.delete(AccountKeys::by_email("a@x"));
    assert!(store.commit(b).await.unwrap().is_applied());

    store.contend_next(&AccountKeys::record("a1"));
    let drift = accounts.reconcile(16).await.unwrap();
    assert!(!store.contending(), "the repair met the refusal");
    assert_eq!(drift.unrepaired, [AccountKeys::record("a1")], "{drift:?}");
    assert!(!accounts.verify(16).await.unwrap().is_clean());
    let drift = accounts.reconcile(16).await.unwrap();
    assert!(drift.unrepaired.is_empty(), "{drift:?}");
    assert!(accounts.verify(16).await.unwrap().is_clean());
}
