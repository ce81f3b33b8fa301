#!/usr/bin/env bash
# Runs the storage conformance suite (the one the embedded store passes in every CI run)
# against real ArangoDB, Weaviate and MongoDB servers, started here with Docker Compose.
# Needs a Docker engine; each suite uses a fresh database / collection of its own.
#
#   deploy/conformance.sh            # start the three servers, run, stop them
#   KEEP=1 deploy/conformance.sh     # leave the servers running afterwards
set -euo pipefail
cd "$(dirname "$0")/.."
compose=(docker compose -f deploy/compose.yaml)
"${compose[@]}" up -d --wait arangodb weaviate mongo
trap '[ -n "${KEEP:-}" ] || "${compose[@]}" stop arangodb weaviate mongo' EXIT

export EVIDENT_TEST_ARANGO_URL=http://127.0.0.1:8529
export EVIDENT_TEST_ARANGO_USER=root
export EVIDENT_TEST_ARANGO_PASSWORD="${ARANGO_ROOT_PASSWORD:-evident-dev}"
export EVIDENT_TEST_WEAVIATE_URL=http://127.0.0.1:8080
export EVIDENT_TEST_MONGO_URL="mongodb://127.0.0.1:27017/?directConnection=true"

cargo nextest run --no-fail-fast \
  -p evident-store-arango -p evident-store-weaviate -p evident-store-mongo \
  --features evident-store-mongo/driver --test conformance --run-ignored all
