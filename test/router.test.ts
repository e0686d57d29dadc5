/**
 * Router unit tests (src/http/router.ts): static segments win over parameters, unknown paths
 * are not_found, a known path with another method is method_not_allowed with the Allow list,
 * HEAD falls back to GET, parameters are percent-decoded and a malformed escape is not_found.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Router } from '../src/http/router.js';

function sample(): Router<string> {
  const r = new Router<string>();
  r.add('GET', '/api/v1/conversations', 'list');
  r.add('POST', '/api/v1/conversations', 'create');
  r.add('GET', '/api/v1/conversations/{conversationId}', 'retrieve');
  r.add('PATCH', '/api/v1/conversations/{conversationId}', 'update');
  r.add('GET', '/api/v1/conversations/{conversationId}/messages', 'messages');
  r.add('GET', '/api/v1/conversations/export', 'export');
  r.add('GET', '/healthz', 'health');
  return r;
}

test('router: a static path finds its value with no params', () => {
  assert.deepEqual(sample().find('GET', '/api/v1/conversations'), { kind: 'found', value: 'list', params: {} });
  assert.deepEqual(sample().find('POST', '/api/v1/conversations'), { kind: 'found', value: 'create', params: {} });
  assert.deepEqual(sample().find('GET', '/healthz'), { kind: 'found', value: 'health', params: {} });
});

test('router: a {param} segment captures the path segment by name', () => {
  assert.deepEqual(sample().find('PATCH', '/api/v1/conversations/c_123'), { kind: 'found', value: 'update', params: { conversationId: 'c_123' } });
  assert.deepEqual(sample().find('GET', '/api/v1/conversations/c_123/messages'), { kind: 'found', value: 'messages', params: { conversationId: 'c_123' } });
});

test('router: a static segment wins over a parameter at the same position', () => {
  assert.deepEqual(sample().find('GET', '/api/v1/conversations/export'), { kind: 'found', value: 'export', params: {} });
  // …but only where the static branch leads to a route: deeper paths fall back to the parameter.
  assert.deepEqual(sample().find('GET', '/api/v1/conversations/export/messages'), { kind: 'found', value: 'messages', params: { conversationId: 'export' } });
});

test('router: registration order does not change static-over-param precedence', () => {
  const r = new Router<string>();
  r.add('GET', '/a/{id}', 'param');
  r.add('GET', '/a/me', 'static');
  assert.deepEqual(r.find('GET', '/a/me'), { kind: 'found', value: 'static', params: {} });
  assert.deepEqual(r.find('GET', '/a/you'), { kind: 'found', value: 'param', params: { id: 'you' } });
});

test('router: unknown paths, trailing slashes, empty segments and relative paths are not_found', () => {
  const r = sample();
  for (const p of ['/nope', '/api/v1', '/api/v1/', '/api/v1/conversations/', '/api/v1/conversations//messages',
    '/api/v1/conversations/c1/messages/x', 'api/v1/conversations', '', '*', 'http://h/healthz', '/HEALTHZ']) {
    assert.deepEqual(r.find('GET', p), { kind: 'not_found' }, p);
  }
});

test('router: a known path with an unregistered method is method_not_allowed with every allowed method', () => {
  const r = sample();
  assert.deepEqual(r.find('DELETE', '/api/v1/conversations'), { kind: 'method_not_allowed', allow: ['GET', 'POST', 'HEAD'] });
  assert.deepEqual(r.find('POST', '/api/v1/conversations/c1'), { kind: 'method_not_allowed', allow: ['GET', 'PATCH', 'HEAD'] });
  assert.deepEqual(r.find('PUT', '/healthz'), { kind: 'method_not_allowed', allow: ['GET', 'HEAD'] });
});

test('router: HEAD falls back to the GET route; HEAD on a path without GET is method_not_allowed', () => {
  const r = new Router<string>();
  r.add('GET', '/x/{id}', 'get');
  r.add('POST', '/y', 'post');
  assert.deepEqual(r.find('HEAD', '/x/1'), { kind: 'found', value: 'get', params: { id: '1' } });
  assert.deepEqual(r.find('HEAD', '/y'), { kind: 'method_not_allowed', allow: ['POST'] });
});

test('router: an explicit HEAD route wins over the GET fallback', () => {
  const r = new Router<string>();
  r.add('GET', '/x', 'get');
  r.add('HEAD', '/x', 'head');
  assert.deepEqual(r.find('HEAD', '/x'), { kind: 'found', value: 'head', params: {} });
});

test('router: parameters are percent-decoded (UTF-8, reserved characters, slashes)', () => {
  const r = sample();
  assert.deepEqual(r.find('GET', '/api/v1/conversations/%E2%82%AC%20x'), { kind: 'found', value: 'retrieve', params: { conversationId: '€ x' } });
  assert.deepEqual(r.find('GET', '/api/v1/conversations/a%2Fb/messages'), { kind: 'found', value: 'messages', params: { conversationId: 'a/b' } });
  assert.deepEqual(r.find('GET', '/api/v1/conversations/%3F%23%25'), { kind: 'found', value: 'retrieve', params: { conversationId: '?#%' } });
});

test('router: static segments are matched as sent, not decoded', () => {
  // `%63onversations` is "conversations" encoded: it is a different literal segment.
  assert.deepEqual(sample().find('GET', '/api/v1/%63onversations'), { kind: 'not_found' });
});

test('router: a malformed percent-encoding in a parameter is not_found, never a throw', () => {
  const r = sample();
  for (const p of ['/api/v1/conversations/%', '/api/v1/conversations/%zz', '/api/v1/conversations/%E2%82', '/api/v1/conversations/%C0%AF/messages', '/api/v1/conversations/%ED%A0%80']) {
    assert.deepEqual(r.find('GET', p), { kind: 'not_found' }, p);
  }
});

test('router: a failed deeper match leaves no stray params behind', () => {
  const r = new Router<string>();
  r.add('GET', '/a/{x}/b/{y}', 'xy');
  r.add('GET', '/a/{x}/c', 'xc');
  assert.deepEqual(r.find('GET', '/a/1/c'), { kind: 'found', value: 'xc', params: { x: '1' } });
  assert.deepEqual(r.find('GET', '/a/1/b/2'), { kind: 'found', value: 'xy', params: { x: '1', y: '2' } });
});

test('router: duplicate routes and conflicting parameter names are refused at registration', () => {
  const r = new Router<string>();
  r.add('GET', '/a/{id}', 'one');
  assert.throws(() => r.add('GET', '/a/{id}', 'two'), { message: 'duplicate route GET /a/{id}' });
  assert.throws(() => r.add('POST', '/a/{other}', 'three'), { message: 'conflicting parameter names at /a/{other}' });
});
