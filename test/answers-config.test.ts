/** AGENT_LLM_* settings (docs/configuration.md#agent-model): read and validated at start, exact errors. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError, loadConfig } from '../src/core/config.js';

const base = { DATA_DIR: './data' };

test('unset → no model; URL and model → the settings, timeout 20 s by default', () => {
  assert.equal(loadConfig(base).agentLlm, null);
  assert.deepEqual(loadConfig({ ...base, AGENT_LLM_URL: 'https://llm.example/v1/', AGENT_LLM_MODEL: 'm' }).agentLlm,
    { url: 'https://llm.example/v1', apiKey: null, model: 'm', timeoutMs: 20_000 });
  assert.deepEqual(loadConfig({ ...base, AGENT_LLM_URL: 'http://127.0.0.1:9', AGENT_LLM_MODEL: 'm', AGENT_LLM_API_KEY: 'k',
    AGENT_LLM_TIMEOUT_MS: '500' }).agentLlm, { url: 'http://127.0.0.1:9', apiKey: 'k', model: 'm', timeoutMs: 500 });
});

const bad: Array<[Record<string, string>, string]> = [
  [{ AGENT_LLM_URL: 'ftp://x' }, 'AGENT_LLM_URL must be an http(s) URL, got "ftp://x"'],
  [{ AGENT_LLM_URL: 'https://llm.example' }, 'AGENT_LLM_MODEL must be set when AGENT_LLM_URL is'],
  [{ AGENT_LLM_MODEL: 'm' }, 'AGENT_LLM_MODEL is set but AGENT_LLM_URL is not'],
  [{ AGENT_LLM_API_KEY: 'k' }, 'AGENT_LLM_API_KEY is set but AGENT_LLM_URL is not'],
];
for (const [env, message] of bad) {
  test(`${JSON.stringify(env)} → ConfigError "${message}"`, () => {
    assert.throws(() => loadConfig({ ...base, ...env }), (e: unknown) => e instanceof ConfigError && e.message === message);
  });
}

test('AGENT_LLM_TIMEOUT_MS out of range → ConfigError', () => {
  assert.throws(() => loadConfig({ ...base, AGENT_LLM_URL: 'https://x', AGENT_LLM_MODEL: 'm', AGENT_LLM_TIMEOUT_MS: '5' }),
    (e: unknown) => e instanceof ConfigError && e.message === 'AGENT_LLM_TIMEOUT_MS must be an integer from 10 to 600000, got "5"');
});
