/**
 * A small fault-injecting HTTP proxy in front of the real S3 server, for tests
 * of retries, crashes and capability fallbacks. It listens on 127.0.0.1 (random
 * port), forwards only to a loopback upstream, and follows a programmable plan:
 * reset the connection of the next N matching requests, answer them with an S3
 * error (503 SlowDown), delay responses, or strip the conditional headers
 * (If-None-Match / If-Match) to imitate a server that ignores them. It closes
 * itself after `maxLifetimeMs` even if a test forgets to.
 */
import { createHash, createHmac } from "node:crypto";
import http from "node:http";
import type { Socket } from "node:net";

/** Which requests a fault applies to; every given field must match. */
export interface RequestMatch {
  /** HTTP method, e.g. `PUT`. */
  method?: string;
  /** Tested against the decoded URL path (`/bucket/key`), without the query. */
  path?: RegExp;
}

export interface LoggedRequest {
  method: string;
  /** Decoded URL path (`/bucket/key`). */
  path: string;
  /** The status the client got, or `reset` when the connection was cut. */
  outcome: number | "reset";
}

export interface FaultProxy {
  /** `http://127.0.0.1:<port>`: put it in the config's `endpoint`. */
  readonly endpoint: string;
  /** Every request seen, in arrival order (at most 20 000 are kept). */
  readonly requests: readonly LoggedRequest[];
  /** Cut the connection of the next `count` matching requests (no response at all). */
  resetNext(count: number, match?: RequestMatch): void;
  /** Answer the next `count` matching requests with an S3 error body (`Infinity` = always). */
  errorNext(count: number, error: { status: number; code: string }, match?: RequestMatch): void;
  /** Shorthand for `errorNext(count, { status: 503, code: "SlowDown" })`. */
  slowDownNext(count: number, match?: RequestMatch): void;
  /** Forward the next `count` matching requests, then cut the connection instead of answering. */
  loseResponseNext(count: number, match?: RequestMatch): void;
  /** Pass the next `count` matching responses on, but cut the connection after `bytes` bytes of body. */
  cutBodyNext(count: number, bytes: number, match?: RequestMatch): void;
  /** Hold every matching response for `ms` before passing it on, until `clear()`. */
  delayResponses(ms: number, match?: RequestMatch): void;
  /** Drop If-None-Match / If-Match from requests (re-signing them), until turned off. */
  stripConditions(enabled: boolean): void;
  /** Forget every planned fault (the log stays). */
  clear(): void;
  close(): Promise<void>;
}

export interface FaultProxyOptions {
  /** Secret key to re-sign requests whose headers were stripped. Default: AWS_SECRET_ACCESS_KEY. */
  secretAccessKey?: string;
  /** The proxy shuts itself down after this long. Default 120 s. */
  maxLifetimeMs?: number;
}

type Fault =
  | { kind: "reset" }
  | { kind: "error"; status: number; code: string }
  | { kind: "delay"; ms: number }
  | { kind: "cut"; bytes: number }
  | { kind: "lose" };

interface Rule {
  fault: Fault;
  match: RequestMatch;
  remaining: number;
}

const MAX_LOG = 20_000;
const LOOPBACK = new Set(["127.0.0.1", "localhost", "[::1]"]);
const CONDITION_HEADERS = new Set(["if-none-match", "if-match"]);

/** Start a proxy in front of `upstream` (a loopback `http://` endpoint). */
export async function startFaultProxy(
  upstream: string,
  options: FaultProxyOptions = {},
): Promise<FaultProxy> {
  const target = new URL(upstream);
  if (target.protocol !== "http:" || !LOOPBACK.has(target.hostname)) {
    throw new Error(`fault proxy forwards only to a loopback http endpoint, not ${upstream}`);
  }
  const secret = options.secretAccessKey ?? process.env.AWS_SECRET_ACCESS_KEY ?? "";
  const state: ProxyState = { rules: [], strip: false, log: [], target, secret };
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const sockets = new Set<Socket>();
  const server = http.createServer((req, res) => handle(state, agent, { req, res }));
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  let closed: Promise<void> | undefined;
  const close = () => {
    closed ??= new Promise<void>((resolve) => {
      clearTimeout(lifetime);
      server.close(() => resolve());
      for (const socket of sockets) socket.destroy();
      agent.destroy();
    });
    return closed;
  };
  const lifetime = setTimeout(() => void close(), options.maxLifetimeMs ?? 120_000);
  lifetime.unref();
  const add = (fault: Fault, count: number, match: RequestMatch = {}) =>
    state.rules.push({ fault, match, remaining: count });
  return {
    endpoint: `http://127.0.0.1:${port}`,
    requests: state.log,
    resetNext: (count, match) => add({ kind: "reset" }, count, match),
    errorNext: (count, error, match) => add({ kind: "error", ...error }, count, match),
    slowDownNext: (count, match) =>
      add({ kind: "error", status: 503, code: "SlowDown" }, count, match),
    delayResponses: (ms, match) => add({ kind: "delay", ms }, Infinity, match),
    cutBodyNext: (count, bytes, match) => add({ kind: "cut", bytes }, count, match),
    loseResponseNext: (count, match) => add({ kind: "lose" }, count, match),
    stripConditions: (enabled) => {
      state.strip = enabled;
    },
    clear: () => {
      state.rules.length = 0;
      state.strip = false;
    },
    close,
  };
}

interface ProxyState {
  rules: Rule[];
  strip: boolean;
  log: LoggedRequest[];
  target: URL;
  secret: string;
}

function decodedPath(url: string): string {
  const raw = url.split("?")[0] ?? "";
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

/** The first rule matching the request, with its count taken. */
function takeFault(state: ProxyState, method: string, path: string): Fault | null {
  for (const rule of state.rules) {
    if (rule.remaining <= 0) continue;
    if (rule.match.method !== undefined && rule.match.method !== method) continue;
    if (rule.match.path !== undefined && !rule.match.path.test(path)) continue;
    rule.remaining -= 1;
    return rule.fault;
  }
  return null;
}

function handle(
  state: ProxyState,
  agent: http.Agent,
  { req, res }: { req: http.IncomingMessage; res: http.ServerResponse },
): void {
  const method = req.method ?? "GET";
  const path = decodedPath(req.url ?? "/");
  const entry: LoggedRequest = { method, path, outcome: 0 };
  if (state.log.length < MAX_LOG) state.log.push(entry);
  const fault = takeFault(state, method, path);
  if (fault?.kind === "reset") {
    entry.outcome = "reset";
    req.socket.destroy();
    return;
  }
  if (fault?.kind === "error") {
    entry.outcome = fault.status;
    // Read the body first so the client is not cut off mid-upload (that is `reset`).
    req.resume();
    req.on("end", () => {
      res.writeHead(fault.status, { "content-type": "application/xml" });
      res.end(errorXml(fault.code));
    });
    return;
  }
  forward(state, agent, {
    req,
    res,
    entry,
    delayMs: fault?.kind === "delay" ? fault.ms : 0,
    cutAfter: fault?.kind === "cut" ? fault.bytes : fault?.kind === "lose" ? 0 : undefined,
  });
}

function forward(
  state: ProxyState,
  agent: http.Agent,
  exchange: {
    req: http.IncomingMessage;
    res: http.ServerResponse;
    entry: LoggedRequest;
    delayMs: number;
    /** Cut the connection after this many bytes of the response body. */
    cutAfter?: number;
  },
): void {
  const { req, res, entry, delayMs, cutAfter } = exchange;
  const headers = { ...req.headers };
  if (state.strip && Object.keys(headers).some((name) => CONDITION_HEADERS.has(name))) {
    for (const name of CONDITION_HEADERS) delete headers[name];
    headers.authorization = resign(req.method ?? "GET", req.url ?? "/", {
      headers,
      secret: state.secret,
    });
  }
  // The Host header is forwarded as the client signed it; the server checks the signature with it.
  const upstream = http.request({
    host: state.target.hostname,
    port: state.target.port,
    method: req.method,
    path: req.url,
    headers,
    agent,
  });
  upstream.on("response", (answer) => {
    entry.outcome = answer.statusCode ?? 0;
    const pass = () => {
      if (cutAfter === 0) {
        // The server did the work; the client never hears about it.
        answer.resume();
        res.socket?.destroy();
        entry.outcome = "reset";
        return;
      }
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      if (cutAfter === undefined) {
        answer.pipe(res);
        return;
      }
      let sent = 0;
      answer.on("data", (chunk: Buffer) => {
        if (sent + chunk.byteLength < cutAfter) {
          res.write(chunk);
          sent += chunk.byteLength;
          return;
        }
        res.write(chunk.subarray(0, cutAfter - sent), () => res.socket?.destroy());
        answer.destroy();
        entry.outcome = "reset";
      });
    };
    if (delayMs > 0) setTimeout(pass, delayMs);
    else pass();
  });
  upstream.on("error", () => res.destroy());
  req.on("error", () => upstream.destroy());
  req.pipe(upstream);
}

function errorXml(code: string): string {
  return `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>injected by the test fault proxy</Message><RequestId>fault-proxy</RequestId></Error>`;
}

const hmac = (key: string | Buffer, data: string) =>
  createHmac("sha256", key).update(data).digest();

/**
 * A new SigV4 Authorization header for a request whose headers changed: the
 * same credential scope and date, the signed-header list without the removed
 * headers, and the payload hash the client declared in x-amz-content-sha256.
 */
function resign(
  method: string,
  url: string,
  request: { headers: http.IncomingHttpHeaders; secret: string },
): string {
  const { headers, secret } = request;
  const auth = String(headers.authorization ?? "");
  const credential = /Credential=([^,]+)/.exec(auth)?.[1] ?? "";
  const [accessKey, date, region] = credential.split("/");
  const signed = (/SignedHeaders=([^,]+)/.exec(auth)?.[1] ?? "")
    .split(";")
    .filter((name) => headers[name] !== undefined);
  const queryAt = url.indexOf("?");
  const path = queryAt < 0 ? url : url.slice(0, queryAt);
  const query = queryAt < 0 ? "" : url.slice(queryAt + 1);
  const canonicalQuery = query
    .split("&")
    .filter((pair) => pair !== "")
    .map((pair) => (pair.includes("=") ? pair : `${pair}=`))
    .sort()
    .join("&");
  const canonicalHeaders = signed
    .map((name) => `${name}:${String(headers[name]).trim().replace(/\s+/g, " ")}\n`)
    .join("");
  const canonicalRequest = [
    method,
    path,
    canonicalQuery,
    canonicalHeaders,
    signed.join(";"),
    String(headers["x-amz-content-sha256"]),
  ].join("\n");
  const scope = `${date}/${region}/s3/aws4_request`;
  const toSign = [
    "AWS4-HMAC-SHA256",
    String(headers["x-amz-date"]),
    scope,
    createHash("sha256").update(canonicalRequest).digest("hex"),
  ].join("\n");
  const key = hmac(
    hmac(hmac(hmac(`AWS4${secret}`, date ?? ""), region ?? ""), "s3"),
    "aws4_request",
  );
  const signature = createHmac("sha256", key).update(toSign).digest("hex");
  return `AWS4-HMAC-SHA256 Credential=${accessKey}/${scope}, SignedHeaders=${signed.join(";")}, Signature=${signature}`;
}
