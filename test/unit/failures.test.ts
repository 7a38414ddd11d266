/**
 * classifyError: which failures are our own infrastructure being unavailable (wait and
 * retry, 503) and which are a provider's or anything else (bounded budget, api_error).
 * The error shapes are those pg, knex, MikroORM, ioredis, Node's sockets and the Temporal
 * client produce; the outage tests (test/integration/outages.test.ts) meet the real ones.
 */
import { ConnectionException, DriverException } from '@mikro-orm/core';
import { classifyError, endpointsFromConfig, ProviderError } from '../../src/failures';

const endpoints = endpointsFromConfig({
  DATABASE_URL: 'postgresql://postgres@127.0.0.1:5433/db',
  REDIS_URL: 'redis://127.0.0.1:6380',
  TEMPORAL_ADDRESS_EFFECTIVE: '127.0.0.1:7234',
});

const withProps = (message: string, props: Record<string, unknown>) => Object.assign(new Error(message), props);

describe('classifyError', () => {
  it.each([
    ['a refused connection to our database port', withProps('connect ECONNREFUSED 127.0.0.1:5433', { code: 'ECONNREFUSED', port: 5433 }), 'postgres'],
    ['a refused connection to our Redis port', withProps('connect ECONNREFUSED 127.0.0.1:6380', { code: 'ECONNREFUSED', port: 6380 }), 'redis'],
    ['admin shutdown (57P01)', withProps('terminating connection due to administrator command', { code: '57P01' }), 'postgres'],
    ['too many connections (53300)', withProps('sorry, too many clients already', { code: '53300' }), 'postgres'],
    ['cannot connect now (57P03)', withProps('the database system is starting up', { code: '57P03' }), 'postgres'],
    ['a connection exception class 08', withProps('connection failure', { code: '08006' }), 'postgres'],
    ['pg losing the connection', new Error('Connection terminated unexpectedly'), 'postgres'],
    ['the pool acquire timeout', withProps('Knex: Timeout acquiring a connection. The pool is probably full.', { name: 'KnexTimeoutError' }), 'postgres'],
    ['a transaction whose connection died', new Error('Transaction query already complete, run with DEBUG=knex:tx for more info'), 'postgres'],
    ['MikroORM wrapping a refused connection', new ConnectionException(withProps('connect ECONNREFUSED', { code: 'ECONNREFUSED' })), 'postgres'],
    ['ioredis without a connection', new Error('Connection is closed.'), 'redis'],
    ['Temporal unavailable (gRPC 14)', withProps('Service unavailable', { cause: withProps('14 UNAVAILABLE: No connection established', { code: 14, metadata: {} }) }), 'temporal'],
  ])('%s is infrastructure (%#)', (_what, err, dependency) => {
    expect(classifyError(err, endpoints)).toMatchObject({ kind: 'infrastructure', dependency });
  });

  it("a provider's connection error stays the provider's, whatever its cause", () => {
    const refused = withProps('fetch failed', { cause: withProps('connect ECONNREFUSED 127.0.0.1:5433', { code: 'ECONNREFUSED', port: 5433 }) });
    expect(classifyError(new ProviderError('channel', 'channel provider: fetch failed', { cause: refused }), endpoints).kind).toBe('provider');
  });

  it.each([
    ['a unique violation', new DriverException(withProps('duplicate key value violates unique constraint', { code: '23505' }))],
    ['a syntax error', withProps('syntax error at or near ","', { code: '42601' })],
    ['a plain bug', new TypeError("Cannot read properties of undefined (reading 'id')")],
    ['a string', 'boom'],
  ])('%s is not infrastructure', (_what, err) => {
    expect(classifyError(err, endpoints).kind).toBe('other');
  });
});
