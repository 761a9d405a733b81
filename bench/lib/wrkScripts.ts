/**
 * wrk Lua scripts (https://github.com/wg/wrk/blob/master/SCRIPTING), written once per run
 * into the work directory:
 *
 * - `tokens`: every request carries the next token of a file (one per line), cycling, so
 *   a verifier sees a different token on each request (the cache defeated);
 * - `post`: every request is the same POST with a JSON body (the token operation);
 * - `paced`: like `tokens`, each connection waiting `delay` ms between requests, so a
 *   fixed number of connections offers a chosen load (the soak).
 *
 * Each wrk thread runs its own Lua state; with `-t1` the cycle is exact.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';

const READ_TOKENS = `
local tokens = {}
local i = 0
local function loadTokens(file)
  for line in io.lines(file) do
    if #line > 0 then tokens[#tokens + 1] = "Bearer " .. line end
  end
  if #tokens == 0 then error("no tokens in " .. file) end
end
local function nextRequest()
  i = i % #tokens + 1
  wrk.headers["Authorization"] = tokens[i]
  return wrk.format()
end
`;

const TOKENS = `${READ_TOKENS}
function init(args) loadTokens(args[1]) end
request = nextRequest
`;

const PACED = `${READ_TOKENS}
local pause = 0
function init(args)
  loadTokens(args[1])
  pause = tonumber(args[2])
end
request = nextRequest
function delay() return pause end
`;

const POST = `
function init(args)
  wrk.method = "POST"
  wrk.body = args[1]
  wrk.headers["Content-Type"] = "application/json"
end
`;

export interface WrkScripts {
  /** args: [tokens file] */
  readonly tokens: string;
  /** args: [tokens file, delay ms] */
  readonly paced: string;
  /** args: [JSON body] */
  readonly post: string;
}

export async function writeWrkScripts(dir: string): Promise<WrkScripts> {
  const scripts = { tokens: TOKENS, paced: PACED, post: POST };
  const out: Record<string, string> = {};
  for (const [name, text] of Object.entries(scripts)) {
    out[name] = join(dir, `${name}.lua`);
    await writeFile(out[name], text);
  }
  return out as unknown as WrkScripts;
}
