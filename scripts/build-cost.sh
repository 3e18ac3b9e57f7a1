#!/usr/bin/env bash
# Build cost of kvmodel:
#  1. `cargo check` time added by deriving KvEntity on 50 entities, against
#     the same 50 structs with only serde derives (dependencies prebuilt).
#  2. `kvmodel generate` time for a generated 1,000-entity schema.
# Run: bash scripts/build-cost.sh
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export CARGO_TARGET_DIR="$work/target"

make_crate() { # name with_derive
    local dir="$work/$1"
    mkdir -p "$dir/src"
    cat > "$dir/Cargo.toml" <<TOML
[package]
name = "$1"
version = "0.0.0"
edition = "2024"
publish = false
[workspace]
[dependencies]
kvmodel = { path = "$root/kvmodel" }
serde = { version = "1", features = ["derive"] }
TOML
    {
        echo "#![allow(dead_code)]"
        echo "use serde::{Deserialize, Serialize};"
        for i in $(seq 1 50); do
            if [ "$2" = yes ]; then
                echo "#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, kvmodel::KvEntity)]"
                echo "#[kv(namespace = \"bench\", key = \"e$i:{id}\")]"
                echo "#[kv(index(name = \"by_group\", fields(group), order_by = at))]"
                echo "#[kv(counter(name = \"per_group\", group_by(group)))]"
            else
                echo "#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]"
            fi
            echo "pub struct Entity$i { pub id: String, $( [ "$2" = yes ] && echo '#[kv(unique)]' ) pub email: String, pub group: String, pub at: kvmodel::Timestamp }"
        done
    } > "$dir/src/lib.rs"
}

make_crate plain no
make_crate derived yes
# Build every dependency once, untimed.
(cd "$work/plain" && cargo check -q)
(cd "$work/derived" && cargo check -q)
time_check() {
    local dir="$work/$1"
    touch "$dir/src/lib.rs"
    local start end
    start=$(date +%s.%N)
    (cd "$dir" && cargo check -q)
    end=$(date +%s.%N)
    awk -v a="$start" -v b="$end" 'BEGIN { printf "%.3f", b - a }'
}
plain=0; derived=0
for _ in 1 2 3; do
    plain=$(awk -v a="$plain" -v b="$(time_check plain)" 'BEGIN { print a + b }')
    derived=$(awk -v a="$derived" -v b="$(time_check derived)" 'BEGIN { print a + b }')
done
echo "cargo check, 50 structs with serde only:        $(awk -v a="$plain" 'BEGIN { printf "%.2f", a / 3 }') s (mean of 3)"
echo "cargo check, 50 structs with KvEntity as well:  $(awk -v a="$derived" 'BEGIN { printf "%.2f", a / 3 }') s (mean of 3)"

# A 1,000-entity schema.
schema="$work/big.yaml"
{
    echo "kvmodel: 1"
    echo "namespace: big"
    echo "entities:"
    for i in $(seq 1 1000); do
        cat <<YAML
  Entity$i:
    key: "e$i:{id}"
    fields: { id: string, email: string, group: string, at: timestamp, amount: i64 }
    indexes:
      by_email: { fields: [email], unique: true }
      by_group: { fields: [group], order_by: at }
    counters:
      amount_per_group: { sum: amount, group_by: [group] }
YAML
    done
} > "$schema"
cargo build -q --release -p kvmodel-cli
start=$(date +%s.%N)
"$CARGO_TARGET_DIR/release/kvmodel" generate "$schema" -o "$work/big.rs" 2>/dev/null
end=$(date +%s.%N)
echo "kvmodel generate, 1,000 entities: $(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.2f", b - a }') s, $(wc -l < "$work/big.rs") lines written"
