/**
 * Configuration (docs/configuration.md#settings): read once from the environment at the edge, validated, and passed
 * down as a typed {@link Config}. Nothing else in the code base reads `process.env`.
 */
import { resolve } from 'node:path';
import { isIP } from 'node:net';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

export interface Config {
  port: number;
  host: string;
  dataDir: string;
  logLevel: LogLevel;
  /** Token-bucket refill per API key, tokens per minute. */
  rateLimitPerMinute: number;
  /** Token-bucket capacity. */
  rateLimitBurst: number;
  /** `always`: every acknowledged write is fdatasync'd (group commit); `none`: no fsync. */
  sync: 'always' | 'none';
  bootstrap: boolean;
  sourceFetchAllowPrivate: boolean;
  sourceFetchTimeoutMs: number;
  sourceFetchMaxBytes: number;
  sourceCrawlMaxPages: number;
  githubApiUrl: string;
  /** Additions of ours (README "Configuration"): connection and timeout limits. */
  maxConnections: number;
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  keepAliveTimeoutMs: number;
  shutdownTimeoutMs: number;
  /** An ingestion job running longer than this is stopped (its worker replaced) and the source fails. */
  ingestTimeoutMs: number;
  /** Reverse proxies (IP addresses and CIDR ranges) whose `X-Forwarded-For` names the client. */
  trustProxy: string[];
  /** Open connections allowed per client address (IPv6: per /64). */
  maxConnectionsPerAddress: number;
  /** Event streams open at once (docs/api.md#event-stream). */
  sseMaxStreams: number;
  /** Public docs pages one client address may view a minute, after a burst of half as many (docs/security.md). */
  docsViewsPerMinute: number;
  /** Webhook endpoint URLs may resolve to loopback/private/link-local addresses (docs/api.md#webhook-endpoint-urls). */
  webhookAllowPrivate: boolean;
  /** One delivery attempt must get its answer's status line within this, ms. */
  webhookTimeoutMs: number;
  /** The waits between delivery attempts, ms: attempt n+1 comes `webhookRetrySchedule[n-1]` after attempt n. */
  webhookRetrySchedule: number[];
  /** Delivery requests receivers are asked to answer at once, over every endpoint of every workspace. */
  webhookConcurrency: number;
  /** Delivery requests one endpoint is asked to answer at once (its connections in use). */
  webhookConcurrencyPerEndpoint: number;
  /** Serve the settings area and the public docs pages (docs/web.md); false: they answer 404. */
  webUi: boolean;
  /** Base of printed links (docs/web.md#users), no trailing slash; null: `http://HOST:PORT` as bound. */
  publicUrl: string | null;
  /** `ignore`: logs load by full replay, snapshots unused (tests, benchmarks; docs/storage.md#snapshots). */
  startupSnapshot: 'use' | 'ignore';
  /** The model agents' answers use (docs/configuration.md#agent-model); null: extractive answers, no model. */
  agentLlm: AgentLlmConfig | null;
  /** CELL_NAME, CELL_HAPROXY_RUNTIME, CELL_MAPS_DIR (docs/deployment.md#several-machines); null outside a cell. */
  cell: CellConfig | null;
  /** The port of `GET /metrics` (docs/deployment.md#monitoring); null (the default): no metrics port. */
  metricsPort: number | null;
  /** The address the metrics port listens on (default 127.0.0.1). */
  metricsHost: string;
}

/** An OpenAI-compatible chat-completions endpoint: `url` ends in `/v1/chat/completions`. */
export interface AgentLlmConfig { url: string; apiKey: string | null; model: string; timeoutMs: number }

/** Thrown for an invalid setting; `message` is the one line printed before exit code 2. */
export class ConfigError extends Error {}

type Env = Record<string, string | undefined>;

function int(env: Env, name: string, def: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return def;
  if (!/^\d+$/.test(raw.trim()) || Number(raw) < min || Number(raw) > max) {
    throw new ConfigError(`${name} must be an integer from ${min} to ${max}, got ${JSON.stringify(raw)}`);
  }
  return Number(raw);
}

function oneOf<T extends string>(env: Env, name: string, def: T, values: readonly T[]): T {
  const raw = env[name];
  if (raw === undefined || raw === '') return def;
  if (!(values as readonly string[]).includes(raw)) {
    throw new ConfigError(`${name} must be one of ${values.join(', ')}, got ${JSON.stringify(raw)}`);
  }
  return raw as T;
}

function bool(env: Env, name: string, def: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return def;
  if (raw === 'true' || raw === '1') return true;
  if (raw === 'false' || raw === '0') return false;
  throw new ConfigError(`${name} must be true or false, got ${JSON.stringify(raw)}`);
}

function httpUrl(env: Env, name: string, def: string): string {
  const raw = env[name];
  if (raw === undefined || raw === '') return def;
  const protocol = URL.canParse(raw) ? new URL(raw).protocol : '';
  if (protocol !== 'http:' && protocol !== 'https:') {
    throw new ConfigError(`${name} must be an http(s) URL, got ${JSON.stringify(raw)}`);
  }
  return raw.replace(/\/+$/, '');
}

const DURATION_UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
/** The longest wait one step of `WEBHOOK_RETRY_SCHEDULE` may ask for: 7 days. */
const MAX_RETRY_STEP_MS = 7 * 24 * 3_600_000;
/** The most steps `WEBHOOK_RETRY_SCHEDULE` may have. */
const MAX_RETRY_STEPS = 20;

/**
 * `WEBHOOK_RETRY_SCHEDULE` (docs/configuration.md#settings): 1 to 20 comma-separated durations with units (`5s,5m,2h`;
 * ms, s, m, h), each from 1 ms to 7 days. Returns the waits in ms.
 */
function durationList(env: Env, name: string, def: string): number[] {
  const raw = env[name];
  const text = raw === undefined || raw.trim() === '' ? def : raw;
  const fail = (why: string): ConfigError => new ConfigError(
    `${name} must be a comma-separated list of 1 to ${MAX_RETRY_STEPS} durations such as 5s,5m,2h ` +
    `(units ms, s, m, h; each from 1 ms to 7 days), got ${JSON.stringify(raw)}: ${why}`);
  const parts = text.split(',').map((p) => p.trim());
  if (parts.length > MAX_RETRY_STEPS) throw fail(`it has ${parts.length} steps`);
  return parts.map((p) => {
    const m = /^(\d{1,12})(ms|s|m|h)$/.exec(p);
    if (!m) throw fail(`${JSON.stringify(p)} is not a number followed by ms, s, m or h`);
    const ms = Number(m[1]) * DURATION_UNITS[m[2]];
    if (ms < 1 || ms > MAX_RETRY_STEP_MS) throw fail(`${JSON.stringify(p)} is not from 1 ms to 7 days`);
    return ms;
  });
}

/** The default `WEBHOOK_RETRY_SCHEDULE` (docs/api.md#webhook-retries): nine waits, about 3 days in all. */
export const DEFAULT_WEBHOOK_RETRY_SCHEDULE = '5s,5m,30m,2h,5h,10h,14h,20h,24h';

/** A comma-separated list of IP addresses and CIDR ranges (`TRUST_PROXY`); empty by default. */
function cidrList(env: Env, name: string): string[] {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return [];
  const entries = raw.split(',').map((e) => e.trim());
  for (const e of entries) {
    if (!parseCidr(e)) throw new ConfigError(
      `${name} must be a comma-separated list of IP addresses or CIDR ranges (10.0.0.0/8, fd00::/8), ` +
      `got ${JSON.stringify(raw)}: ${JSON.stringify(e)} is neither`);
  }
  return entries;
}

const HOST_LABEL = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/;

/**
 * `HOST` (or `METRICS_HOST`): an IP address (IPv6 without brackets) or a DNS host name of at most 253 characters.
 * Whether it names this machine is known only by listening, done before the data dir is touched
 * (docs/configuration.md#starting-and-stopping).
 */
function hostSetting(env: Env, setting: 'HOST' | 'METRICS_HOST' = 'HOST'): string {
  const raw = env[setting];
  // Unlike most settings, an empty HOST is refused rather than defaulted (as DATA_DIR is).
  if (raw === undefined) return '127.0.0.1';
  if (isIP(raw)) return raw;
  const name = raw.endsWith('.') ? raw.slice(0, -1) : raw;
  if (name.length > 0 && name.length <= 253 && name.split('.').every((l) => HOST_LABEL.test(l))) return raw;
  throw new ConfigError(
    `${setting} must be an IP address (127.0.0.1, 0.0.0.0, ::) or a host name, got ${JSON.stringify(raw)}`);
}

/**
 * Builds the configuration from `env` (defaults: docs/configuration.md#settings).
 * @throws ConfigError naming the first invalid setting.
 */
export function loadConfig(env: Env = process.env): Config {
  const host = hostSetting(env);
  const dataDir = env.DATA_DIR ?? './data';
  if (dataDir.trim() === '') throw new ConfigError('DATA_DIR must not be empty');
  return {
    port: int(env, 'PORT', 3000, 0, 65535),
    host,
    dataDir: resolve(dataDir),
    logLevel: oneOf(env, 'LOG_LEVEL', 'info', ['debug', 'info', 'warn', 'error'] as const),
    rateLimitPerMinute: int(env, 'RATE_LIMIT_PER_MINUTE', 600, 1, 10_000_000),
    rateLimitBurst: int(env, 'RATE_LIMIT_BURST', 100, 1, 10_000_000),
    sync: oneOf(env, 'SYNC', 'always', ['always', 'none'] as const),
    bootstrap: bool(env, 'BOOTSTRAP', true),
    sourceFetchAllowPrivate: bool(env, 'SOURCE_FETCH_ALLOW_PRIVATE', false),
    sourceFetchTimeoutMs: int(env, 'SOURCE_FETCH_TIMEOUT_MS', 15000, 100, 600_000),
    sourceFetchMaxBytes: int(env, 'SOURCE_FETCH_MAX_BYTES', 10_485_760, 1024, 1_073_741_824),
    sourceCrawlMaxPages: int(env, 'SOURCE_CRAWL_MAX_PAGES', 50, 1, 10_000),
    githubApiUrl: httpUrl(env, 'GITHUB_API_URL', 'https://api.github.com'),
    maxConnections: int(env, 'MAX_CONNECTIONS', 10_000, 1, 1_000_000),
    headersTimeoutMs: int(env, 'HEADERS_TIMEOUT_MS', 10_000, 100, 600_000),
    requestTimeoutMs: int(env, 'REQUEST_TIMEOUT_MS', 30_000, 100, 3_600_000),
    keepAliveTimeoutMs: int(env, 'KEEP_ALIVE_TIMEOUT_MS', 5_000, 100, 600_000),
    shutdownTimeoutMs: int(env, 'SHUTDOWN_TIMEOUT_MS', 10_000, 100, 600_000),
    ingestTimeoutMs: int(env, 'INGEST_TIMEOUT_MS', 30_000, 100, 3_600_000),
    trustProxy: cidrList(env, 'TRUST_PROXY'),
    maxConnectionsPerAddress: int(env, 'MAX_CONNECTIONS_PER_ADDRESS', 256, 1, 1_000_000),
    sseMaxStreams: int(env, 'SSE_MAX_STREAMS', 10_000, 1, 1_000_000),
    docsViewsPerMinute: int(env, 'DOCS_VIEWS_PER_MINUTE', 600, 1, 10_000_000),
    webhookAllowPrivate: bool(env, 'WEBHOOK_ALLOW_PRIVATE', false),
    webhookTimeoutMs: int(env, 'WEBHOOK_TIMEOUT_MS', 15_000, 100, 600_000),
    webhookRetrySchedule: durationList(env, 'WEBHOOK_RETRY_SCHEDULE', DEFAULT_WEBHOOK_RETRY_SCHEDULE),
    webhookConcurrency: int(env, 'WEBHOOK_CONCURRENCY', 64, 1, 10_000),
    webhookConcurrencyPerEndpoint: int(env, 'WEBHOOK_CONCURRENCY_PER_ENDPOINT', 16, 1, 1_000),
    webUi: bool(env, 'WEB_UI', true),
    publicUrl: env.PUBLIC_URL === undefined || env.PUBLIC_URL === '' ? null : httpUrl(env, 'PUBLIC_URL', ''),
    startupSnapshot: oneOf(env, 'STARTUP_SNAPSHOT', 'use', ['use', 'ignore'] as const),
    agentLlm: agentLlmSetting(env),
    cell: cellSetting(env),
    metricsPort: env.METRICS_PORT === undefined || env.METRICS_PORT === '' ? null
      : int(env, 'METRICS_PORT', 0, 0, 65535),
    metricsHost: hostSetting(env, 'METRICS_HOST'),
  };
}

/** A cell's settings: its name, the HAProxy runtime APIs (`host:port`) it updates, where HAProxy reads the maps. */
export interface CellConfig { name: string; haproxyRuntime: string[]; mapsDir: string }

/**
 * CELL_NAME (`[a-z0-9-]{1,32}`), CELL_HAPROXY_RUNTIME (`host:port,…`, may be empty), CELL_MAPS_DIR (absolute; default
 * `/etc/haproxy/support-workspace`): null without a name. @throws ConfigError naming the bad value.
 */
function cellSetting(env: Env): CellConfig | null {
  const name = env.CELL_NAME;
  if (name === undefined || name === '') {
    if (env.CELL_HAPROXY_RUNTIME) throw new ConfigError('CELL_HAPROXY_RUNTIME is set but CELL_NAME is not');
    return null;
  }
  if (!/^[a-z0-9-]{1,32}$/.test(name)) throw new ConfigError(`CELL_NAME must match [a-z0-9-]{1,32}, got ${
    JSON.stringify(name)}`);
  const haproxyRuntime = (env.CELL_HAPROXY_RUNTIME ?? '').split(',').filter((a) => a !== '');
  for (const a of haproxyRuntime) if (!/^[A-Za-z0-9.-]+:\d{1,5}$/.test(a)) throw new ConfigError(
    `CELL_HAPROXY_RUNTIME must be host:port entries, got ${JSON.stringify(a)}`);
  const mapsDir = env.CELL_MAPS_DIR ?? '/etc/haproxy/support-workspace';
  if (!mapsDir.startsWith('/')) throw new ConfigError(`CELL_MAPS_DIR must be an absolute path, got ${
    JSON.stringify(mapsDir)}`);
  return { name, haproxyRuntime, mapsDir };
}

/**
 * AGENT_LLM_URL, AGENT_LLM_API_KEY, AGENT_LLM_MODEL, AGENT_LLM_TIMEOUT_MS (docs/configuration.md#agent-model): null
 * without a URL. @throws ConfigError for a URL that is not http(s), a key or model without a URL, or no model.
 */
function agentLlmSetting(env: Env): AgentLlmConfig | null {
  const given = (name: string): string | undefined => env[name] === undefined || env[name] === '' ? undefined
    : env[name];
  if (given('AGENT_LLM_URL') === undefined) {
    for (const name of ['AGENT_LLM_API_KEY', 'AGENT_LLM_MODEL']) {
      if (given(name) !== undefined) throw new ConfigError(`${name} is set but AGENT_LLM_URL is not`);
    }
    return null;
  }
  const url = httpUrl(env, 'AGENT_LLM_URL', '');
  const model = given('AGENT_LLM_MODEL');
  if (model === undefined) throw new ConfigError('AGENT_LLM_MODEL must be set when AGENT_LLM_URL is');
  return { url, apiKey: given('AGENT_LLM_API_KEY') ?? null, model,
    timeoutMs: int(env, 'AGENT_LLM_TIMEOUT_MS', 20_000, 10, 600_000) };
}

/** The base of printed links (`PUBLIC_URL`): the configured one, else `http://HOST:PORT` with the bound port. */
export function publicBaseUrl(config: Config, port: number = config.port): string {
  if (config.publicUrl !== null) return config.publicUrl;
  const host = config.host.includes(':') ? `[${config.host}]` : config.host;
  return `http://${host}:${port}`;
}

/**
 * Parses one `TRUST_PROXY` entry: an IP address or a CIDR range (`10.0.0.0/8`, `fd00::/8`).
 * @returns the address, its family and prefix length (32 or 128 for an address), or undefined.
 */
export function parseCidr(entry: string): { address: string; family: 'ipv4' | 'ipv6'; prefix: number } | undefined {
  const slash = entry.indexOf('/');
  const address = slash === -1 ? entry : entry.slice(0, slash);
  const family = isIP(address);
  if (family === 0 || address.includes('%')) return undefined;
  const max = family === 4 ? 32 : 128;
  let prefix = max;
  if (slash !== -1) {
    const bits = entry.slice(slash + 1);
    if (!/^\d{1,3}$/.test(bits) || Number(bits) > max) return undefined;
    prefix = Number(bits);
  }
  return { address, family: family === 4 ? 'ipv4' : 'ipv6', prefix };
}
