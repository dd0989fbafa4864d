/**
 * The one script that records a batch with the decision of every webhook with `report` (CONTRACT
 * 4.8): a round trip a batch. Its arguments and answers, as `reportState.ts` builds and reads them.
 *
 * KEYS: the batches hash (4.3), then each reporting webhook's state hash.
 * ARGV: first, last, the number of record fields, those field/value pairs, the number of points
 * checked, those points; then per webhook: its digest, the `~` value its copy was read at (`''`:
 * unsure, check the points), the SHA-1 of its copy's records of the points (when checked), the
 * number of its writes, those point/record pairs — or, for a twin of an earlier webhook m (1-based;
 * the same decision, `reportState.ts`), `-m` and no pairs: m's writes are its writes.
 *
 * A webhook's `~` field is `{digest} {version}`: the version grows by one with every write, so a
 * process whose copy is current (it read or wrote the version it holds) needs no other check. A
 * `~` of another digest is another configuration's state: emptied.
 *
 * Answers: `0` — the batch was recorded before (an earlier attempt landed; its answer was lost):
 * nothing written. `{1, prev, next, …}` — written; per webhook the `~` before and after. A list of
 * conflicts — nothing written: `{w, 'reset'}` (emptied, now `{digest} 0`), `{w, 'stale', cur}` (the
 * version moved: check the points), `{w, 'changed', cur, records…}` (the points' records differ from
 * the copy's: these are Redis's, `''` for none).
 */
export const DIGEST_FIELD = '~';
/** Arguments per command the script sends (Lua's `unpack` stops a little under 8,000). */
const CHUNK = 1000;

export const RECORD_SCRIPT = `
local function chunked(cmd, key, list, from, to)
  local out = {}
  local i = from
  while i <= to do
    local j = math.min(to, i + ${CHUNK} - 1)
    local r = redis.call(cmd, key, unpack(list, i, j))
    if type(r) == 'table' then for _, v in ipairs(r) do out[#out + 1] = v end end
    i = j + 1
  end
  return out
end
if redis.call('HMGET', KEYS[1], ARGV[1])[1] then return 0 end
local nf = tonumber(ARGV[3])
local i = 4 + 2 * nf
local np = tonumber(ARGV[i])
local points = i + 1
i = i + 1 + np
local conflicts = {}
local plan = {}
for w = 1, #KEYS - 1 do
  local key = KEYS[w + 1]
  local digest, expected, sha, nw = ARGV[i], ARGV[i + 1], ARGV[i + 2], tonumber(ARGV[i + 3])
  local cur = redis.call('HMGET', key, '${DIGEST_FIELD}')[1]
  if not cur or string.sub(cur, 1, #digest + 1) ~= digest .. ' ' then
    redis.call('DEL', key)
    redis.call('HSET', key, '${DIGEST_FIELD}', digest .. ' 0')
    conflicts[#conflicts + 1] = { w, 'reset' }
  elseif expected ~= '' then
    if cur ~= expected then conflicts[#conflicts + 1] = { w, 'stale', cur } end
  else
    local vals = np > 0 and chunked('HMGET', key, ARGV, points, points + np - 1) or {}
    for j = 1, np do vals[j] = vals[j] or '' end
    if redis.sha1hex(table.concat(vals, '\\n')) ~= sha then
      local c = { w, 'changed', cur }
      for j = 1, np do c[j + 3] = vals[j] end
      conflicts[#conflicts + 1] = c
    end
  end
  if nw < 0 then
    plan[w] = { key, digest, cur, plan[-nw][4], plan[-nw][5] }
    i = i + 4
  else
    plan[w] = { key, digest, cur, i + 4, nw }
    i = i + 4 + 2 * nw
  end
end
if #conflicts > 0 then return conflicts end
chunked('HSET', KEYS[1], ARGV, 1, 2)
if nf > 0 then chunked('HSET', KEYS[1], ARGV, 4, 3 + 2 * nf) end
local out = { 1 }
for w = 1, #KEYS - 1 do
  local p = plan[w]
  if p[5] > 0 then chunked('HSET', p[1], ARGV, p[4], p[4] + 2 * p[5] - 1) end
  local next = p[2] .. ' ' .. (tonumber(string.sub(p[3], #p[2] + 2)) + 1)
  redis.call('HSET', p[1], '${DIGEST_FIELD}', next)
  out[#out + 1] = p[3]
  out[#out + 1] = next
end
return out
`;

export type Conflict = [number, 'reset'] | [number, 'stale', string] | [number, 'changed', string, ...string[]];
export type ScriptAnswer = 0 | [1, ...string[]] | Conflict[];

/**
 * Empties a state built under another configuration, unless it is this one's already (a replica
 * with the same settings reset it, and may have written since): answers `~` then, nil when it
 * emptied it. KEYS: the state; ARGV: the digest.
 */
export const RESET_SCRIPT = `
local cur = redis.call('HMGET', KEYS[1], '${DIGEST_FIELD}')[1]
if cur and string.sub(cur, 1, #ARGV[1] + 1) == ARGV[1] .. ' ' then return cur end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], '${DIGEST_FIELD}', ARGV[1] .. ' 0')
return false
`;
