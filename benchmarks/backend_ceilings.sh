#!/usr/bin/env bash
# The raw backends' ceilings beside zq's figures (docs/benchmarks.md).
#
#   bash benchmarks/backend_ceilings.sh [seconds] [clients]
#
# Redis: redis-benchmark calling a claim-like Lua script (take the 10 oldest
# of a sorted set, mark each message hash claimed, append one event each,
# move them to the back so the backlog stays full) and a post-like one (10
# message hashes, 10 sorted-set entries, 10 events). PostgreSQL: pgbench
# with a claim-like statement (UPDATE ... WHERE id IN (SELECT ... ORDER BY
# id LIMIT 10 FOR UPDATE SKIP LOCKED) RETURNING) and a post-like one (a
# 10-row INSERT of 1 KB bodies). Loopback only; everything created is
# removed at the end: the Redis keys (one prefix, db 11) and the database.
set -euo pipefail

SECONDS_PER_RUN="${1:-10}"
CLIENTS="${2:-8}"
REDIS_DB="${ZQ_BENCH_REDIS_DB:-11}"
PG_ADMIN="${ZQ_TEST_POSTGRES_URL:-postgresql://postgres@127.0.0.1:5432/test}"
PREFIX="zqceil-$(head -c4 /dev/urandom | od -An -tx1 | tr -d ' \n')"
DB="zq_ceiling_${PREFIX#zqceil-}"
# redis-benchmark is bounded by a request count: about SECONDS_PER_RUN at
# 8000 calls/s, and killed at three times that if the machine is slower.
REQUESTS=$((SECONDS_PER_RUN * 8000))
WORK="$(mktemp -d)"

cleanup() {
  redis-cli -n "$REDIS_DB" --scan --pattern "$PREFIX*" | xargs -r redis-cli -n "$REDIS_DB" del >/dev/null
  psql -q "$PG_ADMIN" -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT

CLAIM_LUA="local ids = redis.call('ZRANGE', KEYS[1], 0, 9)
for _, id in ipairs(ids) do
  redis.call('HSET', KEYS[1] .. ':m:' .. id, 'claim', ARGV[1], 'cexp', '1', 'count', '1')
  redis.call('ZINCRBY', KEYS[1], 1000000, id)
  redis.call('XADD', KEYS[1] .. ':ev', 'MAXLEN', '~', '10000', '*', 'k', 'claimed', 'm', id)
end
return ids"
POST_LUA="local body = string.rep('x', 1024)
for i = 1, 10 do
  local id = redis.call('INCR', KEYS[1] .. ':seq')
  redis.call('HSET', KEYS[1] .. ':p:' .. id, 'body', body, 'ttl', '3600', 'count', '0')
  redis.call('ZADD', KEYS[1] .. ':po', id, id)
  redis.call('XADD', KEYS[1] .. ':ev', 'MAXLEN', '~', '10000', '*', 'k', 'posted', 'm', id)
end
redis.call('DEL', KEYS[1] .. ':po')
return 10"

# A backlog of 1000 messages for the claim script.
redis-cli -n "$REDIS_DB" eval "for i = 1, 1000 do redis.call('ZADD', KEYS[1], i, 'm' .. i);
  redis.call('HSET', KEYS[1] .. ':m:m' .. i, 'body', string.rep('x', 1024)) end" 1 "$PREFIX" >/dev/null

redis_run() {  # name, script; prints one JSON line
  local name="$1" script="$2" out
  out="$(timeout "$((SECONDS_PER_RUN * 3 + 5))" redis-benchmark -q --dbnum "$REDIS_DB" -c "$CLIENTS" \
         -n "$REQUESTS" eval "$script" 1 "$PREFIX" c1 2>/dev/null | tr '\r' '\n' | grep -a "requests per second" | tail -1 || true)"
  local rps
  rps="$(grep -o '[0-9.]* requests per second' <<<"$out" | cut -d' ' -f1 || true)"
  printf '{"backend": "redis", "script": "%s", "calls_per_s": %s, "msgs_per_s": %s}\n' \
    "$name" "${rps:-0}" "$(awk -v r="${rps:-0}" 'BEGIN { print r * 10 }')"
}
redis_run claim-like "$CLAIM_LUA"
redis_run post-like "$POST_LUA"

psql -q "$PG_ADMIN" -c "CREATE DATABASE $DB" >/dev/null
PG="${PG_ADMIN%/*}/$DB"
psql -q "$PG" >/dev/null <<'SQL'
CREATE TABLE msgs (id bigserial PRIMARY KEY, queue text NOT NULL, body text NOT NULL,
                   claim_id text, claim_expires double precision NOT NULL DEFAULT 0,
                   claim_count int NOT NULL DEFAULT 0);
CREATE INDEX msgs_queue_id ON msgs (queue, id);
INSERT INTO msgs (queue, body) SELECT 'q', repeat('x', 1024) FROM generate_series(1, 100000);
VACUUM ANALYZE msgs;
SQL
cat > "$WORK/claim.sql" <<'SQL'
UPDATE msgs SET claim_id = 'c' || :client_id,
       claim_expires = extract(epoch FROM clock_timestamp()) + 0.5,
       claim_count = claim_count + 1
 WHERE id IN (SELECT id FROM msgs WHERE queue = 'q'
                AND claim_expires < extract(epoch FROM clock_timestamp())
              ORDER BY id LIMIT 10 FOR UPDATE SKIP LOCKED)
RETURNING id, body;
SQL
cat > "$WORK/post.sql" <<'SQL'
INSERT INTO msgs (queue, body) SELECT 'p', repeat('x', 1024) FROM generate_series(1, 10);
SQL
for name in claim post; do
  tps="$(pgbench -n -c "$CLIENTS" -j 2 -T "$SECONDS_PER_RUN" -f "$WORK/$name.sql" "$PG" 2>/dev/null \
         | grep -o 'tps = [0-9.]*' | head -1 | cut -d' ' -f3 || true)"
  printf '{"backend": "postgresql", "statement": "%s-like", "statements_per_s": %s, "msgs_per_s": %s}\n' \
    "$name" "${tps:-0}" "$(awk -v r="${tps:-0}" 'BEGIN { print r * 10 }')"
done
